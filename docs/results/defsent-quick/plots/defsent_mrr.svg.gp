set terminal svg size 720,480 dynamic noenhanced
set output 'defsent_mrr.svg'
set xtics ('random' 0, 'mlm' 1, 'defsent' 2, 'defsent+' 3, 'defsent+white' 4)
set xrange [-0.5:4.5]
set grid
set key off
set title 'Reverse dictionary on held-out entries (one point per seed)'
set ylabel 'MRR'
plot 'defsent.dat' using 1:2 with points pt 7 ps 1.5
