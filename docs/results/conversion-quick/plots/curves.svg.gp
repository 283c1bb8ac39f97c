set terminal svg size 720,480 dynamic noenhanced
set output 'curves.svg'
set linetype 9 lc rgb '#cc79a7'
set linetype 10 lc rgb '#8c564b'
set linetype 11 lc rgb '#bcbd22'
set linetype 12 lc rgb '#17becf'
set linetype 13 lc rgb '#7b4173'
set linetype 14 lc rgb '#393b79'
set linetype 15 lc rgb '#637939'
set linetype 16 lc rgb '#843c39'
set linetype cycle 16
set title 'validation perplexity during training'
set xlabel 'step'
set ylabel 'valid ppl'
set logscale y
set key below
set grid
plot 'curves.dat' index 0 with linespoints title 'teacher (softmax)', 'curves.dat' index 1 with linespoints title 'teacher + same finetuning (control)', 'curves.dat' index 2 with linespoints title 'T2R, converted', 'curves.dat' index 3 with linespoints title 'T2R, from scratch', 'curves.dat' index 4 with linespoints title 'Hedgehog + attention transfer, converted', 'curves.dat' index 5 with linespoints title 'Hedgehog, from scratch', 'curves.dat' index 6 with linespoints title 'Hedgehog, no transfer, converted', 'curves.dat' index 7 with linespoints title 'ELU+1, converted', 'curves.dat' index 8 with linespoints title 'ELU+1, from scratch', 'curves.dat' index 9 with linespoints title 'RFA, converted', 'curves.dat' index 10 with linespoints title 'RFA, from scratch', 'curves.dat' index 11 with linespoints title 'Hybrid (softmax W=16 + Hedgehog) + output transfer, converted', 'curves.dat' index 12 with linespoints title 'Gated Hedgehog (key gate) + attention transfer, converted', 'curves.dat' index 13 with linespoints title 'Hybrid (softmax W=16 + Hedgehog), from scratch', 'curves.dat' index 14 with linespoints title 'Hedgehog + transfer, LoRA', 'curves.dat' index 15 with linespoints title 'Hedgehog + transfer, Tied-LoRA'
