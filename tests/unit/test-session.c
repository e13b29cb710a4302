/* SPDX-License-Identifier: MIT */
/*
 * The event loop, asynchronous procs and interactive sessions (Codex's
 * unified exec semantics): what the commands printed, how calls end, and
 * what is left running afterwards.
 */
#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <fcntl.h>
#include <poll.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/inotify.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tap.h"

#include "basic/cleanup.h"
#include "basic/loop.h"
#include "basic/util.h"
#include "exec/proc.h"
#include "policy/policy.h"
#include "sandbox/sandbox.h"
#include "session/session.h"
#include "session/calls.h"

static char scratch[] = "/tmp/ward-test-session.XXXXXX";

/* ------------------------------------------------------------ helpers */

static struct ward_policy *scratch_policy(void)
{
	struct ward_policy *p;

	ASSERT_OK(ward_policy_new(&p));
	ASSERT_OK(ward_policy_set_cwd(p, scratch));
	return p;
}

struct waiter {
	bool done;
	struct ward__session_reply *r;
};

static void on_done(struct ward__session_reply *r, void *userdata)
{
	struct waiter *w = userdata;

	w->done = true;
	w->r = r;
}

/* Runs the loop until w is done, at most max_ms. */
static void wait_for(struct ward__loop *l, struct waiter *w, unsigned max_ms)
{
	uint64_t deadline = ward__now_ms() + max_ms;

	while (!w->done && ward__now_ms() < deadline)
		ASSERT_OK(ward__loop_iterate(l, 50));
	ASSERT_TRUE(w->done);
	ASSERT_TRUE(w->r != NULL);
}

static struct ward__sessions *new_store(struct ward__loop *l, size_t max)
{
	struct ward__sessions_config c = {.policy = NULL, .max_sessions = max, .login = 0};
	struct ward__sessions *s;
	struct ward_error e = {0};

	c.policy = scratch_policy();
	c.shell = "/bin/sh";
	if (ward__sessions_new(l, &c, &s, &e) < 0)
		tap_fail(__FILE__, __LINE__, "sessions_new: %s", e.message);
	ward_policy_free((struct ward_policy *)c.policy);
	return s;
}

static struct ward__session_reply *exec_sync(struct ward__loop *l, struct ward__sessions *s,
					     const char *cmd, bool tty, int64_t yield_ms)
{
	struct ward__exec_args a = {
		.cmd = cmd, .tty = tty, .yield_ms = yield_ms, .max_output_tokens = -1, .login = -1};
	struct waiter w = {0};
	struct ward_error e = {0};

	if (ward__sessions_exec(s, &a, on_done, &w, NULL, &e) < 0)
		tap_fail(__FILE__, __LINE__, "exec '%s': %s", cmd, e.message);
	wait_for(l, &w, 40000);
	return w.r;
}

static struct ward__session_reply *write_sync(struct ward__loop *l, struct ward__sessions *s,
					      int id, const char *chars, int64_t yield_ms)
{
	struct ward__write_args a = {.session_id = id,
				     .chars = chars,
				     .len = strlen(chars),
				     .yield_ms = yield_ms,
				     .max_output_tokens = -1};
	struct waiter w = {0};
	struct ward_error e = {0};

	if (ward__sessions_write(s, &a, on_done, &w, NULL, &e) < 0)
		tap_fail(__FILE__, __LINE__, "write %d: %s", id, e.message);
	wait_for(l, &w, 400000);
	return w.r;
}

/* Polls until the reply contains needle or the session ends; returns everything seen. */
static char *poll_until(struct ward__loop *l, struct ward__sessions *s, int id, const char *needle,
			bool *ret_exited, int *ret_code)
{
	struct ward__buf all;

	ward__buf_init(&all, 1 << 22);
	for (int i = 0; i < 20; i++) {
		struct ward__session_reply *r = write_sync(l, s, id, "", 5000);
		bool exited = r->exited;

		ward__buf_append(&all, r->output, r->output_len);
		if (exited && ret_code)
			*ret_code = r->exit_code;
		ward__session_reply_free(r);
		if (exited) {
			if (ret_exited)
				*ret_exited = true;
			break;
		}
		if (all.data && strstr((char *)all.data, needle))
			break;
	}
	ward__buf_append_byte(&all, 0);
	return (char *)ward__buf_steal(&all, NULL);
}

/* Whether a process whose command line contains marker exists on the host. */
static bool host_has_process(const char *marker)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	bool found = false;

	ASSERT_TRUE(d != NULL);
	while (!found && (de = readdir(d))) {
		char path[64], buf[4096];
		ssize_t n;
		_cleanup_close_ int fd = -1;

		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%.16s/cmdline", de->d_name);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		n = read(fd, buf, sizeof(buf) - 1);
		if (n <= 0)
			continue;
		for (ssize_t i = 0; i < n; i++)
			if (buf[i] == '\0')
				buf[i] = ' ';
		buf[n] = '\0';
		if (strstr(buf, marker) && !strstr(buf, "test-session"))
			found = true;
	}
	closedir(d);
	return found;
}

/* Waits up to 5 s for every process carrying marker to be gone. */
static bool host_process_gone(struct ward__loop *l, const char *marker)
{
	for (int i = 0; i < 100; i++) {
		if (!host_has_process(marker))
			return true;
		ward__loop_iterate(l, 50);
	}
	return false;
}

/* ------------------------------------------------------------ loop */

static int order[8];
static int n_order;

static void record(struct ward__loop *l, void *userdata)
{
	order[n_order++] = (int)(intptr_t)userdata;
}

static uint64_t cancel_me;

static void cancel_other(struct ward__loop *l, void *userdata)
{
	order[n_order++] = (int)(intptr_t)userdata;
	ward__loop_del_timer(l, cancel_me);
}

TEST(loop_timers_fire_in_deadline_order_and_cancel_works)
{
	struct ward__loop *l;
	uint64_t now = ward__now_ns(), dead;

	ASSERT_OK(ward__loop_new(&l));
	ASSERT_OK(ward__loop_add_timer(l, now + 30000000, record, (void *)3, NULL));
	ASSERT_OK(ward__loop_add_timer(l, now + 10000000, record, (void *)1, NULL));
	ASSERT_OK(ward__loop_add_timer(l, now + 20000000, cancel_other, (void *)2, NULL));
	ASSERT_OK(ward__loop_add_timer(l, now + 25000000, record, (void *)9, &cancel_me));
	ASSERT_OK(ward__loop_add_timer(l, now + 1000000000, record, (void *)7, &dead));
	ward__loop_del_timer(l, dead);
	while (n_order < 3)
		ASSERT_OK(ward__loop_iterate(l, 100));
	ASSERT_EQ(order[0], 1);
	ASSERT_EQ(order[1], 2);
	ASSERT_EQ(order[2], 3);
	/* A stale handle is ignored. */
	ward__loop_del_timer(l, cancel_me);
	ward__loop_free(l);
}

static void count_io(struct ward__loop *l, int fd, uint32_t events, void *userdata)
{
	char buf[16];
	ssize_t n = read(fd, buf, sizeof(buf));

	(void)n;
	(*(int *)userdata)++;
}

TEST(loop_io_removed_in_the_same_batch_is_not_dispatched)
{
	struct ward__loop *l;
	int a[2], b[2], hits = 0;
	uint64_t ida, idb;

	ASSERT_OK(ward__loop_new(&l));
	ASSERT_OK(pipe2(a, O_CLOEXEC | O_NONBLOCK));
	ASSERT_OK(pipe2(b, O_CLOEXEC | O_NONBLOCK));
	ASSERT_OK(ward__loop_add_io(l, a[0], EPOLLIN, count_io, &hits, &ida));
	ASSERT_OK(ward__loop_add_io(l, b[0], EPOLLIN, count_io, &hits, &idb));
	ASSERT_EQ(ward__loop_add_io(l, a[0], EPOLLIN, count_io, &hits, NULL), -EEXIST);
	ASSERT_EQ(write(a[1], "x", 1), 1);
	ASSERT_OK(ward__loop_iterate(l, 100));
	ASSERT_EQ(hits, 1);
	ward__loop_del_io(l, ida);
	ward__loop_del_io(l, ida);
	ASSERT_EQ(write(a[1], "x", 1), 1);
	ASSERT_OK(ward__loop_iterate(l, 50));
	ASSERT_EQ(hits, 1);
	ward__loop_del_io(l, idb);
	ward__loop_free(l);
}

/* ------------------------------------------------------------ procs */

struct pstate {
	struct ward__buf out;
	bool exited, closed;
};

static void p_output(struct ward__proc *p, enum ward__proc_stream s, const uint8_t *d, size_t n,
		     void *ud)
{
	ward__buf_append(&((struct pstate *)ud)->out, d, n);
}

static void p_exited(struct ward__proc *p, void *ud)
{
	((struct pstate *)ud)->exited = true;
}

static void p_closed(struct ward__proc *p, void *ud)
{
	((struct pstate *)ud)->closed = true;
}

static const struct ward__proc_ops pops = {p_output, p_exited, p_closed};

static struct ward__proc *start_proc(struct ward__loop *l, struct ward_policy *pol,
				     struct pstate *st, const char *cmd, bool tty, bool stdin_pipe,
				     uint64_t timeout_ms)
{
	char *argv[] = {(char *)"/bin/sh", (char *)"-c", (char *)cmd, NULL};
	struct ward__proc_spec spec = {.policy = pol,
				       .argv = argv,
				       .tty = tty,
				       .stdin_pipe = stdin_pipe,
				       .timeout_ms = timeout_ms};
	struct ward__proc *p;
	struct ward_error e = {0};

	ward__buf_init(&st->out, 1 << 24);
	if (ward__proc_start(l, &spec, &pops, st, &p, &e) < 0)
		tap_fail(__FILE__, __LINE__, "proc_start: %s", e.message);
	return p;
}

static void run_until_closed(struct ward__loop *l, struct pstate *st)
{
	uint64_t deadline = ward__now_ms() + 20000;

	while (!st->closed && ward__now_ms() < deadline)
		ASSERT_OK(ward__loop_iterate(l, 50));
	ASSERT_TRUE(st->closed);
	ward__buf_append_byte(&st->out, 0);
}

TEST(proc_pipes_output_status_and_stdin)
{
	struct ward__loop *l;
	struct ward_policy *pol = scratch_policy();
	struct pstate st = {0};
	struct ward__proc *p;

	ASSERT_OK(ward_policy_resolve(pol, NULL));
	ASSERT_OK(ward__loop_new(&l));
	p = start_proc(l, pol, &st, "read x; echo got:$x; echo err >&2; exit 3", false, true, 0);
	ASSERT_OK(ward__proc_write(p, "hello\n", 6));
	ward__proc_close_stdin(p);
	run_until_closed(l, &st);
	ASSERT_TRUE(st.exited);
	ASSERT_EQ(ward__proc_exit_code(p), 3);
	ASSERT_CONTAINS((char *)st.out.data, "got:hello");
	ASSERT_CONTAINS((char *)st.out.data, "err");
	ASSERT_EQ(ward__proc_write(p, "x", 1), -EPIPE);
	ward__proc_free(p);
	ward__buf_release(&st.out);
	ward__loop_free(l);
	ward_policy_free(pol);
}

TEST(proc_tty_is_a_terminal_and_times_out)
{
	struct ward__loop *l;
	struct ward_policy *pol = scratch_policy();
	struct pstate st = {0}, st2 = {0};
	struct ward__proc *p, *q;

	ASSERT_OK(ward_policy_resolve(pol, NULL));
	ASSERT_OK(ward__loop_new(&l));
	p = start_proc(l, pol, &st, "test -t 0 && test -t 1 && stty size", true, false, 0);
	run_until_closed(l, &st);
	ASSERT_EQ(ward__proc_exit_code(p), 0);
	ASSERT_CONTAINS((char *)st.out.data, "24 80");
	q = start_proc(l, pol, &st2, "echo before; sleep 100", false, false, 300);
	run_until_closed(l, &st2);
	ASSERT_TRUE(ward__proc_timed_out(q));
	ASSERT_EQ(ward__proc_exit_code(q), 124);
	ASSERT_CONTAINS((char *)st2.out.data, "before");
	ward__proc_free(p);
	ward__proc_free(q);
	ward__buf_release(&st.out);
	ward__buf_release(&st2.out);
	ward__loop_free(l);
	ward_policy_free(pol);
}

TEST(proc_free_while_running_leaves_nothing)
{
	struct ward__loop *l;
	struct ward_policy *pol = scratch_policy();
	struct pstate st = {0};
	struct ward__proc *p;

	ASSERT_OK(ward_policy_resolve(pol, NULL));
	ASSERT_OK(ward__loop_new(&l));
	p = start_proc(l, pol, &st, "sleep 1000.4242 & sleep 1000.4242", false, false, 0);
	for (int i = 0; i < 40 && !host_has_process("sleep 1000.4242"); i++)
		ward__loop_iterate(l, 50);
	ASSERT_TRUE(host_has_process("sleep 1000.4242"));
	ward__proc_free(p);
	ASSERT_TRUE(host_process_gone(l, "sleep 1000.4242"));
	/* The sandbox's init was reaped by the loop, not left as a zombie. */
	for (int i = 0; i < 100 && ward__loop_reaping(l) > 0; i++)
		ward__loop_iterate(l, 50);
	ASSERT_EQ(ward__loop_reaping(l), 0);
	ward__buf_release(&st.out);
	ward__loop_free(l);
	ward_policy_free(pol);
}

/* ------------------------------------------------------------ the shared inotify instance */

/* The watches of an inotify fd, from /proc/self/fdinfo: how many, and the mask on inode ino. */
static size_t fdinfo_watches(int fd, ino_t ino, unsigned *ret_mask)
{
	char path[64], line[512];
	size_t n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = fopen(path, "re");
	ASSERT_TRUE(f != NULL);
	*ret_mask = 0;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long i = 0;
		unsigned mask = 0;
		char *p = strstr(line, " ino:"), *m = strstr(line, " mask:");

		if (strncmp(line, "inotify wd:", 11) != 0)
			continue;
		n++;
		if (p && m && sscanf(p, " ino:%llx", &i) == 1 &&
		    sscanf(m, " mask:%x", &mask) == 1 && (ino_t)i == ino)
			*ret_mask |= mask;
	}
	fclose(f);
	return n;
}

static void count_notify(void *userdata)
{
	(*(int *)userdata)++;
}

static struct ward__guard *shared_guard(struct ward__watches *w, const struct ward_policy *pol,
					bool fallback, int *counter)
{
	struct ward__guard *g = NULL;
	struct ward_error e = {0};

	if (ward__guard_new(pol, fallback, w, false, &g, &e) < 0)
		tap_fail(__FILE__, __LINE__, "guard_new: %s", e.message);
	ASSERT_TRUE(g != NULL);
	ASSERT_EQ(ward__guard_fd(g), -1);
	ward__guard_set_notify(g, count_notify, counter);
	return g;
}

/* What ward__sandbox_handle_guard() does: the events, then what they left to look into. */
static void expect_change(struct ward__guard *g, const char *access, const char *path)
{
	char a[16], got[PATH_MAX + 256];
	const char *reason = NULL;
	bool changed = false;

	ASSERT_OK(ward__guard_read(g, a, sizeof(a), got, sizeof(got), &reason, &changed));
	if (!changed)
		ASSERT_OK(ward__guard_settle(g, a, sizeof(a), got, sizeof(got), &reason, &changed));
	ASSERT_TRUE(changed);
	ASSERT_STREQ(a, access);
	ASSERT_STREQ(got, path);
}

TEST(shared_inotify_one_watch_per_inode_counted_per_guard)
{
	_cleanup_free_ char *other = NULL, *codex = NULL;
	struct ward_policy *pol = scratch_policy(), *pol2;
	struct ward__watches *w;
	struct ward__guard *fb, *ns, *elsewhere;
	struct stat st;
	unsigned mask;
	int n_fb = 0, n_ns = 0, n_else = 0;

	ASSERT_OK(ward_policy_resolve(pol, NULL));
	ASSERT_OK(asprintf(&other, "%s/other", scratch));
	ASSERT_OK(mkdir(other, 0755));
	ASSERT_OK(ward_policy_new(&pol2));
	ASSERT_OK(ward_policy_set_cwd(pol2, other));
	ASSERT_OK(ward_policy_resolve(pol2, NULL));
	ASSERT_OK(asprintf(&codex, "%s/.codex", scratch));
	ASSERT_OK(stat(scratch, &st));
	ASSERT_OK(ward__watches_new(&w, NULL));

	/*
	 * The fallback's guard of a missing name asks for more events on the
	 * directory (deletions, renames) than the guard with namespaces (creations);
	 * the second must add its mask, not replace the first's.
	 */
	fb = shared_guard(w, pol, true, &n_fb);
	ns = shared_guard(w, pol, false, &n_ns);
	elsewhere = shared_guard(w, pol2, false, &n_else);
	fdinfo_watches(ward__watches_fd(w), st.st_ino, &mask);
	ASSERT_TRUE(mask & IN_CREATE);
	ASSERT_TRUE(mask & IN_DELETE);
	ASSERT_TRUE(mask & IN_MOVED_FROM);

	/* Every guard watching the directory hears of .codex, only they do. */
	ASSERT_OK(mkdir(codex, 0755));
	/* A call reads a bounded share of the queue: as the loop would, until it is empty. */
	for (int i = 0; i < 4096; i++) {
		struct pollfd pfd = {.fd = ward__watches_fd(w), .events = POLLIN};

		ASSERT_OK(ward__watches_dispatch(w));
		if (poll(&pfd, 1, 0) <= 0)
			break;
	}
	ASSERT_EQ(n_fb, 1);
	ASSERT_EQ(n_ns, 1);
	ASSERT_EQ(n_else, 0);
	expect_change(fb, "create", codex);
	expect_change(ns, "create", codex);

	/* One guard goes: the watch stays for the other, with its mask. */
	ASSERT_OK(rmdir(codex));
	ASSERT_OK(ward__watches_dispatch(w));
	ward__guard_free(fb);
	fdinfo_watches(ward__watches_fd(w), st.st_ino, &mask);
	ASSERT_TRUE(mask & IN_CREATE);
	ASSERT_OK(mkdir(codex, 0755));
	n_ns = 0;
	ASSERT_OK(ward__watches_dispatch(w));
	ASSERT_EQ(n_ns, 1);
	expect_change(ns, "create", codex);
	ASSERT_EQ(n_else, 0);

	/* The last guard of an inode removes its watch; nothing is left once all are gone. */
	ward__guard_free(ns);
	ASSERT_EQ(fdinfo_watches(ward__watches_fd(w), st.st_ino, &mask), 1);
	ASSERT_EQ(mask, 0);
	ward__guard_free(elsewhere);
	ASSERT_EQ(fdinfo_watches(ward__watches_fd(w), st.st_ino, &mask), 0);
	ASSERT_OK(rmdir(codex));
	ward__watches_free(w);
	ward_policy_free(pol);
	ward_policy_free(pol2);
}

/* A resolved policy of a new directory name under the scratch directory. */
static struct ward_policy *subdir_policy(const char *name, char **ret_dir)
{
	struct ward_policy *p;

	ASSERT_OK(asprintf(ret_dir, "%s/%s", scratch, name));
	ASSERT_OK(mkdir(*ret_dir, 0755));
	ASSERT_OK(ward_policy_new(&p));
	ASSERT_OK(ward_policy_set_cwd(p, *ret_dir));
	ASSERT_OK(ward_policy_resolve(p, NULL));
	return p;
}

TEST(shared_inotify_overflow_concerns_every_guard)
{
	_cleanup_free_ char *flood = NULL, *victim = NULL, *fbdir = NULL, *codex = NULL,
			    *max = NULL;
	struct ward_policy *pf = subdir_policy("flood", &flood),
			   *pv = subdir_policy("victim", &victim),
			   *pb = subdir_policy("fallback", &fbdir);
	struct ward__watches *w;
	struct ward__guard *gf, *gv, *gb;
	int n_f = 0, n_v = 0, n_b = 0;
	long n_events;
	char a[16], got[PATH_MAX + 256];
	const char *reason = NULL;
	bool changed = true;

	ASSERT_OK(ward__read_file("/proc/sys/fs/inotify/max_queued_events", 64, &max, NULL));
	n_events = strtol(max, NULL, 10);
	ASSERT_TRUE(n_events > 0 && n_events <= 1 << 20);
	ASSERT_OK(asprintf(&codex, "%s/.codex", victim));
	ASSERT_OK(ward__watches_new(&w, NULL));
	gf = shared_guard(w, pf, false, &n_f);
	gv = shared_guard(w, pv, false, &n_v);
	gb = shared_guard(w, pb, true, &n_b);

	/* One sandbox's creations fill the queue; another's change then goes unrecorded. */
	for (long i = 0; i <= n_events; i++) {
		char path[PATH_MAX];

		snprintf(path, sizeof(path), "%s/f%ld", flood, i);
		ASSERT_OK(mkdir(path, 0755));
	}
	ASSERT_OK(mkdir(codex, 0755));
	/* A call reads a bounded share of the queue: as the loop would, until it is empty. */
	for (int i = 0; i < 4096; i++) {
		struct pollfd pfd = {.fd = ward__watches_fd(w), .events = POLLIN};

		ASSERT_OK(ward__watches_dispatch(w));
		if (poll(&pfd, 1, 0) <= 0)
			break;
	}

	/*
	 * Every guard is told (once a call that had its events: the flood takes
	 * several); each finds out for itself what the lost events could have been.
	 */
	ASSERT_TRUE(n_f >= 1);
	ASSERT_TRUE(n_v >= 1);
	ASSERT_TRUE(n_b >= 1);
	expect_change(gv, "create", codex);
	/* The fallback's guard cannot know: it stops its sandbox (the restoration tells). */
	ASSERT_OK(ward__guard_read(gb, a, sizeof(a), got, sizeof(got), &reason, &changed));
	ASSERT_TRUE(changed);
	/* The flooder's own missing names are still missing: nothing changed for it. */
	ASSERT_OK(ward__guard_read(gf, a, sizeof(a), got, sizeof(got), &reason, &changed));
	ASSERT_FALSE(changed);

	ward__guard_free(gf);
	ward__guard_free(gv);
	ward__guard_free(gb);
	ward__watches_free(w);
	/*
	 * The flood goes: the later tests' scans of the scratch directory would
	 * have that many more directories than they may watch unread (refused).
	 */
	for (long i = 0; i <= n_events; i++) {
		char path[PATH_MAX];

		snprintf(path, sizeof(path), "%s/f%ld", flood, i);
		ASSERT_OK(rmdir(path));
	}
	ward_policy_free(pf);
	ward_policy_free(pv);
	ward_policy_free(pb);
}

/* How many inotify instances this process holds. */
static size_t inotify_instances(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	size_t n = 0;

	ASSERT_TRUE(d != NULL);
	while ((de = readdir(d))) {
		char path[300], target[64];
		ssize_t k;

		snprintf(path, sizeof(path), "/proc/self/fd/%s", de->d_name);
		k = readlink(path, target, sizeof(target) - 1);
		if (k <= 0)
			continue;
		target[k] = '\0';
		if (strcmp(target, "anon_inode:inotify") == 0)
			n++;
	}
	closedir(d);
	return n;
}

TEST(procs_of_a_loop_share_one_guard_instance)
{
	_cleanup_free_ char *codex = NULL;
	struct ward__loop *l;
	struct ward_policy *pol = scratch_policy();
	struct pstate st1 = {0}, st2 = {0};
	struct ward__proc *p1, *p2;
	const struct ward__sandbox *sb;
	struct stat s;
	bool seen = false;

	ASSERT_OK(ward_policy_resolve(pol, NULL));
	ASSERT_OK(asprintf(&codex, "%s/.codex", scratch));
	ASSERT_OK(ward__loop_new(&l));
	p1 = start_proc(l, pol, &st1, "echo up; exec sleep 1000", false, false, 0);
	p2 = start_proc(l, pol, &st2, "echo up; exec sleep 1000", false, false, 0);
	ASSERT_EQ(inotify_instances(), 1);
	/* The first sandbox goes: the second's guard still watches the directory. */
	ward__proc_free(p1);
	ASSERT_OK(mkdir(codex, 0755));
	run_until_closed(l, &st2);
	ASSERT_EQ(ward__proc_exit_code(p2), 128 + SIGKILL);
	sb = ward__proc_sandbox(p2);
	ASSERT_TRUE(sb->guard_tripped);
	for (size_t i = 0; i < sb->n_denials; i++)
		if (strcmp(sb->denials[i].target, codex) == 0)
			seen = true;
	ASSERT_TRUE(seen);
	/* The guard removed what the command (here: the host) created. */
	ASSERT_EQ(stat(codex, &s), -1);
	ward__proc_free(p2);
	ward__buf_release(&st1.out);
	ward__buf_release(&st2.out);
	ward__loop_free(l);
	ASSERT_EQ(inotify_instances(), 0);
	ward_policy_free(pol);
}

/*
 * The loop may hand out the report of a command's status before the shared
 * inotify instance's events about what the command did: here the instance
 * is held busy by another sandbox's directory, whose events come first and
 * take the loop several rounds to read. The command's change is still seen
 * before its end is reported.
 */
TEST(a_change_made_just_before_the_end_is_seen_before_the_end)
{
	_cleanup_free_ char *flood = NULL, *victim = NULL, *codex = NULL, *max = NULL;
	struct ward_policy *pf = subdir_policy("late-flood", &flood),
			   *pv = subdir_policy("late-victim", &victim);
	struct ward__loop *l;
	struct pstate sf = {0}, sv = {0};
	struct ward__proc *pfl, *pvi;
	const struct ward__sandbox *sb;
	char name[200];
	struct stat s;
	long n_files;

	ASSERT_OK(ward__read_file("/proc/sys/fs/inotify/max_queued_events", 64, &max, NULL));
	/* Well inside the queue (an overflow would be seen as a change by itself). */
	n_files = MIN(strtol(max, NULL, 10) - 64, 8000L);
	ASSERT_TRUE(n_files >= 2000);
	ASSERT_OK(asprintf(&codex, "%s/.codex", victim));
	ASSERT_OK(ward__loop_new(&l));
	pfl = start_proc(l, pf, &sf, "exec sleep 1000", false, false, 0);
	/* About 200 bytes an event: many times what the loop reads of the instance in a round. */
	memset(name, 'n', sizeof(name) - 8);
	name[sizeof(name) - 8] = '\0';
	for (long i = 0; i < n_files; i++) {
		char path[PATH_MAX];
		int fd;

		snprintf(path, sizeof(path), "%s/%s%ld", flood, name, i);
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		ASSERT_TRUE(fd >= 0);
		close(fd);
	}
	pvi = start_proc(l, pv, &sv, "mkdir .codex", false, false, 0);
	/* The command has done it, and reported its status, before the loop runs again. */
	for (int i = 0; i < 1000 && stat(codex, &s) < 0; i++)
		usleep(10000);
	ASSERT_OK(stat(codex, &s));
	usleep(300000);
	run_until_closed(l, &sv);
	sb = ward__proc_sandbox(pvi);
	ASSERT_TRUE(sb->guard_tripped);
	ASSERT_NE(ward__proc_exit_code(pvi), 0);
	ASSERT_EQ(stat(codex, &s), -1);

	ward__proc_free(pvi);
	ward__proc_free(pfl);
	ward__buf_release(&sf.out);
	ward__buf_release(&sv.out);
	ward__loop_free(l);
	for (long i = 0; i < n_files; i++) {
		char path[PATH_MAX];

		snprintf(path, sizeof(path), "%s/%s%ld", flood, name, i);
		ASSERT_OK(unlink(path));
	}
	ward_policy_free(pf);
	ward_policy_free(pv);
}

/* ------------------------------------------------------------ prepared sandboxes */

static int put_file(const char *path, const char *content)
{
	_cleanup_close_ int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	if (fd < 0)
		return -errno;
	return ward__write_all(fd, content, strlen(content));
}

/* A fresh directory under the scratch directory, and a policy with it as cwd. */
static struct ward_policy *dir_policy(const char *name, char **ret_dir)
{
	struct ward_policy *p;
	char *dir;

	ASSERT_OK(asprintf(&dir, "%s/%s", scratch, name));
	ASSERT_OK(mkdir(dir, 0755));
	ASSERT_OK(ward_policy_new(&p));
	ASSERT_OK(ward_policy_set_cwd(p, dir));
	ASSERT_OK(ward_policy_resolve(p, NULL));
	*ret_dir = dir;
	return p;
}

static struct ward__proc *start_spec(struct ward__loop *l, struct ward__proc_spec *spec,
				     struct pstate *st)
{
	struct ward__proc *p;
	struct ward_error e = {0};

	*st = (struct pstate){0};
	ward__buf_init(&st->out, 1 << 24);
	if (ward__proc_start(l, spec, &pops, st, &p, &e) < 0)
		tap_fail(__FILE__, __LINE__, "proc_start: %s", e.message);
	return p;
}

/* Runs the loop until the pool has its sandboxes ready for one policy (at most 10 s). */
static void wait_ready(struct ward__loop *l, struct ward__proc_pool *pool)
{
	uint64_t deadline = ward__now_ms() + 10000;

	while (ward__proc_pool_ready(pool) < WARD_POOL_DEPTH && ward__now_ms() < deadline)
		ASSERT_OK(ward__loop_iterate(l, 20));
	ASSERT_EQ(ward__proc_pool_ready(pool), WARD_POOL_DEPTH);
}

/* Runs cmd through sh -c with the pool, in cwd (NULL: the policy's); its output, exit code, *ret_warm. */
static char *run_in_dir(struct ward__loop *l, struct ward__proc_pool *pool,
			const struct ward_policy *pol, const char *cmd, const char *cwd, bool tty,
			int *ret_code, bool *ret_warm)
{
	char *argv[] = {(char *)"/bin/sh",  (char *)"-c",      (char *)cmd,
			(char *)"arg zero", (char *)"arg one", NULL};
	char *envp[] = {(char *)"FOO=bar baz", (char *)"PATH=/usr/bin:/bin", NULL};
	struct ward__proc_spec spec = {
		.policy = pol, .argv = argv, .envp = envp, .tty = tty, .rows = 30, .cols = 100};
	struct pstate st;
	struct ward__proc *p;
	char *out;

	spec.pool = pool;
	spec.cwd = cwd;
	p = start_spec(l, &spec, &st);
	run_until_closed(l, &st);
	*ret_code = ward__proc_exit_code(p);
	*ret_warm = ward__proc_sandbox(p)->launched;
	out = strdup((char *)st.out.data);
	ward__proc_free(p);
	ward__buf_release(&st.out);
	return out;
}

static char *run_in(struct ward__loop *l, struct ward__proc_pool *pool,
		    const struct ward_policy *pol, const char *cmd, bool tty, int *ret_code,
		    bool *ret_warm)
{
	return run_in_dir(l, pool, pol, cmd, NULL, tty, ret_code, ret_warm);
}

/*
 * attack fails in a sandbox built at its start (the prepared one was stale),
 * then in the one prepared after it: never marker in the output.
 */
static void refused_cold_then_warm(struct ward__loop *l, struct ward__proc_pool *pool,
				   const struct ward_policy *pol, const char *attack,
				   const char *marker)
{
	for (int warm = 0; warm < 2; warm++) {
		_cleanup_free_ char *out = NULL;
		int code;
		bool launched;

		if (warm)
			wait_ready(l, pool);
		out = run_in(l, pool, pol, attack, false, &code, &launched);
		ASSERT_EQ(launched, warm == 1);
		ASSERT_NE(code, 0);
		ASSERT_FALSE(strstr(out, marker) != NULL);
	}
}

/* What a command sees of its sandbox, printed in a stable order. */
static const char probe_script[] =
	"echo \"argv: $0|$1|$FOO\"; pwd; id -u; "
	"grep -E '^(CapEff|CapBnd|NoNewPrivs|Seccomp):' /proc/self/status; "
	"echo \"pid ns: $$ $(cat /proc/1/comm)\"; "
	"echo \"net: $(grep -c : /proc/net/dev)\"; "
	"touch /usr/ward-prepared-x 2>/dev/null || echo 'root: read-only'; "
	"echo hi > own && cat own; echo err >&2; exit 7";

TEST(prepared_sandbox_runs_a_command_as_a_cold_one)
{
	_cleanup_free_ char *dir = NULL, *cold = NULL, *warm = NULL, *warm2 = NULL;
	struct ward_policy *pol = dir_policy("prepared-same", &dir);
	struct ward__proc_pool *pool;
	struct ward__loop *l;
	int code;
	bool launched;

	ASSERT_OK(ward__loop_new(&l));
	ASSERT_OK(ward__proc_pool_new(l, &pool));
	/* The first start of a policy is cold, and has the next one prepared. */
	cold = run_in(l, pool, pol, probe_script, false, &code, &launched);
	ASSERT_FALSE(launched);
	ASSERT_EQ(code, 7);
	wait_ready(l, pool);
	warm = run_in(l, pool, pol, probe_script, false, &code, &launched);
	ASSERT_TRUE(launched);
	ASSERT_EQ(code, 7);
	/* The same command sees the same sandbox, whichever way it was built. */
	ASSERT_STREQ(warm, cold);
	ASSERT_CONTAINS(warm, "argv: arg zero|arg one|bar baz");
	ASSERT_CONTAINS(warm, dir);
	ASSERT_CONTAINS(warm, "CapEff:\t0000000000000000");
	ASSERT_CONTAINS(warm, "CapBnd:\t0000000000000000");
	ASSERT_CONTAINS(warm, "NoNewPrivs:\t1");
	ASSERT_CONTAINS(warm, "Seccomp:\t2");
	ASSERT_CONTAINS(warm, "net: 1");
	ASSERT_CONTAINS(warm, "root: read-only");
	ASSERT_CONTAINS(warm, "hi\n");
	ASSERT_CONTAINS(warm, "err\n");
	/* Used once: the next start gets another sandbox, prepared after this one. */
	wait_ready(l, pool);
	warm2 = run_in(l, pool, pol, "echo $$; exit 3", false, &code, &launched);
	ASSERT_TRUE(launched);
	ASSERT_EQ(code, 3);
	/* A command of its own directory (a session's workdir) starts there, warm as cold. */
	for (int i = 0; i < 3; i++) {
		_cleanup_free_ char *out = NULL;
		bool tty = i > 0;

		if (i == 0)
			wait_ready(l, pool);
		out = run_in_dir(l, pool, pol, "pwd", "/usr", tty, &code, &launched);
		ASSERT_EQ(launched, i != 1); /* the first tty start is cold */
		ASSERT_EQ(code, 0);
		ASSERT_CONTAINS(out, "/usr");
		ASSERT_FALSE(strstr(out, dir));
		if (i == 1) {
			/* The pipes' slot has its sandbox ready; the tty's, a new slot, gets one too. */
			uint64_t deadline = ward__now_ms() + 10000;

			while (ward__proc_pool_ready(pool) < 2 * WARD_POOL_DEPTH &&
			       ward__now_ms() < deadline)
				ASSERT_OK(ward__loop_iterate(l, 20));
			ASSERT_EQ(ward__proc_pool_ready(pool), 2 * WARD_POOL_DEPTH);
		}
	}
	ward__proc_pool_free(pool);
	ward__loop_free(l);
	ward_policy_free(pol);
}

TEST(prepared_sandbox_execs_large_commands_and_reports_missing_ones)
{
	_cleanup_free_ char *dir = NULL, *big = NULL;
	struct ward_policy *pol = dir_policy("prepared-big", &dir);
	char *argv[] = {(char *)"/bin/sh", (char *)"-c", (char *)"echo ${#1}",
			(char *)"sh",	   NULL,	 NULL};
	char *missing[] = {(char *)"/nonexistent/ward-x", NULL};
	struct ward__proc_spec spec = {.policy = pol, .argv = argv};
	struct ward__proc_pool *pool;
	struct ward__loop *l;
	struct ward__proc *p;
	struct pstate st;
	int code;
	bool launched;

	ASSERT_OK(ward__loop_new(&l));
	ASSERT_OK(ward__proc_pool_new(l, &pool));
	spec.pool = pool;
	free(run_in(l, pool, pol, "true", false, &code, &launched));
	/* Arguments beyond one datagram travel in a memfd. */
	big = malloc(100001);
	memset(big, 'x', 100000);
	big[100000] = '\0';
	argv[4] = big;
	wait_ready(l, pool);
	p = start_spec(l, &spec, &st);
	run_until_closed(l, &st);
	ASSERT_TRUE(ward__proc_sandbox(p)->launched);
	ASSERT_EQ(ward__proc_exit_code(p), 0);
	ASSERT_STREQ((char *)st.out.data, "100000\n");
	ward__proc_free(p);
	ward__buf_release(&st.out);
	/* A program that is not there: 127 and why, as in a cold sandbox. */
	wait_ready(l, pool);
	spec.argv = missing;
	p = start_spec(l, &spec, &st);
	run_until_closed(l, &st);
	ASSERT_EQ(ward__proc_exit_code(p), 127);
	ASSERT_TRUE(ward__proc_error(p) != NULL);
	ASSERT_CONTAINS(ward__proc_error(p)->message, "/nonexistent/ward-x");
	ward__proc_free(p);
	ward__buf_release(&st.out);
	ward__proc_pool_free(pool);
	ward__loop_free(l);
	ward_policy_free(pol);
}

TEST(prepared_tty_sandbox_has_its_own_terminal_at_the_asked_size)
{
	_cleanup_free_ char *dir = NULL, *out = NULL;
	struct ward_policy *pol = dir_policy("prepared-tty", &dir);
	struct ward__proc_pool *pool;
	struct ward__loop *l;
	int code;
	bool launched;

	ASSERT_OK(ward__loop_new(&l));
	ASSERT_OK(ward__proc_pool_new(l, &pool));
	free(run_in(l, pool, pol, "true", true, &code, &launched));
	ASSERT_FALSE(launched);
	wait_ready(l, pool);
	out = run_in(l, pool, pol, "tty; stty size; test -t 0 && test -t 2 && echo all-tty", true,
		     &code, &launched);
	ASSERT_TRUE(launched);
	ASSERT_EQ(code, 0);
	/* From the sandbox's own devpts: its first terminal. */
	ASSERT_CONTAINS(out, "/dev/pts/0");
	ASSERT_CONTAINS(out, "30 100");
	ASSERT_CONTAINS(out, "all-tty");
	ward__proc_pool_free(pool);
	ward__loop_free(l);
	ward_policy_free(pol);
}

TEST(prepared_sandbox_is_not_used_once_a_protected_entry_was_replaced)
{
	_cleanup_free_ char *dir = NULL, *cfg = NULL, *tmp = NULL, *out = NULL, *host = NULL;
	struct ward_policy *pol;
	struct ward__proc_pool *pool;
	struct ward__loop *l;
	char *gitdir;
	int code;
	bool launched;
	const char *attack = "echo '[core] hooksPath = /tmp' >> .git/config && echo WROTE";

	ASSERT_OK(asprintf(&dir, "%s/prepared-git", scratch));
	ASSERT_OK(mkdir(dir, 0755));
	ASSERT_OK(asprintf(&gitdir, "%s/.git", dir));
	ASSERT_OK(mkdir(gitdir, 0755));
	ASSERT_OK(asprintf(&cfg, "%s/config", gitdir));
	ASSERT_OK(asprintf(&tmp, "%s/config.lock", gitdir));
	free(gitdir);
	ASSERT_OK(put_file(cfg, "[core]\n"));
	ASSERT_OK(ward_policy_new(&pol));
	ASSERT_OK(ward_policy_set_cwd(pol, dir));
	ASSERT_OK(ward_policy_resolve(pol, NULL));
	ASSERT_OK(ward__loop_new(&l));
	ASSERT_OK(ward__proc_pool_new(l, &pool));
	free(run_in(l, pool, pol, "true", false, &code, &launched));
	wait_ready(l, pool);

	/*
	 * git replaces its config by a rename (git config on the host): the
	 * prepared sandbox's read-only mount covers the old file, whose mount
	 * the rename detached. It must not be used: the start builds a sandbox
	 * of its own, where the new file is read-only.
	 */
	ASSERT_OK(put_file(tmp, "[core]\n\tbare = false\n"));
	ASSERT_OK(rename(tmp, cfg));
	ward_policy_free(pol);
	ASSERT_OK(ward_policy_new(&pol));
	ASSERT_OK(ward_policy_set_cwd(pol, dir));
	ASSERT_OK(ward_policy_resolve(pol, NULL));
	/* The next one is prepared on the new file, and holds it read-only as well. */
	refused_cold_then_warm(l, pool, pol, attack, "WROTE");
	ASSERT_OK(ward__read_file(cfg, 4096, &host, NULL));
	ASSERT_STREQ(host, "[core]\n\tbare = false\n");
	ward__proc_pool_free(pool);
	ward__loop_free(l);
	ward_policy_free(pol);
}

TEST(prepared_sandbox_is_not_used_once_the_host_mounts_changed)
{
	_cleanup_free_ char *dir = NULL, *mnt = NULL, *out = NULL;
	struct ward_policy *pol;
	struct ward__proc_pool *pool;
	struct ward__loop *l;
	uid_t uid = getuid();
	gid_t gid = getgid();
	char map[64];
	int code;
	bool launched;

	/* A mount table of this test's own (and, unprivileged, a user namespace to mount in). */
	if (uid != 0) {
		if (unshare(CLONE_NEWUSER | CLONE_NEWNS) < 0)
			SKIP("cannot create a user namespace: %s", strerror(errno));
		ASSERT_OK(ward__write_file("/proc/self/setgroups", "deny"));
		snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)uid, (unsigned)uid);
		ASSERT_OK(ward__write_file("/proc/self/uid_map", map));
		snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)gid, (unsigned)gid);
		ASSERT_OK(ward__write_file("/proc/self/gid_map", map));
	} else {
		ASSERT_OK(unshare(CLONE_NEWNS));
	}
	ASSERT_OK(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL));
	pol = dir_policy("prepared-mounts", &dir);
	ASSERT_OK(asprintf(&mnt, "%s/mnt", dir));
	ASSERT_OK(mkdir(mnt, 0755));
	ASSERT_OK(ward__loop_new(&l));
	ASSERT_OK(ward__proc_pool_new(l, &pool));
	free(run_in(l, pool, pol, "true", false, &code, &launched));
	wait_ready(l, pool);
	/* A mount after the sandbox was built: its view would not have it. */
	ASSERT_OK(mount("tmpfs", mnt, "tmpfs", 0, "size=64k"));
	out = run_in(l, pool, pol, "ls mnt", false, &code, &launched);
	ASSERT_FALSE(launched);
	ASSERT_EQ(code, 0);
	wait_ready(l, pool);
	free(out);
	{
		_cleanup_free_ char *marker = NULL;

		ASSERT_OK(asprintf(&marker, "%s/inside", mnt));
		ASSERT_OK(put_file(marker, "x"));
	}
	out = run_in(l, pool, pol, "ls mnt", false, &code, &launched);
	ASSERT_TRUE(launched);
	ASSERT_CONTAINS(out, "inside");
	ward__proc_pool_free(pool);
	ward__loop_free(l);
	ward_policy_free(pol);
}

/* A policy of dir, with file protected and deny denied to reads. */
static struct ward_policy *relink_policy(const char *dir, const char *file, const char *deny)
{
	struct ward_policy *p;

	ASSERT_OK(ward_policy_new(&p));
	ASSERT_OK(ward_policy_set_cwd(p, dir));
	ASSERT_OK(ward_policy_add_protect(p, file));
	ASSERT_OK(ward_policy_add_deny_read(p, deny));
	ASSERT_OK(ward_policy_resolve(p, NULL));
	return p;
}

/* Unlinks path and links it back from a second name: the same inode, a new directory entry. */
static void relink(const char *path, const char *spare)
{
	ASSERT_OK(link(path, spare));
	ASSERT_OK(unlink(path));
	ASSERT_OK(link(spare, path));
	ASSERT_OK(unlink(spare));
}

TEST(prepared_sandbox_is_not_used_once_the_host_detached_its_binds)
{
	_cleanup_free_ char *dir = NULL, *file = NULL, *deny = NULL, *spare = NULL, *out = NULL,
			    *host = NULL;
	const char *attack = "echo PLANTED >> kept.cfg; cat secret.env";
	struct ward_policy *pol;
	struct ward__proc_pool *pool;
	struct ward__loop *l;
	int code;
	bool launched;

	ASSERT_OK(asprintf(&dir, "%s/prepared-relink", scratch));
	ASSERT_OK(mkdir(dir, 0755));
	ASSERT_OK(asprintf(&file, "%s/kept.cfg", dir));
	ASSERT_OK(asprintf(&deny, "%s/secret.env", dir));
	ASSERT_OK(asprintf(&spare, "%s/spare", scratch));
	ASSERT_OK(put_file(file, "kept\n"));
	ASSERT_OK(put_file(deny, "SECRET\n"));
	pol = relink_policy(dir, file, deny);
	ASSERT_OK(ward__loop_new(&l));
	ASSERT_OK(ward__proc_pool_new(l, &pool));
	free(run_in(l, pool, pol, "true", false, &code, &launched));
	wait_ready(l, pool);

	/*
	 * Unlinking a name detaches every mount on it, in every namespace:
	 * the prepared sandbox's read-only bind of kept.cfg and its mask of
	 * secret.env are gone, while the names come back as the same inodes
	 * (the fingerprint cannot tell). The start must not use it.
	 */
	relink(file, spare);
	relink(deny, spare);
	ward_policy_free(pol);
	pol = relink_policy(dir, file, deny);
	/* The next one, prepared after, holds both as a cold one does. */
	refused_cold_then_warm(l, pool, pol, attack, "SECRET");
	ASSERT_OK(ward__read_file(file, 4096, &host, NULL));
	ASSERT_STREQ(host, "kept\n");
	ward__proc_pool_free(pool);
	ward__loop_free(l);
	ward_policy_free(pol);
}

/* Children of this process that are not the given pid (the prepared sandboxes' inits). */
static size_t other_children(pid_t except)
{
	char path[64], buf[4096];
	size_t n = 0;
	ssize_t k;
	_cleanup_close_ int fd = -1;

	snprintf(path, sizeof(path), "/proc/self/task/%d/children", (int)getpid());
	fd = open(path, O_RDONLY | O_CLOEXEC);
	ASSERT_TRUE(fd >= 0);
	k = read(fd, buf, sizeof(buf) - 1);
	buf[k > 0 ? k : 0] = '\0';
	for (char *p = buf; *p;) {
		long v = strtol(p, &p, 10);

		if (v > 0 && v != except)
			n++;
		while (*p == ' ')
			p++;
	}
	return n;
}

TEST_TIMEOUT(prepared_sandbox_goes_when_unused_or_dead, 60)
{
	_cleanup_free_ char *dir = NULL, *out = NULL;
	struct ward_policy *pol = dir_policy("prepared-idle", &dir);
	struct ward__proc_pool *pool;
	struct ward__loop *l;
	uint64_t deadline;
	int code;
	bool launched;

	ASSERT_OK(ward__loop_new(&l));
	ASSERT_OK(ward__proc_pool_new(l, &pool));
	free(run_in(l, pool, pol, "true", false, &code, &launched));
	wait_ready(l, pool);
	for (int i = 0; i < 100 && other_children(0) != WARD_POOL_DEPTH; i++)
		ward__loop_iterate(l, 20);
	ASSERT_EQ(other_children(0), WARD_POOL_DEPTH);
	/* Unused for WARD_POOL_IDLE_MS: thrown away, nothing of it left. */
	deadline = ward__now_ms() + WARD_POOL_IDLE_MS + 3000;
	while (ward__now_ms() < deadline && (ward__proc_pool_ready(pool) || other_children(0)))
		ward__loop_iterate(l, 50);
	ASSERT_EQ(ward__proc_pool_ready(pool), 0);
	ASSERT_EQ(other_children(0), 0);

	/* A prepared sandbox killed under ward: the start builds one of its own. */
	free(run_in(l, pool, pol, "true", false, &code, &launched));
	wait_ready(l, pool);
	{
		char path[64], buf[4096];
		_cleanup_close_ int fd = -1;
		ssize_t k;

		snprintf(path, sizeof(path), "/proc/self/task/%d/children", (int)getpid());
		fd = open(path, O_RDONLY | O_CLOEXEC);
		k = read(fd, buf, sizeof(buf) - 1);
		ASSERT_TRUE(k > 0);
		buf[k] = '\0';
		/* Every child: the prepared sandbox's init, and inits of earlier runs being reaped. */
		for (char *q = buf; *q;) {
			long v = strtol(q, &q, 10);

			if (v > 0)
				kill((pid_t)v, SIGKILL);
			while (*q == ' ')
				q++;
		}
	}
	for (int i = 0; i < 250 && ward__proc_pool_ready(pool); i++)
		ward__loop_iterate(l, 20);
	ASSERT_EQ(ward__proc_pool_ready(pool), 0);
	out = run_in(l, pool, pol, "echo fine", false, &code, &launched);
	ASSERT_FALSE(launched);
	ASSERT_EQ(code, 0);
	ASSERT_STREQ(out, "fine\n");
	/* Freeing the pool kills what it prepared; the loop reaps it. */
	wait_ready(l, pool);
	ward__proc_pool_free(pool);
	for (int i = 0; i < 200 && (other_children(0) || ward__loop_reaping(l)); i++)
		ward__loop_iterate(l, 20);
	ASSERT_EQ(other_children(0), 0);
	ward__loop_free(l);
	ward_policy_free(pol);
}

/* ------------------------------------------------------------ sessions */

TEST(exec_command_returns_at_exit_not_at_the_end_of_the_window)
{
	struct ward__loop *l;
	struct ward__sessions *s;
	struct ward__session_reply *r;
	char *text;

	ASSERT_OK(ward__loop_new(&l));
	s = new_store(l, 0);
	r = exec_sync(l, s, "echo hello; exit 7", false, 30000);
	ASSERT_TRUE(r->exited);
	ASSERT_EQ(r->exit_code, 7);
	ASSERT_EQ(r->session_id, 0);
	ASSERT_STREQ(r->output, "hello\n");
	/* Well before the 30 s window: the call ended with the command. */
	ASSERT_TRUE(r->wall_ns < 20ULL * 1000000000);
	ASSERT_EQ(r->original_token_count, 2);
	ASSERT_EQ(strlen(r->chunk_id), 6);
	text = ward__session_reply_text(r);
	ASSERT_CONTAINS(text, "Chunk ID: ");
	ASSERT_CONTAINS(text, "\nWall time: ");
	ASSERT_CONTAINS(
		text,
		" seconds\nProcess exited with code 7\nOriginal token count: 2\nOutput:\nhello\n");
	free(text);
	ward__session_reply_free(r);
	ASSERT_EQ(ward__sessions_count(s), 0);
	ward__sessions_free(s);
	ward__loop_free(l);
}

TEST(long_command_gets_a_session_and_its_later_output_through_polls)
{
	struct ward__loop *l;
	struct ward__sessions *s;
	struct ward__session_reply *r;
	bool exited = false;
	int code = -1, id;
	char *rest, *text;

	ASSERT_OK(ward__loop_new(&l));
	s = new_store(l, 0);
	r = exec_sync(l, s, "echo start; sleep 1; echo end", false, 250);
	ASSERT_FALSE(r->exited);
	ASSERT_GE(r->session_id, WARD_SESSION_ID_MIN);
	ASSERT_LE(r->session_id, WARD_SESSION_ID_MAX);
	ASSERT_STREQ(r->output, "start\n");
	text = ward__session_reply_text(r);
	id = r->session_id;
	{
		char want[64];

		snprintf(want, sizeof(want), "Process running with session ID %d\n", id);
		ASSERT_CONTAINS(text, want);
	}
	free(text);
	ward__session_reply_free(r);
	ASSERT_EQ(ward__sessions_count(s), 1);
	rest = poll_until(l, s, id, "end", &exited, &code);
	ASSERT_CONTAINS(rest, "end\n");
	if (!exited)
		free(poll_until(l, s, id, "\x01", &exited, &code));
	ASSERT_TRUE(exited);
	ASSERT_EQ(code, 0);
	free(rest);
	/* The exit was reported: the session is gone. */
	{
		struct ward__write_args a = {
			.session_id = id, .chars = "", .yield_ms = -1, .max_output_tokens = -1};
		struct ward_error e = {0};

		ASSERT_EQ(ward__sessions_write(s, &a, on_done, NULL, NULL, &e), -ENOENT);
		ASSERT_CONTAINS(e.message, "Unknown process id");
	}
	ward__sessions_free(s);
	ward__loop_free(l);
}

TEST(tty_session_drives_python_repl)
{
	struct ward__loop *l;
	struct ward__sessions *s;
	struct ward__session_reply *r;
	char *out;
	int id;

	if (access("/usr/bin/python3", X_OK) < 0)
		SKIP("no python3");
	ASSERT_OK(ward__loop_new(&l));
	s = new_store(l, 0);
	r = exec_sync(l, s, "python3 -q -i", true, 2000);
	ASSERT_FALSE(r->exited);
	id = r->session_id;
	out = strdup(r->output);
	ward__session_reply_free(r);
	if (!strstr(out, ">>> ")) {
		free(out);
		out = poll_until(l, s, id, ">>> ", NULL, NULL);
	}
	ASSERT_CONTAINS(out, ">>> ");
	free(out);
	r = write_sync(l, s, id, "print(6*7)\n", 2000);
	out = strdup(r->output);
	ward__session_reply_free(r);
	if (!strstr(out, "42")) {
		free(out);
		out = poll_until(l, s, id, "42", NULL, NULL);
	}
	ASSERT_CONTAINS(out, "42");
	free(out);
	r = write_sync(l, s, id, "exit(5)\n", 3000);
	if (!r->exited) {
		bool exited = false;
		int code = -1;

		ward__session_reply_free(r);
		free(poll_until(l, s, id, "\x01", &exited, &code));
		ASSERT_TRUE(exited);
		ASSERT_EQ(code, 5);
	} else {
		ASSERT_EQ(r->exit_code, 5);
		ward__session_reply_free(r);
	}
	ward__sessions_free(s);
	ward__loop_free(l);
}

TEST(tty_session_drives_interactive_bash)
{
	struct ward__loop *l;
	struct ward__sessions *s;
	struct ward__session_reply *r;
	char *out;
	int id;

	if (access("/bin/bash", X_OK) < 0)
		SKIP("no bash");
	ASSERT_OK(ward__loop_new(&l));
	s = new_store(l, 0);
	r = exec_sync(l, s, "PS1='ward$ ' exec bash --norc --noprofile -i", true, 1000);
	ASSERT_FALSE(r->exited);
	id = r->session_id;
	ward__session_reply_free(r);
	r = write_sync(l, s, id, "X=$((40+2)); echo value=$X\n", 2000);
	out = strdup(r->output);
	ward__session_reply_free(r);
	if (!strstr(out, "value=42")) {
		free(out);
		out = poll_until(l, s, id, "value=42", NULL, NULL);
	}
	ASSERT_CONTAINS(out, "value=42");
	free(out);
	/* State persists between calls: the same shell. */
	r = write_sync(l, s, id, "echo again=$X\n", 2000);
	out = strdup(r->output);
	ward__session_reply_free(r);
	if (!strstr(out, "again=42")) {
		free(out);
		out = poll_until(l, s, id, "again=42", NULL, NULL);
	}
	ASSERT_CONTAINS(out, "again=42");
	free(out);
	ward__sessions_free(s);
	ward__loop_free(l);
}

static void interrupt_case(bool tty)
{
	struct ward__loop *l;
	struct ward__sessions *s;
	struct ward__session_reply *r;
	bool exited = false;
	int code = -1, id;

	ASSERT_OK(ward__loop_new(&l));
	s = new_store(l, 0);
	r = exec_sync(l, s, "exec sleep 100", tty, 300);
	ASSERT_FALSE(r->exited);
	id = r->session_id;
	ward__session_reply_free(r);
	r = write_sync(l, s, id, "\x03", 3000);
	exited = r->exited;
	code = r->exit_code;
	ward__session_reply_free(r);
	if (!exited)
		free(poll_until(l, s, id, "\x01", &exited, &code));
	ASSERT_TRUE(exited);
	ASSERT_EQ(code, 130);
	ward__sessions_free(s);
	ward__loop_free(l);
}

TEST(ctrl_c_interrupts_a_pipe_session)
{
	interrupt_case(false);
}

TEST(ctrl_c_interrupts_a_tty_session)
{
	interrupt_case(true);
}

TEST(writing_to_a_pipe_session_is_a_clear_error)
{
	struct ward__loop *l;
	struct ward__sessions *s;
	struct ward__session_reply *r;
	struct ward__write_args a = {
		.chars = "hi\n", .len = 3, .yield_ms = -1, .max_output_tokens = -1};
	struct ward_error e = {0};

	ASSERT_OK(ward__loop_new(&l));
	s = new_store(l, 0);
	r = exec_sync(l, s, "sleep 100", false, 250);
	a.session_id = r->session_id;
	ward__session_reply_free(r);
	ASSERT_EQ(ward__sessions_write(s, &a, on_done, NULL, NULL, &e), -EPIPE);
	ASSERT_CONTAINS(e.message, "stdin is closed for this session");
	a.session_id = 999999;
	ASSERT_EQ(ward__sessions_write(s, &a, on_done, NULL, NULL, &e), -ENOENT);
	ASSERT_STREQ(e.message, "Unknown process id 999999");
	ward__sessions_free(s);
	ward__loop_free(l);
}

TEST(output_is_middle_truncated_to_the_token_budget)
{
	struct ward__loop *l;
	struct ward__sessions *s;
	struct ward__exec_args a = {
		.cmd = "seq 1 100000", .yield_ms = 20000, .max_output_tokens = 100, .login = -1};
	struct waiter w = {0};
	char *tail;

	ASSERT_OK(ward__loop_new(&l));
	s = new_store(l, 0);
	ASSERT_OK(ward__sessions_exec(s, &a, on_done, &w, NULL, NULL));
	wait_for(l, &w, 30000);
	ASSERT_TRUE(w.r->exited);
	ASSERT_TRUE(w.r->truncated);
	/* 588895 bytes of output, counted as Codex counts: ceil(bytes / 4). */
	ASSERT_EQ(w.r->original_token_count, (588895 + 3) / 4);
	ASSERT_TRUE(strncmp(w.r->output, "1\n2\n3\n", 6) == 0);
	ASSERT_CONTAINS(w.r->output, " tokens truncated\xe2\x80\xa6");
	tail = w.r->output + w.r->output_len - 7;
	ASSERT_STREQ(tail, "100000\n");
	ASSERT_LE(w.r->output_len, 400 + 40);
	ward__session_reply_free(w.r);
	ward__sessions_free(s);
	ward__loop_free(l);
}

TEST(a_flood_between_polls_keeps_head_and_tail_of_one_mib)
{
	struct ward__loop *l;
	struct ward__sessions *s;
	struct ward__session_reply *r;
	int id;
	struct ward__write_args a = {
		.chars = "", .yield_ms = 5000, .max_output_tokens = WARD_MAX_OUTPUT_TOKENS_MAX};
	struct waiter w = {0};

	ASSERT_OK(ward__loop_new(&l));
	s = new_store(l, 0);
	r = exec_sync(
		l, s,
		"sleep 0.5; head -c 3000000 /dev/zero | tr '\\0' a; echo; echo END; sleep 100",
		false, 250);
	id = r->session_id;
	ward__session_reply_free(r);
	a.session_id = id;
	/* Let the flood happen with nobody asking. */
	for (int i = 0; i < 60; i++)
		ward__loop_iterate(l, 50);
	ASSERT_OK(ward__sessions_write(s, &a, on_done, &w, NULL, NULL));
	wait_for(l, &w, 10000);
	ASSERT_CONTAINS(w.r->output, "bytes omitted ...");
	ASSERT_CONTAINS(w.r->output, "END\n");
	ASSERT_LE(w.r->output_len, WARD_SESSION_OUTPUT_MAX + 128);
	ASSERT_GE(w.r->original_token_count, 3000000 / 4);
	ward__session_reply_free(w.r);
	ward__sessions_free(s);
	ward__loop_free(l);
}

static void on_kill_done(struct ward__session_reply *r, void *userdata)
{
	on_done(r, userdata);
}

TEST(kill_session_leaves_nothing_running)
{
	struct ward__loop *l;
	struct ward__sessions *s;
	struct ward__session_reply *r;
	struct waiter w = {0};
	int id;

	ASSERT_OK(ward__loop_new(&l));
	s = new_store(l, 0);
	r = exec_sync(l, s, "(sleep 1000.4343 &); sleep 1000.4343", false, 500);
	id = r->session_id;
	ward__session_reply_free(r);
	ASSERT_TRUE(host_has_process("sleep 1000.4343"));
	ASSERT_OK(ward__sessions_kill(s, id, on_kill_done, &w, NULL, NULL));
	wait_for(l, &w, 10000);
	ASSERT_TRUE(w.r->exited);
	ASSERT_TRUE(w.r->killed);
	ASSERT_EQ(w.r->exit_code, 128 + SIGKILL);
	ward__session_reply_free(w.r);
	ASSERT_TRUE(host_process_gone(l, "sleep 1000.4343"));
	ASSERT_EQ(ward__sessions_count(s), 0);
	ward__sessions_free(s);
	ward__loop_free(l);
}

TEST(closing_the_store_kills_every_session)
{
	struct ward__loop *l;
	struct ward__sessions *s;

	ASSERT_OK(ward__loop_new(&l));
	s = new_store(l, 0);
	for (int i = 0; i < 3; i++)
		ward__session_reply_free(exec_sync(l, s, "sleep 1000.4444", i == 1, 250));
	ASSERT_TRUE(host_has_process("sleep 1000.4444"));
	ward__sessions_free(s);
	ASSERT_TRUE(host_process_gone(l, "sleep 1000.4444"));
	ward__loop_free(l);
}

TEST(pruning_prefers_exited_sessions_and_spares_the_recent_ones)
{
	struct ward__loop *l;
	struct ward__sessions *s;
	int ids[10];
	json_t *list;
	struct ward__session_reply *r;

	ASSERT_OK(ward__loop_new(&l));
	s = new_store(l, 10);
	/* Session 0 exits soon (but its exit is not collected); the others run. */
	for (int i = 0; i < 10; i++) {
		r = exec_sync(l, s, i == 0 ? "sleep 0.3" : "sleep 100", false, 250);
		ids[i] = r->session_id;
		ASSERT_FALSE(r->exited);
		ward__session_reply_free(r);
	}
	for (int i = 0; i < 20; i++)
		ward__loop_iterate(l, 50);
	/* Full: the exited one goes first, although sessions 1.. are older in use than... */
	r = exec_sync(l, s, "sleep 100", false, 250);
	ward__session_reply_free(r);
	list = ward__sessions_list(s);
	ASSERT_EQ(json_array_size(list), 10);
	{
		char *dump = json_dumps(list, 0);
		char want[32];

		snprintf(want, sizeof(want), "\"session_id\": %d,", ids[0]);
		ASSERT_TRUE(strstr(dump, want) == NULL);
		snprintf(want, sizeof(want), "\"session_id\": %d,", ids[1]);
		ASSERT_CONTAINS(dump, want);
		free(dump);
	}
	json_decref(list);
	/* Then the least recently used live one (ids[1]), never one of the 8 most recent. */
	r = exec_sync(l, s, "sleep 100", false, 250);
	ward__session_reply_free(r);
	list = ward__sessions_list(s);
	{
		char *dump = json_dumps(list, 0);
		char want[32];

		snprintf(want, sizeof(want), "\"session_id\": %d,", ids[1]);
		ASSERT_TRUE(strstr(dump, want) == NULL);
		snprintf(want, sizeof(want), "\"session_id\": %d,", ids[2]);
		ASSERT_CONTAINS(dump, want);
		free(dump);
	}
	json_decref(list);
	ward__sessions_free(s);
	ward__loop_free(l);
}

struct many {
	int done;
	int ok;
};

static void many_done(struct ward__session_reply *r, void *userdata)
{
	struct many *m = userdata;

	m->done++;
	if (r && r->exited && r->exit_code == 0 && strstr(r->output, "done"))
		m->ok++;
	ward__session_reply_free(r);
}

TEST_TIMEOUT(fifty_calls_in_flight_on_different_sessions, 120)
{
	struct ward__loop *l;
	struct ward__sessions *s;
	struct many m = {0};
	int ids[50];
	uint64_t deadline;

	ASSERT_OK(ward__loop_new(&l));
	s = new_store(l, 64);
	for (int i = 0; i < 50; i++) {
		struct ward__session_reply *r = exec_sync(
			l, s, "while [ ! -e go ]; do sleep 0.05; done; echo done", false, 250);

		ASSERT_FALSE(r->exited);
		ids[i] = r->session_id;
		ward__session_reply_free(r);
	}
	for (int i = 0; i < 50; i++) {
		struct ward__write_args a = {.session_id = ids[i],
					     .chars = "",
					     .yield_ms = 30000,
					     .max_output_tokens = -1};

		ASSERT_OK(ward__sessions_write(s, &a, many_done, &m, NULL, NULL));
	}
	ASSERT_EQ(ward__sessions_calls_in_flight(s), 50);
	/* All 50 wait at once; then they are released together. */
	for (int i = 0; i < 10; i++)
		ASSERT_OK(ward__loop_iterate(l, 20));
	ASSERT_EQ(m.done, 0);
	{
		char go[256];
		int fd;

		snprintf(go, sizeof(go), "%s/go", scratch);
		fd = open(go, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
		ASSERT_TRUE(fd >= 0);
		close(fd);
	}
	deadline = ward__now_ms() + 60000;
	while (m.done < 50 && ward__now_ms() < deadline)
		ASSERT_OK(ward__loop_iterate(l, 100));
	ASSERT_EQ(m.done, 50);
	ASSERT_EQ(m.ok, 50);
	ASSERT_EQ(ward__sessions_count(s), 0);
	ward__sessions_free(s);
	ward__loop_free(l);
}

TEST(quiet_environment_and_own_sandbox)
{
	struct ward__loop *l;
	struct ward__sessions *s;
	struct ward__session_reply *r;

	ASSERT_OK(ward__loop_new(&l));
	s = new_store(l, 0);
	r = exec_sync(l, s, "echo $NO_COLOR:$TERM:$PAGER:$GIT_PAGER:$LC_ALL", false, 5000);
	ASSERT_STREQ(r->output, "1:dumb:cat:cat:C.UTF-8\n");
	ward__session_reply_free(r);
	ward__sessions_free(s);

	/*
	 * A write the host would allow but the policy does not: a sibling of the
	 * workspace, with /tmp and $TMPDIR not writable roots.
	 */
	{
		struct ward__sessions_config c = {
			.max_sessions = 0, .shell = "/bin/sh", .login = 0};
		struct ward_policy *p;
		char ws[256], outside[256], cmd[512];

		snprintf(ws, sizeof(ws), "%s/ws", scratch);
		snprintf(outside, sizeof(outside), "%s/outside", scratch);
		ASSERT_OK(mkdir(ws, 0755));
		ASSERT_OK(mkdir(outside, 0755));
		ASSERT_OK(ward_policy_new(&p));
		ASSERT_OK(ward_policy_set_cwd(p, ws));
		ASSERT_OK(ward_policy_set_exclude_slash_tmp(p, true));
		ASSERT_OK(ward_policy_set_exclude_tmpdir_env_var(p, true));
		c.policy = p;
		ASSERT_OK(ward__sessions_new(l, &c, &s, NULL));
		ward_policy_free(p);
		snprintf(cmd, sizeof(cmd),
			 "touch %s/probe 2>/dev/null; echo rc=$?; touch inside; echo ok", outside);
		r = exec_sync(l, s, cmd, false, 5000);
		ASSERT_STREQ(r->output, "rc=1\nok\n");
		snprintf(cmd, sizeof(cmd), "%s/probe", outside);
		ASSERT_TRUE(access(cmd, F_OK) < 0);
		snprintf(cmd, sizeof(cmd), "%s/inside", ws);
		ASSERT_TRUE(access(cmd, F_OK) == 0);
		if (r->denied >= 0) {
			ASSERT_EQ(r->denied, 1);
			ASSERT_GE(r->n_denials, 1);
			snprintf(cmd, sizeof(cmd), "%s/probe", outside);
			ASSERT_STREQ(r->denials[0].target, cmd);
		} else if (getenv("WARD_MUST_WORK") && strcmp(getenv("WARD_MUST_WORK"), "1") == 0) {
			tap_fail(__FILE__, __LINE__, "denials unavailable on this host");
		}
		ward__session_reply_free(r);
		ward__sessions_free(s);
	}
	ward__loop_free(l);
}

TEST(cancelled_call_keeps_its_session)
{
	struct ward__loop *l;
	struct ward__sessions *s;
	struct ward__exec_args a = {
		.cmd = "sleep 100", .yield_ms = 1000, .max_output_tokens = -1, .login = -1};
	struct waiter w = {0};
	uint64_t call;

	ASSERT_OK(ward__loop_new(&l));
	s = new_store(l, 0);
	ASSERT_OK(ward__sessions_exec(s, &a, on_done, &w, &call, NULL));
	ward__sessions_cancel(s, call);
	for (int i = 0; i < 30; i++)
		ward__loop_iterate(l, 50);
	ASSERT_FALSE(w.done);
	ASSERT_EQ(ward__sessions_count(s), 1);
	ASSERT_EQ(ward__sessions_calls_in_flight(s), 0);
	ward__sessions_free(s);
	ward__loop_free(l);
}

TEST(until_ends_a_call_when_the_text_appears)
{
	struct ward__loop *l;
	struct ward__sessions *s;
	struct ward__exec_args a = {
		.cmd = "echo one; sleep 0.3; printf 'read'; sleep 0.2; printf 'y> '; sleep 100",
		.yield_ms = 30000,
		.max_output_tokens = -1,
		.login = -1,
		.until = "ready> ",
		.until_len = 7};
	struct ward__write_args wa = {.chars = "ping\n",
				      .len = 5,
				      .yield_ms = 30000,
				      .max_output_tokens = -1,
				      .until_any_output = true};
	struct waiter w = {0}, w2 = {0};

	ASSERT_OK(ward__loop_new(&l));
	s = new_store(l, 0);
	/* The match straddles two writes; the call ends there, long before its 30 s window. */
	ASSERT_OK(ward__sessions_exec(s, &a, on_done, &w, NULL, NULL));
	wait_for(l, &w, 20000);
	ASSERT_FALSE(w.r->exited);
	ASSERT_STREQ(w.r->output, "one\nready> ");
	ASSERT_TRUE(w.r->wall_ns < 20ULL * 1000000000);
	ward__session_reply_free(w.r);
	ward__sessions_free(s);

	/* until_any_output: an echoing terminal answers, the call returns with it. */
	s = new_store(l, 0);
	w = (struct waiter){0};
	a = (struct ward__exec_args){.cmd = "stty -echo; echo go; exec cat",
				     .tty = true,
				     .yield_ms = 10000,
				     .max_output_tokens = -1,
				     .login = -1,
				     .until = "go",
				     .until_len = 2};
	ASSERT_OK(ward__sessions_exec(s, &a, on_done, &w, NULL, NULL));
	wait_for(l, &w, 20000);
	wa.session_id = w.r->session_id;
	ward__session_reply_free(w.r);
	ASSERT_OK(ward__sessions_write(s, &wa, on_done, &w2, NULL, NULL));
	wait_for(l, &w2, 20000);
	ASSERT_STREQ(w2.r->output, "ping\r\n");
	ASSERT_TRUE(w2.r->wall_ns < 20ULL * 1000000000);
	ward__session_reply_free(w2.r);
	ward__sessions_free(s);
	ward__loop_free(l);
}

/* A store whose workspace is scratch/ws, /tmp and $TMPDIR not writable. */
static struct ward__sessions *ws_store(struct ward__loop *l, const char *ws)
{
	struct ward__sessions_config c = {.max_sessions = 0, .shell = "/bin/sh", .login = 0};
	struct ward__sessions *s;
	struct ward_policy *p;

	ASSERT_OK(ward_policy_new(&p));
	ASSERT_OK(ward_policy_set_cwd(p, ws));
	ASSERT_OK(ward_policy_set_exclude_slash_tmp(p, true));
	ASSERT_OK(ward_policy_set_exclude_tmpdir_env_var(p, true));
	c.policy = p;
	ASSERT_OK(ward__sessions_new(l, &c, &s, NULL));
	ward_policy_free(p);
	return s;
}

TEST(workdir_moves_the_command_never_the_writable_roots)
{
	struct ward__loop *l;
	struct ward__sessions *s;
	struct ward__exec_args a = {.yield_ms = 10000, .max_output_tokens = -1, .login = -1};
	struct ward_error e = {0};
	struct waiter w = {0};
	char ws[256], other[256], hooks[300], path[1024];

	snprintf(ws, sizeof(ws), "%s/wd-ws", scratch);
	snprintf(other, sizeof(other), "%s/wd-other", scratch);
	snprintf(hooks, sizeof(hooks), "%s/.git/hooks", ws);
	ASSERT_OK(mkdir(ws, 0755));
	ASSERT_OK(mkdir(other, 0755));
	snprintf(path, sizeof(path), "%s/.git", ws);
	ASSERT_OK(mkdir(path, 0755));
	ASSERT_OK(mkdir(hooks, 0755));
	ASSERT_OK(ward__loop_new(&l));
	s = ws_store(l, ws);

	/* Outside the workspace: the command starts there (PWD too) and cannot write. */
	a.cmd = "pwd; echo \"$PWD\"; touch probe 2>/dev/null; echo rc=$?";
	a.workdir = other;
	ASSERT_OK(ward__sessions_exec(s, &a, on_done, &w, NULL, NULL));
	wait_for(l, &w, 20000);
	snprintf(path, sizeof(path), "%s\n%s\nrc=1\n", other, other);
	ASSERT_STREQ(w.r->output, path);
	snprintf(path, sizeof(path), "%s/probe", other);
	ASSERT_TRUE(access(path, F_OK) < 0);
	ward__session_reply_free(w.r);

	/* Into a protected path of the workspace, relative or absolute: still read-only. */
	for (int i = 0; i < 2; i++) {
		w = (struct waiter){0};
		a.cmd = "sh -c 'echo evil > pre-commit' 2>/dev/null; test -e pre-commit && echo "
			"WROTE || echo refused";
		a.workdir = i == 0 ? ".git/hooks" : hooks;
		ASSERT_OK(ward__sessions_exec(s, &a, on_done, &w, NULL, NULL));
		wait_for(l, &w, 20000);
		ASSERT_STREQ(w.r->output, "refused\n");
		ward__session_reply_free(w.r);
	}
	snprintf(path, sizeof(path), "%s/pre-commit", hooks);
	ASSERT_TRUE(access(path, F_OK) < 0);

	/* A workdir that is not a directory is the call's error; nothing starts or is evicted. */
	a.workdir = "/does/not/exist";
	ASSERT_EQ(ward__sessions_exec(s, &a, on_done, &w, NULL, &e), -ENOENT);
	ASSERT_CONTAINS(e.message, "/does/not/exist");
	a.workdir = "/etc/passwd";
	ASSERT_EQ(ward__sessions_exec(s, &a, on_done, &w, NULL, &e), -ENOTDIR);
	ASSERT_EQ(ward__sessions_count(s), 0);
	ward__sessions_free(s);
	ward__loop_free(l);
}

TEST(kill_while_a_call_waits_is_always_answered)
{
	struct ward__loop *l;
	struct ward__sessions *s;
	struct ward__write_args wa = {.chars = "MATCH\n",
				      .len = 6,
				      .yield_ms = 5000,
				      .max_output_tokens = -1,
				      .until = "MATCH",
				      .until_len = 5};
	struct waiter w = {0}, wk = {0};
	struct ward__session_reply *r;

	ASSERT_OK(ward__loop_new(&l));
	s = new_store(l, 0);
	r = exec_sync(l, s, "exec cat", true, 300);
	ASSERT_FALSE(r->exited);
	wa.session_id = r->session_id;
	ward__session_reply_free(r);
	/* The write ends on its echo, before the kill's exit is seen: the kill still answers. */
	ASSERT_OK(ward__sessions_write(s, &wa, on_done, &w, NULL, NULL));
	ASSERT_OK(ward__sessions_kill(s, wa.session_id, on_done, &wk, NULL, NULL));
	wait_for(l, &w, 10000);
	wait_for(l, &wk, 10000);
	ASSERT_TRUE(wk.r->killed);
	ASSERT_TRUE(wk.r->exited || w.r->exited);
	ward__session_reply_free(w.r);
	ward__session_reply_free(wk.r);
	ASSERT_EQ(ward__sessions_count(s), 0);
	ASSERT_EQ(ward__sessions_calls_in_flight(s), 0);
	ward__sessions_free(s);
	ward__loop_free(l);
}

TEST(cancelling_a_wait_ends_it_at_once_and_keeps_its_output)
{
	struct ward__loop *l;
	struct ward__sessions *s;
	struct ward__write_args poll = {.yield_ms = 60000, .max_output_tokens = -1};
	struct ward__write_args more = {
		.yield_ms = 20000, .max_output_tokens = -1, .until = "IMPORTANT", .until_len = 9};
	struct waiter w1 = {0}, w2 = {0}, w3 = {0};
	struct ward__session_reply *r;
	uint64_t c1, c2, t0;

	ASSERT_OK(ward__loop_new(&l));
	s = new_store(l, 0);
	r = exec_sync(l, s, "sleep 0.5; echo IMPORTANT; sleep 100", false, 250);
	ASSERT_FALSE(r->exited);
	poll.session_id = more.session_id = r->session_id;
	ward__session_reply_free(r);
	/* A long poll and one queued behind it, both cancelled: neither holds anything. */
	ASSERT_OK(ward__sessions_write(s, &poll, on_done, &w1, &c1, NULL));
	ASSERT_OK(ward__sessions_write(s, &poll, on_done, &w2, &c2, NULL));
	ASSERT_EQ(ward__sessions_calls_in_flight(s), 2);
	ward__sessions_cancel(s, c2);
	ward__sessions_cancel(s, c1);
	ASSERT_EQ(ward__sessions_calls_in_flight(s), 0);
	/* The line printed meanwhile goes to the next call, which begins at once. */
	t0 = ward__now_ms();
	ASSERT_OK(ward__sessions_write(s, &more, on_done, &w3, NULL, NULL));
	wait_for(l, &w3, 20000);
	ASSERT_STREQ(w3.r->output, "IMPORTANT\n");
	ASSERT_LE(ward__now_ms() - t0, 10000);
	ASSERT_FALSE(w1.done);
	ASSERT_FALSE(w2.done);
	ward__session_reply_free(w3.r);
	ward__sessions_free(s);
	ward__loop_free(l);
}

TEST(until_on_a_poll_counts_output_already_waiting)
{
	struct ward__loop *l;
	struct ward__sessions *s;
	struct ward__write_args poll = {
		.yield_ms = 30000, .max_output_tokens = -1, .until = "READY> ", .until_len = 7};
	struct waiter w = {0};
	struct ward__session_reply *r;
	uint64_t t0;

	ASSERT_OK(ward__loop_new(&l));
	s = new_store(l, 0);
	r = exec_sync(l, s, "sleep 0.3; printf 'READY> '; sleep 100", false, 250);
	ASSERT_FALSE(r->exited);
	poll.session_id = r->session_id;
	ward__session_reply_free(r);
	/* The prompt arrives while nobody waits; the poll then finds it at once. */
	t0 = ward__now_ms();
	while (ward__now_ms() - t0 < 1500)
		ward__loop_iterate(l, 100);
	t0 = ward__now_ms();
	ASSERT_OK(ward__sessions_write(s, &poll, on_done, &w, NULL, NULL));
	wait_for(l, &w, 40000);
	ASSERT_STREQ(w.r->output, "READY> ");
	ASSERT_LE(ward__now_ms() - t0, 10000);
	ward__session_reply_free(w.r);
	ward__sessions_free(s);
	ward__loop_free(l);
}

TEST(truncation_keeps_utf8_sequences_whole)
{
	const char *s = "\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80"
			"\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80"
			"\xf0\x9f\x98\x80\xf0\x9f\x98\x80\nsecond line with text\n";
	size_t len;
	bool t;
	char *out = ward__truncate_tokens(s, strlen(s), 8, &len, &t);

	ASSERT_TRUE(t);
	ASSERT_STREQ(out,
		     "\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80"
		     "\xe2\x80\xa6"
		     "8 tokens truncated\xe2\x80\xa6 line with text\n");
	free(out);
	out = ward__truncate_tokens("abcdef", 6, 0, &len, &t);
	ASSERT_STREQ(out,
		     "\xe2\x80\xa6"
		     "2 tokens truncated\xe2\x80\xa6");
	free(out);
	out = ward__truncate_tokens("short", 5, 100, &len, &t);
	ASSERT_FALSE(t);
	ASSERT_STREQ(out, "short");
	free(out);
}

/* ------------------------------------------------------------ login shell snapshots */

/* A home in the scratch directory with a login profile (profile: its lines); HOME names it. */
static char *profile_home(const char *name, const char *file, const char *profile)
{
	char *home, *path;

	ASSERT_OK(asprintf(&home, "%s/%s", scratch, name));
	ASSERT_OK(mkdir(home, 0755));
	ASSERT_OK(asprintf(&path, "%s/%s", home, file));
	ASSERT_OK(put_file(path, profile));
	free(path);
	ASSERT_OK(setenv("HOME", home, 1));
	return home;
}

static struct ward__sessions *login_store(struct ward__loop *l, const char *shell, bool no_snapshot,
					  const char *env_set)
{
	struct ward__sessions_config c = {
		.shell = shell, .login = 1, .no_login_snapshot = no_snapshot};
	struct ward_run_options *o = NULL;
	struct ward__sessions *s;
	struct ward_error e = {0};

	ASSERT_OK(ward_run_options_new(&o));
	if (env_set)
		ASSERT_OK(ward_run_options_env_set(o, env_set, "ward"));
	c.env = o;
	c.policy = scratch_policy();
	if (ward__sessions_new(l, &c, &s, &e) < 0)
		tap_fail(__FILE__, __LINE__, "sessions_new: %s", e.message);
	ward_policy_free((struct ward_policy *)c.policy);
	ward_run_options_free(o);
	return s;
}

/* Lines in a file of the scratch directory (0 when it is missing). */
static int lines_in(const char *name)
{
	_cleanup_free_ char *path = NULL, *text = NULL;
	size_t len;
	int n = 0;

	ASSERT_OK(asprintf(&path, "%s/%s", scratch, name));
	if (ward__read_file(path, 1 << 20, &text, &len) < 0)
		return 0;
	for (size_t i = 0; i < len; i++)
		n += text[i] == '\n';
	return n;
}

static const char noisy_profile[] =
	"echo ran >>\"$HOME/../runs\"\n"
	"export PROFILE_VAR=from-profile PAGER=less TERM=profile WARD_MINE=profile\n"
	"myfn() { echo \"myfn $1\"; }\n"
	"alias myal='echo aliased'\n"
	"shopt -s expand_aliases\n"
	"echo profile-noise >&2\n"
	"touch /etc/ward-profile-ro\n";

TEST(login_commands_read_the_snapshot_once_and_keep_prepared_sandboxes)
{
	_cleanup_free_ char *home = profile_home("home-once", ".bash_profile", noisy_profile);
	const char *cmd = "echo \"$PROFILE_VAR $PAGER $TERM $WARD_MINE\"; myfn x; myal";
	struct ward__loop *l;
	struct ward__sessions *s;
	struct ward__session_reply *r;
	struct session *se;

	ASSERT_OK(ward__loop_new(&l));
	s = login_store(l, "/bin/bash", false, "WARD_MINE");
	for (int i = 0; i < 4; i++) {
		r = exec_sync(l, s, cmd, i % 2 == 1, 5000);
		if (i % 2 == 1)
			ASSERT_STREQ(
				r->output,
				"from-profile cat xterm-256color ward\r\nmyfn x\r\naliased\r\n");
		else
			ASSERT_STREQ(r->output, "from-profile cat dumb ward\nmyfn x\naliased\n");
		ASSERT_TRUE(r->note == NULL);
		ASSERT_EQ(r->denied, 0);
		ward__session_reply_free(r);
	}
	ASSERT_EQ(lines_in("runs"), 1);
	/* Through stdin, a login command takes a prepared sandbox as any other. */
	wait_ready(l, s->pool);
	r = exec_sync(l, s, "echo \"$PROFILE_VAR\"; sleep 5", false, 500);
	ASSERT_STREQ(r->output, "from-profile\n");
	se = ward__session_lookup(s, r->session_id);
	ASSERT_TRUE(se != NULL);
	ASSERT_TRUE(ward__proc_sandbox(se->proc)->launched);
	ward__session_reply_free(r);
	ward__sessions_free(s);
	ward__loop_free(l);
}

static uint64_t login_call(struct ward__sessions *s, const char *cmd, struct waiter *w)
{
	struct ward__exec_args a = {
		.cmd = cmd, .yield_ms = 5000, .max_output_tokens = -1, .login = -1};
	struct ward_error e = {0};
	uint64_t call = 0;

	if (ward__sessions_exec(s, &a, on_done, w, &call, &e) < 0)
		tap_fail(__FILE__, __LINE__, "exec '%s': %s", cmd, e.message);
	return call;
}

/* Calls waiting for a capture that hangs: cancelled, ended, and never a command started. */
TEST(login_commands_waiting_for_a_snapshot_are_cancelled_and_ended)
{
	_cleanup_free_ char *home = profile_home(
		"home-wait", ".bash_profile",
		"echo ran >>\"$HOME/../wait-runs\"\n"
		"case $BASH_EXECUTION_STRING in *__ward_s*) exec sleep 61.5 ;; esac\n");
	struct waiter a = {0}, b = {0};
	struct ward__loop *l;
	struct ward__sessions *s;
	uint64_t call_a, t0;

	ASSERT_OK(ward__loop_new(&l));
	s = login_store(l, "/bin/bash", false, NULL);
	call_a = login_call(s, "echo a > a-ran", &a);
	login_call(s, "echo b > b-ran", &b);
	for (int i = 0; i < 10; i++)
		ASSERT_OK(ward__loop_iterate(l, 50));
	ASSERT_TRUE(host_has_process("61.5"));
	ASSERT_FALSE(a.done || b.done);
	ASSERT_EQ(ward__sessions_calls_in_flight(s), 2);
	ward__sessions_cancel(s, call_a);
	ASSERT_EQ(ward__sessions_calls_in_flight(s), 1);
	t0 = ward__now_ms();
	ward__sessions_terminate_all(s);
	wait_for(l, &b, 5000);
	ASSERT_LE(ward__now_ms() - t0, 3000);
	ASSERT_TRUE(b.r->error != NULL);
	ASSERT_CONTAINS(b.r->error, "not started");
	ASSERT_FALSE(a.done);
	ASSERT_EQ(ward__sessions_count(s), 0);
	ASSERT_TRUE(host_process_gone(l, "61.5"));
	ASSERT_EQ(lines_in("wait-runs"), 1);
	ASSERT_EQ(lines_in("a-ran") + lines_in("b-ran"), 0);
	ward__session_reply_free(b.r);
	ward__sessions_free(s);
	ward__loop_free(l);
}

/* Off, another shell, login false: the profile as before. */
TEST(login_snapshot_off_other_shells_and_login_false)
{
	_cleanup_free_ char *home =
		profile_home("home-off", ".bash_profile",
			     "echo ran >>\"$HOME/../off-runs\"\nexport PROFILE_VAR=from-profile\n");
	_cleanup_free_ char *mysh = NULL;
	struct ward__loop *l;
	struct ward__sessions *s;
	struct ward__session_reply *r;

	ASSERT_OK(ward__loop_new(&l));
	s = login_store(l, "/bin/bash", true, NULL);
	for (int i = 0; i < 2; i++) {
		r = exec_sync(l, s, "echo \"$PROFILE_VAR\"", false, 5000);
		ASSERT_STREQ(r->output, "from-profile\n");
		ward__session_reply_free(r);
	}
	ASSERT_EQ(lines_in("off-runs"), 2);
	ward__sessions_free(s);

	/* A shell ward does not know (its name says which) runs -lc. */
	ASSERT_OK(asprintf(&mysh, "%s/mysh", scratch));
	ASSERT_OK(symlink("/bin/bash", mysh));
	s = login_store(l, mysh, false, NULL);
	for (int i = 0; i < 2; i++) {
		r = exec_sync(l, s, "echo \"$PROFILE_VAR\"", false, 5000);
		ASSERT_STREQ(r->output, "from-profile\n");
		ASSERT_TRUE(r->note == NULL);
		ward__session_reply_free(r);
	}
	ASSERT_EQ(lines_in("off-runs"), 4);
	ward__sessions_free(s);

	/* login false: SHELL -c, no profile and no snapshot taken. */
	s = login_store(l, "/bin/bash", false, NULL);
	{
		struct ward__exec_args a = {.cmd = "echo \"[$PROFILE_VAR]\"",
					    .yield_ms = 5000,
					    .max_output_tokens = -1,
					    .login = 0};
		struct waiter w = {0};

		ASSERT_OK(ward__sessions_exec(s, &a, on_done, &w, NULL, NULL));
		wait_for(l, &w, 5000);
		ASSERT_STREQ(w.r->output, "[]\n");
		ward__session_reply_free(w.r);
	}
	ASSERT_EQ(s->n_snaps, 0);
	ASSERT_EQ(lines_in("off-runs"), 4);
	ward__sessions_free(s);
	ward__loop_free(l);
}

/* A capture that fails, or a dump a clean shell cannot read back quietly: -lc, said once. */
TEST(login_snapshot_that_fails_or_does_not_read_back_falls_back)
{
	static const char *const profiles[][2] = {
		{"case $BASH_EXECUTION_STRING in *__ward_s*) echo why-it-failed >&2; exit 3 ;; esac\n",
		 "(the login shell exited with 3: why-it-failed)"},
		/* Exported SHELLOPTS set xtrace in every bash that starts, the check's too. */
		{"case $BASH_EXECUTION_STRING in *__ward_s*) set -o xtrace; export SHELLOPTS ;; esac\n",
		 "(its dump does not read back cleanly: +"},
	};
	struct ward__loop *l;

	ASSERT_OK(ward__loop_new(&l));
	for (size_t i = 0; i < ELEMENTSOF(profiles); i++) {
		_cleanup_free_ char *name = NULL, *home = NULL, *text = NULL;
		struct ward__sessions *s;
		struct ward__session_reply *r;

		ASSERT_OK(asprintf(&name, "home-fail-%zu", i));
		ASSERT_OK(asprintf(&text, "export PROFILE_VAR=from-profile\n%s", profiles[i][0]));
		home = profile_home(name, ".bash_profile", text);
		s = login_store(l, "/bin/bash", false, NULL);
		r = exec_sync(l, s, "echo \"[$PROFILE_VAR]\"", false, 5000);
		ASSERT_STREQ(r->output, "[from-profile]\n");
		ASSERT_TRUE(r->note != NULL);
		ASSERT_CONTAINS(r->note, "no snapshot of the login shell ");
		ASSERT_CONTAINS(r->note, profiles[i][1]);
		ASSERT_CONTAINS(r->note, "login commands run '/bin/bash -lc'");
		ward__session_reply_free(r);
		r = exec_sync(l, s, "true", false, 5000);
		ASSERT_TRUE(r->note == NULL);
		ward__session_reply_free(r);
		ward__sessions_free(s);
	}
	ward__loop_free(l);
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	return tap_main_in_scratch(scratch);
}
