set terminal svg size 720,480 dynamic noenhanced
set output 'dyck_bounded.svg'
set title 'dyck_bounded: accuracy vs test length (mean over seeds)'
set xlabel 'test length'
set ylabel 'accuracy'
set yrange [0:1.05]
set logscale x 2
set key outside right
set grid
plot 'dyck_bounded.dat' index 0 with linespoints title 'lstm d=16 L=1', 'dyck_bounded.dat' index 1 with linespoints title 'lstm d=16 L=1', 'dyck_bounded.dat' index 2 with linespoints title 'lstm d=64 L=1', 'dyck_bounded.dat' index 3 with linespoints title 'lstm d=64 L=1', 'dyck_bounded.dat' index 4 with linespoints title 'softmax d=16 L=1', 'dyck_bounded.dat' index 5 with linespoints title 'softmax d=16 L=1', 'dyck_bounded.dat' index 6 with linespoints title 'softmax d=64 L=1', 'dyck_bounded.dat' index 7 with linespoints title 'softmax d=64 L=1', 'dyck_bounded.dat' index 8 with lines dashtype 2 lc rgb 'gray40' title 'input-blind'
