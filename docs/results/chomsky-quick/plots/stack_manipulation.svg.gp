set terminal svg size 720,480 dynamic noenhanced
set output 'stack_manipulation.svg'
set title 'stack_manipulation: accuracy vs test length (mean over seeds)'
set xlabel 'test length'
set ylabel 'accuracy'
set yrange [0:1.05]
set logscale x 2
set key outside right
set grid
plot 'stack_manipulation.dat' index 0 with linespoints title 'lstm d=32 L=1', 'stack_manipulation.dat' index 1 with linespoints title 'softmax d=32 L=2', 'stack_manipulation.dat' index 2 with linespoints title 't2r d=32 L=2', 'stack_manipulation.dat' index 3 with lines dashtype 2 lc rgb 'gray40' title 'input-blind'
