set terminal svg size 720,480 dynamic noenhanced
set output 'flipflop_errors.svg'
set linetype 9 lc rgb '#cc79a7'
set linetype 10 lc rgb '#8c564b'
set linetype 11 lc rgb '#bcbd22'
set linetype 12 lc rgb '#17becf'
set linetype 13 lc rgb '#7b4173'
set linetype 14 lc rgb '#393b79'
set linetype 15 lc rgb '#637939'
set linetype 16 lc rgb '#843c39'
set linetype cycle 16
set title 'Flip-flop: error rate on the read bits, every seed'
set ylabel 'error rate'
set logscale y
set xtics ("FFL(0.8) T=64" 0, "FFL(0.8) T=512" 1, "sparse FFL(0.98) T=64" 2, "sparse FFL(0.98) T=512" 3, "dense FFL(0.1) T=64" 4, "dense FFL(0.1) T=512" 5) rotate by -30
set xrange [-0.5:5.5]
set key below
set grid y
plot 'flipflop.dat' index 0 using 1:2 with points pt 7 lc 1 title 'LSTM, 1 layer', 'flipflop.dat' index 1 using 1:2 with points pt 6 lc 1 title 'LSTM, 1 layer, no error (drawn at 0.5 / read bits)', 'flipflop.dat' index 2 using 1:2 with points pt 7 lc 2 title 'Transformer, 2 layers'
