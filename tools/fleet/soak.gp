# The soak's figure (tools/fleet/soak.sh): the server's RSS, threads and
# open file descriptors over time, the warm-up and the idle phases shaded.
# Reads DIR/soak.csv; writes DIR/soak.png.
#
# usage: gnuplot -c tools/fleet/soak.gp DIR T_LOAD SECONDS [LABEL]
#   T_LOAD: seconds (the CSV's clock) when the load started; SECONDS: how
#   long it ran; LABEL goes into the title. DIR and LABEL are only ever used as
#   strings, never evaluated.
if (ARGC < 3) {
	print "usage: gnuplot -c soak.gp DIR T_LOAD SECONDS [LABEL]"
	exit status 2
}
dir = ARG1
t_load = real(ARG2)
t_idle = t_load + real(ARG3)
label = ARGC >= 4 && strlen(ARG4) > 0 ? ' ('.ARG4.')' : ''
data = dir.'/soak.csv'
set datafile separator ','
# the warm-up: the first 20% of the load, at least 20 s (soak.sh)
warm = t_load + (real(ARG3) * 0.2 > 20 ? real(ARG3) * 0.2 : 20)

set terminal pngcairo size 1000,800 noenhanced
set output dir.'/soak.png'
set multiplot layout 3,1 title sprintf('egang serve --parallel 8 --kv-mb 8 under normal, hostile and disconnecting clients%s', label)
set grid
set key off
set object 1 rect from graph 0, graph 0 to first t_load, graph 1 fc rgb '#e8e8e8' behind
set object 2 rect from first t_load, graph 0 to first warm, graph 1 fc rgb '#f4f0dc' behind
set object 3 rect from first t_idle, graph 0 to graph 1, graph 1 fc rgb '#e8e8e8' behind
set lmargin 10

set ylabel 'RSS MB'
set yrange [0:*]
plot data using 1:($3 / 1024.0) every ::1 with lines lw 2 lc rgb '#cc0000'

set ylabel 'threads'
plot data using 1:4 every ::1 with lines lw 2 lc rgb '#0055aa'

set ylabel 'open fds'
set xlabel 'seconds (grey: idle before, and the clients ending and idle after; beige: warm-up, not judged)'
plot data using 1:5 every ::1 with lines lw 2 lc rgb '#228822'
unset multiplot
