set terminal svg size 720,480 dynamic noenhanced
set output 'positions.svg'
set linetype 9 lc rgb '#cc79a7'
set linetype 10 lc rgb '#8c564b'
set linetype 11 lc rgb '#bcbd22'
set linetype 12 lc rgb '#17becf'
set linetype 13 lc rgb '#7b4173'
set linetype 14 lc rgb '#393b79'
set linetype 15 lc rgb '#637939'
set linetype 16 lc rgb '#843c39'
set linetype cycle 16
set title 'test perplexity by position'
set xlabel 'position in window'
set ylabel 'ppl'
set logscale y
set arrow from 256,graph 0 to 256,graph 1 nohead dt 2
set key below maxrows 4 font ',8'
set grid
plot 'positions.dat' index 0 with linespoints title 'teacher (softmax, pretrained)', 'positions.dat' index 1 with linespoints title 'teacher + same finetuning (control)', 'positions.dat' index 2 with linespoints title 'T2R', 'positions.dat' index 3 with linespoints title 'Hedgehog, no transfer', 'positions.dat' index 4 with linespoints title 'Hedgehog + attention transfer', 'positions.dat' index 5 with linespoints title 'ELU+1', 'positions.dat' index 6 with linespoints title 'RFA', 'positions.dat' index 7 with linespoints title 'Hybrid W=64 + output transfer', 'positions.dat' index 8 with linespoints title 'Gated Hedgehog (key gate) + attention transfer', 'positions.dat' index 9 with linespoints title 'Hybrid W=64 + output transfer, finetuned with KL', 'positions.dat' index 10 with linespoints title 'Hybrid W=64 + output transfer, LoRA', 'positions.dat' index 11 with linespoints title 'Hybrid W=64 + output transfer, Tied-LoRA'
