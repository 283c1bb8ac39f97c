set terminal pngcairo size 900,600 noenhanced
set output 'dyck_bounded_heatmap_lstm.png'
set title 'dyck_bounded lstm: accuracy over width and length'
set xlabel 'test length'
set ylabel 'd_model'
set cbrange [0:1]
set palette defined (0 'white', 1 'navy')
set logscale xy 2
set offsets graph 0.12, graph 0.12, graph 0.12, graph 0.12
plot 'dyck_bounded_heatmap_lstm.dat' using 1:2:3 with points pt 5 ps 6 palette notitle, 'dyck_bounded_heatmap_lstm.dat' using 1:2:(sprintf('%.2f', $3)) with labels offset 0,2 notitle
