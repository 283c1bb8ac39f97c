set terminal svg size 720,480 dynamic noenhanced
set output 'flip_flop_dense.svg'
set title 'flip_flop_dense: accuracy vs test length (mean over seeds)'
set xlabel 'test length'
set ylabel 'accuracy'
set yrange [0:1.05]
set logscale x 2
set key outside right
set grid
plot 'flip_flop_dense.dat' index 0 with linespoints title 'elu1 d=64 L=2', 'flip_flop_dense.dat' index 1 with linespoints title 'lstm d=64 L=1', 'flip_flop_dense.dat' index 2 with linespoints title 'mamba d=64 L=2', 'flip_flop_dense.dat' index 3 with linespoints title 'softmax d=64 L=2', 'flip_flop_dense.dat' index 4 with lines dashtype 2 lc rgb 'gray40' title 'input-blind'
