set terminal svg size 720,480 dynamic noenhanced
set output 'dyck_bounded_heatmap_gru.svg'
set linetype 9 lc rgb '#cc79a7'
set linetype 10 lc rgb '#8c564b'
set linetype 11 lc rgb '#bcbd22'
set linetype 12 lc rgb '#17becf'
set linetype 13 lc rgb '#7b4173'
set linetype 14 lc rgb '#393b79'
set linetype 15 lc rgb '#637939'
set linetype 16 lc rgb '#843c39'
set linetype cycle 16
set title 'dyck_bounded gru: accuracy over width and length'
set xlabel 'test length'
set ylabel 'd_model'
set cbrange [0:1]
set palette defined (0 'white', 1 'navy')
set logscale xy 2
set offsets graph 0.12, graph 0.12, graph 0.12, graph 0.12
plot 'dyck_bounded_heatmap_gru.dat' using 1:2:3 with points pt 5 ps 6 palette notitle, 'dyck_bounded_heatmap_gru.dat' using 1:2:(sprintf('%.2f', $3)) with labels offset 0,2 notitle
