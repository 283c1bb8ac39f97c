set terminal svg size 720,480 dynamic noenhanced
set output 'index_lookup_heatmap_softmax.svg'
set title 'index_lookup softmax: accuracy over width and length'
set xlabel 'test length'
set ylabel 'd_model'
set cbrange [0:1]
set palette defined (0 'white', 1 'navy')
set logscale xy 2
set offsets graph 0.12, graph 0.12, graph 0.12, graph 0.12
plot 'index_lookup_heatmap_softmax.dat' using 1:2:3 with points pt 5 ps 6 palette notitle, 'index_lookup_heatmap_softmax.dat' using 1:2:(sprintf('%.2f', $3)) with labels offset 0,2 notitle
