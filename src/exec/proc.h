/* SPDX-License-Identifier: MIT */
#pragma once

#include "basic/loop.h"
#include "basic/macro.h"
#include "exec/exec.h"
#include "exec/netproxy.h"
#include "exec/pool.h"
#include "sandbox/sandbox.h"

/*
 * An asynchronous sandboxed process, driven by an event loop: the building
 * block of interactive sessions (src/session) and of the exec server
 * (src/execserver). Where ward_run() owns its own loop and returns when the
 * command is over, a proc hands its output to a callback as it is read, takes
 * stdin while it runs and reports its end, all from the caller's loop.
 *
 * Lifecycle: ward__proc_start() -> output callbacks ... -> exited (the
 * command's status is known; output may still arrive) -> closed (the status
 * is known and every output stream reached EOF, or the drain deadline passed;
 * denials are final). ward__proc_free() may be called at any time, also from
 * the proc's own callbacks: it kills what is still running and hands the
 * sandbox's init to the loop to be reaped, never blocking.
 */

struct ward__proc;

enum ward__proc_stream {
	WARD__PROC_STDOUT = 1,
	WARD__PROC_STDERR = 2,
	WARD__PROC_PTY = 3, /* a tty's single stream */
};

struct ward__proc_ops {
	/* Bytes as they were read; data is valid for the call only. */
	void (*output)(struct ward__proc *p, enum ward__proc_stream stream, const uint8_t *data,
		       size_t len, void *userdata);
	/* The command ended: ward__proc_exit_code() and friends are final. */
	void (*exited)(struct ward__proc *p, void *userdata);
	/* Everything is over; called once, after exited. */
	void (*closed)(struct ward__proc *p, void *userdata);
};

/* Bytes of stdin a proc queues while the command does not read them. */
#define WARD_PROC_STDIN_QUEUE_MAX ((size_t)1 << 20)

struct ward__proc_spec {
	/* Resolved; must stay valid until ward__proc_free() (the sandbox reads it). */
	const struct ward_policy *policy;
	char *const *argv; /* copied by the spawn (the child's memory is a copy) */
	const char *exec_path; /* the program when it is not argv[0] (argv[0] is then its arg0) */
	const char
		*cwd; /* the command's directory when not the policy's cwd (not a writable root) */
	char *const *envp; /* NULL: the caller's environ */
	bool tty; /* one pty for stdin, stdout and stderr */
	unsigned short rows, cols; /* the pty's size; 0: 24x80 */
	bool stdin_pipe; /* without tty: stdin is a pipe ward__proc_write() feeds; else /dev/null */
	uint64_t timeout_ms; /* 0: none; at the deadline the sandbox is killed, exit code 124 */
	bool no_observe_fs; /* do not observe filesystem denials (cheaper, no denial list) */
	/* Descriptors the command keeps open at the same numbers (at most WARD_MAX_KEEP_FDS). */
	const int *keep_fds;
	size_t n_keep_fds;
	/*
	 * Prepared sandboxes of the caller (a server session), or NULL: the start
	 * takes a prepared sandbox built for this very policy when the pool has
	 * one ready, and has the pool prepare the next.
	 */
	struct ward__proc_pool *pool;
	/*
	 * The network by domain (a policy with host patterns): what decides
	 * beyond the patterns and asks people (NULL: nothing), and whether
	 * questions may be asked. The proxy lives as long as the sandbox.
	 */
	const struct ward_net_hooks *net_hooks;
	bool net_ask;
	/*
	 * Copy-on-write layers over the writable roots (src/changes), or none:
	 * the command's changes stay off the host until its owner applies
	 * them (after ward__proc_wait_gone()). Never with a prepared sandbox.
	 */
	const struct ward__layer *layers;
	size_t n_layers;
	/*
	 * The budget group (src/sandbox/limits.h: a server's or a connection's
	 * total) the sandbox's cgroup is made beneath, or NULL.
	 */
	const struct ward__cgroup *cg_parent;
};

/*
 * Starts the command. Returns -errno with err filled when nothing could be
 * started; a command that cannot be executed (126/127) or a sandbox whose
 * setup failed inside (125) is started and then exits with that code, its
 * reason in ward__proc_error().
 */
WARD_INTERNAL int ward__proc_start(struct ward__loop *l, const struct ward__proc_spec *spec,
				   const struct ward__proc_ops *ops, void *userdata,
				   struct ward__proc **ret, struct ward_error *err);
/* Kills whatever still runs and releases everything; never blocks. Accepts NULL. */
WARD_INTERNAL void ward__proc_free(struct ward__proc *p);
/* Replaces the callbacks' userdata (e.g. when the owner moves). */
WARD_INTERNAL void ward__proc_set_userdata(struct ward__proc *p, void *userdata);

/*
 * Queues bytes for the command's stdin (the pty with tty). -EPIPE when stdin
 * is closed or the command is gone, -ENOBUFS when the queue would exceed
 * WARD_PROC_STDIN_QUEUE_MAX (nothing queued then).
 */
WARD_INTERNAL int ward__proc_write(struct ward__proc *p, const void *data, size_t len);
/* Closes stdin once the queue is written (EOF for the command). */
WARD_INTERNAL void ward__proc_close_stdin(struct ward__proc *p);
WARD_INTERNAL bool ward__proc_stdin_open(const struct ward__proc *p);
/* Bytes queued for stdin and not yet written. */
WARD_INTERNAL size_t ward__proc_stdin_queued(const struct ward__proc *p);
/*
 * Bytes of memory the stdin queue holds: its storage, never less than what
 * is queued; nothing once everything queued was written.
 */
WARD_INTERNAL size_t ward__proc_stdin_held(const struct ward__proc *p);
/* Sends sig to the command's process group (through the sandbox's init). */
WARD_INTERNAL int ward__proc_signal(struct ward__proc *p, int sig);
/* Sets the pty's window size (the command gets SIGWINCH). -ENOTTY without a tty. */
WARD_INTERNAL int ward__proc_resize(struct ward__proc *p, unsigned short rows, unsigned short cols);
/* Kills every process of the sandbox; exited and closed follow. Idempotent. */
WARD_INTERNAL void ward__proc_terminate(struct ward__proc *p);
/*
 * Stops (true) or resumes reading the command's output: back-pressure for a
 * consumer that cannot keep up. A paused command blocks in write() once its
 * pipe is full, which is exactly what it would do under a slow reader.
 */
WARD_INTERNAL void ward__proc_pause_output(struct ward__proc *p, bool pause);

/*
 * Blocks until the sandbox's init is gone (killed first), without reaping it:
 * its mount namespace, and with it a layer's overlay, is torn down. For the
 * owner of a layered proc, once the command exited; a millisecond or so.
 */
WARD_INTERNAL int ward__proc_wait_gone(struct ward__proc *p);
WARD_INTERNAL bool ward__proc_exited(const struct ward__proc *p);
WARD_INTERNAL bool ward__proc_closed(const struct ward__proc *p);
/* Exit code as ward run reports it (128+N for signal N, 124 timed out); -1 before exit. */
WARD_INTERNAL int ward__proc_exit_code(const struct ward__proc *p);
/* The signal the command died of, or 0. */
WARD_INTERNAL int ward__proc_signal_number(const struct ward__proc *p);
WARD_INTERNAL bool ward__proc_timed_out(const struct ward__proc *p);
/* Why the command could not run (setup failure, 126, 127), or NULL. */
WARD_INTERNAL const struct ward_error *ward__proc_error(const struct ward__proc *p);
/* The sandbox (denials, isolation, Landlock ABI, fallback warning). */
WARD_INTERNAL const struct ward__sandbox *ward__proc_sandbox(const struct ward__proc *p);
/*
 * Whether the sandbox refused anything (as ward_result_sandbox_denied): 1 yes,
 * 0 no, -ENODATA when this host gives no exact answer.
 */
WARD_INTERNAL int ward__proc_denied(const struct ward__proc *p);
/* The command's pid as the host sees it (the sandbox's init), or -1. */
WARD_INTERNAL pid_t ward__proc_pid(const struct ward__proc *p);
/* Milliseconds since start (until exit once exited). */
WARD_INTERNAL uint64_t ward__proc_wall_ms(const struct ward__proc *p);
