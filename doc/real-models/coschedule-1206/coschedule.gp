# The figure of `egang bench coschedule`: the co-scheduling frontier, tenant
# work against inference tok/s, one colour per duty: the static splits as a
# line, the elastic gang (preempt) as a triangle, the knee-capped gang as a
# square. Reads DIR/coschedule.csv; writes DIR/coschedule.png.
#
# usage: gnuplot -c tools/plot/coschedule.gp DIR
# `egang bench coschedule` runs this script (built into the binary) with its
# --out folder, without a shell, and leaves a copy in DIR/coschedule.gp.
# DIR is only ever used as a string, never evaluated.
if (ARGC < 1) {
	print "usage: gnuplot -c coschedule.gp DIR"
	exit status 2
}
dir = ARG1
csv = dir.'/coschedule.csv'
set datafile separator ','

# the duties in the order of the CSV's rows, each once, as integers
set table $duty_col
plot csv using 2 with table
unset table
duties = ''
do for [i = 1:|$duty_col|] {
	d = sprintf('%d', int(real($duty_col[i])))
	if (strstrt(' '.duties.' ', ' '.d.' ') == 0) {
		duties = duties.' '.d
	}
}
if (words(duties) == 0) {
	print 'coschedule.gp: '.csv.' has no rows'
	exit status 1
}

set terminal pngcairo size 900,600 noenhanced
set output dir.'/coschedule.png'
set title 'egang co-scheduling frontier: tenant work vs inference'
set xlabel 'inference tok/s'
set ylabel 'tenant work (fraction of tenants alone)'
set key outside right
set grid
# the plot command names the file by the variable csv and the duties by
# number only, so that nothing read from outside is evaluated
cmd = ''
do for [i = 1:words(duties)] {
	d = int(word(duties, i))
	cmd = cmd.sprintf("%scsv using ($2==%d && strstrt(strcol(1),'static')==1 ? $3 : NaN):7 with linespoints lc %d pt 7 title 'static, duty %d%%', ", i > 1 ? ', ' : '', d, i, d)
	cmd = cmd.sprintf("csv using ($2==%d && strcol(1) eq 'elastic-preempt' ? $3 : NaN):7 with points lc %d pt 9 ps 2 title 'elastic, duty %d%%', ", d, i, d)
	cmd = cmd.sprintf("csv using ($2==%d && strcol(1) eq 'knee' ? $3 : NaN):7 with points lc %d pt 5 ps 1.5 title 'knee, duty %d%%'", d, i, d)
}
eval 'plot '.cmd
