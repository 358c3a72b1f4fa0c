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
 * relative to the repository root, which the Makefiles add to the
 * assembler's search path, -Wa,-I, and plot.o depends on the scripts); a
 * NUL byte ends each. */
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

/* A pipe whose read end holds the whole of text (closed write end: the
 * reader sees EOF after it), close-on-exec; the read end, or -1 +
 * err_get(). Written before the reader starts, so no write can block or
 * raise SIGPIPE; the scripts are a few KiB, under a pipe's one-page
 * minimum, and the pipe is grown for a longer one. */
static int script_pipe(const char *text)
{
	int p[2];
	size_t len = strlen(text);
	if (pipe2(p, O_CLOEXEC) < 0)
		return err_sys("pipe");
	if (len > 4096)
		fcntl(p[1], F_SETPIPE_SZ, (int)len);
	fcntl(p[1], F_SETFL, O_NONBLOCK);
	ssize_t w = write(p[1], text, len);
	close(p[1]);
	if (w != (ssize_t)len) {
		close(p[0]);
		return err_set("the gnuplot script (%zu bytes) does not fit a pipe", len);
	}
	return p[0];
}

/* Runs argv (argv[0] looked up on PATH) with stdin on in_fd, stdout onto
 * stderr, no signal blocked and the default action for every signal this
 * process may ignore (SIGPIPE in the switching bench); its exit status, or
 * -1 + err_get(). */
static int spawn_wait(char *const argv[], int in_fd)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	sigset_t def, none;
	sigemptyset(&none);
	sigemptyset(&def);
	sigaddset(&def, SIGPIPE);
	sigaddset(&def, SIGINT);
	sigaddset(&def, SIGTERM);
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, in_fd, 0);
	posix_spawn_file_actions_adddup2(&fa, 2, 1);
	posix_spawnattr_init(&at);
	posix_spawnattr_setsigdefault(&at, &def);
	posix_spawnattr_setsigmask(&at, &none);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
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

/* text into path, a new or truncated regular file (0644); a symbolic link
 * at path is refused, not followed. 0, or -1 + err_get() naming path. */
static int script_copy(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		return err_set("%s: %s", path, strerror(errno));
	size_t len = strlen(text), off = 0;
	while (off < len) {
		ssize_t w = write(fd, text + off, len - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			int e = w < 0 ? errno : EIO;
			close(fd);
			return err_set("%s: %s", path, strerror(e));
		}
		off += (size_t)w;
	}
	if (close(fd) < 0)
		return err_set("%s: %s", path, strerror(errno));
	return 0;
}

int bench_plot_draw(bench_plot_t p, const char *dir, const char *label, bool run)
{
	char path[4200];
	if (snprintf(path, sizeof path, "%s/%s.gp", dir, scripts[p].name) >=
	    (int)sizeof path)
		return err_set("the script's path is longer than %zu bytes: %s/%s.gp",
			       sizeof path - 1, dir, scripts[p].name);
	if (script_copy(path, scripts[p].text) < 0)
		return -1;
	if (!run)
		return 0;
	/* gnuplot reads the built-in text, not the copy (which the folder's
	 * owner may change before gnuplot would open it) */
	int in = script_pipe(scripts[p].text);
	if (in < 0)
		return -1;
	char *argv[] = {"gnuplot", "-c", "/dev/stdin", (char *)dir, (char *)label, NULL};
	int st = spawn_wait(argv, in);
	close(in);
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
