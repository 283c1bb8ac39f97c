set terminal svg size 720,480 dynamic noenhanced
set output 'defsent_mrr.svg'
set linetype 9 lc rgb '#cc79a7'
set linetype 10 lc rgb '#8c564b'
set linetype 11 lc rgb '#bcbd22'
set linetype 12 lc rgb '#17becf'
set linetype 13 lc rgb '#7b4173'
set linetype 14 lc rgb '#393b79'
set linetype 15 lc rgb '#637939'
set linetype 16 lc rgb '#843c39'
set linetype cycle 16
set xtics ('random' 0, 'mlm' 1, 'defsent' 2, 'defsent+' 3, 'defsent+white' 4)
set xrange [-0.5:4.5]
set grid
set key off
set title 'Reverse dictionary on held-out entries (one point per seed)'
set ylabel 'MRR'
plot 'defsent.dat' using 1:2 with points pt 7 ps 1.5
