# The figure of `egang bench switching`: TTFT and the antagonists' work over
# time, repetition 1, the fixed arms (throughput, latency) against the
# oracle. Reads DIR/switching.csv (the phases' lengths and rates) and
# DIR/timeline.csv; writes DIR/switching.png.
#
# usage: gnuplot -c tools/plot/switching.gp DIR [LABEL]
#   LABEL (optional) goes into the title, e.g. "sched_ext backend".
# `egang bench switching` runs this script (built into the binary) with its
# --out folder, without a shell, and leaves a copy in DIR/switching.gp.
# DIR and LABEL are only ever used as strings, never evaluated.
if (ARGC < 1) {
	print "usage: gnuplot -c switching.gp DIR [LABEL]"
	exit status 2
}
dir = ARG1
label = ARGC >= 2 && strlen(ARG2) > 0 ? ' ('.ARG2.')' : ''
runs = dir.'/switching.csv'
timeline = dir.'/timeline.csv'
set datafile separator ','

# the phases (steady1, burst, steady2) from the oracle's rows of repetition 1
row(phase, col) = strcol(1) eq 'oracle' && $2 == 1 && strcol(3) eq phase ? column(col) : NaN
# (every repetition has the same phases: the largest value is the one)
stats runs using (row('steady1', 5)) nooutput
s1 = STATS_max
stats runs using (row('burst', 5)) nooutput
s2 = STATS_max
stats runs using (row('steady2', 5)) nooutput
s3 = STATS_max
stats runs using (row('steady1', 4)) nooutput
r1 = STATS_max
stats runs using (row('burst', 4)) nooutput
r2 = STATS_max
stats runs using (row('steady2', 4)) nooutput
r3 = STATS_max

set terminal pngcairo size 1000,700 noenhanced
set output dir.'/switching.png'
set multiplot layout 2,1 title sprintf('egang policy switching%s: oracle arm, repetition 1 (steady %g/s, burst %g/s, steady %g/s)', label, r1, r2, r3)
set grid
set key top left
set object 1 rect from s1, graph 0 to s1 + s2, graph 1 fc rgb '#eeeeee' behind
set xrange [0:s1 + s2 + s3]
sel(arm, kind) = strcol(1) eq arm && $2 == 1 && strcol(3) eq kind ? $4 : NaN

set ylabel 'TTFT ms (log)'
set logscale y
plot timeline using (sel('throughput', 'ttft')):5 with points pt 6 ps 0.5 lc rgb '#bbbbbb' title 'fixed throughput', \
     timeline using (sel('latency', 'ttft')):5 with points pt 4 ps 0.5 lc rgb '#99bbee' title 'fixed latency', \
     timeline using (sel('oracle', 'ttft')):5 with points pt 7 ps 0.6 lc rgb '#cc0000' title 'oracle'

unset logscale y
set xlabel 'seconds (grey: the burst)'
set ylabel 'antagonist units/s'
set yrange [0:*]
set key bottom left
plot timeline using (sel('throughput', 'tenant')):5 with lines lc rgb '#bbbbbb' title 'fixed throughput', \
     timeline using (sel('latency', 'tenant')):5 with lines lc rgb '#99bbee' title 'fixed latency', \
     timeline using (sel('oracle', 'tenant')):5 with lines lw 2 lc rgb '#cc0000' title 'oracle'
unset multiplot
