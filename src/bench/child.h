/* child: the processes an experiment starts from this executable (`egang
 * serve`, `egang burn`, `egang control`, `egang policy set`) and stops.
 *
 * Each child is this egang, found once through /proc/self/exe, started by
 * fork + execv with an argv (no shell), stdin on /dev/null, stdout and
 * stderr on the descriptors given, no other descriptor added. It inherits
 * the calling thread's CPU affinity and scheduling class (fork copies
 * both), so callers spawn from a thread that is not pinned and runs in the
 * class the children should start in (the experiments' main thread); a
 * child that needs given CPUs gets --cores. */
#ifndef EGANG_BENCH_CHILD_H
#define EGANG_BENCH_CHILD_H

#include <stdbool.h>
#include <sys/types.h>

/* Finds this executable's path (once); 0, or -1 + err_get(). */
int child_find_exe(void);

/* This executable's path ("" before child_find_exe). */
const char *child_exe(void);

/* Starts this egang with args (args[0] is only its name) and its stdout and
 * stderr on out_fd and err_fd (-1: /dev/null); the pid, or -1 + err_get()
 * when fork fails. A failed exec, or descriptors not set up, exits the
 * child with status 127. */
pid_t child_spawn(char *const args[], int out_fd, int err_fd);

/* Sends sig (0: none) and waits up to wait_s for the child to end, then
 * kills it (SIGKILL) and reaps it. pid <= 0, a child that has ended (it is
 * reaped here) and a pid that is no child of this process (ECHILD) get no
 * signal. A pid reaped before (child_running, child_wait_ok, child_stop) is
 * spent: it may be a newer child's by now, so callers set it to -1. */
void child_stop(pid_t pid, int sig, double wait_s);

/* Waits for the child to end (it is reaped: pid is spent); true when it
 * exited with status 0. */
bool child_wait_ok(pid_t pid);

/* True while the child runs; false once it has ended (it is reaped: pid is
 * spent, set it to -1). */
bool child_running(pid_t pid);

/* CPU seconds (user + system, all threads) of a child so far, from
 * /proc/PID/stat (readable until it is reaped); 0 when unreadable. */
double child_cpu_s(pid_t pid);

/* Opens path for a child's output (created 0600, truncated, close-on-exec
 * in this process); the descriptor or -1. */
int child_log_open(const char *path);

/* The port of `egang serve --port 0` from its startup line ("... on
 * http://HOST:PORT, ...") in its log; 0 until the line is there. */
int child_serve_port(const char *log_path);

#endif
