set terminal svg size 720,480 dynamic noenhanced
set output 'duplicate_string.svg'
set linetype 9 lc rgb '#cc79a7'
set linetype 10 lc rgb '#8c564b'
set linetype 11 lc rgb '#bcbd22'
set linetype 12 lc rgb '#17becf'
set linetype 13 lc rgb '#7b4173'
set linetype 14 lc rgb '#393b79'
set linetype 15 lc rgb '#637939'
set linetype 16 lc rgb '#843c39'
set linetype cycle 16
set title 'duplicate_string: accuracy vs test length (mean over seeds)'
set xlabel 'test length'
set ylabel 'accuracy'
set yrange [0:1.05]
set logscale x 2
set key outside right
set grid
plot 'duplicate_string.dat' index 0 with linespoints title 'elman d=64 L=2', 'duplicate_string.dat' index 1 with linespoints title 'elu1 d=64 L=2', 'duplicate_string.dat' index 2 with linespoints title 'gru d=64 L=2', 'duplicate_string.dat' index 3 with linespoints title 'lstm d=64 L=1', 'duplicate_string.dat' index 4 with linespoints title 'qrnn d=64 L=2', 'duplicate_string.dat' index 5 with linespoints title 'softmax d=64 L=2', 'duplicate_string.dat' index 6 with lines dashtype 2 lc rgb 'gray40' title 'input-blind'
