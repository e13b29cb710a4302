/* SPDX-License-Identifier: MIT */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/cleanup.h"
#include "basic/util.h"

int ward__open_dir_readable(int dfd, const char *name)
{
	_cleanup_close_ int o = -1;
	char proc[64];
	struct stat st;
	int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (fd >= 0)
		return fd;
	if (errno != EACCES && errno != EPERM)
		return -errno;
	o = openat(dfd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (o < 0)
		return -errno;
	if (fstat(o, &st) < 0)
		return -errno;
	if (st.st_uid != geteuid())
		return -EACCES;
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", o);
	if (chmod(proc, (st.st_mode & 07777) | S_IRUSR | S_IXUSR) < 0)
		return -errno;
	fd = openat(o, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	return fd >= 0 ? fd : -errno;
}

bool ward__path_under(const char *path, const char *prefix)
{
	size_t n = strlen(prefix);

	if (n == 1 && prefix[0] == '/')
		return path[0] == '/';
	if (strncmp(path, prefix, n) != 0)
		return false;
	return path[n] == '\0' || path[n] == '/';
}

size_t ward__path_depth(const char *path)
{
	size_t depth = 0;

	for (const char *p = path; *p; p++)
		if (*p == '/' && p[1] != '\0' && p[1] != '/')
			depth++;
	return depth;
}

char *ward__path_join(const char *a, const char *b)
{
	size_t la = strlen(a), lb;
	char *r;

	while (la > 1 && a[la - 1] == '/')
		la--;
	while (*b == '/')
		b++;
	lb = strlen(b);
	r = malloc(la + 1 + lb + 1);
	if (!r)
		return NULL;
	memcpy(r, a, la);
	if (!(la == 1 && a[0] == '/'))
		r[la++] = '/';
	memcpy(r + la, b, lb + 1);
	if (lb == 0 && la > 1)
		r[la - 1] = '\0';
	return r;
}

const char *ward__path_split(const char *path, char *buf, size_t size, const char **ret_name)
{
	const char *slash = strrchr(path, '/');
	size_t n;

	/* No pointer difference with NULL: that is undefined, even unused. */
	if (!slash)
		return NULL;
	n = (size_t)(slash - path);
	if (n + 1 >= size)
		return NULL;
	memcpy(buf, path, n ? n : 1);
	buf[n ? n : 1] = '\0';
	*ret_name = slash + 1;
	return buf;
}

int ward__mkdir_parents(const char *dir, mode_t mode)
{
	_cleanup_free_ char *p = strdup(dir);

	if (!p)
		return -ENOMEM;
	for (char *s = p + 1;; s++) {
		if (*s == '/' || *s == '\0') {
			char save = *s;

			*s = '\0';
			if (mkdir(p, mode) < 0 && errno != EEXIST)
				return -errno;
			*s = save;
			if (!save)
				break;
		}
	}
	return 0;
}

int ward__hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

char *ward__path_absolute(const char *path)
{
	_cleanup_free_ char *joined = NULL;
	char *out, *o;
	const char *p;

	if (!path || !*path) {
		errno = EINVAL;
		return NULL;
	}
	if (path[0] != '/') {
		char cwd[PATH_MAX];

		if (!getcwd(cwd, sizeof(cwd)))
			return NULL;
		joined = ward__path_join(cwd, path);
		if (!joined)
			return NULL;
		path = joined;
	}
	out = malloc(strlen(path) + 2);
	if (!out)
		return NULL;
	o = out;
	p = path;
	while (*p) {
		const char *s;
		size_t n;

		while (*p == '/')
			p++;
		if (!*p)
			break;
		s = p;
		while (*p && *p != '/')
			p++;
		n = (size_t)(p - s);
		if (n == 1 && s[0] == '.')
			continue;
		if (n == 2 && s[0] == '.' && s[1] == '.') {
			while (o > out && *--o != '/')
				;
			continue;
		}
		*o++ = '/';
		memcpy(o, s, n);
		o += n;
	}
	if (o == out)
		*o++ = '/';
	*o = '\0';
	return out;
}

int ward__fd_nonblock(int fd, bool nonblock)
{
	int flags = fcntl(fd, F_GETFL);

	if (flags < 0)
		return -errno;
	flags = nonblock ? flags | O_NONBLOCK : flags & ~O_NONBLOCK;
	return fcntl(fd, F_SETFL, flags) < 0 ? -errno : 0;
}

int ward__fd_cloexec(int fd, bool cloexec)
{
	int flags = fcntl(fd, F_GETFD);

	if (flags < 0)
		return -errno;
	flags = cloexec ? flags | FD_CLOEXEC : flags & ~FD_CLOEXEC;
	return fcntl(fd, F_SETFD, flags) < 0 ? -errno : 0;
}

int ward__write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len > 0) {
		ssize_t n = write(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

ssize_t ward__read_full(int fd, void *buf, size_t len)
{
	char *p = buf;
	size_t got = 0;

	while (got < len) {
		ssize_t n = read(fd, p + got, len - got);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	return (ssize_t)got;
}

/* Reads up to max bytes (reading one more to tell "too large"), NUL-terminated. */
static int read_bounded(int fd, size_t max, char **ret, size_t *ret_len)
{
	_cleanup_free_ char *buf = malloc(max + 2);
	ssize_t n;

	if (!buf)
		return -ENOMEM;
	n = ward__read_full(fd, buf, max + 1);
	if (n < 0)
		return (int)n;
	if ((size_t)n > max)
		return -EFBIG;
	buf[n] = '\0';
	if (ret_len)
		*ret_len = (size_t)n;
	*ret = TAKE_PTR(buf);
	return 0;
}

int ward__read_file(const char *path, size_t max, char **ret, size_t *ret_len)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);

	if (fd < 0)
		return -errno;
	return read_bounded(fd, max, ret, ret_len);
}

int ward__read_regular_file(const char *path, size_t max, char **ret, size_t *ret_len)
{
	_cleanup_close_ int fd = -1;
	struct stat st;

	/* stat first: opening a device can have effects of its own; a FIFO would block. */
	if (stat(path, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	if ((uint64_t)st.st_size > max)
		return -EFBIG;
	return read_bounded(fd, max, ret, ret_len);
}

ssize_t ward__read_small(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (size == 0)
		return -EINVAL;
	buf[0] = '\0';
	if (fd < 0)
		return -errno;
	n = read(fd, buf, size - 1);
	if (n < 0)
		n = -errno;
	close(fd);
	if (n >= 0)
		buf[n] = '\0';
	return n;
}

long ward__read_proc_long(const char *path, long dflt)
{
	char buf[32];

	return ward__read_small(path, buf, sizeof(buf)) > 0 ? strtol(buf, NULL, 10) : dflt;
}

long ward__read_pid_max(void)
{
	long v = ward__read_proc_long("/proc/sys/kernel/pid_max", 4194304);

	return v >= 301 && v <= 4194304 ? v : 4194304;
}

int ward__write_file(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC | O_NOCTTY);
	int r;

	if (fd < 0)
		return -errno;
	r = ward__write_all(fd, s, strlen(s));
	close(fd);
	return r;
}

int ward__parse_u64(const char *s, uint64_t *ret)
{
	uint64_t v = 0;

	if (!s || !*s)
		return -EINVAL;
	for (const char *p = s; *p; p++) {
		if (*p < '0' || *p > '9')
			return -EINVAL;
		if (v > (UINT64_MAX - (uint64_t)(*p - '0')) / 10)
			return -ERANGE;
		v = v * 10 + (uint64_t)(*p - '0');
	}
	*ret = v;
	return 0;
}

int ward__parse_seconds_ms(const char *s, uint64_t *ret_ms)
{
	uint64_t whole = 0, frac = 0, scale = 1000;
	const char *p = s;

	if (!s || !*s)
		return -EINVAL;
	if (*p == '.' && !p[1])
		return -EINVAL;
	for (; *p && *p != '.'; p++) {
		if (*p < '0' || *p > '9')
			return -EINVAL;
		whole = whole * 10 + (uint64_t)(*p - '0');
		if (whole > 1000000000ULL)
			return -ERANGE;
	}
	if (*p == '.') {
		p++;
		if (!*p)
			return -EINVAL;
		for (; *p; p++) {
			if (*p < '0' || *p > '9')
				return -EINVAL;
			if (scale > 1) {
				scale /= 10;
				frac += (uint64_t)(*p - '0') * scale;
			}
		}
	}
	*ret_ms = whole * 1000 + frac;
	return 0;
}

int ward__parse_size(const char *s, uint64_t *ret)
{
	char num[32];
	size_t n;
	uint64_t v, mult = 1;
	int r;

	if (!s || !*s)
		return -EINVAL;
	n = strlen(s);
	if (n >= sizeof(num))
		return -ERANGE;
	memcpy(num, s, n + 1);
	switch (toupper((unsigned char)num[n - 1])) {
	case 'K':
		mult = 1ULL << 10;
		break;
	case 'M':
		mult = 1ULL << 20;
		break;
	case 'G':
		mult = 1ULL << 30;
		break;
	default:
		break;
	}
	if (mult > 1)
		num[--n] = '\0';
	r = ward__parse_u64(num, &v);
	if (r < 0)
		return r;
	if (v > UINT64_MAX / mult)
		return -ERANGE;
	*ret = v * mult;
	return 0;
}

uint64_t ward__now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

uint64_t ward__now_ms(void)
{
	return ward__now_ns() / 1000000ULL;
}

/*
 * write(2) to a pipe without SIGPIPE: a command that exits without reading
 * its input must not kill the process embedding libward. The pipe
 * cannot be given MSG_NOSIGNAL, so SIGPIPE is blocked in this thread for the
 * call and a SIGPIPE raised by it is consumed (libpq's technique); one that
 * was already pending stays pending.
 */
static bool sigpipe_ignored;

void ward__sigpipe_ignored(void)
{
	sigpipe_ignored = true;
}

ssize_t ward__write_nosigpipe(int fd, const void *p, size_t n)
{
	sigset_t pipe_set, old, pending;
	bool was_pending;
	ssize_t w;
	int saved;

	/* The process ignores SIGPIPE (the servers): a plain write says EPIPE, no signal. */
	if (sigpipe_ignored)
		return write(fd, p, n);

	sigemptyset(&pipe_set);
	sigaddset(&pipe_set, SIGPIPE);
	sigpending(&pending);
	was_pending = sigismember(&pending, SIGPIPE) == 1;
	pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
	w = write(fd, p, n);
	saved = errno;
	if (w < 0 && saved == EPIPE && !was_pending) {
		struct timespec zero = {0, 0};

		while (sigtimedwait(&pipe_set, NULL, &zero) < 0 && errno == EINTR)
			;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	errno = saved;
	return w;
}

int ward__pipe_one_nonblock(int fds[2], int nonblock_end)
{
	int r;

	if (pipe2(fds, O_CLOEXEC) < 0) {
		fds[0] = fds[1] = -1;
		return -errno;
	}
	r = ward__fd_nonblock(fds[nonblock_end], true);
	if (r < 0) {
		close(fds[0]);
		close(fds[1]);
		fds[0] = fds[1] = -1;
	}
	return r;
}

/* ---- the user */

/*
 * The home directory of uid from /etc/passwd, read directly: the CLI is
 * linked statically, where getpwuid() would need the C library's NSS modules
 * at run time.
 */
static char *passwd_home(uid_t uid)
{
	_cleanup_fclose_ FILE *f = fopen("/etc/passwd", "re");
	char line[4096];

	if (!f)
		return NULL;
	for (unsigned n = 0; n < 100000 && fgets(line, sizeof(line), f); n++) {
		char *field[7] = {0}, *p = line;
		size_t k = 0;
		uint64_t u;

		line[strcspn(line, "\n")] = '\0';
		while (k < 7) {
			field[k++] = p;
			p = strchr(p, ':');
			if (!p)
				break;
			*p++ = '\0';
		}
		if (k == 7 && ward__parse_u64(field[2], &u) == 0 && u == (uint64_t)uid &&
		    field[5][0] == '/')
			return strdup(field[5]);
	}
	return NULL;
}

int ward__home_dir(char **ret_home)
{
	const char *h = getenv("HOME");
	char *s;

	if (h && h[0] == '/')
		s = strdup(h);
	else
		s = passwd_home(getuid());
	if (!s)
		return -ENOENT;
	*ret_home = s;
	return 0;
}

char *ward__changes_dir_path(void)
{
	const char *d = getenv("WARD_CHANGES_DIR"), *x = getenv("XDG_STATE_HOME");
	char *home = NULL, *r;

	if (d && d[0] == '/')
		return ward__path_absolute(d);
	if (x && x[0] == '/') {
		char *abs = ward__path_absolute(x);

		r = abs ? ward__path_join(abs, "ward/changes") : NULL;
		free(abs);
		return r;
	}
	if (ward__home_dir(&home) < 0)
		return NULL;
	r = ward__path_join(home, ".local/state/ward/changes");
	free(home);
	return r;
}
