set terminal svg size 720,480 dynamic noenhanced
set output 'state_P64.svg'
set linetype 9 lc rgb '#cc79a7'
set linetype 10 lc rgb '#8c564b'
set linetype 11 lc rgb '#bcbd22'
set linetype 12 lc rgb '#17becf'
set linetype 13 lc rgb '#7b4173'
set linetype 14 lc rgb '#393b79'
set linetype 15 lc rgb '#637939'
set linetype 16 lc rgb '#843c39'
set linetype cycle 16
set title 'MQAR: test accuracy against state size, P = 64'
set xlabel 'state per sequence (bytes)'
set ylabel 'accuracy'
set logscale x 10
set yrange [0:1.05]
set offsets graph 0.05, graph 0.05
set key below
set grid
plot 'state.dat' index 17 using 1:2:3 with yerrorlines lw 2 title 'softmax attention', 'state.dat' index 18 using 1:2:3 with yerrorlines lw 2 title 'linear attention (ELU+1) + short conv'
