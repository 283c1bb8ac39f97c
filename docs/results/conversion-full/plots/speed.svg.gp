set terminal svg size 720,480 dynamic noenhanced
set output 'speed.svg'
set linetype 9 lc rgb '#cc79a7'
set linetype 10 lc rgb '#8c564b'
set linetype 11 lc rgb '#bcbd22'
set linetype 12 lc rgb '#17becf'
set linetype 13 lc rgb '#7b4173'
set linetype 14 lc rgb '#393b79'
set linetype 15 lc rgb '#637939'
set linetype 16 lc rgb '#843c39'
set linetype cycle 16
set title 'generation speed vs context'
set xlabel 'context (tokens)'
set ylabel 'tokens/s'
set logscale x 2
set key below
set grid
plot 'bench.dat' index 0 using 1:2 with linespoints title 'teacher (softmax, KV cache) [torch]', 'bench.dat' index 1 using 1:2 with linespoints title 'teacher (softmax, KV cache) [fast]', 'bench.dat' index 2 using 1:2 with linespoints title 't2r [torch]', 'bench.dat' index 3 using 1:2 with linespoints title 't2r [fast]', 'bench.dat' index 4 using 1:2 with linespoints title 'hedgehog_at [torch]', 'bench.dat' index 5 using 1:2 with linespoints title 'hedgehog_at [fast]', 'bench.dat' index 6 using 1:2 with linespoints title 'hybrid [torch]', 'bench.dat' index 7 using 1:2 with linespoints title 'hybrid [fast]', 'bench.dat' index 8 using 1:2 with linespoints title 'gla [torch]', 'bench.dat' index 9 using 1:2 with linespoints title 'gla [fast]'
