set terminal svg size 720,480 dynamic noenhanced
set output 'pairs_d64.svg'
set linetype 9 lc rgb '#cc79a7'
set linetype 10 lc rgb '#8c564b'
set linetype 11 lc rgb '#bcbd22'
set linetype 12 lc rgb '#17becf'
set linetype 13 lc rgb '#7b4173'
set linetype 14 lc rgb '#393b79'
set linetype 15 lc rgb '#637939'
set linetype 16 lc rgb '#843c39'
set linetype cycle 16
set title 'MQAR: test accuracy against key-value pairs, width 64'
set xlabel 'key-value pairs P'
set ylabel 'accuracy'
set logscale x 2
set yrange [0:1.05]
set offsets graph 0.05, graph 0.05
set key below
set grid
plot 'pairs.dat' index 5 using 1:2:3 with yerrorlines lw 2 title 'softmax attention', 'pairs.dat' index 6 using 1:2:3 with yerrorlines lw 2 title 'linear attention (ELU+1)', 'pairs.dat' index 7 using 1:2:3 with yerrorlines lw 2 title 'linear attention (ELU+1) + short conv', 'pairs.dat' index 8 using 1:2:3 with yerrorlines lw 2 title 'LSTM', 'pairs.dat' index 9 using 1:2:3 with yerrorlines lw 2 title 'Mamba'
