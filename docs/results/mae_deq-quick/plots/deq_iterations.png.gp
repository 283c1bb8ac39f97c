set terminal pngcairo size 900,600 noenhanced
set output 'deq_iterations.png'
set title 'DEQ: solver iterations per training step'
set xlabel 'step'
set ylabel 'evaluations of f'
set key below
set grid
plot 'deq.dat' index 0 using 1:2 with lines title 'DEQ, Anderson, implicit gradient (forward)', 'deq.dat' index 0 using 1:4 with lines title 'DEQ, Anderson, implicit gradient (backward)', 'deq.dat' index 1 using 1:2 with lines title 'DEQ, Anderson, phantom gradient (k 3, damping 0.5) (forward)', 'deq.dat' index 2 using 1:2 with lines title 'weight-tied, unrolled x8 (backprop through all) (forward)'
