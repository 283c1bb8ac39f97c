set terminal svg size 720,480 dynamic noenhanced
set output 'objectives.svg'
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
