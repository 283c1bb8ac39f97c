set terminal svg size 720,480 dynamic noenhanced
set output 'tied_lora.svg'
set linetype 9 lc rgb '#cc79a7'
set linetype 10 lc rgb '#8c564b'
set linetype 11 lc rgb '#bcbd22'
set linetype 12 lc rgb '#17becf'
set linetype 13 lc rgb '#7b4173'
set linetype 14 lc rgb '#393b79'
set linetype 15 lc rgb '#637939'
set linetype 16 lc rgb '#843c39'
set linetype cycle 16
set title 'test perplexity against trainable parameters (mean ± sd over seeds)'
set xlabel 'trainable parameters'
set ylabel 'test ppl'
set logscale x
set grid
plot 'tied_lora.dat' using 1:2:3 with yerrorbars pt 7 notitle, '' using 1:2:4 with labels offset 0,1 font ',8' notitle
