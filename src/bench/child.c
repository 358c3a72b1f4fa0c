/* child: this egang's children, started and stopped (child.h). */
#include "bench/child.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/base.h"

static char self_exe[4096];

int child_find_exe(void)
{
	if (self_exe[0])
		return 0;
	ssize_t n = readlink("/proc/self/exe", self_exe, sizeof self_exe - 1);
	if (n <= 0) {
		self_exe[0] = 0;
		return err_set("cannot find this executable (/proc/self/exe)");
	}
	self_exe[n] = 0;
	return 0;
}

const char *child_exe(void) { return self_exe; }

pid_t child_spawn(char *const args[], int out_fd, int err_fd)
{
	pid_t pid = fork();
	if (pid < 0)
		return err_sys("fork");
	if (pid > 0)
		return pid;
	int dn = open("/dev/null", O_RDWR);
	if (dn < 0 || dup2(dn, 0) < 0 || dup2(out_fd >= 0 ? out_fd : dn, 1) < 0 ||
	    dup2(err_fd >= 0 ? err_fd : dn, 2) < 0)
		_exit(127);
	if (dn > 2)
		close(dn);
	execv(self_exe, args);
	_exit(127);
}

void child_stop(pid_t pid, int sig, double wait_s)
{
	if (pid <= 0)
		return;
	/* signal only a child of ours that is not yet reaped: once reaped,
	 * its pid may be another process's */
	pid_t r = waitpid(pid, NULL, WNOHANG);
	if (r == pid || (r < 0 && errno == ECHILD))
		return;
	if (sig)
		kill(pid, sig);
	uint64_t end = time_now_ns() + (uint64_t)(wait_s * 1e9);
	while (time_now_ns() < end) {
		r = waitpid(pid, NULL, WNOHANG);
		if (r == pid || (r < 0 && errno == ECHILD)) /* ended, or reaped */
			return;
		usleep(10000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

bool child_wait_ok(pid_t pid)
{
	int st = 0;
	if (pid <= 0 || waitpid(pid, &st, 0) != pid)
		return false;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

bool child_running(pid_t pid)
{
	return pid > 0 && waitpid(pid, NULL, WNOHANG) == 0;
}

double child_cpu_s(pid_t pid)
{
	if (pid <= 0)
		return 0;
	char path[64], buf[1024];
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	size_t k = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[k] = 0;
	char *p = strrchr(buf, ')'); /* the command name may hold spaces */
	unsigned long long ut = 0, st = 0;
	if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
			 &ut, &st) != 2)
		return 0;
	return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

int child_log_open(const char *path)
{
	return open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
}

int child_serve_port(const char *log_path)
{
	size_t len;
	char *t = file_read_all(log_path, &len);
	if (!t)
		return 0;
	int port = 0;
	char *p = strstr(t, " on http://");
	if (p) {
		char *comma = strchr(p, ',');
		if (comma) {
			char *colon = comma;
			while (colon > p && *colon != ':')
				colon--;
			port = atoi(colon + 1);
		}
	}
	free(t);
	return port;
}
