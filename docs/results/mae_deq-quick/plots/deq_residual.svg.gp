set terminal svg size 720,480 dynamic noenhanced
set output 'deq_residual.svg'
set title 'DEQ: relative residual of the forward solve, per training step'
set xlabel 'step'
set ylabel '|f(z)-z| / |f(z)|'
set logscale y
set key below
set grid
plot 'deq.dat' index 0 using 1:3 with lines title 'DEQ, Anderson, implicit gradient', 'deq.dat' index 1 using 1:3 with lines title 'DEQ, Anderson, phantom gradient (k 3, damping 0.5)', 'deq.dat' index 2 using 1:3 with lines title 'weight-tied, unrolled x8 (backprop through all)'
