set terminal svg size 720,480 dynamic noenhanced
set output 'speed.svg'
set title 'generation speed vs context'
set xlabel 'context (tokens)'
set ylabel 'tokens/s'
set logscale x 2
set key below
set grid
plot 'bench.dat' index 0 using 1:2 with linespoints title 'teacher (softmax, KV cache) [torch]', 'bench.dat' index 1 using 1:2 with linespoints title 'teacher (softmax, KV cache) [fast]', 'bench.dat' index 2 using 1:2 with linespoints title 'T2R, converted [torch]', 'bench.dat' index 3 using 1:2 with linespoints title 'T2R, converted [fast]', 'bench.dat' index 4 using 1:2 with linespoints title 'Hedgehog + transfer, converted [torch]', 'bench.dat' index 5 using 1:2 with linespoints title 'Hedgehog + transfer, converted [fast]'
