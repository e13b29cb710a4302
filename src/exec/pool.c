/* SPDX-License-Identifier: MIT */
/*
 * Prepared sandboxes (see struct ward__proc_pool in pool.h).
 *
 * A pool has a few slots, one per (policy fingerprint, tty, observe_fs) its
 * owner started a process with. A slot holds up to two sandboxes
 * (POOL_DEPTH), being prepared (one at a time) or ready. A start whose
 * fingerprint (taken at the start, from the policy resolved for it) is a
 * slot's takes one of its ready sandboxes, and the slot prepares a
 * replacement right away; any other start is cold, and gives its policy a
 * slot, so that the next start with it is warm.
 *
 * What makes a prepared sandbox as good as a cold one:
 *   - it is the same sandbox (prepare.c builds it with a cold start's code,
 *     child.c, only earlier), and it is used once: taken out of the pool by
 *     the start that runs in it, never put back;
 *   - it is used only when the policy resolved at the start has the
 *     fingerprint it was built for: the same roots, protected paths, git
 *     directories, deny-read paths, sockets, network and mode, and the same
 *     entries at those paths (device and inode: a .git/config that git
 *     replaced by a rename since is a different entry, and the read-only
 *     mount of the old one would not cover it). The fingerprint is taken
 *     before the clone and again once the sandbox reported it was built; a
 *     change in between throws it away;
 *   - a mount or unmount on the host since it was built (its mount view is a
 *     copy of the host's at that moment) throws it away: /proc/self/mountinfo
 *     polls POLLPRI on every change of the mount table;
 *   - so does any change of its own mount table once it was built: nothing
 *     inside mounts anything until its command runs, but the host unmounts
 *     its binds without touching the paths' identities (a protected or
 *     deny-read file unlinked and linked back: the kernel detaches every
 *     mount on the old name, and the new name, the same inode, would be
 *     writable or readable in it);
 *   - a slot no start used for a few seconds (WARD_POOL_IDLE_MS) goes with
 *     its sandboxes;
 *   - a pool belongs to one owner (a session of ward serve attached to one
 *     connection, the session store of one ward mcp): never shared.
 * Where the host refused namespaces nothing is prepared (the fallback keeps
 * the protected paths right before the command runs), nor for
 * danger-full-access, nor when the command keeps descriptors of its own.
 */
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "basic/buf.h"
#include "basic/cleanup.h"
#include "basic/error.h"
#include "basic/util.h"
#include "exec/pool.h"
#include "policy/policy.h"

/* Slots (policies) a pool keeps sandboxes ready for; the least recently used goes first. */
#define POOL_SLOTS 4
/*
 * Sandboxes a slot keeps ready: two, so that back-to-back starts never wait.
 * A start takes one, and the other is there for the next start however soon
 * it comes. With one alone, a start right after a short command's end found
 * the replacement still being built (a few milliseconds of namespaces and
 * mounts) and started cold: every other start.
 */
#define POOL_DEPTH WARD_POOL_DEPTH
/*
 * When the replacement is built: once the process that took a sandbox has
 * closed (ward__proc_pool_kick, after its end went to the client), or after
 * this long if it runs on. Building it (the policy resolved again, the
 * clone) is work of the server's loop: while the command runs, it would
 * answer that command's end late by as much.
 */
#define POOL_PREPARE_DELAY_MS 50
/* Consecutive preparations that failed before the pool stops preparing. */
#define POOL_MAX_FAILURES 3

struct slot;

/* One sandbox of a slot, being prepared or ready. */
struct prep {
	struct slot *slot;
	bool have_sb; /* a sandbox is being prepared, or ready */
	bool ready;
	struct ward__sandbox sb;
	struct ward_policy *building; /* the resolution sb was built from, until it is ready */
	uint64_t mounts_gen; /* the host's mount table when sb was cloned */
	int sb_mounts_fd; /* sb's own /proc/PID/mountinfo, opened once it was built, or -1 */
	uint64_t report_io, pid_io;
};

struct slot {
	struct ward__proc_pool *pool;
	struct slot *prev, *next;
	uint8_t *key; /* fingerprint + flags */
	size_t key_len;
	struct ward_policy *template; /* unresolved: resolved again for each preparation */
	bool tty, observe_fs;
	uint64_t last_used;
	struct prep preps[POOL_DEPTH];
	uint64_t idle_timer, prepare_timer;
};

struct ward__proc_pool {
	unsigned refs; /* the owner's, and one per proc started with the pool */
	struct ward__loop *loop;
	struct slot *slots;
	size_t n_slots;
	struct mount_table *mounts;
	unsigned failures;
	bool disabled;
	const struct ward__cgroup *cg_parent; /* the budget group its sandboxes are made in */
};

/*
 * The host's mount table, one per loop: /proc/self/mountinfo polls POLLPRI
 * whenever a mount or unmount changed the table since the last poll, and
 * gen counts those changes.
 */
struct mount_table {
	int fd;
	uint64_t gen;
};

static void mount_table_free(struct ward__loop *l, void *ext)
{
	struct mount_table *mt = ext;

	close(mt->fd);
	free(mt);
}

static struct mount_table *loop_mount_table(struct ward__loop *l)
{
	struct mount_table *mt = ward__loop_get_ext(l, WARD__LOOP_EXT_MOUNT_TABLE);

	if (mt)
		return mt;
	mt = calloc(1, sizeof(*mt));
	if (!mt)
		return NULL;
	mt->fd = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);
	if (mt->fd < 0) {
		free(mt);
		return NULL;
	}
	ward__loop_set_ext(l, WARD__LOOP_EXT_MOUNT_TABLE, mt, mount_table_free);
	return mt;
}

/* ------------------------------------------------------------ keys */

static int make_key(const struct ward_policy *p, bool tty, bool observe_fs, uint8_t **ret,
		    size_t *ret_len)
{
	struct ward__buf b;
	uint8_t flags = (uint8_t)(tty | observe_fs << 1);
	int r;

	ward__buf_init(&b, (size_t)64 << 20);
	r = ward__buf_append_byte(&b, flags);
	if (r >= 0)
		r = ward__policy_fingerprint(p, &b);
	if (r >= 0) {
		*ret = ward__buf_steal(&b, ret_len);
		r = *ret ? 0 : -ENOMEM;
	}
	ward__buf_release(&b);
	return r;
}

static bool same_key(const struct slot *s, const uint8_t *key, size_t len)
{
	return s->key_len == len && memcmp(s->key, key, len) == 0;
}

static bool same_strv(const struct ward__strv *a, const struct ward__strv *b)
{
	if (a->n != b->n)
		return false;
	for (size_t i = 0; i < a->n; i++)
		if (strcmp(a->v[i], b->v[i]) != 0)
			return false;
	return true;
}

/* The same policy as given (before resolution): what a slot is for. */
static bool same_inputs(const struct ward_policy *a, const struct ward_policy *b)
{
	return a->mode == b->mode && a->network == b->network &&
		a->exclude_slash_tmp == b->exclude_slash_tmp &&
		a->exclude_tmpdir_env_var == b->exclude_tmpdir_env_var &&
		a->require_isolation == b->require_isolation && a->cwd && b->cwd &&
		strcmp(a->cwd, b->cwd) == 0 && same_strv(&a->writable, &b->writable) &&
		same_strv(&a->protect, &b->protect) && same_strv(&a->deny_read, &b->deny_read) &&
		same_strv(&a->unix_sockets, &b->unix_sockets);
}

/* The host's mount table generation: bumped whenever mountinfo says the table changed. */
static uint64_t mounts_gen(struct ward__proc_pool *pool)
{
	struct mount_table *mt = pool->mounts;
	struct pollfd pfd = {.fd = mt->fd, .events = POLLPRI};

	/* The poll itself consumes the change (proc's mounts_poll records the event seen). */
	if (poll(&pfd, 1, 0) > 0 && (pfd.revents & (POLLPRI | POLLERR)))
		mt->gen++;
	return mt->gen;
}

/* Whether the mount table of a ready sandbox changed since it was built (or is unknown). */
static bool sb_mounts_changed(const struct prep *pr)
{
	struct pollfd pfd = {.fd = pr->sb_mounts_fd, .events = POLLPRI};

	if (pr->sb_mounts_fd < 0)
		return true;
	/* mountinfo is always readable (POLLIN); a change adds POLLPRI and POLLERR. */
	return poll(&pfd, 1, 0) < 0 || (pfd.revents & (POLLPRI | POLLERR | POLLNVAL));
}

/* ------------------------------------------------------------ abandoned sandboxes */

void ward__proc_abandon_sandbox(struct ward__loop *l, struct ward__sandbox *sb)
{
	int dup;

	ward__sandbox_kill(sb);
	if (sb->pidfd < 0 || !sb->priv) {
		ward__sandbox_release(sb);
		return;
	}
	/*
	 * init dies from the kill above; the loop reaps it when it is gone (its
	 * namespaces' teardown must not stall everyone else).
	 */
	dup = fcntl(sb->pidfd, F_DUPFD_CLOEXEC, 3);
	if (dup >= 0 && ward__loop_reap(l, dup, NULL, NULL) >= 0)
		ward__sandbox_release_exiting(sb);
	else
		ward__sandbox_release(sb);
}

/* ------------------------------------------------------------ slots */

static void prep_drop(struct prep *pr)
{
	struct ward__loop *l = pr->slot->pool->loop;

	ward__loop_del_io(l, pr->report_io);
	pr->report_io = 0;
	ward__loop_del_io(l, pr->pid_io);
	pr->pid_io = 0;
	if (pr->sb_mounts_fd >= 0)
		close(pr->sb_mounts_fd);
	pr->sb_mounts_fd = -1;
	if (pr->have_sb)
		ward__proc_abandon_sandbox(l, &pr->sb);
	pr->have_sb = false;
	pr->ready = false;
	ward_policy_free(pr->building);
	pr->building = NULL;
}

static void slot_drop_sandboxes(struct slot *s)
{
	for (int i = 0; i < POOL_DEPTH; i++)
		prep_drop(&s->preps[i]);
	ward__loop_del_timer(s->pool->loop, s->idle_timer);
	s->idle_timer = 0;
}

static void slot_free(struct slot *s)
{
	struct ward__proc_pool *pool = s->pool;

	slot_drop_sandboxes(s);
	ward__loop_del_timer(pool->loop, s->prepare_timer);
	if (s->prev)
		s->prev->next = s->next;
	else
		pool->slots = s->next;
	if (s->next)
		s->next->prev = s->prev;
	pool->n_slots--;
	ward_policy_free(s->template);
	free(s->key);
	free(s);
}

static void schedule_prepare(struct slot *s, uint64_t delay_ms);

static void prepare_failed(struct prep *pr)
{
	struct ward__proc_pool *pool = pr->slot->pool;

	prep_drop(pr);
	if (++pool->failures >= POOL_MAX_FAILURES)
		pool->disabled = true;
}

static void on_idle(struct ward__loop *l, void *userdata)
{
	struct slot *s = userdata;

	/* Unused for a while: its sandboxes and the slot go (the next start is cold). */
	s->idle_timer = 0;
	slot_free(s);
}

/* The slot goes when no start used it for WARD_POOL_IDLE_MS. */
static void arm_idle(struct slot *s)
{
	struct ward__loop *l = s->pool->loop;

	ward__loop_del_timer(l, s->idle_timer);
	s->idle_timer = 0;
	ward__loop_add_timer(l, ward__now_ns() + (uint64_t)WARD_POOL_IDLE_MS * 1000000, on_idle, s,
			     &s->idle_timer);
}

static void on_report(struct ward__loop *l, int fd, uint32_t events, void *userdata)
{
	struct prep *pr = userdata;
	struct slot *s = pr->slot;
	bool eof = false;

	if (ward__sandbox_read_reports(&pr->sb, &eof) < 0 || eof || pr->sb.have_error ||
	    pr->sb.have_status) {
		/* It died or failed before its command: of no use. */
		prepare_failed(pr);
		return;
	}
	if (!pr->sb.ready || pr->ready)
		return;
	/*
	 * Its mount table from here on: a change of it (a bind the host
	 * detached) makes it unusable (sb_mounts_changed). Opened before the
	 * check below, so that nothing falls between the two. Without it the
	 * sandbox could not be trusted: of no use.
	 */
	{
		char path[64];

		snprintf(path, sizeof(path), "/proc/%d/mountinfo", (int)pr->sb.pid);
		pr->sb_mounts_fd = open(path, O_RDONLY | O_CLOEXEC);
		if (pr->sb_mounts_fd < 0) {
			prepare_failed(pr);
			return;
		}
	}
	/*
	 * Built. The entries it mounted must be the ones the fingerprint saw
	 * before the clone: a change in between and the view may hold something
	 * else than what the key says.
	 */
	{
		uint8_t *key = NULL;
		size_t len = 0;
		bool same = make_key(pr->building, s->tty, s->observe_fs, &key, &len) >= 0 &&
			same_key(s, key, len);

		free(key);
		if (!same) {
			prep_drop(pr);
			return;
		}
	}
	ward_policy_free(pr->building);
	pr->building = NULL;
	/* Nothing more comes until its command does: the proc that takes it reads from here on. */
	ward__loop_del_io(l, pr->report_io);
	pr->report_io = 0;
	pr->ready = true;
	s->pool->failures = 0;
	/* One ready: the next one is built now, so that two are (POOL_DEPTH). */
	schedule_prepare(s, 0);
}

static void on_dead(struct ward__loop *l, int fd, uint32_t events, void *userdata)
{
	/* Its init died unused (killed from outside, out of memory): of no use. */
	prepare_failed(userdata);
}

static void on_prepare(struct ward__loop *l, void *userdata)
{
	struct slot *s = userdata;
	struct ward__proc_pool *pool = s->pool;
	struct ward__spawn_opts so = {.tty_fd = -1};
	struct ward_policy *p = NULL;
	struct prep *pr = NULL;
	uint8_t *key = NULL;
	size_t len = 0;
	int r;

	s->prepare_timer = 0;
	if (pool->disabled)
		return;
	/* One at a time: the second is built once the first is ready. */
	for (int i = 0; i < POOL_DEPTH; i++) {
		if (s->preps[i].have_sb && !s->preps[i].ready)
			return;
		if (!s->preps[i].have_sb && !pr)
			pr = &s->preps[i];
	}
	if (!pr)
		return;
	/*
	 * Not from a budget that is (nearly) spent: while it is being built its
	 * command process does not exist yet, and a start admitted meanwhile
	 * would find no room for its own (ward__cgroup_admit says how much room
	 * each asks). It is built once a process exits (ward__proc_pool_kick).
	 */
	if (ward__cgroup_admit(pool->cg_parent, 3, "", NULL) < 0)
		return;
	/* Resolved now, as a start would: its fingerprint is the slot's key from here on. */
	r = ward_policy_copy(s->template, &p);
	if (r >= 0)
		r = ward_policy_resolve(p, NULL);
	if (r >= 0)
		r = make_key(p, s->tty, s->observe_fs, &key, &len);
	if (r < 0) {
		ward_policy_free(p);
		free(key);
		return;
	}
	if (!same_key(s, key, len)) {
		/* The policy resolves differently now: what was built for the old key is stale. */
		for (int i = 0; i < POOL_DEPTH; i++)
			prep_drop(&s->preps[i]);
	}
	free(s->key);
	s->key = key;
	s->key_len = len;

	so.policy = p;
	so.observe_fs = s->observe_fs;
	so.quiet_fallback = true;
	so.cg_parent = pool->cg_parent;
	so.default_signals = true; /* as proc.c's cold start */
	for (int i = 0; i < 3; i++)
		so.stdio[i] = -1;
	if (s->tty) {
		so.pty = true;
		so.pty_stdio[0] = so.pty_stdio[1] = so.pty_stdio[2] = true;
		so.winsize.ws_row = 24;
		so.winsize.ws_col = 80;
	}
	pr->mounts_gen = mounts_gen(pool);
	r = ward__sandbox_prepare(&so, &pr->sb, NULL);
	if (r < 0) {
		ward_policy_free(p);
		/* Nothing to prepare on this host (the fallback), or it failed: cold starts only. */
		if (r == -EOPNOTSUPP)
			pool->disabled = true;
		else if (++pool->failures >= POOL_MAX_FAILURES)
			pool->disabled = true;
		return;
	}
	pr->have_sb = true;
	pr->building = p;
	r = ward__loop_add_io(l, pr->sb.report_fd, EPOLLIN, on_report, pr, &pr->report_io);
	if (r >= 0)
		r = ward__loop_add_io(l, pr->sb.pidfd, EPOLLIN, on_dead, pr, &pr->pid_io);
	if (r < 0)
		prepare_failed(pr);
	else if (!s->idle_timer)
		arm_idle(s);
}

/* Prepares the slot's next sandbox from the loop, after delay_ms (0: after the current event). */
static void schedule_prepare(struct slot *s, uint64_t delay_ms)
{
	bool room = false;

	for (int i = 0; i < POOL_DEPTH; i++)
		room |= !s->preps[i].have_sb;
	if (s->pool->disabled || !room || s->prepare_timer)
		return;
	ward__loop_add_timer(s->pool->loop, delay_ms ? ward__now_ns() + delay_ms * 1000000 : 0,
			     on_prepare, s, &s->prepare_timer);
}

/* ------------------------------------------------------------ the pool */

int ward__proc_pool_new(struct ward__loop *l, struct ward__proc_pool **ret)
{
	struct ward__proc_pool *pool = calloc(1, sizeof(*pool));

	if (!pool)
		return -ENOMEM;
	pool->refs = 1;
	pool->loop = l;
	/* Without it, a change of the host's mounts could not be seen: prepare nothing. */
	pool->mounts = loop_mount_table(l);
	if (!pool->mounts)
		pool->disabled = true;
	*ret = pool;
	return 0;
}

void ward__proc_pool_unref(struct ward__proc_pool *pool)
{
	if (!pool || --pool->refs > 0)
		return;
	while (pool->slots)
		slot_free(pool->slots);
	free(pool);
}

struct ward__proc_pool *ward__proc_pool_ref(struct ward__proc_pool *pool)
{
	pool->refs++;
	return pool;
}

void ward__proc_pool_free(struct ward__proc_pool *pool)
{
	if (!pool)
		return;
	/* Procs started with it may still tell it they exited: only the memory waits for them. */
	pool->disabled = true;
	ward__proc_pool_flush(pool);
	ward__proc_pool_unref(pool);
}

void ward__proc_pool_kick(struct ward__proc_pool *pool)
{
	if (!pool || pool->disabled)
		return;
	for (struct slot *s = pool->slots; s; s = s->next) {
		if (s->prepare_timer) {
			ward__loop_del_timer(pool->loop, s->prepare_timer);
			s->prepare_timer = 0;
		}
		schedule_prepare(s, 0);
	}
}

void ward__proc_pool_flush(struct ward__proc_pool *pool)
{
	if (!pool)
		return;
	while (pool->slots)
		slot_free(pool->slots);
}

int ward__proc_pool_take(struct ward__proc_pool *pool, const struct ward_policy *p, bool tty,
			 bool observe_fs, const struct ward__cgroup *cg_parent,
			 struct ward__sandbox *ret)
{
	uint8_t *key = NULL;
	size_t len = 0;
	struct slot *s;
	int r;

	if (pool->disabled || p->mode == WARD_MODE_DANGER_FULL_ACCESS)
		return 0;
	/* Sandboxes built in another budget's cgroup are of no use to this one. */
	if (cg_parent != pool->cg_parent) {
		ward__proc_pool_flush(pool);
		pool->cg_parent = cg_parent;
	}
	r = make_key(p, tty, observe_fs, &key, &len);
	if (r < 0)
		return 0;
	for (s = pool->slots; s; s = s->next)
		if (same_key(s, key, len))
			break;
	if (!s) {
		/*
		 * The same policy resolved differently (a protected entry replaced,
		 * a git directory created): its slot's sandbox is stale, the slot
		 * takes the new resolution.
		 */
		for (s = pool->slots; s; s = s->next)
			if (s->tty == tty && s->observe_fs == observe_fs &&
			    same_inputs(s->template, p))
				break;
		if (s) {
			slot_drop_sandboxes(s);
			free(s->key);
			s->key = TAKE_PTR(key);
			s->key_len = len;
		}
	}
	if (!s) {
		/* A policy not seen (or changed): this start is cold, the next one need not be. */
		if (pool->n_slots >= POOL_SLOTS) {
			struct slot *lru = pool->slots;

			for (struct slot *t = pool->slots; t; t = t->next)
				if (t->last_used < lru->last_used)
					lru = t;
			slot_free(lru);
		}
		s = calloc(1, sizeof(*s));
		if (!s || ward_policy_copy(p, &s->template) < 0) {
			free(s);
			free(key);
			return 0;
		}
		s->pool = pool;
		for (int i = 0; i < POOL_DEPTH; i++) {
			s->preps[i].slot = s;
			s->preps[i].sb_mounts_fd = -1;
		}
		s->key = TAKE_PTR(key);
		s->key_len = len;
		s->tty = tty;
		s->observe_fs = observe_fs;
		s->next = pool->slots;
		if (pool->slots)
			pool->slots->prev = s;
		pool->slots = s;
		pool->n_slots++;
	}
	free(key);
	s->last_used = ward__now_ns();
	r = 0;
	for (int i = 0; i < POOL_DEPTH && !r; i++) {
		struct prep *pr = &s->preps[i];

		if (!pr->ready)
			continue;
		if (mounts_gen(pool) != pr->mounts_gen || sb_mounts_changed(pr)) {
			/* The host's mounts, or its own, changed since it was built: its view is stale. */
			prep_drop(pr);
			continue;
		}
		/* Taken for good: the start runs in it, nothing else ever will. */
		*ret = pr->sb;
		close(pr->sb_mounts_fd);
		pr->sb_mounts_fd = -1;
		ward__loop_del_io(pool->loop, pr->pid_io);
		pr->pid_io = 0;
		pr->have_sb = false;
		pr->ready = false;
		r = 1;
	}
	arm_idle(s);
	/*
	 * The one taken is replaced once its process closed, or a little later
	 * (POOL_PREPARE_DELAY_MS); after a cold start, at once.
	 */
	schedule_prepare(s, r ? POOL_PREPARE_DELAY_MS : 0);
	return r;
}

size_t ward__proc_pool_ready(const struct ward__proc_pool *pool)
{
	size_t n = 0;

	for (const struct slot *s = pool ? pool->slots : NULL; s; s = s->next)
		for (int i = 0; i < POOL_DEPTH; i++)
			n += s->preps[i].ready;
	return n;
}
