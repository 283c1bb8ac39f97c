set terminal pngcairo size 900,600 noenhanced
set output 'early_exit.png'
set title 'early exit: accuracy vs layers used'
set xlabel 'mean layers run per example'
set ylabel 'test accuracy'
set key below
set grid
plot 'exit.dat' index 0 using 1:2 with linespoints title 'supersense softmax', 'exit.dat' index 1 using 1:2 with linespoints title 'supersense linear', 'exit.dat' index 2 using 1:2 with linespoints title 'difficulty softmax', 'exit.dat' index 3 using 1:2 with linespoints title 'difficulty linear'
