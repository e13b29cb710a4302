/* SPDX-License-Identifier: MIT */
/*
 * The event loop (see loop.h). Slots hold registrations; a handle is the slot
 * index + 1 in its low 32 bits and the slot's generation in its high 32 bits,
 * so a handle outlives nothing: freeing a slot bumps its generation.
 *
 * Timers live in a binary min-heap of (deadline, sequence, handle). Cancelling
 * a timer only frees its slot; the heap entry is skipped when it surfaces, and
 * the heap is rebuilt without dead entries when they outnumber the live ones,
 * so a client that makes ward arm and cancel timers in a loop cannot grow it.
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "basic/loop.h"
#include "basic/util.h"

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

enum io_kind {
	IO_USER = 0,
	IO_TIMERFD,
	IO_SIGNALFD,
	IO_REAPER,
};

struct io_slot {
	uint32_t gen;
	bool used;
	enum io_kind kind;
	int fd;
	ward__loop_io_fn fn;
	void *userdata;
	uint32_t next_free; /* index + 1 of the next free slot, 0: none */
};

struct timer_slot {
	uint32_t gen;
	bool used;
	ward__loop_timer_fn fn;
	void *userdata;
	uint32_t next_free;
};

struct heap_entry {
	uint64_t deadline;
	uint64_t seq;
	uint64_t handle;
};

struct reaper {
	struct reaper *next;
	int pidfd;
	uint64_t io;
	ward__loop_child_fn fn;
	void *userdata;
};

struct signal_handler {
	ward__loop_signal_fn fn;
	void *userdata;
};

struct ward__loop {
	int epfd;
	int tfd;
	int sfd;
	uint64_t tfd_io;
	uint64_t sfd_io;
	sigset_t sigmask;
	struct signal_handler signals[_NSIG];

	struct io_slot *ios;
	uint32_t n_ios, cap_ios, free_ios;

	struct timer_slot *timers;
	uint32_t n_timers, cap_timers, free_timers;
	uint32_t live_timers;
	struct heap_entry *heap;
	size_t heap_len, heap_cap;
	uint64_t seq;
	uint64_t armed; /* deadline the timerfd is set to, 0: disarmed */

	struct reaper *reapers;
	size_t n_reapers;

	void *ext[_WARD__LOOP_EXT_MAX];
	ward__loop_ext_free_fn ext_free[_WARD__LOOP_EXT_MAX];

	uint64_t now;
	bool quit;
	int quit_code;
};

static uint64_t make_handle(uint32_t index, uint32_t gen)
{
	return ((uint64_t)gen << 32) | (uint64_t)(index + 1);
}

/* ------------------------------------------------------------ io slots */

static struct io_slot *io_lookup(struct ward__loop *l, uint64_t h)
{
	uint32_t idx = (uint32_t)(h & 0xffffffffu), gen = (uint32_t)(h >> 32);

	if (idx == 0 || idx > l->n_ios)
		return NULL;
	if (!l->ios[idx - 1].used || l->ios[idx - 1].gen != gen)
		return NULL;
	return &l->ios[idx - 1];
}

static int io_alloc(struct ward__loop *l, uint32_t *ret_idx)
{
	uint32_t idx;

	if (l->free_ios) {
		idx = l->free_ios - 1;
		l->free_ios = l->ios[idx].next_free;
	} else {
		if (l->n_ios == l->cap_ios) {
			uint32_t ncap = l->cap_ios ? l->cap_ios * 2 : 64;
			struct io_slot *n;

			if (ncap > (1u << 24))
				return -EMFILE;
			n = reallocarray(l->ios, ncap, sizeof(*n));
			if (!n)
				return -ENOMEM;
			l->ios = n;
			l->cap_ios = ncap;
		}
		idx = l->n_ios++;
		l->ios[idx].gen = 0;
	}
	l->ios[idx].gen++;
	if (l->ios[idx].gen == 0)
		l->ios[idx].gen = 1;
	l->ios[idx].used = true;
	l->ios[idx].next_free = 0;
	*ret_idx = idx;
	return 0;
}

static void io_free(struct ward__loop *l, struct io_slot *s)
{
	uint32_t idx = (uint32_t)(s - l->ios);

	s->used = false;
	s->fn = NULL;
	s->userdata = NULL;
	s->fd = -1;
	s->gen++;
	s->next_free = l->free_ios;
	l->free_ios = idx + 1;
}

static int io_add(struct ward__loop *l, int fd, uint32_t events, enum io_kind kind,
		  ward__loop_io_fn fn, void *userdata, uint64_t *ret_id)
{
	struct epoll_event ev = {.events = events};
	uint32_t idx;
	int r;

	if (fd < 0)
		return -EBADF;
	r = io_alloc(l, &idx);
	if (r < 0)
		return r;
	l->ios[idx].kind = kind;
	l->ios[idx].fd = fd;
	l->ios[idx].fn = fn;
	l->ios[idx].userdata = userdata;
	ev.data.u64 = make_handle(idx, l->ios[idx].gen);
	if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
		r = -errno;
		io_free(l, &l->ios[idx]);
		return r;
	}
	if (ret_id)
		*ret_id = ev.data.u64;
	return 0;
}

int ward__loop_add_io(struct ward__loop *l, int fd, uint32_t events, ward__loop_io_fn fn,
		      void *userdata, uint64_t *ret_id)
{
	if (!fn)
		return -EINVAL;
	return io_add(l, fd, events, IO_USER, fn, userdata, ret_id);
}

int ward__loop_mod_io(struct ward__loop *l, uint64_t id, uint32_t events)
{
	struct io_slot *s = io_lookup(l, id);
	struct epoll_event ev = {.events = events, .data.u64 = id};

	if (!s)
		return -ENOENT;
	return RET_NERRNO(epoll_ctl(l->epfd, EPOLL_CTL_MOD, s->fd, &ev));
}

void ward__loop_del_io(struct ward__loop *l, uint64_t id)
{
	struct io_slot *s;

	if (!l || id == 0)
		return;
	s = io_lookup(l, id);
	if (!s)
		return;
	/* The fd may already be closed by its owner (then epoll dropped it itself). */
	epoll_ctl(l->epfd, EPOLL_CTL_DEL, s->fd, NULL);
	io_free(l, s);
}

/* ------------------------------------------------------------ timers */

static struct timer_slot *timer_lookup(struct ward__loop *l, uint64_t h)
{
	uint32_t idx = (uint32_t)(h & 0xffffffffu), gen = (uint32_t)(h >> 32);

	if (idx == 0 || idx > l->n_timers)
		return NULL;
	if (!l->timers[idx - 1].used || l->timers[idx - 1].gen != gen)
		return NULL;
	return &l->timers[idx - 1];
}

static bool heap_less(const struct heap_entry *a, const struct heap_entry *b)
{
	return a->deadline < b->deadline || (a->deadline == b->deadline && a->seq < b->seq);
}

static void heap_up(struct heap_entry *h, size_t i)
{
	while (i > 0) {
		size_t p = (i - 1) / 2;
		struct heap_entry t;

		if (!heap_less(&h[i], &h[p]))
			break;
		t = h[i];
		h[i] = h[p];
		h[p] = t;
		i = p;
	}
}

static void heap_down(struct heap_entry *h, size_t n, size_t i)
{
	for (;;) {
		size_t a = 2 * i + 1, b = a + 1, m = i;
		struct heap_entry t;

		if (a < n && heap_less(&h[a], &h[m]))
			m = a;
		if (b < n && heap_less(&h[b], &h[m]))
			m = b;
		if (m == i)
			break;
		t = h[i];
		h[i] = h[m];
		h[m] = t;
		i = m;
	}
}

static void heap_pop(struct ward__loop *l)
{
	l->heap[0] = l->heap[--l->heap_len];
	heap_down(l->heap, l->heap_len, 0);
}

/* Drops cancelled entries (rebuilding the heap) once they outnumber the live timers. */
static void heap_compact(struct ward__loop *l)
{
	size_t j = 0;

	if (l->heap_len <= 2 * (size_t)l->live_timers + 64)
		return;
	for (size_t i = 0; i < l->heap_len; i++)
		if (timer_lookup(l, l->heap[i].handle))
			l->heap[j++] = l->heap[i];
	l->heap_len = j;
	for (size_t i = l->heap_len / 2 + 1; i-- > 0;)
		heap_down(l->heap, l->heap_len, i);
}

int ward__loop_add_timer(struct ward__loop *l, uint64_t deadline_ns, ward__loop_timer_fn fn,
			 void *userdata, uint64_t *ret_id)
{
	uint32_t idx;
	uint64_t h;

	if (!fn)
		return -EINVAL;
	heap_compact(l);
	if (l->heap_len == l->heap_cap) {
		size_t ncap = l->heap_cap ? l->heap_cap * 2 : 64;
		struct heap_entry *n = reallocarray(l->heap, ncap, sizeof(*n));

		if (!n)
			return -ENOMEM;
		l->heap = n;
		l->heap_cap = ncap;
	}
	if (l->free_timers) {
		idx = l->free_timers - 1;
		l->free_timers = l->timers[idx].next_free;
	} else {
		if (l->n_timers == l->cap_timers) {
			uint32_t ncap = l->cap_timers ? l->cap_timers * 2 : 64;
			struct timer_slot *n;

			if (ncap > (1u << 24))
				return -ENOMEM;
			n = reallocarray(l->timers, ncap, sizeof(*n));
			if (!n)
				return -ENOMEM;
			l->timers = n;
			l->cap_timers = ncap;
		}
		idx = l->n_timers++;
		l->timers[idx].gen = 0;
	}
	l->timers[idx].gen++;
	if (l->timers[idx].gen == 0)
		l->timers[idx].gen = 1;
	l->timers[idx].used = true;
	l->timers[idx].fn = fn;
	l->timers[idx].userdata = userdata;
	l->timers[idx].next_free = 0;
	l->live_timers++;
	h = make_handle(idx, l->timers[idx].gen);
	l->heap[l->heap_len] =
		(struct heap_entry){.deadline = deadline_ns, .seq = l->seq++, .handle = h};
	heap_up(l->heap, l->heap_len++);
	if (ret_id)
		*ret_id = h;
	return 0;
}

static void timer_free(struct ward__loop *l, struct timer_slot *s)
{
	uint32_t idx = (uint32_t)(s - l->timers);

	s->used = false;
	s->fn = NULL;
	s->userdata = NULL;
	s->gen++;
	s->next_free = l->free_timers;
	l->free_timers = idx + 1;
	l->live_timers--;
}

void ward__loop_del_timer(struct ward__loop *l, uint64_t id)
{
	struct timer_slot *s;

	if (!l || id == 0)
		return;
	s = timer_lookup(l, id);
	if (s)
		timer_free(l, s);
}

/* Earliest live deadline (popping cancelled entries off the top), or 0 for none. */
static uint64_t next_deadline(struct ward__loop *l)
{
	while (l->heap_len > 0 && !timer_lookup(l, l->heap[0].handle))
		heap_pop(l);
	return l->heap_len > 0 ? MAX(l->heap[0].deadline, (uint64_t)1) : 0;
}

static void arm_timerfd(struct ward__loop *l)
{
	uint64_t d = next_deadline(l);
	struct itimerspec its = {0};

	/*
	 * Armed no later than the earliest deadline is enough: an early expiry
	 * only costs a wake-up that runs nothing, where re-arming on every
	 * cancelled timer (a call answered before its window) costs a syscall.
	 */
	if (d == l->armed || (l->armed && (d == 0 || d > l->armed)))
		return;
	if (d) {
		its.it_value.tv_sec = (time_t)(d / 1000000000);
		its.it_value.tv_nsec = (long)(d % 1000000000);
	}
	/* An absolute deadline already past fires at once; 0/0 disarms. */
	if (timerfd_settime(l->tfd, TFD_TIMER_ABSTIME, &its, NULL) == 0)
		l->armed = d;
}

static void run_due_timers(struct ward__loop *l)
{
	/* Only timers due now run; one added by a callback for "now" runs on the next iteration. */
	uint64_t now = ward__now_ns(), limit = l->seq;

	while (l->heap_len > 0) {
		struct heap_entry e = l->heap[0];
		struct timer_slot *s;
		ward__loop_timer_fn fn;
		void *ud;

		if (e.deadline > now || e.seq >= limit)
			break;
		heap_pop(l);
		s = timer_lookup(l, e.handle);
		if (!s)
			continue;
		fn = s->fn;
		ud = s->userdata;
		timer_free(l, s);
		fn(l, ud);
	}
}

/* ------------------------------------------------------------ signals */

int ward__loop_set_signal(struct ward__loop *l, int sig, ward__loop_signal_fn fn, void *userdata)
{
	int fd;

	if (sig <= 0 || sig >= _NSIG || sig == SIGKILL || sig == SIGSTOP)
		return -EINVAL;
	l->signals[sig] = (struct signal_handler){fn, userdata};
	if (sigismember(&l->sigmask, sig) == 1)
		return 0;
	sigaddset(&l->sigmask, sig);
	if (pthread_sigmask(SIG_BLOCK, &l->sigmask, NULL) != 0)
		return -EINVAL;
	fd = signalfd(l->sfd, &l->sigmask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (fd < 0)
		return -errno;
	if (l->sfd < 0) {
		int r;

		l->sfd = fd;
		r = io_add(l, fd, EPOLLIN, IO_SIGNALFD, NULL, NULL, &l->sfd_io);
		if (r < 0) {
			close(fd);
			l->sfd = -1;
			return r;
		}
	}
	return 0;
}

static void dispatch_signals(struct ward__loop *l)
{
	struct signalfd_siginfo si;

	while (read(l->sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		int sig = (int)si.ssi_signo;

		if (sig > 0 && sig < _NSIG && l->signals[sig].fn)
			l->signals[sig].fn(l, &si, l->signals[sig].userdata);
	}
}

/* ------------------------------------------------------------ reaping */

static void reaper_unlink(struct ward__loop *l, struct reaper *r)
{
	for (struct reaper **p = &l->reapers; *p; p = &(*p)->next)
		if (*p == r) {
			*p = r->next;
			l->n_reapers--;
			return;
		}
}

static void reaper_ready(struct ward__loop *l, struct reaper *r)
{
	siginfo_t si = {0};

	if (waitid((idtype_t)P_PIDFD, (id_t)r->pidfd, &si, WEXITED | WNOHANG) < 0) {
		/* ECHILD: someone else reaped it (or it is not our child): nothing left to wait for. */
		if (errno == EINTR)
			return;
	} else if (si.si_pid == 0) {
		return; /* Spurious: still running. */
	}
	ward__loop_del_io(l, r->io);
	reaper_unlink(l, r);
	if (r->fn)
		r->fn(l, &si, r->userdata);
	close(r->pidfd);
	free(r);
}

int ward__loop_reap(struct ward__loop *l, int pidfd, ward__loop_child_fn fn, void *userdata)
{
	struct reaper *r;
	int q;

	if (pidfd < 0)
		return -EBADF;
	r = calloc(1, sizeof(*r));
	if (!r) {
		/* Never leak a child: reap it now, blocking, as the last resort. */
		siginfo_t si;

		syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
		waitid((idtype_t)P_PIDFD, (id_t)pidfd, &si, WEXITED);
		close(pidfd);
		return -ENOMEM;
	}
	r->pidfd = pidfd;
	r->fn = fn;
	r->userdata = userdata;
	q = io_add(l, pidfd, EPOLLIN, IO_REAPER, NULL, r, &r->io);
	if (q < 0) {
		siginfo_t si;

		syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
		waitid((idtype_t)P_PIDFD, (id_t)pidfd, &si, WEXITED);
		close(pidfd);
		free(r);
		return q;
	}
	r->next = l->reapers;
	l->reapers = r;
	l->n_reapers++;
	return 0;
}

size_t ward__loop_reaping(const struct ward__loop *l)
{
	return l->n_reapers;
}

/* ------------------------------------------------------------ the loop */

int ward__loop_new(struct ward__loop **ret)
{
	struct ward__loop *l = calloc(1, sizeof(*l));
	int r;

	if (!l)
		return -ENOMEM;
	l->sfd = -1;
	l->tfd = -1;
	sigemptyset(&l->sigmask);
	l->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (l->epfd < 0) {
		r = -errno;
		goto fail;
	}
	l->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (l->tfd < 0) {
		r = -errno;
		goto fail;
	}
	r = io_add(l, l->tfd, EPOLLIN, IO_TIMERFD, NULL, NULL, &l->tfd_io);
	if (r < 0)
		goto fail;
	l->now = ward__now_ns();
	*ret = l;
	return 0;
fail:
	ward__loop_free(l);
	return r;
}

void ward__loop_free(struct ward__loop *l)
{
	if (!l)
		return;
	for (size_t i = 0; i < _WARD__LOOP_EXT_MAX; i++)
		if (l->ext[i]) {
			void *ext = l->ext[i];

			l->ext[i] = NULL;
			if (l->ext_free[i])
				l->ext_free[i](l, ext);
		}
	while (l->reapers) {
		struct reaper *r = l->reapers;
		siginfo_t si;

		l->reapers = r->next;
		syscall(SYS_pidfd_send_signal, r->pidfd, SIGKILL, NULL, 0);
		while (waitid((idtype_t)P_PIDFD, (id_t)r->pidfd, &si, WEXITED) < 0 &&
		       errno == EINTR)
			;
		close(r->pidfd);
		free(r);
	}
	if (l->epfd >= 0)
		close(l->epfd);
	if (l->tfd >= 0)
		close(l->tfd);
	if (l->sfd >= 0)
		close(l->sfd);
	free(l->ios);
	free(l->timers);
	free(l->heap);
	free(l);
}

int ward__loop_iterate(struct ward__loop *l, int timeout_ms)
{
	struct epoll_event evs[64];
	int n;

	arm_timerfd(l);
	n = epoll_wait(l->epfd, evs, (int)ELEMENTSOF(evs), timeout_ms);
	if (n < 0)
		return errno == EINTR ? 0 : -errno;
	l->now = ward__now_ns();
	for (int i = 0; i < n; i++) {
		struct io_slot *s = io_lookup(l, evs[i].data.u64);

		if (!s)
			continue; /* Removed by an earlier callback of this batch. */
		switch (s->kind) {
		case IO_USER:
			s->fn(l, s->fd, evs[i].events, s->userdata);
			break;
		case IO_TIMERFD: {
			uint64_t u;
			ssize_t k = read(l->tfd, &u, sizeof(u));

			(void)k;
			l->armed = 0;
			break;
		}
		case IO_SIGNALFD:
			dispatch_signals(l);
			break;
		case IO_REAPER:
			reaper_ready(l, s->userdata);
			break;
		}
	}
	run_due_timers(l);
	/*
	 * Armed for what the callbacks added too: a caller that polls the
	 * loop's fd from a loop of its own (ward__loop_fd()) must be woken by
	 * the earliest timer without calling in first.
	 */
	arm_timerfd(l);
	return 0;
}

int ward__loop_fd(const struct ward__loop *l)
{
	return l->epfd;
}

int ward__loop_run(struct ward__loop *l)
{
	while (!l->quit) {
		int r = ward__loop_iterate(l, -1);

		if (r < 0)
			return r;
	}
	return l->quit_code;
}

void ward__loop_quit(struct ward__loop *l, int code)
{
	if (l->quit)
		return;
	l->quit = true;
	l->quit_code = code;
}

bool ward__loop_quitting(const struct ward__loop *l)
{
	return l->quit;
}

void *ward__loop_get_ext(const struct ward__loop *l, enum ward__loop_ext slot)
{
	return (unsigned)slot < _WARD__LOOP_EXT_MAX ? l->ext[slot] : NULL;
}

void ward__loop_set_ext(struct ward__loop *l, enum ward__loop_ext slot, void *ext,
			ward__loop_ext_free_fn free_fn)
{
	if ((unsigned)slot >= _WARD__LOOP_EXT_MAX)
		return;
	l->ext[slot] = ext;
	l->ext_free[slot] = free_fn;
}

uint64_t ward__loop_now_ns(const struct ward__loop *l)
{
	return l->now;
}
