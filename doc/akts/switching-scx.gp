# the plot of the kernel-path switching run (guest has no gnuplot): run from
# the repository root after extracting the guest's CSVs into doc/akts/switching-scx/
#   gnuplot doc/akts/switching-scx.gp
set terminal pngcairo size 1000,700 noenhanced
set output 'doc/akts/switching-scx.png'
set datafile separator ','
set multiplot layout 2,1 title 'egang policy switching, sched_ext backend, EMULATED (QEMU TCG, 4 vCPUs): oracle and bandit (steady 1/s, burst 6/s, steady 1/s)'
set grid
set key top left
set object 1 rect from 6, graph 0 to 9, graph 1 fc rgb '#eeeeee' behind
set xrange [0:15]
set ylabel 'TTFT ms (log)'
set logscale y
plot 'doc/akts/switching-scx/timeline.csv' using (strcol(1) eq 'oracle' && $2==1 && strcol(3) eq 'ttft' ? $4 : 1/0):5 with points pt 7 ps 0.6 lc rgb '#cc0000' title 'oracle', \
     '' using (strcol(1) eq 'bandit' && $2==1 && strcol(3) eq 'ttft' ? $4 : 1/0):5 with points pt 6 ps 0.6 lc rgb '#2266cc' title 'bandit'
unset logscale y
set xlabel 'seconds (grey: the burst)'
set ylabel 'antagonist units/s'
set yrange [0:*]
set key bottom left
plot 'doc/akts/switching-scx/timeline.csv' using (strcol(1) eq 'oracle' && $2==1 && strcol(3) eq 'tenant' ? $4 : 1/0):5 with lines lw 2 lc rgb '#cc0000' title 'oracle', \
     '' using (strcol(1) eq 'bandit' && $2==1 && strcol(3) eq 'tenant' ? $4 : 1/0):5 with lines lc rgb '#2266cc' title 'bandit'
unset multiplot
