set terminal svg size 720,480 dynamic noenhanced
set output 'score.svg'
set linetype 9 lc rgb '#cc79a7'
set linetype 10 lc rgb '#8c564b'
set linetype 11 lc rgb '#bcbd22'
set linetype 12 lc rgb '#17becf'
set linetype 13 lc rgb '#7b4173'
set linetype 14 lc rgb '#393b79'
set linetype 15 lc rgb '#637939'
set linetype 16 lc rgb '#843c39'
set linetype cycle 16
set title 'Deletang et al. score (accuracy averaged over n = 41-500), mean over seeds'
set xtics ('lstm' 0, 'gru' 1, 'elman' 2, 'qrnn' 3, 'softmax' 4, 'elu1' 5, 't2r' 6, 's4d' 7, 'mamba' 8) rotate by -30
set ytics ('parity' 0, 'even_pairs' 1, 'cycle_navigation' 2, 'modular_arithmetic' 3, 'reverse_string' 4, 'stack_manipulation' 5, 'duplicate_string' 6)
set xrange [-0.5:8.5]
set yrange [6.5:-0.5]
set cbrange [0:1]
set palette defined (0 'white', 1 '#3b7dd8')
unset key
plot 'score.dat' using 1:2:(0.5):(0.5):3 with boxxyerror fs solid 1.0 noborder lc palette, 'score.dat' using 1:2:(sprintf('%.2f', $3)) with labels
