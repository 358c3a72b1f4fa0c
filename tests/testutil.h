/* Helpers shared by the cmocka tests. */
#ifndef EGANG_TESTUTIL_H
#define EGANG_TESTUTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

/* Path of a file in ../shared/models, or NULL when the folder is absent (the
 * test then skips; under CI=true a missing model is a failure). */
static inline const char *test_model_path(const char *file)
{
	static char buf[4096];
	const char *dir = getenv("EGANG_MODELS");
	snprintf(buf, sizeof buf, "%s/%s", dir ? dir : "../shared/models", file);
	if (access(buf, R_OK) == 0)
		return buf;
	const char *ci = getenv("CI");
	if (ci && strcmp(ci, "true") == 0)
		fail_msg("model %s is missing under CI", buf);
	return NULL;
}

#define SKIP_WITHOUT_MODEL(var, file)                                        \
	const char *var = test_model_path(file);                             \
	if (!var) {                                                          \
		print_message("no %s: skipped (../shared/models absent)\n", file); \
		skip();                                                      \
	}

/* A fresh temporary directory for the test (removed by the OS's tmp). */
static inline const char *test_tmpdir(void)
{
	static char dir[64];
	if (!dir[0]) {
		snprintf(dir, sizeof dir, "/tmp/egang-test-XXXXXX");
		if (!mkdtemp(dir))
			fail_msg("mkdtemp failed");
	}
	return dir;
}

#endif
