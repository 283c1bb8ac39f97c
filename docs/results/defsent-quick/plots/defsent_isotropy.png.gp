set terminal pngcairo size 900,600 noenhanced
set output 'defsent_isotropy.png'
set xtics ('random' 0, 'mlm' 1, 'defsent' 2, 'defsent+' 3, 'defsent+white' 4)
set xrange [-0.5:4.5]
set grid
set key off
set title 'Mean cosine of random pairs (0 = isotropic)'
set ylabel 'mean cosine'
plot 'defsent.dat' using 1:4 with points pt 7 ps 1.5
