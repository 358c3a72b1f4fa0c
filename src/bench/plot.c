/* plot: gnuplot started without a shell on a built-in script (plot.h). */
#include "bench/plot.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

#include "base/base.h"

/* ---- the scripts, built in ----
 * .incbin copies tools/plot/NAME.gp into .rodata at build time (the path is
 * relative to the repository root, where make runs the compiler; the
 * Makefile makes plot.o depend on the scripts); a NUL byte ends each. */
#define PLOT_EMBED(sym, file)                                               \
	__asm__(".pushsection .rodata\n"                                    \
		".global " #sym "\n"                                        \
		".hidden " #sym "\n"                                        \
		#sym ":\n"                                                  \
		".incbin \"" file "\"\n"                                    \
		".byte 0\n"                                                 \
		".popsection\n")
PLOT_EMBED(egang_plot_coschedule_gp, "tools/plot/coschedule.gp");
PLOT_EMBED(egang_plot_switching_gp, "tools/plot/switching.gp");
extern const char egang_plot_coschedule_gp[] __attribute__((visibility("hidden")));
extern const char egang_plot_switching_gp[] __attribute__((visibility("hidden")));

static const struct {
	const char *name;
	const char *text;
} scripts[BENCH_PLOT_COUNT] = {
	[BENCH_PLOT_COSCHEDULE] = {"coschedule", egang_plot_coschedule_gp},
	[BENCH_PLOT_SWITCHING] = {"switching", egang_plot_switching_gp},
};

const char *bench_plot_name(bench_plot_t p) { return scripts[p].name; }
const char *bench_plot_script(bench_plot_t p) { return scripts[p].text; }

/* ---- gnuplot ---- */

/* Runs argv (argv[0] looked up on PATH) with stdout onto stderr and the
 * default action for every signal this process may ignore (SIGPIPE in the
 * switching bench); its exit status, or -1 + err_get(). */
static int spawn_wait(char *const argv[])
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	sigset_t def;
	sigemptyset(&def);
	sigaddset(&def, SIGPIPE);
	sigaddset(&def, SIGINT);
	sigaddset(&def, SIGTERM);
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, 2, 1);
	posix_spawnattr_init(&at);
	posix_spawnattr_setsigdefault(&at, &def);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGDEF);
	extern char **environ;
	pid_t pid;
	int rc = posix_spawnp(&pid, argv[0], &fa, &at, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	if (rc == ENOENT)
		return err_set("%s is not installed (not found on PATH)", argv[0]);
	if (rc)
		return err_set("starting %s: %s", argv[0], strerror(rc));
	int st;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return err_sys("waitpid");
	if (WIFSIGNALED(st))
		return err_set("%s was killed by signal %d", argv[0], WTERMSIG(st));
	return WEXITSTATUS(st);
}

int bench_plot_draw(bench_plot_t p, const char *dir, const char *label, bool run)
{
	char path[4200];
	snprintf(path, sizeof path, "%s/%s.gp", dir, scripts[p].name);
	FILE *f = fopen(path, "w");
	if (!f)
		return err_set("%s: %s", path, strerror(errno));
	bool ok = fputs(scripts[p].text, f) >= 0;
	if (fclose(f) != 0 || !ok)
		return err_set("%s: %s", path, strerror(errno));
	if (!run)
		return 0;
	char *argv[] = {"gnuplot", "-c", path, (char *)dir, (char *)label, NULL};
	int st = spawn_wait(argv);
	if (st == 0)
		return 0;
	char why[300];
	if (st > 0)
		snprintf(why, sizeof why, "gnuplot exited with status %d", st);
	else
		snprintf(why, sizeof why, "%s", err_get());
	return err_set("%s: %s/%s.png not drawn; the CSV files are complete (to "
		       "draw it: gnuplot -c %s %s)", why, dir, scripts[p].name, path, dir);
}
