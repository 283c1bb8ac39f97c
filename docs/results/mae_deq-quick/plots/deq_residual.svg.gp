set terminal svg size 720,480 dynamic noenhanced
set output 'deq_residual.svg'
set linetype 9 lc rgb '#cc79a7'
set linetype 10 lc rgb '#8c564b'
set linetype 11 lc rgb '#bcbd22'
set linetype 12 lc rgb '#17becf'
set linetype 13 lc rgb '#7b4173'
set linetype 14 lc rgb '#393b79'
set linetype 15 lc rgb '#637939'
set linetype 16 lc rgb '#843c39'
set linetype cycle 16
set title 'DEQ: relative residual of the forward solve, per training step (seed 0)'
set xlabel 'step'
set ylabel '|f(z)-z| / |f(z)|'
set logscale y
set key below
set grid
plot 'deq.dat' index 0 using 1:3 with lines title 'DEQ, Anderson, implicit gradient', 'deq.dat' index 1 using 1:3 with lines title 'DEQ, implicit gradient, Jacobian reg. 0.5', 'deq.dat' index 2 using 1:3 with lines title 'DEQ, Anderson, phantom gradient (k 3, damping 0.5)', 'deq.dat' index 3 using 1:3 with lines title 'weight-tied, unrolled x8 (backprop through all)', 'deq.dat' index 4 using 1:3 with lines title 'DEQ, implicit gradient, Jacobian reg. 1 (tuning)', 'deq.dat' index 5 using 1:3 with lines title 'DEQ, implicit gradient, Jacobian reg. 2 (tuning)'
