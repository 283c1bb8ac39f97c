set terminal svg size 720,480 dynamic noenhanced
set output 'nearest_neighbor.svg'
set linetype 9 lc rgb '#cc79a7'
set linetype 10 lc rgb '#8c564b'
set linetype 11 lc rgb '#bcbd22'
set linetype 12 lc rgb '#17becf'
set linetype 13 lc rgb '#7b4173'
set linetype 14 lc rgb '#393b79'
set linetype 15 lc rgb '#637939'
set linetype 16 lc rgb '#843c39'
set linetype cycle 16
set title 'nearest_neighbor: accuracy vs test length (mean over seeds)'
set xlabel 'test length'
set ylabel 'accuracy'
set yrange [0:1.05]
set logscale x 2
set key outside right
set grid
plot 'nearest_neighbor.dat' index 0 with linespoints title 'lstm d=8 L=1', 'nearest_neighbor.dat' index 1 with linespoints title 'lstm d=16 L=1', 'nearest_neighbor.dat' index 2 with linespoints title 'lstm d=32 L=1', 'nearest_neighbor.dat' index 3 with linespoints title 'lstm d=64 L=1', 'nearest_neighbor.dat' index 4 with linespoints title 'lstm d=128 L=1', 'nearest_neighbor.dat' index 5 with linespoints title 'mamba d=8 L=1', 'nearest_neighbor.dat' index 6 with linespoints title 'mamba d=16 L=1', 'nearest_neighbor.dat' index 7 with linespoints title 'mamba d=32 L=1', 'nearest_neighbor.dat' index 8 with linespoints title 'mamba d=64 L=1', 'nearest_neighbor.dat' index 9 with linespoints title 'mamba d=128 L=1', 'nearest_neighbor.dat' index 10 with linespoints title 'softmax d=8 L=2', 'nearest_neighbor.dat' index 11 with linespoints title 'softmax d=16 L=2', 'nearest_neighbor.dat' index 12 with linespoints title 'softmax d=32 L=2', 'nearest_neighbor.dat' index 13 with linespoints title 'softmax d=64 L=2', 'nearest_neighbor.dat' index 14 with linespoints title 'softmax d=128 L=2', 'nearest_neighbor.dat' index 15 with lines dashtype 2 lc rgb 'gray40' title 'input-blind'
