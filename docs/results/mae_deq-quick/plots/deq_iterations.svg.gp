set terminal svg size 720,480 dynamic noenhanced
set output 'deq_iterations.svg'
set linetype 9 lc rgb '#cc79a7'
set linetype 10 lc rgb '#8c564b'
set linetype 11 lc rgb '#bcbd22'
set linetype 12 lc rgb '#17becf'
set linetype 13 lc rgb '#7b4173'
set linetype 14 lc rgb '#393b79'
set linetype 15 lc rgb '#637939'
set linetype 16 lc rgb '#843c39'
set linetype cycle 16
set title 'DEQ: solver iterations per training step (seed 0)'
set xlabel 'step'
set ylabel 'evaluations of f'
set key below
set grid
plot 'deq.dat' index 0 using 1:2 with lines title 'DEQ, Anderson, implicit gradient (forward)', 'deq.dat' index 0 using 1:4 with lines title 'DEQ, Anderson, implicit gradient (backward)', 'deq.dat' index 1 using 1:2 with lines title 'DEQ, implicit gradient, Jacobian reg. 0.5 (forward)', 'deq.dat' index 1 using 1:4 with lines title 'DEQ, implicit gradient, Jacobian reg. 0.5 (backward)', 'deq.dat' index 2 using 1:2 with lines title 'DEQ, Anderson, phantom gradient (k 3, damping 0.5) (forward)', 'deq.dat' index 3 using 1:2 with lines title 'weight-tied, unrolled x8 (backprop through all) (forward)', 'deq.dat' index 4 using 1:2 with lines title 'DEQ, implicit gradient, Jacobian reg. 1 (tuning) (forward)', 'deq.dat' index 4 using 1:4 with lines title 'DEQ, implicit gradient, Jacobian reg. 1 (tuning) (backward)', 'deq.dat' index 5 using 1:2 with lines title 'DEQ, implicit gradient, Jacobian reg. 2 (tuning) (forward)', 'deq.dat' index 5 using 1:4 with lines title 'DEQ, implicit gradient, Jacobian reg. 2 (tuning) (backward)'
