set terminal svg size 720,480 dynamic noenhanced
set output '/work/grids/chomsky-full/plots/duplicate_string.svg'
set title 'duplicate_string: accuracy vs test length (mean over seeds)'
set xlabel 'test length'
set ylabel 'accuracy'
set yrange [0:1.05]
set logscale x 2
set key outside right
set grid
plot '/work/grids/chomsky-full/plots/duplicate_string.dat' index 0 with linespoints title 'gru d=64 L=2', '/work/grids/chomsky-full/plots/duplicate_string.dat' index 1 with linespoints title 'lstm d=64 L=1'
