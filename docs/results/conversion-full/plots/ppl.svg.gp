set terminal svg size 720,480 dynamic noenhanced
set output 'ppl.svg'
set linetype 9 lc rgb '#cc79a7'
set linetype 10 lc rgb '#8c564b'
set linetype 11 lc rgb '#bcbd22'
set linetype 12 lc rgb '#17becf'
set linetype 13 lc rgb '#7b4173'
set linetype 14 lc rgb '#393b79'
set linetype 15 lc rgb '#637939'
set linetype 16 lc rgb '#843c39'
set linetype cycle 16
set title 'test perplexity (mean ± sd over seeds)'
set ylabel 'ppl'
set logscale y
set xtics ('teacher' 0, 'control' 1, 't2r' 2, 'hedgehog' 3, 'hedgehog_at' 4, 'elu' 5, 'rfa' 6, 'hybrid' 7, 'gla' 8, 'hybrid_kl' 9, 'hybrid_lora' 10, 'hybrid_tied_lora' 11, 'control_lr1.5e-4' 12, 'hybrid_lr1.5e-4' 13, 'control_lr1e-3' 14, 'hybrid_lr1e-3' 15, 't2r_lr1e-3' 16, 'hedgehog_at_lr1e-3' 17, 'gla_lr1e-3' 18, 't2r_lr2e-3' 19, 'hedgehog_at_lr2e-3' 20, 'gla_lr2e-3' 21, 'scratch_t2r' 22, 'scratch_hedgehog' 23, 'scratch_elu' 24, 'scratch_rfa' 25, 'scratch_gla' 26, 'scratch_hybrid' 27) rotate by -40
set grid y
set xrange [-0.5:27.5]
plot 'ppl.dat' using 1:2:3 with yerrorbars pt 7 notitle
