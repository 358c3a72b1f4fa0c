# the plot of the kernel-path switching run (the guest has no gnuplot):
# `make scx-switching` extracts the guest's CSVs into doc/akts/switching-scx/
# and runs, from the repository root,
#   gnuplot tools/figures/akts/switching-scx.gp
set terminal pngcairo size 1000,760 noenhanced
set output 'doc/akts/switching-scx.png'
set datafile separator ','
set multiplot layout 2,1 title "egang policy switching, sched_ext backend, EMULATED (QEMU TCG, 4 vCPUs), repetition 1\n(steady 1/s, burst 6/s, steady 1/s; the kernel policy follows the one index)"
set grid
set key top left
set object 1 rect from 6, graph 0 to 9, graph 1 fc rgb '#eeeeee' behind
set xrange [0:15]
set ylabel 'TTFT ms (log)'
set logscale y
f = 'doc/akts/switching-scx/timeline.csv'
sel(a, k) = strcol(1) eq a && $2 == 1 && strcol(3) eq k ? $4 : 1/0
plot f using (sel('latency', 'ttft')):5 with points pt 1 ps 0.6 lc rgb '#999999' title 'latency', \
     f using (sel('throughput', 'ttft')):5 with points pt 2 ps 0.6 lc rgb '#33aa33' title 'throughput', \
     f using (sel('oracle', 'ttft')):5 with points pt 7 ps 0.6 lc rgb '#cc0000' title 'oracle', \
     f using (sel('bandit', 'ttft')):5 with points pt 6 ps 0.6 lc rgb '#2266cc' title 'bandit', \
     f using (sel('agent', 'ttft')):5 with points pt 4 ps 0.6 lc rgb '#aa66cc' title 'agent'
unset logscale y
set xlabel 'seconds (grey: the burst)'
set ylabel 'antagonist units/s'
set yrange [0:*]
set key bottom left
plot f using (sel('latency', 'tenant')):5 with lines lc rgb '#999999' title 'latency', \
     f using (sel('throughput', 'tenant')):5 with lines lc rgb '#33aa33' title 'throughput', \
     f using (sel('oracle', 'tenant')):5 with lines lw 2 lc rgb '#cc0000' title 'oracle', \
     f using (sel('bandit', 'tenant')):5 with lines lc rgb '#2266cc' title 'bandit', \
     f using (sel('agent', 'tenant')):5 with lines lc rgb '#aa66cc' title 'agent'
unset multiplot
