set terminal svg size 720,480 dynamic noenhanced
set output 'index_lookup.svg'
set title 'index_lookup: accuracy vs test length (mean over seeds)'
set xlabel 'test length'
set ylabel 'accuracy'
set yrange [0:1.05]
set logscale x 2
set key outside right
set grid
plot 'index_lookup.dat' index 0 with linespoints title 'lstm d=16 L=1', 'index_lookup.dat' index 1 with linespoints title 'lstm d=16 L=1', 'index_lookup.dat' index 2 with linespoints title 'lstm d=16 L=1', 'index_lookup.dat' index 3 with linespoints title 'lstm d=64 L=1', 'index_lookup.dat' index 4 with linespoints title 'lstm d=64 L=1', 'index_lookup.dat' index 5 with linespoints title 'softmax d=16 L=1', 'index_lookup.dat' index 6 with linespoints title 'softmax d=16 L=1', 'index_lookup.dat' index 7 with linespoints title 'softmax d=16 L=1', 'index_lookup.dat' index 8 with linespoints title 'softmax d=64 L=1', 'index_lookup.dat' index 9 with linespoints title 'softmax d=64 L=1', 'index_lookup.dat' index 10 with lines dashtype 2 lc rgb 'gray40' title 'input-blind'
