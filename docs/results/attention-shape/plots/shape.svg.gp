set terminal svg size 720,480 dynamic noenhanced
set output 'shape.svg'
set linetype 9 lc rgb '#cc79a7'
set linetype 10 lc rgb '#8c564b'
set linetype 11 lc rgb '#bcbd22'
set linetype 12 lc rgb '#17becf'
set linetype 13 lc rgb '#7b4173'
set linetype 14 lc rgb '#393b79'
set linetype 15 lc rgb '#637939'
set linetype 16 lc rgb '#843c39'
set linetype cycle 16
set title 'attention rows: entropy vs rank agreement with softmax (mean over heads)'
set xlabel 'row entropy (nats, lower = spikier)'
set ylabel 'Spearman rho with softmax'
set grid
set key off
set offsets graph 0.05, graph 0.2, graph 0.1, graph 0.1
plot 'shape.dat' using 1:2 with points pt 7 ps 1.5, 'shape.dat' using 1:2:3 with labels offset 0,1 font ',8'
