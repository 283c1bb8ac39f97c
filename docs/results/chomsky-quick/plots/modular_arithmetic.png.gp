set terminal pngcairo size 900,600 noenhanced
set output 'modular_arithmetic.png'
set title 'modular_arithmetic: accuracy vs test length (mean over seeds)'
set xlabel 'test length'
set ylabel 'accuracy'
set yrange [0:1.05]
set logscale x 2
set key outside right
set grid
plot 'modular_arithmetic.dat' index 0 with linespoints title 'lstm d=32 L=1', 'modular_arithmetic.dat' index 1 with linespoints title 'softmax d=32 L=2', 'modular_arithmetic.dat' index 2 with linespoints title 't2r d=32 L=2', 'modular_arithmetic.dat' index 3 with lines dashtype 2 lc rgb 'gray40' title 'input-blind'
