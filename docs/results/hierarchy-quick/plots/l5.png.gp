set terminal pngcairo size 900,600 noenhanced
set output 'l5.png'
set title 'l5: accuracy vs test length (mean over seeds)'
set xlabel 'test length'
set ylabel 'accuracy'
set yrange [0:1.05]
set logscale x 2
set key outside right
set grid
plot 'l5.dat' index 0 with linespoints title 'elman d=32 L=1', 'l5.dat' index 1 with linespoints title 'gru d=32 L=1', 'l5.dat' index 2 with linespoints title 'lstm d=32 L=1', 'l5.dat' index 3 with linespoints title 'qrnn d=32 L=1', 'l5.dat' index 4 with lines dashtype 2 lc rgb 'gray40' title 'input-blind'
