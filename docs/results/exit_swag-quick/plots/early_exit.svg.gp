set terminal svg size 720,480 dynamic noenhanced
set output 'early_exit.svg'
set linetype 9 lc rgb '#cc79a7'
set linetype 10 lc rgb '#8c564b'
set linetype 11 lc rgb '#bcbd22'
set linetype 12 lc rgb '#17becf'
set linetype 13 lc rgb '#7b4173'
set linetype 14 lc rgb '#393b79'
set linetype 15 lc rgb '#637939'
set linetype 16 lc rgb '#843c39'
set linetype cycle 16
set title 'early exit: accuracy vs layers used'
set xlabel 'mean layers run per example'
set ylabel 'test accuracy'
set key below
set grid
plot 'exit.dat' index 0 using 1:2 with linespoints title 'supersense softmax', 'exit.dat' index 1 using 1:2 with linespoints title 'supersense linear', 'exit.dat' index 2 using 1:2 with linespoints title 'difficulty softmax', 'exit.dat' index 3 using 1:2 with linespoints title 'difficulty linear', 'exit.dat' index 4 using 1:2 with linespoints title 'pointer_chase softmax'
