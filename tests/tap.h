/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * A tiny TAP producer. Each test runs in a forked child with a timeout, because
 * Landlock, seccomp, no_new_privs and namespaces cannot be undone in a process,
 * and a hung test must not hang the suite. Assertions print file:line and both
 * values, then fail the test.
 *
 *   TEST(name) { ASSERT_EQ(1 + 1, 2); }
 *   int main(void) { return tap_main(); }
 *
 * A test may call SKIP("reason") when a kernel feature is missing; with
 * WARD_MUST_WORK=1 in the environment a skip counts as a failure.
 */
#include <errno.h>
#include <ftw.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

typedef void (*tap_fn)(void);

struct tap_test {
	const char *name;
	tap_fn fn;
	unsigned timeout_s;
};

#define TAP_MAX_TESTS 512
static struct tap_test tap_tests[TAP_MAX_TESTS];
static unsigned tap_n_tests;

#define TAP_EXIT_SKIP 77
#define TAP_EXIT_SKIP_ENV 78

static inline void tap_register(const char *name, tap_fn fn, unsigned timeout_s)
{
	if (tap_n_tests >= TAP_MAX_TESTS) {
		fprintf(stderr, "tap: too many tests\n");
		abort();
	}
	tap_tests[tap_n_tests++] = (struct tap_test){name, fn, timeout_s};
}

#define TEST_TIMEOUT(name, secs)                                       \
	static void test_##name(void);                                 \
	__attribute__((constructor)) static void register_##name(void) \
	{                                                              \
		tap_register(#name, test_##name, secs);                \
	}                                                              \
	static void test_##name(void)

#define TEST(name) TEST_TIMEOUT(name, 30)

__attribute__((format(printf, 3, 4), noreturn)) static inline void tap_fail(const char *file,
									    int line,
									    const char *fmt, ...)
{
	va_list ap;

	fprintf(stdout, "# %s:%d: ", file, line);
	va_start(ap, fmt);
	vfprintf(stdout, fmt, ap);
	va_end(ap);
	fputc('\n', stdout);
	fflush(stdout);
	_exit(1);
}

#define SKIP(...)                     \
	do {                          \
		printf("# skip: ");   \
		printf(__VA_ARGS__);  \
		printf("\n");         \
		fflush(stdout);       \
		_exit(TAP_EXIT_SKIP); \
	} while (0)

/*
 * A skip for what the machine running the tests lacks, not the kernel (a
 * container without any cgroup filesystem mounted): never a failure, even
 * with WARD_MUST_WORK=1.
 */
#define SKIP_ENV(...)                     \
	do {                              \
		printf("# skip: ");       \
		printf(__VA_ARGS__);      \
		printf("\n");             \
		fflush(stdout);           \
		_exit(TAP_EXIT_SKIP_ENV); \
	} while (0)

#define ASSERT_TRUE(x)                                                         \
	do {                                                                   \
		if (!(x))                                                      \
			tap_fail(__FILE__, __LINE__, "expected true: %s", #x); \
	} while (0)

#define ASSERT_FALSE(x)                                                         \
	do {                                                                    \
		if (x)                                                          \
			tap_fail(__FILE__, __LINE__, "expected false: %s", #x); \
	} while (0)

#define ASSERT_EQ(a, b)                                                                       \
	do {                                                                                  \
		intmax_t _a = (intmax_t)(a), _b = (intmax_t)(b);                              \
		if (_a != _b)                                                                 \
			tap_fail(__FILE__, __LINE__, "%s == %s: %jd != %jd", #a, #b, _a, _b); \
	} while (0)

#define ASSERT_NE(a, b)                                                                 \
	do {                                                                            \
		intmax_t _a = (intmax_t)(a), _b = (intmax_t)(b);                        \
		if (_a == _b)                                                           \
			tap_fail(__FILE__, __LINE__, "%s != %s: both %jd", #a, #b, _a); \
	} while (0)

#define ASSERT_GE(a, b)                                                                      \
	do {                                                                                 \
		intmax_t _a = (intmax_t)(a), _b = (intmax_t)(b);                             \
		if (!(_a >= _b))                                                             \
			tap_fail(__FILE__, __LINE__, "%s >= %s: %jd < %jd", #a, #b, _a, _b); \
	} while (0)

#define ASSERT_LE(a, b)                                                                      \
	do {                                                                                 \
		intmax_t _a = (intmax_t)(a), _b = (intmax_t)(b);                             \
		if (!(_a <= _b))                                                             \
			tap_fail(__FILE__, __LINE__, "%s <= %s: %jd > %jd", #a, #b, _a, _b); \
	} while (0)

#define ASSERT_STREQ(a, b)                                                                 \
	do {                                                                               \
		const char *_a = (a), *_b = (b);                                           \
		if (!_a || !_b || strcmp(_a, _b) != 0)                                     \
			tap_fail(__FILE__, __LINE__, "%s == %s: \"%s\" != \"%s\"", #a, #b, \
				 _a ? _a : "(null)", _b ? _b : "(null)");                  \
	} while (0)

#define ASSERT_CONTAINS(hay, needle)                                                             \
	do {                                                                                     \
		const char *_h = (hay), *_n = (needle);                                          \
		if (!_h || !strstr(_h, _n))                                                      \
			tap_fail(__FILE__, __LINE__, "%s contains \"%s\": got \"%s\"", #hay, _n, \
				 _h ? _h : "(null)");                                            \
	} while (0)

/* Asserts a -errno style return is >= 0, printing the error otherwise. */
#define ASSERT_OK(expr)                                                                \
	do {                                                                           \
		intmax_t _r = (intmax_t)(expr);                                        \
		if (_r < 0)                                                            \
			tap_fail(__FILE__, __LINE__, "%s failed: %jd (%s)", #expr, _r, \
				 strerror((int)-_r));                                  \
	} while (0)

static inline int tap_main(void)
{
	const char *must = getenv("WARD_MUST_WORK");
	const char *only = getenv("TAP_ONLY");
	bool must_work = must && strcmp(must, "1") == 0;
	unsigned failed = 0;

	printf("1..%u\n", tap_n_tests);
	fflush(stdout);
	for (unsigned i = 0; i < tap_n_tests; i++) {
		struct tap_test *t = &tap_tests[i];
		int status = 0;
		pid_t pid;

		if (only && strcmp(only, t->name) != 0) {
			printf("ok %u - %s # SKIP not selected\n", i + 1, t->name);
			continue;
		}
		pid = fork();
		if (pid < 0) {
			printf("not ok %u - %s # fork: %s\n", i + 1, t->name, strerror(errno));
			failed++;
			continue;
		}
		if (pid == 0) {
			/* Own process group so the timeout kills whatever the test started. */
			setpgid(0, 0);
			alarm(t->timeout_s);
			t->fn();
			fflush(stdout);
			_exit(0);
		}
		while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
		kill(-pid, SIGKILL);
		if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
			printf("ok %u - %s\n", i + 1, t->name);
		} else if (WIFEXITED(status) && WEXITSTATUS(status) == TAP_EXIT_SKIP_ENV) {
			printf("ok %u - %s # SKIP\n", i + 1, t->name);
		} else if (WIFEXITED(status) && WEXITSTATUS(status) == TAP_EXIT_SKIP) {
			if (must_work) {
				printf("not ok %u - %s # skipped, but WARD_MUST_WORK=1\n", i + 1,
				       t->name);
				failed++;
			} else {
				printf("ok %u - %s # SKIP\n", i + 1, t->name);
			}
		} else if (WIFSIGNALED(status)) {
			printf("not ok %u - %s # killed by signal %d%s\n", i + 1, t->name,
			       WTERMSIG(status), WTERMSIG(status) == SIGALRM ? " (timeout)" : "");
			failed++;
		} else {
			printf("not ok %u - %s\n", i + 1, t->name);
			failed++;
		}
		fflush(stdout);
	}
	return failed ? 1 : 0;
}

/*
 * tap_main() in a scratch directory: mkdtemp(template) first (each test then
 * makes what it needs below it, for example a directory named after its pid),
 * everything removed after the last test.
 */
static inline int tap_scratch_remove(const char *path, const struct stat *st, int flag,
				     struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path) < 0 ? -1 : 0;
}

static inline int tap_main_in_scratch(char *template)
{
	int r;

	if (!mkdtemp(template)) {
		printf("Bail out! mkdtemp %s: %s\n", template, strerror(errno));
		return 1;
	}
	r = tap_main();
	if (nftw(template, tap_scratch_remove, 16, FTW_DEPTH | FTW_PHYS) < 0)
		fprintf(stderr, "tap: could not remove %s: %s\n", template, strerror(errno));
	return r;
}
