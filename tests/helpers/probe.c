/* SPDX-License-Identifier: MIT */
/*
 * probe: a multi-call helper the integration tests run *inside* the sandbox.
 *
 *   probe OP [ARG...]
 *
 * performs one operation and prints one line on stdout, "OP: ok" or
 * "OP: ERRNO_NAME" (e.g. "write: EROFS"), followed by details. Exit status: 0
 * when the operation succeeded, 1 when it failed, 2 on a usage error. The tests
 * assert on what the probe observed and, separately, on the effect on the host.
 *
 * The probe is deliberately standalone (no project headers): it must behave the
 * same whether or not ward's own code is correct.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/bpf.h>
#include <linux/io_uring.h>
#include <linux/keyctl.h>
#include <linux/perf_event.h>
#include <linux/sched.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#ifndef TIOCLINUX
#define TIOCLINUX 0x541C
#endif
#ifndef MOUNT_ATTR_RDONLY
#define MOUNT_ATTR_RDONLY 0x00000001
#endif
#ifndef AT_RECURSIVE
#define AT_RECURSIVE 0x8000
#endif

/* Caps on what a test passes in: the probe runs hostile-looking inputs only from our own tests. */
#define DATA_MAX 65536
#define LIST_MAX 512

static const char *op_name = "probe";

static const char *errname(int e)
{
	const char *n = strerrorname_np(e);

	return n ? n : "EUNKNOWN";
}

/* Prints "OP: ok details" and returns 0. */
__attribute__((format(printf, 1, 2))) static int ok(const char *fmt, ...)
{
	va_list ap;

	printf("%s: ok", op_name);
	if (fmt && fmt[0]) {
		putchar(' ');
		va_start(ap, fmt);
		vprintf(fmt, ap);
		va_end(ap);
	}
	putchar('\n');
	fflush(stdout);
	return 0;
}

/* Prints "OP: ERRNO details" and returns 1. */
__attribute__((format(printf, 2, 3))) static int fail(int e, const char *fmt, ...)
{
	va_list ap;

	printf("%s: %s", op_name, errname(e));
	if (fmt && fmt[0]) {
		putchar(' ');
		va_start(ap, fmt);
		vprintf(fmt, ap);
		va_end(ap);
	}
	putchar('\n');
	fflush(stdout);
	return 1;
}

static int usage(const char *msg)
{
	fprintf(stderr, "probe: %s: usage: %s\n", op_name, msg);
	return 2;
}

static bool parse_long(const char *s, long *ret)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 0);
	if (errno || end == s || *end)
		return false;
	*ret = v;
	return true;
}

/* Prints bytes with C-like escapes so one result stays on one line. */
static void print_escaped(const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)p[i];

		if (c == '\n')
			fputs("\\n", stdout);
		else if (c == '\\')
			fputs("\\\\", stdout);
		else if (c < 0x20 || c >= 0x7f)
			printf("\\x%02x", c);
		else
			putchar(c);
	}
}

static const char *data_arg(int argc, char **argv, int i)
{
	return argc > i ? argv[i] : "probe\n";
}

/* ------------------------------------------------------------ files */

static int write_file(const char *path, const char *data, int flags)
{
	size_t len = strnlen(data, DATA_MAX);
	ssize_t n;
	int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOCTTY | flags, 0644);

	if (fd < 0)
		return fail(errno, "open %s", path);
	n = write(fd, data, len);
	if (n < 0) {
		int e = errno;

		close(fd);
		return fail(e, "write %s", path);
	}
	if (close(fd) < 0)
		return fail(errno, "close %s", path);
	return ok("%zd bytes", n);
}

static int op_write(int argc, char **argv)
{
	if (argc < 2)
		return usage("write PATH [DATA]");
	return write_file(argv[1], data_arg(argc, argv, 2), O_TRUNC);
}

static int op_append(int argc, char **argv)
{
	if (argc < 2)
		return usage("append PATH [DATA]");
	return write_file(argv[1], data_arg(argc, argv, 2), O_APPEND);
}

/* write-fd FD [DATA]: writes to an inherited descriptor (for --keep-fd). */
static int op_write_fd(int argc, char **argv)
{
	long fd;
	const char *data;
	ssize_t n;

	if (argc < 2 || !parse_long(argv[1], &fd) || fd < 0 || fd > INT_MAX)
		return usage("write-fd FD [DATA]");
	data = data_arg(argc, argv, 2);
	n = write((int)fd, data, strnlen(data, DATA_MAX));
	if (n < 0)
		return fail(errno, "fd %ld", fd);
	return ok("%zd bytes", n);
}

static int op_read(int argc, char **argv)
{
	char buf[4096];
	ssize_t n;
	int fd;

	if (argc < 2)
		return usage("read PATH");
	fd = open(argv[1], O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return fail(errno, "open %s", argv[1]);
	n = read(fd, buf, sizeof(buf));
	if (n < 0) {
		int e = errno;

		close(fd);
		return fail(e, "read %s", argv[1]);
	}
	close(fd);
	printf("%s: ok ", op_name);
	print_escaped(buf, (size_t)n);
	putchar('\n');
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int op_ls(int argc, char **argv)
{
	char *names[LIST_MAX];
	size_t n = 0;
	struct dirent *de;
	DIR *d;

	if (argc < 2)
		return usage("ls DIR");
	d = opendir(argv[1]);
	if (!d)
		return fail(errno, "opendir %s", argv[1]);
	errno = 0;
	while ((de = readdir(d)) && n < LIST_MAX) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		names[n] = strdup(de->d_name);
		if (!names[n])
			break;
		n++;
	}
	if (errno) {
		int e = errno;

		closedir(d);
		return fail(e, "readdir %s", argv[1]);
	}
	closedir(d);
	qsort(names, n, sizeof(names[0]), cmp_str);
	printf("%s: ok", op_name);
	for (size_t i = 0; i < n; i++) {
		printf(" %s", names[i]);
		free(names[i]);
	}
	putchar('\n');
	return 0;
}

static int op_mkdir(int argc, char **argv)
{
	if (argc < 2)
		return usage("mkdir DIR");
	if (mkdir(argv[1], 0755) < 0)
		return fail(errno, "%s", argv[1]);
	return ok("%s", argv[1]);
}

static int op_rmdir(int argc, char **argv)
{
	if (argc < 2)
		return usage("rmdir DIR");
	if (rmdir(argv[1]) < 0)
		return fail(errno, "%s", argv[1]);
	return ok("%s", argv[1]);
}

static int op_unlink(int argc, char **argv)
{
	if (argc < 2)
		return usage("unlink PATH");
	if (unlink(argv[1]) < 0)
		return fail(errno, "%s", argv[1]);
	return ok("%s", argv[1]);
}

/* rename A B [exchange|noreplace] */
static int op_rename(int argc, char **argv)
{
	unsigned flags = 0;

	if (argc < 3)
		return usage("rename OLD NEW [exchange|noreplace]");
	if (argc > 3 && strcmp(argv[3], "exchange") == 0)
		flags = RENAME_EXCHANGE;
	else if (argc > 3 && strcmp(argv[3], "noreplace") == 0)
		flags = RENAME_NOREPLACE;
	else if (argc > 3)
		return usage("rename OLD NEW [exchange|noreplace]");
	if (renameat2(AT_FDCWD, argv[1], AT_FDCWD, argv[2], flags) < 0)
		return fail(errno, "%s -> %s", argv[1], argv[2]);
	return ok("%s -> %s", argv[1], argv[2]);
}

static int op_link(int argc, char **argv)
{
	if (argc < 3)
		return usage("link TARGET NEWPATH");
	if (link(argv[1], argv[2]) < 0)
		return fail(errno, "%s -> %s", argv[2], argv[1]);
	return ok("%s -> %s", argv[2], argv[1]);
}

static int op_symlink(int argc, char **argv)
{
	if (argc < 3)
		return usage("symlink TARGET LINKPATH");
	if (symlink(argv[1], argv[2]) < 0)
		return fail(errno, "%s -> %s", argv[2], argv[1]);
	return ok("%s -> %s", argv[2], argv[1]);
}

static int op_readlink(int argc, char **argv)
{
	char buf[PATH_MAX];
	ssize_t n;

	if (argc < 2)
		return usage("readlink PATH");
	n = readlink(argv[1], buf, sizeof(buf) - 1);
	if (n < 0)
		return fail(errno, "%s", argv[1]);
	buf[n] = 0;
	return ok("%s", buf);
}

static int op_chmod(int argc, char **argv)
{
	long mode;

	if (argc < 3 || !parse_long(argv[2], &mode))
		return usage("chmod PATH OCTAL-MODE (e.g. 0777)");
	if (chmod(argv[1], (mode_t)mode) < 0)
		return fail(errno, "%s", argv[1]);
	return ok("%s %04lo", argv[1], mode);
}

static int op_truncate(int argc, char **argv)
{
	long len = 0;

	if (argc < 2 || (argc > 2 && !parse_long(argv[2], &len)))
		return usage("truncate PATH [LENGTH]");
	if (truncate(argv[1], len) < 0)
		return fail(errno, "%s", argv[1]);
	return ok("%s %ld", argv[1], len);
}

static const char *type_name(mode_t m)
{
	switch (m & S_IFMT) {
	case S_IFREG:
		return "file";
	case S_IFDIR:
		return "dir";
	case S_IFLNK:
		return "symlink";
	case S_IFSOCK:
		return "socket";
	case S_IFIFO:
		return "fifo";
	case S_IFCHR:
		return "char";
	case S_IFBLK:
		return "block";
	default:
		return "unknown";
	}
}

static int op_stat(int argc, char **argv)
{
	struct stat st;

	if (argc < 2)
		return usage("stat PATH");
	if (lstat(argv[1], &st) < 0)
		return fail(errno, "%s", argv[1]);
	return ok("type=%s mode=%04o size=%lld uid=%u gid=%u nlink=%lu", type_name(st.st_mode),
		  (unsigned)(st.st_mode & 07777), (long long)st.st_size, (unsigned)st.st_uid,
		  (unsigned)st.st_gid, (unsigned long)st.st_nlink);
}

static int op_mknod(int argc, char **argv)
{
	if (argc < 2)
		return usage("mknod PATH");
	/* /dev/null's numbers: a device node planted in a writable root must not work on the host. */
	if (mknod(argv[1], S_IFCHR | 0666, makedev(1, 3)) < 0)
		return fail(errno, "%s", argv[1]);
	return ok("%s", argv[1]);
}

/* open-by-handle PATH: name_to_handle_at + open_by_handle_at (the "shocker" escape). */
static int op_open_by_handle(int argc, char **argv)
{
	union {
		struct file_handle fh;
		char buf[sizeof(struct file_handle) + MAX_HANDLE_SZ];
	} h;
	int mount_id, fd, mfd;

	if (argc < 2)
		return usage("open-by-handle PATH");
	h.fh.handle_bytes = MAX_HANDLE_SZ;
	if (name_to_handle_at(AT_FDCWD, argv[1], &h.fh, &mount_id, 0) < 0)
		return fail(errno, "name_to_handle_at %s", argv[1]);
	mfd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (mfd < 0)
		return fail(errno, "open /");
	fd = open_by_handle_at(mfd, &h.fh, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;

		close(mfd);
		return fail(e, "open_by_handle_at %s", argv[1]);
	}
	close(fd);
	close(mfd);
	return ok("%s", argv[1]);
}

/* ------------------------------------------------------------ sockets */

static int resolve(const char *host, const char *port, int type, struct sockaddr_storage *ss,
		   socklen_t *len)
{
	struct addrinfo hints = {.ai_family = AF_UNSPEC,
				 .ai_socktype = type,
				 .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV};
	struct addrinfo *ai = NULL;
	int r = getaddrinfo(host, port, &hints, &ai);

	if (r != 0 || !ai)
		return -EINVAL;
	memcpy(ss, ai->ai_addr, ai->ai_addrlen);
	*len = ai->ai_addrlen;
	freeaddrinfo(ai);
	return 0;
}

/* Connects with a deadline; returns 0 or a positive errno. */
static int connect_timeout(int fd, const struct sockaddr *sa, socklen_t len, int timeout_ms)
{
	int fl = fcntl(fd, F_GETFL);
	struct pollfd p = {.fd = fd, .events = POLLOUT};
	int e = 0;
	socklen_t el = sizeof(e);

	fcntl(fd, F_SETFL, fl | O_NONBLOCK);
	if (connect(fd, sa, len) == 0)
		goto done;
	if (errno != EINPROGRESS)
		return errno;
	if (poll(&p, 1, timeout_ms) <= 0)
		return ETIMEDOUT;
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &el) < 0)
		return errno;
	if (e)
		return e;
done:
	fcntl(fd, F_SETFL, fl);
	return 0;
}

static int op_connect_tcp(int argc, char **argv)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int fd, e;

	if (argc < 3)
		return usage("connect-tcp HOST PORT");
	if (resolve(argv[1], argv[2], SOCK_STREAM, &ss, &len) < 0)
		return usage("connect-tcp HOST PORT (numeric)");
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return fail(errno, "socket");
	e = connect_timeout(fd, (struct sockaddr *)&ss, len, 2000);
	if (e) {
		close(fd);
		return fail(e, "%s port %s", argv[1], argv[2]);
	}
	if (write(fd, "probe\n", 6) < 0) {
		e = errno;
		close(fd);
		return fail(e, "send to %s port %s", argv[1], argv[2]);
	}
	close(fd);
	return ok("%s port %s", argv[1], argv[2]);
}

static int op_connect_udp(int argc, char **argv)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int fd;

	if (argc < 3)
		return usage("connect-udp HOST PORT");
	if (resolve(argv[1], argv[2], SOCK_DGRAM, &ss, &len) < 0)
		return usage("connect-udp HOST PORT (numeric)");
	fd = socket(ss.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return fail(errno, "socket");
	if (sendto(fd, "probe\n", 6, 0, (struct sockaddr *)&ss, len) < 0) {
		int e = errno;

		close(fd);
		return fail(e, "%s port %s", argv[1], argv[2]);
	}
	close(fd);
	return ok("sent to %s port %s", argv[1], argv[2]);
}

/* Fills a sockaddr_un; abstract names get a leading NUL. Returns the address length. */
static socklen_t unix_addr(struct sockaddr_un *sun, const char *name, bool abstract)
{
	size_t n = strlen(name);

	memset(sun, 0, sizeof(*sun));
	sun->sun_family = AF_UNIX;
	if (abstract) {
		if (n > sizeof(sun->sun_path) - 1)
			return 0;
		memcpy(sun->sun_path + 1, name, n);
		return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
	}
	if (n > sizeof(sun->sun_path) - 1)
		return 0;
	memcpy(sun->sun_path, name, n);
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + 1);
}

static int connect_unix(const char *name, bool abstract)
{
	struct sockaddr_un sun;
	socklen_t len = unix_addr(&sun, name, abstract);
	int fd, e;

	if (!len)
		return fail(ENAMETOOLONG, "%s", name);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return fail(errno, "socket");
	e = connect_timeout(fd, (struct sockaddr *)&sun, len, 2000);
	if (e) {
		close(fd);
		return fail(e, "%s%s", abstract ? "@" : "", name);
	}
	if (write(fd, "probe\n", 6) < 0) {
		e = errno;
		close(fd);
		return fail(e, "send to %s%s", abstract ? "@" : "", name);
	}
	close(fd);
	return ok("%s%s", abstract ? "@" : "", name);
}

static int op_connect_unix(int argc, char **argv)
{
	if (argc < 2)
		return usage("connect-unix PATH");
	return connect_unix(argv[1], false);
}

static int op_connect_abstract(int argc, char **argv)
{
	if (argc < 2)
		return usage("connect-abstract NAME");
	return connect_unix(argv[1], true);
}

/* sendto-unix PATH: one datagram to a pathname unix datagram socket. */
static int op_sendto_unix(int argc, char **argv)
{
	struct sockaddr_un sun;
	socklen_t len;
	int fd;

	if (argc < 2)
		return usage("sendto-unix PATH");
	len = unix_addr(&sun, argv[1], false);
	if (!len)
		return fail(ENAMETOOLONG, "%s", argv[1]);
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return fail(errno, "socket");
	if (sendto(fd, "probe\n", 6, 0, (struct sockaddr *)&sun, len) < 0) {
		int e = errno;

		close(fd);
		return fail(e, "%s", argv[1]);
	}
	close(fd);
	return ok("%s", argv[1]);
}

/* Accepts one connection within timeout_s and prints what the peer sent. */
static int accept_one(int lfd, const char *what, long timeout_s)
{
	struct pollfd p = {.fd = lfd, .events = POLLIN};
	char buf[256];
	ssize_t n;
	int cfd, r;

	r = poll(&p, 1, (int)(timeout_s * 1000));
	if (r < 0)
		return fail(errno, "poll %s", what);
	if (r == 0)
		return fail(ETIMEDOUT, "no connection on %s", what);
	cfd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	if (cfd < 0)
		return fail(errno, "accept %s", what);
	p = (struct pollfd){.fd = cfd, .events = POLLIN};
	n = poll(&p, 1, 2000) > 0 ? read(cfd, buf, sizeof(buf)) : 0;
	close(cfd);
	printf("%s: ok accepted on %s, received \"", op_name, what);
	print_escaped(buf, n > 0 ? (size_t)n : 0);
	printf("\"\n");
	return 0;
}

static long timeout_arg(int argc, char **argv, int i)
{
	long t = 5;

	if (argc > i && (!parse_long(argv[i], &t) || t < 0 || t > 600))
		t = 5;
	return t;
}

/* listen-tcp HOST PORT [TIMEOUT]: bind, listen, accept one connection. */
static int op_listen_tcp(int argc, char **argv)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int fd, one = 1, r;

	if (argc < 3)
		return usage("listen-tcp HOST PORT [TIMEOUT]");
	if (resolve(argv[1], argv[2], SOCK_STREAM, &ss, &len) < 0)
		return usage("listen-tcp HOST PORT (numeric)");
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return fail(errno, "socket");
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&ss, len) < 0 || listen(fd, 4) < 0) {
		int e = errno;

		close(fd);
		return fail(e, "bind %s port %s", argv[1], argv[2]);
	}
	r = accept_one(fd, argv[1], timeout_arg(argc, argv, 3));
	close(fd);
	return r;
}

static int bind_unix(const char *path, int *ret_fd)
{
	struct sockaddr_un sun;
	socklen_t len = unix_addr(&sun, path, false);
	int fd;

	if (!len)
		return ENAMETOOLONG;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return errno;
	if (bind(fd, (struct sockaddr *)&sun, len) < 0 || listen(fd, 4) < 0) {
		int e = errno;

		close(fd);
		return e;
	}
	*ret_fd = fd;
	return 0;
}

static int op_bind_unix(int argc, char **argv)
{
	int fd = -1, e;

	if (argc < 2)
		return usage("bind-unix PATH");
	e = bind_unix(argv[1], &fd);
	if (e)
		return fail(e, "%s", argv[1]);
	close(fd);
	return ok("%s", argv[1]);
}

/* listen-unix PATH [TIMEOUT]: bind, listen, accept one connection. */
static int op_listen_unix(int argc, char **argv)
{
	int fd = -1, e, r;

	if (argc < 2)
		return usage("listen-unix PATH [TIMEOUT]");
	e = bind_unix(argv[1], &fd);
	if (e)
		return fail(e, "bind %s", argv[1]);
	r = accept_one(fd, argv[1], timeout_arg(argc, argv, 2));
	close(fd);
	return r;
}

static int op_socket_raw(int argc, char **argv)
{
	int fd = socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_ICMP);

	if (fd < 0)
		return fail(errno, "AF_INET SOCK_RAW");
	close(fd);
	return ok("AF_INET SOCK_RAW");
}

static int op_socket_packet(int argc, char **argv)
{
	int fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, htons(0x0003 /* ETH_P_ALL */));

	if (fd < 0)
		return fail(errno, "AF_PACKET SOCK_RAW");
	close(fd);
	return ok("AF_PACKET SOCK_RAW");
}

/* ------------------------------------------------------------ processes */

static int parse_signal(const char *s)
{
	static const struct {
		const char *name;
		int sig;
	} names[] = {{"HUP", SIGHUP},	{"INT", SIGINT},   {"QUIT", SIGQUIT}, {"KILL", SIGKILL},
		     {"USR1", SIGUSR1}, {"USR2", SIGUSR2}, {"TERM", SIGTERM}, {"STOP", SIGSTOP},
		     {"CONT", SIGCONT}, {"0", 0}};
	long v;

	if (strncmp(s, "SIG", 3) == 0)
		s += 3;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcmp(s, names[i].name) == 0)
			return names[i].sig;
	if (parse_long(s, &v) && v >= 0 && v < 65)
		return (int)v;
	return -1;
}

static int op_kill(int argc, char **argv)
{
	long pid;
	int sig;

	if (argc < 3 || !parse_long(argv[1], &pid) || (sig = parse_signal(argv[2])) < 0)
		return usage("kill PID SIGNAL");
	if (kill((pid_t)pid, sig) < 0)
		return fail(errno, "pid %ld signal %d", pid, sig);
	return ok("pid %ld signal %d", pid, sig);
}

static int op_ptrace(int argc, char **argv)
{
	long pid;

	if (argc < 2 || !parse_long(argv[1], &pid))
		return usage("ptrace PID");
	if (ptrace(PTRACE_SEIZE, (pid_t)pid, NULL, NULL) < 0) {
		int e = errno;

		/* Try the older request too; report the seize errno when both fail. */
		if (ptrace(PTRACE_ATTACH, (pid_t)pid, NULL, NULL) < 0)
			return fail(e, "PTRACE_SEIZE pid %ld (PTRACE_ATTACH: %s)", pid,
				    errname(errno));
		waitpid((pid_t)pid, NULL, __WALL);
		ptrace(PTRACE_DETACH, (pid_t)pid, NULL, NULL);
		return ok("PTRACE_ATTACH pid %ld", pid);
	}
	ptrace(PTRACE_DETACH, (pid_t)pid, NULL, NULL);
	return ok("PTRACE_SEIZE pid %ld", pid);
}

static int op_process_vm_read(int argc, char **argv)
{
	char buf[16];
	struct iovec local = {buf, sizeof(buf)};
	struct iovec remote = {(void *)(uintptr_t)0x10000, sizeof(buf)};
	long pid;

	if (argc < 2 || !parse_long(argv[1], &pid))
		return usage("process-vm-read PID");
	/* An unmapped address gives EFAULT when the call itself is permitted. */
	if (process_vm_readv((pid_t)pid, &local, 1, &remote, 1, 0) < 0)
		return fail(errno, "pid %ld", pid);
	return ok("pid %ld", pid);
}

static int op_io_uring(int argc, char **argv)
{
	struct io_uring_params p;
	long fd;

	memset(&p, 0, sizeof(p));
	fd = syscall(__NR_io_uring_setup, 4, &p);
	if (fd < 0)
		return fail(errno, "io_uring_setup");
	close((int)fd);
	return ok("io_uring_setup fd %ld", fd);
}

static int parse_ns_flags(const char *s, int *ret)
{
	static const struct {
		const char *name;
		int flag;
	} names[] = {{"user", CLONE_NEWUSER},	  {"mount", CLONE_NEWNS},
		     {"net", CLONE_NEWNET},	  {"pid", CLONE_NEWPID},
		     {"ipc", CLONE_NEWIPC},	  {"uts", CLONE_NEWUTS},
		     {"cgroup", CLONE_NEWCGROUP}, {"time", 0x00000080 /* CLONE_NEWTIME */}};
	char buf[128], *tok, *save = NULL;
	int flags = 0;

	if (strlen(s) >= sizeof(buf))
		return -1;
	memcpy(buf, s, strlen(s) + 1);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		size_t i;

		for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
			if (strcmp(tok, names[i].name) == 0)
				break;
		if (i == sizeof(names) / sizeof(names[0]))
			return -1;
		flags |= names[i].flag;
	}
	*ret = flags;
	return 0;
}

static int op_unshare(int argc, char **argv)
{
	int flags;

	if (argc < 2 || parse_ns_flags(argv[1], &flags) < 0)
		return usage("unshare user,mount,net,pid,ipc,uts,cgroup,time");
	if (unshare(flags) < 0)
		return fail(errno, "%s", argv[1]);
	return ok("%s", argv[1]);
}

/* Waits for a child that exits at once; returns 0 or a positive errno. */
static int reap(pid_t pid)
{
	int st;

	if (waitpid(pid, &st, __WALL) < 0)
		return errno;
	return 0;
}

static int op_clone_newuser(int argc, char **argv)
{
	long pid =
		syscall(__NR_clone, (unsigned long)(CLONE_NEWUSER | SIGCHLD), NULL, NULL, NULL, 0);

	if (pid < 0)
		return fail(errno, "clone(CLONE_NEWUSER)");
	if (pid == 0)
		_exit(0);
	reap((pid_t)pid);
	return ok("clone(CLONE_NEWUSER)");
}

/* clone3 [FLAGS]: clone3 with namespace flags (default user). */
static int op_clone3(int argc, char **argv)
{
	struct clone_args ca;
	int flags = CLONE_NEWUSER;
	long pid;

	if (argc > 1 && parse_ns_flags(argv[1], &flags) < 0)
		return usage("clone3 [user,mount,...]");
	memset(&ca, 0, sizeof(ca));
	ca.flags = (uint64_t)(unsigned)flags;
	ca.exit_signal = SIGCHLD;
	pid = syscall(__NR_clone3, &ca, sizeof(ca));
	if (pid < 0)
		return fail(errno, "clone3(0x%x)", flags);
	if (pid == 0)
		_exit(0);
	reap((pid_t)pid);
	return ok("clone3(0x%x)", flags);
}

static int op_setns(int argc, char **argv)
{
	int fd;

	if (argc < 2)
		return usage("setns NSFILE (e.g. /proc/1/ns/mnt)");
	fd = open(argv[1], O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return fail(errno, "open %s", argv[1]);
	if (setns(fd, 0) < 0) {
		int e = errno;

		close(fd);
		return fail(e, "setns %s", argv[1]);
	}
	close(fd);
	return ok("%s", argv[1]);
}

static int op_mount_tmpfs(int argc, char **argv)
{
	if (argc < 2)
		return usage("mount-tmpfs DIR");
	if (mount("probe", argv[1], "tmpfs", 0, "size=1m") < 0)
		return fail(errno, "%s", argv[1]);
	return ok("%s", argv[1]);
}

static int op_umount(int argc, char **argv)
{
	int flags = 0;

	if (argc < 2)
		return usage("umount DIR [detach]");
	if (argc > 2 && strcmp(argv[2], "detach") == 0)
		flags = MNT_DETACH;
	if (umount2(argv[1], flags) < 0)
		return fail(errno, "%s", argv[1]);
	return ok("%s", argv[1]);
}

static int op_remount_rw(int argc, char **argv)
{
	if (argc < 2)
		return usage("remount-rw DIR");
	if (mount(NULL, argv[1], NULL, MS_REMOUNT | MS_BIND, NULL) < 0)
		return fail(errno, "%s", argv[1]);
	return ok("%s", argv[1]);
}

/* setattr-rw DIR: the new mount API's way of clearing read-only. */
static int op_setattr_rw(int argc, char **argv)
{
	struct {
		uint64_t attr_set, attr_clr, propagation, userns_fd;
	} attr = {.attr_clr = MOUNT_ATTR_RDONLY};

	if (argc < 2)
		return usage("setattr-rw DIR");
	if (syscall(__NR_mount_setattr, AT_FDCWD, argv[1], (unsigned)AT_RECURSIVE, &attr,
		    sizeof(attr)) < 0)
		return fail(errno, "%s", argv[1]);
	return ok("%s", argv[1]);
}

static int op_fsopen(int argc, char **argv)
{
	long fd = syscall(__NR_fsopen, "tmpfs", 0);

	if (fd < 0)
		return fail(errno, "fsopen tmpfs");
	close((int)fd);
	return ok("fsopen tmpfs");
}

static int write_small(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return errno;
	n = write(fd, s, strlen(s));
	if (n < 0) {
		int e = errno;

		close(fd);
		return e;
	}
	close(fd);
	return 0;
}

/*
 * userns-remount DIR [FILE]: the nested-namespace escape attempt. Creates a user
 * and mount namespace (where we would hold CAP_SYS_ADMIN), remounts DIR
 * read-write and writes FILE (default DIR/.probe-userns). Reports the first step
 * that failed.
 */
static int op_userns_remount(int argc, char **argv)
{
	char map[64], file[PATH_MAX];
	uid_t uid = getuid();
	gid_t gid = getgid();
	int e;

	if (argc < 2)
		return usage("userns-remount DIR [FILE]");
	if (argc > 2)
		snprintf(file, sizeof(file), "%s", argv[2]);
	else
		snprintf(file, sizeof(file), "%s/.probe-userns", argv[1]);
	if (unshare(CLONE_NEWUSER | CLONE_NEWNS) < 0)
		return fail(errno, "at unshare");
	write_small("/proc/self/setgroups", "deny");
	snprintf(map, sizeof(map), "0 %u 1", (unsigned)uid);
	if ((e = write_small("/proc/self/uid_map", map)))
		return fail(e, "at uid_map");
	snprintf(map, sizeof(map), "0 %u 1", (unsigned)gid);
	if ((e = write_small("/proc/self/gid_map", map)))
		return fail(e, "at gid_map");
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		return fail(errno, "at make-private");
	if (mount(NULL, argv[1], NULL, MS_REMOUNT | MS_BIND, NULL) < 0)
		return fail(errno, "at remount");
	return write_file(file, "escaped\n", O_TRUNC);
}

/* ------------------------------------------------------------ terminals and kernel interfaces */

/* Details of each attempt, appended to one line. */
struct detail {
	char buf[512];
	size_t len;
};

__attribute__((format(printf, 2, 3))) static void detail_add(struct detail *d, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (d->len >= sizeof(d->buf))
		return;
	va_start(ap, fmt);
	n = vsnprintf(d->buf + d->len, sizeof(d->buf) - d->len, fmt, ap);
	va_end(ap);
	if (n > 0)
		d->len += (size_t)n;
}

/*
 * Tries TIOCSTI on fd, with the plain request and with a bit set above the low
 * 32 (the kernel ignores the high bits; a filter comparing all 64 would not).
 */
static void tiocsti_try(int fd, const char *what, const char *text, struct detail *d,
			int *first_err, bool *any_ok)
{
	const unsigned long reqs[2] = {TIOCSTI, (unsigned long)TIOCSTI | (1UL << 32)};
	const char *const suffix[2] = {"", "-high"};

	for (int i = 0; i < 2; i++) {
		int e = 0;

		for (const char *c = text; *c; c++)
			if (syscall(__NR_ioctl, fd, reqs[i], c) < 0) {
				e = errno;
				break;
			}
		if (!e) {
			*any_ok = true;
			detail_add(d, " %s%s=ok", what, suffix[i]);
		} else {
			if (!*first_err)
				*first_err = e;
			detail_add(d, " %s%s=%s", what, suffix[i], errname(e));
		}
	}
}

/*
 * tiocsti [TEXT]: injects TEXT (default "probe-injected\n") into the input of
 * fd 0 and of /dev/tty. "ok" when any attempt succeeded.
 */
static int op_tiocsti(int argc, char **argv)
{
	const char *text = argc > 1 ? argv[1] : "probe-injected\n";
	struct detail d = {.len = 0};
	int first_err = 0, tty;
	bool any_ok = false;

	tiocsti_try(STDIN_FILENO, "fd0", text, &d, &first_err, &any_ok);
	tty = open("/dev/tty", O_RDWR | O_CLOEXEC | O_NOCTTY);
	if (tty >= 0) {
		tiocsti_try(tty, "tty", text, &d, &first_err, &any_ok);
		close(tty);
	} else {
		detail_add(&d, " tty=%s", errname(errno));
	}
	printf("%s: %s%s\n", op_name, any_ok ? "ok" : errname(first_err ? first_err : ENOTTY),
	       d.buf);
	fflush(stdout);
	return any_ok ? 0 : 1;
}

static int op_tioclinux(int argc, char **argv)
{
	char sub = 6; /* TIOCL_GETSHIFTSTATE: harmless if it is ever allowed */
	unsigned long req = TIOCLINUX;

	if (argc > 1 && strcmp(argv[1], "high") == 0)
		req |= 1UL << 32;
	if (syscall(__NR_ioctl, STDIN_FILENO, req, &sub) < 0)
		return fail(errno, "fd 0");
	return ok("fd 0");
}

static int op_keyctl(int argc, char **argv)
{
	long r = syscall(__NR_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0);

	if (r < 0) {
		int e = errno;
		long r2 = syscall(__NR_add_key, "user", "probe", "x", 1, KEY_SPEC_PROCESS_KEYRING);

		return fail(e, "keyctl (add_key: %s)", r2 < 0 ? errname(errno) : "ok");
	}
	return ok("session keyring %ld", r);
}

static int op_bpf(int argc, char **argv)
{
	union bpf_attr attr;
	long fd;

	memset(&attr, 0, sizeof(attr));
	attr.map_type = BPF_MAP_TYPE_ARRAY;
	attr.key_size = 4;
	attr.value_size = 4;
	attr.max_entries = 1;
	fd = syscall(__NR_bpf, BPF_MAP_CREATE, &attr, sizeof(attr));
	if (fd < 0)
		return fail(errno, "BPF_MAP_CREATE");
	close((int)fd);
	return ok("BPF_MAP_CREATE");
}

static int op_perf(int argc, char **argv)
{
	struct perf_event_attr attr;
	long fd;

	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = PERF_COUNT_SW_TASK_CLOCK;
	attr.disabled = 1;
	attr.exclude_kernel = 1;
	attr.exclude_hv = 1;
	fd = syscall(__NR_perf_event_open, &attr, 0, -1, -1, 0);
	if (fd < 0)
		return fail(errno, "perf_event_open");
	close((int)fd);
	return ok("perf_event_open");
}

/* landlock-abi: the Landlock ABI version the kernel offers (0 and ENOSYS/EOPNOTSUPP if none). */
static int op_landlock_abi(int argc, char **argv)
{
	/* LANDLOCK_CREATE_RULESET_VERSION: returns the ABI instead of creating a ruleset. */
	long abi = syscall(__NR_landlock_create_ruleset, NULL, 0, 1U << 0);

	if (abi < 0)
		return fail(errno, "landlock_create_ruleset");
	return ok("%ld", abi);
}

/* ------------------------------------------------------------ process state */

static int op_caps(int argc, char **argv)
{
	static const char *const keys[] = {"CapInh", "CapPrm",	   "CapEff", "CapBnd",
					   "CapAmb", "NoNewPrivs", "Seccomp"};
	char line[256];
	FILE *f = fopen("/proc/self/status", "re");

	if (!f)
		return fail(errno, "/proc/self/status");
	printf("%s: ok", op_name);
	while (fgets(line, sizeof(line), f)) {
		for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
			size_t kl = strlen(keys[i]);
			char *v;

			if (strncmp(line, keys[i], kl) != 0 || line[kl] != ':')
				continue;
			v = line + kl + 1;
			v += strspn(v, " \t");
			v[strcspn(v, "\n")] = 0;
			printf(" %s=%s", keys[i], v);
		}
	}
	fclose(f);
	putchar('\n');
	return 0;
}

static int op_fds(int argc, char **argv)
{
	long fds[LIST_MAX];
	size_t n = 0;
	struct dirent *de;
	DIR *d = opendir("/proc/self/fd");
	int self;

	if (!d)
		return fail(errno, "/proc/self/fd");
	self = dirfd(d);
	while ((de = readdir(d)) && n < LIST_MAX) {
		long fd;

		if (!parse_long(de->d_name, &fd) || fd == self)
			continue;
		fds[n++] = fd;
	}
	closedir(d);
	/* Sort numerically (few entries). */
	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0 && fds[j - 1] > fds[j]; j--) {
			long t = fds[j];

			fds[j] = fds[j - 1];
			fds[j - 1] = t;
		}
	printf("%s: ok", op_name);
	for (size_t i = 0; i < n; i++)
		printf(" %ld", fds[i]);
	putchar('\n');
	return 0;
}

static int op_sid(int argc, char **argv)
{
	return ok("sid=%d pgrp=%d pid=%d ppid=%d", (int)getsid(0), (int)getpgrp(), (int)getpid(),
		  (int)getppid());
}

static int op_isatty(int argc, char **argv)
{
	long fd;

	if (argc < 2 || !parse_long(argv[1], &fd) || fd < 0 || fd > INT_MAX)
		return usage("isatty FD");
	if (!isatty((int)fd))
		return fail(errno, "fd %ld", fd);
	return ok("fd %ld %s", fd, ttyname((int)fd) ? ttyname((int)fd) : "?");
}

static int op_winsize(int argc, char **argv)
{
	struct winsize ws;
	long fd = 0;

	if (argc > 1 && (!parse_long(argv[1], &fd) || fd < 0 || fd > INT_MAX))
		return usage("winsize [FD]");
	if (ioctl((int)fd, TIOCGWINSZ, &ws) < 0)
		return fail(errno, "fd %ld", fd);
	return ok("rows=%u cols=%u", ws.ws_row, ws.ws_col);
}

static int op_ns(int argc, char **argv)
{
	static const char *const names[] = {"user", "mnt", "pid", "net", "ipc", "uts", "cgroup"};

	printf("%s: ok", op_name);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		char path[64], buf[128];
		ssize_t n;

		snprintf(path, sizeof(path), "/proc/self/ns/%s", names[i]);
		n = readlink(path, buf, sizeof(buf) - 1);
		if (n < 0) {
			printf(" %s=%s", names[i], errname(errno));
			continue;
		}
		buf[n] = 0;
		printf(" %s=%s", names[i], buf);
	}
	putchar('\n');
	return 0;
}

static int op_env(int argc, char **argv)
{
	const char *v;

	if (argc < 2)
		return usage("env NAME");
	v = getenv(argv[1]);
	if (!v)
		return fail(ENOENT, "%s unset", argv[1]);
	return ok("%s", v);
}

static int op_cmdline(int argc, char **argv)
{
	char path[64], buf[4096];
	ssize_t n;
	int fd;

	if (argc < 2)
		return usage("cmdline PID");
	snprintf(path, sizeof(path), "/proc/%s/cmdline", argv[1]);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return fail(errno, "%s", path);
	n = read(fd, buf, sizeof(buf) - 1);
	if (n < 0) {
		int e = errno;

		close(fd);
		return fail(e, "%s", path);
	}
	close(fd);
	for (ssize_t i = 0; i < n; i++)
		if (buf[i] == 0)
			buf[i] = ' ';
	while (n > 0 && buf[n - 1] == ' ')
		n--;
	buf[n] = 0;
	return ok("%s", buf);
}

static int op_whoami(int argc, char **argv)
{
	gid_t groups[64];
	int n = getgroups(64, groups);

	printf("%s: ok uid=%u euid=%u gid=%u egid=%u groups=", op_name, (unsigned)getuid(),
	       (unsigned)geteuid(), (unsigned)getgid(), (unsigned)getegid());
	for (int i = 0; i < n; i++)
		printf("%s%u", i ? "," : "", (unsigned)groups[i]);
	putchar('\n');
	return 0;
}

static int op_sleep(int argc, char **argv)
{
	struct timespec ts;
	char *end;
	double s;

	if (argc < 2)
		return usage("sleep SECONDS [MARKER...]");
	s = strtod(argv[1], &end);
	if (end == argv[1] || *end || s < 0 || s > 100000)
		return usage("sleep SECONDS [MARKER...]");
	ts.tv_sec = (time_t)s;
	ts.tv_nsec = (long)((s - (double)ts.tv_sec) * 1e9);
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
	return ok("slept %s", argv[1]);
}

/*
 * spawn-escaper PIDFILE [MARKER]: a child that tries to outlive the run. It
 * calls setsid(), forks a grandchild that re-executes the probe as
 * "probe sleep 1000 MARKER" (so the test can find it with pgrep -f MARKER), and
 * the grandchild writes its pid (as seen inside) to PIDFILE first.
 */
static int op_spawn_escaper(int argc, char **argv)
{
	char self[PATH_MAX];
	const char *marker;
	ssize_t n;
	int pfd[2], st;
	pid_t pid;
	char c;

	if (argc < 2)
		return usage("spawn-escaper PIDFILE [MARKER]");
	marker = argc > 2 ? argv[2] : "probe-escaper";
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n < 0)
		return fail(errno, "readlink /proc/self/exe");
	self[n] = 0;
	if (pipe2(pfd, O_CLOEXEC) < 0)
		return fail(errno, "pipe");
	pid = fork();
	if (pid < 0)
		return fail(errno, "fork");
	if (pid == 0) {
		pid_t g;

		setsid();
		g = fork();
		if (g < 0)
			_exit(1);
		if (g == 0) {
			char buf[32];
			int fd;

			close(pfd[0]);
			signal(SIGHUP, SIG_IGN);
			snprintf(buf, sizeof(buf), "%d\n", (int)getpid());
			fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
			if (fd >= 0) {
				if (write(fd, buf, strlen(buf)) < 0)
					_exit(1);
				close(fd);
			}
			/* Tell the parent we exist, then become the long sleeper. */
			if (write(pfd[1], "x", 1) < 0)
				_exit(1);
			execl(self, "probe", "sleep", "1000", marker, (char *)NULL);
			_exit(127);
		}
		_exit(0);
	}
	close(pfd[1]);
	waitpid(pid, &st, 0);
	n = read(pfd[0], &c, 1);
	close(pfd[0]);
	if (n != 1)
		return fail(ECHILD, "the escaper did not start");
	return ok("escaper started, pid in %s", argv[1]);
}

/* ------------------------------------------------------------ resources (limits) */

/*
 * alloc MIB: allocates and touches MIB MiB, one at a time, and prints how
 * many it got. Bounded by MIB whatever the limits: a broken limit costs the
 * test machine MIB MiB, no more.
 */
static int op_alloc(int argc, char **argv)
{
	long mib = argc > 1 ? strtol(argv[1], NULL, 10) : 0;
	long got = 0;

	if (mib <= 0 || mib > 4096)
		return usage("alloc MIB (1..4096)");
	for (; got < mib; got++) {
		char *p = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			       -1, 0);

		if (p == MAP_FAILED)
			return fail(errno, "mmap after %ld MiB", got);
		memset(p, 0x5a, 1 << 20);
	}
	return ok("allocated %ld MiB", got);
}

/*
 * forkloop N: forks children that wait, until N exist or a fork fails; prints
 * how many and why it stopped, then ends them. Each child ends by itself after
 * 60 s should its parent be killed first: a fork storm that stops by itself.
 */
static int op_forkloop(int argc, char **argv)
{
	long n = argc > 1 ? strtol(argv[1], NULL, 10) : 0, made = 0;
	pid_t *kids;
	int err = 0;

	if (n <= 0 || n > 20000)
		return usage("forkloop N (1..20000)");
	kids = calloc((size_t)n, sizeof(*kids));
	if (!kids)
		return fail(ENOMEM, "calloc");
	for (; made < n; made++) {
		pid_t k = fork();

		if (k == 0) {
			alarm(60);
			pause();
			_exit(0);
		}
		if (k < 0) {
			err = errno;
			break;
		}
		kids[made] = k;
	}
	for (long i = 0; i < made; i++)
		kill(kids[i], SIGKILL);
	while (wait(NULL) > 0)
		;
	free(kids);
	printf("forkloop: forked %ld of %ld, %s\n", made, n, err ? strerror(err) : "all");
	return 0;
}

/* openfiles N: opens /dev/null until N are open or an open fails; prints how many. */
static int op_openfiles(int argc, char **argv)
{
	long n = argc > 1 ? strtol(argv[1], NULL, 10) : 0, opened = 0;
	int err = 0;

	if (n <= 0 || n > 100000)
		return usage("openfiles N");
	for (; opened < n; opened++)
		if (open("/dev/null", O_RDONLY) < 0) {
			err = errno;
			break;
		}
	printf("openfiles: %ld, %s\n", opened, err ? strerror(err) : "all");
	return 0;
}

/* cpuburn SECONDS: spins for SECONDS of wall time; prints the CPU time it got (ms). */
static int op_cpuburn(int argc, char **argv)
{
	double s = argc > 1 ? strtod(argv[1], NULL) : 0;
	struct timespec t0, t, c;
	volatile unsigned long x = 0;

	if (s <= 0 || s > 60)
		return usage("cpuburn SECONDS (<= 60)");
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		for (int i = 0; i < 100000; i++)
			x += (unsigned long)i;
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) / 1e9 < s);
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c);
	printf("cpuburn: %ld ms of CPU in %.1f s\n", (long)c.tv_sec * 1000 + c.tv_nsec / 1000000,
	       s);
	return 0;
}

/* ------------------------------------------------------------ dispatch */

struct op {
	const char *name;
	int (*fn)(int argc, char **argv);
};

static const struct op ops[] = {
	{"write", op_write},
	{"alloc", op_alloc},
	{"forkloop", op_forkloop},
	{"openfiles", op_openfiles},
	{"cpuburn", op_cpuburn},
	{"append", op_append},
	{"write-fd", op_write_fd},
	{"read", op_read},
	{"ls", op_ls},
	{"mkdir", op_mkdir},
	{"rmdir", op_rmdir},
	{"unlink", op_unlink},
	{"rename", op_rename},
	{"link", op_link},
	{"symlink", op_symlink},
	{"readlink", op_readlink},
	{"chmod", op_chmod},
	{"truncate", op_truncate},
	{"stat", op_stat},
	{"mknod", op_mknod},
	{"open-by-handle", op_open_by_handle},
	{"connect-tcp", op_connect_tcp},
	{"connect-udp", op_connect_udp},
	{"connect-unix", op_connect_unix},
	{"connect-abstract", op_connect_abstract},
	{"sendto-unix", op_sendto_unix},
	{"listen-tcp", op_listen_tcp},
	{"bind-unix", op_bind_unix},
	{"listen-unix", op_listen_unix},
	{"socket-raw", op_socket_raw},
	{"socket-packet", op_socket_packet},
	{"kill", op_kill},
	{"ptrace", op_ptrace},
	{"process-vm-read", op_process_vm_read},
	{"io-uring", op_io_uring},
	{"unshare", op_unshare},
	{"clone-newuser", op_clone_newuser},
	{"clone3", op_clone3},
	{"setns", op_setns},
	{"mount-tmpfs", op_mount_tmpfs},
	{"umount", op_umount},
	{"remount-rw", op_remount_rw},
	{"setattr-rw", op_setattr_rw},
	{"fsopen", op_fsopen},
	{"userns-remount", op_userns_remount},
	{"tiocsti", op_tiocsti},
	{"tioclinux", op_tioclinux},
	{"keyctl", op_keyctl},
	{"bpf", op_bpf},
	{"perf", op_perf},
	{"landlock-abi", op_landlock_abi},
	{"caps", op_caps},
	{"fds", op_fds},
	{"sid", op_sid},
	{"isatty", op_isatty},
	{"winsize", op_winsize},
	{"ns", op_ns},
	{"env", op_env},
	{"cmdline", op_cmdline},
	{"whoami", op_whoami},
	{"sleep", op_sleep},
	{"spawn-escaper", op_spawn_escaper},
};

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: probe OP [ARG...]\nops:");
		for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
			fprintf(stderr, " %s", ops[i].name);
		fputc('\n', stderr);
		return 2;
	}
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		if (strcmp(argv[1], ops[i].name) == 0) {
			op_name = ops[i].name;
			return ops[i].fn(argc - 1, argv + 1);
		}
	fprintf(stderr, "probe: unknown op '%s'\n", argv[1]);
	return 2;
}
