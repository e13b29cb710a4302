/* SPDX-License-Identifier: MIT */
#pragma once

#include <signal.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>

#include "basic/macro.h"

/*
 * The event loop of ward's long-running front ends (`ward mcp`, `ward serve`):
 * one thread, one epoll instance, one timerfd for every timer, one signalfd for
 * every signal. Nothing polls: the loop sleeps in epoll_wait() until an fd is
 * ready, the earliest timer is due or a signal arrives.
 *
 * Registrations are named by 64-bit handles (a slot index and a generation),
 * never by pointers: removing a registration while the loop is dispatching the
 * events of the same epoll_wait() batch is always safe, and a stale handle
 * (already removed, or reused for something else) is recognised and ignored.
 * Handle 0 is never issued, so a zeroed field means "nothing registered".
 *
 * Every callback may add and remove registrations, including its own.
 * Nothing here allocates per event; memory grows only with the number of live
 * registrations.
 */

struct ward__loop;

typedef void (*ward__loop_io_fn)(struct ward__loop *l, int fd, uint32_t events, void *userdata);
typedef void (*ward__loop_timer_fn)(struct ward__loop *l, void *userdata);
typedef void (*ward__loop_signal_fn)(struct ward__loop *l, const struct signalfd_siginfo *si,
				     void *userdata);
/* A reaped child: its pidfd (closed after the call) and its siginfo from waitid(). */
typedef void (*ward__loop_child_fn)(struct ward__loop *l, const siginfo_t *si, void *userdata);

WARD_INTERNAL int ward__loop_new(struct ward__loop **ret);
/*
 * Frees the loop. Registered fds are not closed (their owners close them);
 * children handed to ward__loop_reap() are killed with SIGKILL and reaped,
 * blocking, so that nothing is left behind. Accepts NULL.
 */
WARD_INTERNAL void ward__loop_free(struct ward__loop *l);

/*
 * Watches fd for events (EPOLLIN, EPOLLOUT, ...; level-triggered). The loop
 * never closes fd. -EEXIST when fd is already watched.
 */
WARD_INTERNAL int ward__loop_add_io(struct ward__loop *l, int fd, uint32_t events,
				    ward__loop_io_fn fn, void *userdata, uint64_t *ret_id);
WARD_INTERNAL int ward__loop_mod_io(struct ward__loop *l, uint64_t id, uint32_t events);
/* Stops watching. Safe with a stale or zero handle, and from any callback. */
WARD_INTERNAL void ward__loop_del_io(struct ward__loop *l, uint64_t id);

/*
 * Calls fn once at deadline_ns (CLOCK_MONOTONIC, as ward__now_ns()); a
 * deadline in the past fires on the next iteration. Timers with the same
 * deadline fire in the order they were added.
 */
WARD_INTERNAL int ward__loop_add_timer(struct ward__loop *l, uint64_t deadline_ns,
				       ward__loop_timer_fn fn, void *userdata, uint64_t *ret_id);
/* Cancels a timer that has not fired. Safe with a stale or zero handle. */
WARD_INTERNAL void ward__loop_del_timer(struct ward__loop *l, uint64_t id);

/*
 * Delivers sig through the loop's signalfd (the signal is blocked in the
 * calling thread). One handler per signal; fn NULL removes it (the signal
 * stays blocked).
 */
WARD_INTERNAL int ward__loop_set_signal(struct ward__loop *l, int sig, ward__loop_signal_fn fn,
					void *userdata);

/*
 * Takes ownership of pidfd, a child of this process that has been (or is
 * being) killed: the loop reaps it when it exits, without blocking, calls fn
 * (may be NULL) and closes the pidfd.
 */
WARD_INTERNAL int ward__loop_reap(struct ward__loop *l, int pidfd, ward__loop_child_fn fn,
				  void *userdata);
/* Children handed to ward__loop_reap() not yet reaped. */
WARD_INTERNAL size_t ward__loop_reaping(const struct ward__loop *l);

/*
 * Per-loop singletons of the layers above the loop, which basic/ does not
 * know: one pointer per slot, created on first use by whoever needs it and
 * freed by its free function when the loop is freed (before anything else of
 * the loop goes, so the function may still remove its registrations).
 */
enum ward__loop_ext {
	/* The inotify instance every protected-path guard of the loop shares (exec/proc.c). */
	WARD__LOOP_EXT_GUARD_WATCHES = 0,
	/* The host's mount table, watched for prepared sandboxes (exec/pool.c). */
	WARD__LOOP_EXT_MOUNT_TABLE,
	/* The buffer procs read their commands' output into (exec/proc.c). */
	WARD__LOOP_EXT_READ_BUFFER,
	_WARD__LOOP_EXT_MAX,
};
typedef void (*ward__loop_ext_free_fn)(struct ward__loop *l, void *ext);
WARD_INTERNAL void *ward__loop_get_ext(const struct ward__loop *l, enum ward__loop_ext slot);
/* Sets a slot (which must be empty). */
WARD_INTERNAL void ward__loop_set_ext(struct ward__loop *l, enum ward__loop_ext slot, void *ext,
				      ward__loop_ext_free_fn free_fn);

/* Runs until ward__loop_quit(); returns its code, or -errno when epoll fails. */
WARD_INTERNAL int ward__loop_run(struct ward__loop *l);
/*
 * One iteration: waits at most timeout_ms (-1: no limit) for events, then
 * dispatches them and every due timer. Returns 0, or -errno.
 */
WARD_INTERNAL int ward__loop_iterate(struct ward__loop *l, int timeout_ms);
/*
 * The loop's epoll fd, for a caller with a poll loop of its own (ward run):
 * it polls readable when a registration or a timer is due; then call
 * ward__loop_iterate(l, 0). Timers are armed by every iteration, so the
 * fd also wakes for the timers the callbacks added.
 */
WARD_INTERNAL int ward__loop_fd(const struct ward__loop *l);
WARD_INTERNAL void ward__loop_quit(struct ward__loop *l, int code);
WARD_INTERNAL bool ward__loop_quitting(const struct ward__loop *l);
/* The time the current iteration started (CLOCK_MONOTONIC ns); cheap. */
WARD_INTERNAL uint64_t ward__loop_now_ns(const struct ward__loop *l);
