set terminal svg size 720,480 dynamic noenhanced
set output 'objectives.svg'
set linetype 9 lc rgb '#cc79a7'
set linetype 10 lc rgb '#8c564b'
set linetype 11 lc rgb '#bcbd22'
set linetype 12 lc rgb '#17becf'
set linetype 13 lc rgb '#7b4173'
set linetype 14 lc rgb '#393b79'
set linetype 15 lc rgb '#637939'
set linetype 16 lc rgb '#843c39'
set linetype cycle 16
set title 'Downstream accuracy by pretraining objective (softmax; mean over languages, sd over seeds)'
set ylabel 'accuracy'
set yrange [0:1.2]
set style data histograms
set style histogram errorbars gap 1 lw 1
set style fill solid 0.7 border -1
set key top center horizontal
set grid ytics
set xtics font ',8'
plot 'objectives.dat' using 2:3:xtic(1) title 'POS probe', '' using 4:5 title 'POS finetune', '' using 6:7 title 'subject-number probe', '' using 8:9 title 'subject-number finetune'
