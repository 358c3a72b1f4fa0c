/* plot: the benches' figures, drawn by gnuplot from the CSV files an
 * experiment wrote. The scripts are tools/plot/NAME.gp: each reads the CSV
 * files in DIR and writes DIR/NAME.png, and `gnuplot -c tools/plot/NAME.gp
 * DIR` redraws a figure by hand. They are built into the binary, so that a
 * bench draws its figure wherever egang runs.
 *
 * No shell is involved: gnuplot is started with posix_spawnp and an argv
 * and reads the script from a pipe; the scripts use DIR and every other
 * argument as strings only, never as gnuplot code, so a folder name with
 * quotes or $(...) is just a name. */
#ifndef EGANG_BENCH_PLOT_H
#define EGANG_BENCH_PLOT_H

#include <stdbool.h>

typedef enum bench_plot {
	BENCH_PLOT_COSCHEDULE, /* coschedule.gp: DIR */
	BENCH_PLOT_SWITCHING,  /* switching.gp: DIR [LABEL] */
	BENCH_PLOT_COUNT
} bench_plot_t;

/* The script's name ("coschedule", "switching"). */
const char *bench_plot_name(bench_plot_t p);

/* The script's text (tools/plot/NAME.gp as built), NUL-terminated. */
const char *bench_plot_script(bench_plot_t p);

/* Writes DIR/NAME.gp, a copy of the script for redrawing by hand (a new or
 * truncated file, 0644; a symbolic link there is refused, not followed)
 * and, with run, runs `gnuplot -c /dev/stdin DIR [label]` (label NULL:
 * none) with the built-in script on its stdin (a pipe: gnuplot never reads
 * the copy) and no signal blocked, and waits for it; gnuplot's output goes
 * to stderr. 0, or -1 + err_get(): one line naming what failed (the path
 * too long, the copy not written, gnuplot not installed, gnuplot's exit
 * status), the CSV files untouched. */
int bench_plot_draw(bench_plot_t p, const char *dir, const char *label, bool run);

#endif
