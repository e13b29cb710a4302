/* SPDX-License-Identifier: MIT */
/*
 * Asynchronous sandboxed processes (see proc.h). The sandbox is the one
 * `ward run` builds (spawn.c); what differs is who waits: every fd of the
 * run (output pipes or the pty master, the stdin pipe, the report pipe, the
 * protected-path guard, init's pidfd) is registered with the caller's event
 * loop, so thousands of processes share one thread.
 *
 * Callbacks may free the proc. Every entry point that calls out holds a
 * reference (depth) and checks `dead` afterwards; the memory goes only when
 * the outermost entry point returns.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "basic/buf.h"
#include "basic/cleanup.h"
#include "basic/error.h"
#include "basic/util.h"
#include "exec/proc.h"

/* After the command's end, how long output still held open by a leftover is drained (as Codex). */
#define PROC_DRAIN_MS 2000
/*
 * The read size: one read per readiness event keeps many busy procs fair to
 * each other. A command that fills its pipe (a stream) gets a pipe of
 * PROC_PIPE_GROWN: fewer, larger chunks cost the server and its clients less
 * per byte (one notification, one frame, one decode each).
 */
#define PROC_READ_CHUNK ((size_t)256 << 10)
#define PROC_PIPE_GROWN (256 << 10)
/* Read into a buffer on the stack when the loop's is in use (a read from an output callback). */
#define PROC_READ_FALLBACK ((size_t)16 << 10)

/* The loop's read buffer: one for every proc of the loop (reads never overlap but nested). */
struct read_buffer {
	bool busy;
	uint8_t data[PROC_READ_CHUNK];
};

struct ward__proc {
	struct ward__loop *loop;
	struct ward__proc_ops ops;
	void *userdata;

	struct ward__sandbox sb;
	bool spawned;
	struct ward__proc_pool *pool; /* the pool it was started with (a reference), or NULL */
	struct ward__netproxy *net; /* the network by domain's proxy, or NULL */

	bool tty;
	int out_fd[2]; /* stdout (or the pty master), stderr; -1 at EOF */
	bool out_grown[2]; /* its pipe was made larger (or could not be) */
	uint64_t out_io[2];
	int in_fd; /* stdin pipe's write end; with tty: the pty master (out_fd[0]) */
	uint64_t in_io; /* pipes only: the stdin registration */
	struct ward__buf inq;
	size_t inq_off;
	bool stdin_open;
	bool stdin_close_pending;

	uint64_t report_io, guard_io, pid_io;
	uint64_t timeout_timer, drain_timer, start_timer;

	bool paused;
	bool draining; /* reading what is left before the exit is told */
	bool exited;
	bool closed;
	bool timed_out;
	bool terminated;
	bool init_reaped;
	int exit_code;
	int signal;
	uint64_t start_ns, end_ns;

	unsigned depth;
	bool dead;
};

/* ------------------------------------------------------------ the loop's shared inotify instance */

/*
 * Every guard of the procs of one loop shares one inotify instance (see
 * struct ward__watches in sandbox.h): the kernel allows a user 128 instances
 * by default, so an instance per sandbox stops a server at about a hundred
 * processes. It lives as long as the loop: closing an instance waits for an
 * SRCU grace period (milliseconds), which a server must not pay per process.
 */
struct loop_watches {
	struct ward__watches *w;
	uint64_t io;
};

static void on_watches(struct ward__loop *l, int fd, uint32_t events, void *userdata)
{
	struct loop_watches *lw = userdata;

	ward__watches_dispatch(lw->w);
}

static void loop_watches_free(struct ward__loop *l, void *ext)
{
	struct loop_watches *lw = ext;

	ward__loop_del_io(l, lw->io);
	ward__watches_free(lw->w);
	free(lw);
}

static int loop_watches(struct ward__loop *l, struct ward__watches **ret, struct ward_error *err)
{
	struct loop_watches *lw = ward__loop_get_ext(l, WARD__LOOP_EXT_GUARD_WATCHES);
	int r;

	if (lw) {
		*ret = lw->w;
		return 0;
	}
	lw = calloc(1, sizeof(*lw));
	if (!lw)
		return ward__error(err, -ENOMEM, "exec", "out of memory");
	r = ward__watches_new(&lw->w, err);
	if (r < 0) {
		free(lw);
		return r;
	}
	r = ward__loop_add_io(l, ward__watches_fd(lw->w), EPOLLIN, on_watches, lw, &lw->io);
	if (r < 0) {
		ward__watches_free(lw->w);
		free(lw);
		return ward__error(err, r, "exec", "cannot watch the guards' inotify instance: %m");
	}
	ward__loop_set_ext(l, WARD__LOOP_EXT_GUARD_WATCHES, lw, loop_watches_free);
	*ret = lw->w;
	return 0;
}

/* ------------------------------------------------------------ references */

static void proc_destroy(struct ward__proc *p);

static void proc_enter(struct ward__proc *p)
{
	p->depth++;
}

/* Returns true when the proc is gone and the caller must not touch it. */
static bool proc_leave(struct ward__proc *p)
{
	if (--p->depth == 0 && p->dead) {
		proc_destroy(p);
		return true;
	}
	return p->dead;
}

/* ------------------------------------------------------------ interest */

static uint32_t pty_events(const struct ward__proc *p)
{
	uint32_t ev = 0;

	if (!p->paused)
		ev |= EPOLLIN;
	if (p->stdin_open && p->inq.len > p->inq_off)
		ev |= EPOLLOUT;
	return ev;
}

static void update_interest(struct ward__proc *p)
{
	if (p->tty) {
		if (p->out_fd[0] >= 0)
			ward__loop_mod_io(p->loop, p->out_io[0], pty_events(p));
		return;
	}
	for (int i = 0; i < 2; i++)
		if (p->out_fd[i] >= 0)
			ward__loop_mod_io(p->loop, p->out_io[i], p->paused ? 0 : EPOLLIN);
	if (p->in_io)
		ward__loop_mod_io(p->loop, p->in_io,
				  p->inq.len > p->inq_off || p->stdin_close_pending ? EPOLLOUT : 0);
}

/* ------------------------------------------------------------ ending */

static void close_out(struct ward__proc *p, int i)
{
	if (p->out_fd[i] < 0)
		return;
	ward__loop_del_io(p->loop, p->out_io[i]);
	p->out_io[i] = 0;
	if (p->tty && i == 0) {
		/* The master is stdin too: nothing can be written once it is gone. */
		p->stdin_open = false;
		p->in_fd = -1;
		ward__buf_release(&p->inq);
		p->inq_off = 0;
	}
	close(p->out_fd[i]);
	p->out_fd[i] = -1;
}

static void close_stdin_now(struct ward__proc *p)
{
	p->stdin_open = false;
	p->stdin_close_pending = false;
	ward__buf_release(&p->inq);
	p->inq_off = 0;
	if (p->tty) {
		update_interest(p);
		return;
	}
	if (p->in_fd >= 0) {
		ward__loop_del_io(p->loop, p->in_io);
		p->in_io = 0;
		close(p->in_fd);
		p->in_fd = -1;
	}
}

/*
 * Once the proc is closed and its init reaped, nothing of the sandbox is
 * needed but what it learnt: its descriptors and watches go now, not when
 * the owner frees the proc (a server keeps finished processes readable for a
 * while, and must not hold kernel resources for them meanwhile).
 */
static void maybe_release(struct ward__proc *p)
{
	if (p->closed && p->init_reaped && p->spawned) {
		/* The proxy goes with the sandbox: nothing of it outlives the process. */
		ward__netproxy_free(p->net);
		p->net = NULL;
		ward__sandbox_close(&p->sb);
	}
}

/* Calls closed once: the status is known and no output stream is left. */
static void maybe_closed(struct ward__proc *p)
{
	if (p->closed || !p->exited || p->out_fd[0] >= 0 || p->out_fd[1] >= 0)
		return;
	struct ward__proc_pool *pool = p->pool ? ward__proc_pool_ref(p->pool) : NULL;

	p->closed = true;
	maybe_release(p);
	ward__loop_del_timer(p->loop, p->drain_timer);
	p->drain_timer = 0;
	if (p->ops.closed)
		p->ops.closed(p, p->userdata);
	/*
	 * The pool builds the next sandbox now that the client has this one's
	 * end: not while the command ran (the loop would answer its end late by
	 * as much), and the other one kept ready serves a start coming at once.
	 */
	ward__proc_pool_kick(pool);
	ward__proc_pool_unref(pool);
}

static void on_drain_deadline(struct ward__loop *l, void *userdata)
{
	struct ward__proc *p = userdata;

	p->drain_timer = 0;
	if (p->paused) {
		/* The consumer holds the output back: whatever is left stays readable for it. */
		ward__loop_add_timer(l, ward__now_ns() + (uint64_t)PROC_DRAIN_MS * 1000000,
				     on_drain_deadline, p, &p->drain_timer);
		return;
	}
	proc_enter(p);
	close_out(p, 0);
	close_out(p, 1);
	maybe_closed(p);
	proc_leave(p);
}

/* The exit code as ward run reports it (exec.c's build_result has the same rules). */
static int compute_exit_code(struct ward__proc *p)
{
	const struct ward__sandbox *sb = &p->sb;
	int code;

	p->signal = 0;
	if (sb->have_status && WIFSIGNALED(sb->wait_status))
		p->signal = WTERMSIG(sb->wait_status);
	else if (!sb->have_status && (p->terminated || p->timed_out || sb->guard_tripped))
		p->signal = SIGKILL;
	/* memory.oom.group killed the whole sandbox, init with it: no status came, SIGKILL did. */
	else if (!sb->have_status && sb->limits.hit && sb->limits.hit_resource == WARD_RES_MEMORY)
		p->signal = SIGKILL;
	if (p->timed_out)
		code = WARD_EXIT_CODE_TIMEOUT;
	else if (sb->have_status && WIFEXITED(sb->wait_status))
		code = WEXITSTATUS(sb->wait_status);
	else if (p->signal)
		code = 128 + p->signal;
	else
		code = WARD_EXIT_CODE_SETUP;
	if (sb->have_error && !p->timed_out && !p->terminated)
		code = sb->error.exit_code;
	if (sb->guard_tripped && code == 0)
		code = 1;
	return code;
}

static bool read_out(struct ward__proc *p, int i);

/*
 * What the sandbox's processes changed is known before their end is. The
 * loop may hand out the report of the status (or init's exit) before the
 * shared inotify instance's events about the change: epoll can hold the
 * report fd ready from an earlier read ahead of the instance, and a round
 * reads a bounded share of the instance (other sandboxes' events first).
 * Every event queued now is read (the change's was queued before the status
 * was written), and a change trips the guard before the run is concluded.
 */
static void guard_catch_up(struct ward__proc *p)
{
	struct loop_watches *lw = ward__loop_get_ext(p->loop, WARD__LOOP_EXT_GUARD_WATCHES);

	if (lw)
		ward__watches_flush(lw->w);
	if (!p->dead)
		ward__sandbox_handle_guard(&p->sb);
}

static void mark_exited(struct ward__proc *p)
{
	if (p->exited || p->draining)
		return;
	/*
	 * What the command wrote before it ended comes before its end: the status
	 * arrives after every writer is gone, so the output is already in the
	 * pipes. Read it first (unless the consumer holds output back), as far as
	 * a bounded number of reads, so that "exited" follows the last output.
	 */
	p->draining = true;
	for (int i = 0; i < 2 && !p->paused; i++)
		for (int k = 0; k < 64 && p->out_fd[i] >= 0 && !p->dead; k++)
			if (!read_out(p, i))
				break;
	p->draining = false;
	if (p->dead)
		return;
	guard_catch_up(p);
	if (p->dead)
		return;
	p->exited = true;
	p->end_ns = ward__now_ns();
	p->exit_code = compute_exit_code(p);
	ward__loop_del_timer(p->loop, p->timeout_timer);
	p->timeout_timer = 0;
	/* Nothing reads stdin any more. */
	if (!p->tty)
		close_stdin_now(p);
	/*
	 * init reports the status after killing everything else; it then only
	 * lingers (see init.c): end it now, the loop reaps it through the pidfd.
	 */
	ward__sandbox_kill(&p->sb);
	if (p->ops.exited)
		p->ops.exited(p, p->userdata);
	if (p->dead)
		return;
	if (p->out_fd[0] >= 0 || p->out_fd[1] >= 0)
		ward__loop_add_timer(p->loop, ward__now_ns() + (uint64_t)PROC_DRAIN_MS * 1000000,
				     on_drain_deadline, p, &p->drain_timer);
	maybe_closed(p);
}

/* ------------------------------------------------------------ events */

static void read_buffer_free(struct ward__loop *l, void *ext)
{
	free(ext);
}

static struct read_buffer *loop_read_buffer(struct ward__loop *l)
{
	struct read_buffer *rb = ward__loop_get_ext(l, WARD__LOOP_EXT_READ_BUFFER);

	if (!rb) {
		/* malloc, not calloc: the pages are touched only as far as reads fill them. */
		rb = malloc(sizeof(*rb));
		if (!rb)
			return NULL;
		rb->busy = false;
		ward__loop_set_ext(l, WARD__LOOP_EXT_READ_BUFFER, rb, read_buffer_free);
	}
	return rb->busy ? NULL : rb;
}

/* One read of an output stream; true when bytes were delivered. */
static bool read_out(struct ward__proc *p, int i)
{
	struct read_buffer *rb = loop_read_buffer(p->loop);
	uint8_t small[PROC_READ_FALLBACK];
	uint8_t *buf = rb ? rb->data : small;
	size_t size = rb ? PROC_READ_CHUNK : sizeof(small);
	ssize_t n;

	if (p->out_fd[i] < 0)
		return false;
	n = read(p->out_fd[i], buf, size);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return false;
	if (n <= 0) {
		/* EOF; EIO on a pty master once the last holder of the terminal is gone. */
		close_out(p, i);
		if (p->exited)
			maybe_closed(p);
		return false;
	}
	/*
	 * A full default pipe (64 KiB): the command writes faster than it is
	 * read. A larger pipe for it; none when the user's pipe buffers are over
	 * fs.pipe-user-pages-soft (the kernel refuses, and it stays as it is).
	 */
	if (!p->out_grown[i] && !p->tty && n >= (ssize_t)(64 << 10)) {
		p->out_grown[i] = true;
		fcntl(p->out_fd[i], F_SETPIPE_SZ, PROC_PIPE_GROWN);
	}
	if (p->ops.output) {
		if (rb)
			rb->busy = true;
		p->ops.output(p,
			      p->tty ? WARD__PROC_PTY
				     : (i == 0 ? WARD__PROC_STDOUT : WARD__PROC_STDERR),
			      buf, (size_t)n, p->userdata);
		if (rb)
			rb->busy = false;
	}
	return true;
}

static void flush_stdin(struct ward__proc *p)
{
	while (p->stdin_open && p->in_fd >= 0 && p->inq.len > p->inq_off) {
		ssize_t w = ward__write_nosigpipe(p->in_fd, p->inq.data + p->inq_off,
						  p->inq.len - p->inq_off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == EAGAIN)
			break;
		if (w <= 0) {
			/* EPIPE / EIO: the command closed its stdin or its terminal. */
			close_stdin_now(p);
			return;
		}
		p->inq_off += (size_t)w;
	}
	if (p->inq_off == p->inq.len) {
		/*
		 * The storage goes back once everything was written: an idle
		 * command holds nothing (a server with thousands of them would
		 * otherwise keep up to 64 KiB each of input already read).
		 */
		ward__buf_release(&p->inq);
		p->inq_off = 0;
		if (p->stdin_close_pending && !p->tty)
			close_stdin_now(p);
	}
	update_interest(p);
}

static void on_out(struct ward__loop *l, int fd, uint32_t events, void *userdata)
{
	struct ward__proc *p = userdata;
	int i = fd == p->out_fd[0] ? 0 : 1;

	proc_enter(p);
	if (p->tty && (events & EPOLLOUT))
		flush_stdin(p);
	if (!p->dead && (events & (EPOLLIN | EPOLLHUP | EPOLLERR)))
		read_out(p, i);
	proc_leave(p);
}

static void on_stdin(struct ward__loop *l, int fd, uint32_t events, void *userdata)
{
	struct ward__proc *p = userdata;

	proc_enter(p);
	if (events & EPOLLERR)
		close_stdin_now(p);
	else
		flush_stdin(p);
	proc_leave(p);
}

static void on_report(struct ward__loop *l, int fd, uint32_t events, void *userdata)
{
	struct ward__proc *p = userdata;
	bool eof = false;

	proc_enter(p);
	if (ward__sandbox_read_reports(&p->sb, &eof) < 0)
		eof = true;
	if (eof) {
		ward__loop_del_io(l, p->report_io);
		p->report_io = 0;
	}
	if (p->sb.have_status || (p->sb.have_error && p->sb.error.exit_code != 0))
		mark_exited(p);
	proc_leave(p);
}

/* The loop's shared inotify instance had events for this sandbox's guard. */
static void on_guard_notify(void *userdata)
{
	struct ward__proc *p = userdata;

	proc_enter(p);
	ward__sandbox_handle_guard(&p->sb);
	proc_leave(p);
}

static void on_guard(struct ward__loop *l, int fd, uint32_t events, void *userdata)
{
	struct ward__proc *p = userdata;

	proc_enter(p);
	if (ward__sandbox_handle_guard(&p->sb) < 0) {
		ward__loop_del_io(l, p->guard_io);
		p->guard_io = 0;
	}
	proc_leave(p);
}

static void on_init_exit(struct ward__loop *l, int fd, uint32_t events, void *userdata)
{
	struct ward__proc *p = userdata;
	int code;

	proc_enter(p);
	ward__loop_del_io(l, p->pid_io);
	p->pid_io = 0;
	if (p->report_io) {
		ward__loop_del_io(l, p->report_io);
		p->report_io = 0;
	}
	if (p->guard_io) {
		ward__sandbox_handle_guard(&p->sb);
		ward__loop_del_io(l, p->guard_io);
		p->guard_io = 0;
	}
	/* init is gone: this reaps it and reads its last reports, without blocking. */
	ward__sandbox_wait(&p->sb, &code);
	p->init_reaped = true;
	mark_exited(p);
	if (!p->dead)
		maybe_release(p);
	proc_leave(p);
}

static void on_timeout(struct ward__loop *l, void *userdata)
{
	struct ward__proc *p = userdata;

	p->timeout_timer = 0;
	if (p->exited)
		return;
	p->timed_out = true;
	ward__sandbox_kill(&p->sb);
}

static void on_started_exited(struct ward__loop *l, void *userdata)
{
	struct ward__proc *p = userdata;

	p->start_timer = 0;
	proc_enter(p);
	mark_exited(p);
	proc_leave(p);
}

/* ------------------------------------------------------------ start */

int ward__proc_start(struct ward__loop *l, const struct ward__proc_spec *spec,
		     const struct ward__proc_ops *ops, void *userdata, struct ward__proc **ret,
		     struct ward_error *err)
{
	struct ward__spawn_opts so = {.tty_fd = -1};
	int child[3] = {-1, -1, -1};
	int pfd[2];
	struct ward__proc *p;
	int r;

	if (!spec || !spec->policy || !spec->argv || !spec->argv[0] || !ret ||
	    spec->n_keep_fds > WARD_MAX_KEEP_FDS)
		return ward__error(err, -EINVAL, "exec", "invalid arguments");
	p = calloc(1, sizeof(*p));
	if (!p)
		return ward__error(err, -ENOMEM, "exec", "out of memory");
	p->loop = l;
	if (ops)
		p->ops = *ops;
	p->userdata = userdata;
	p->tty = spec->tty;
	p->out_fd[0] = p->out_fd[1] = p->in_fd = -1;
	p->exit_code = -1;
	ward__buf_init(&p->inq, WARD_PROC_STDIN_QUEUE_MAX);

	so.policy = spec->policy;
	so.argv = spec->argv;
	so.exec_path = spec->exec_path;
	so.cwd = spec->cwd;
	so.envp = spec->envp;
	so.observe_fs = !spec->no_observe_fs;
	so.quiet_fallback = true;
	/* A session's or a server's command: not a child of the person's shell (sandbox.h). */
	so.default_signals = true;
	so.layers = spec->layers;
	so.n_layers = spec->n_layers;
	so.cg_parent = spec->cg_parent;
	for (size_t i = 0; i < spec->n_keep_fds; i++)
		so.keep_fds[i] = spec->keep_fds[i];
	so.n_keep_fds = spec->n_keep_fds;
	r = loop_watches(l, &so.watches, err);
	if (r < 0) {
		free(p);
		return r;
	}
	for (int i = 0; i < 3; i++)
		so.stdio[i] = -1;

	if (spec->tty) {
		so.pty = true;
		so.pty_stdio[0] = so.pty_stdio[1] = so.pty_stdio[2] = true;
		so.winsize.ws_row = spec->rows ? spec->rows : 24;
		so.winsize.ws_col = spec->cols ? spec->cols : 80;
	} else {
		if (spec->stdin_pipe) {
			r = ward__pipe_one_nonblock(pfd, 1);
			if (r < 0)
				goto fail_fds;
			child[0] = pfd[0];
			p->in_fd = pfd[1];
			p->stdin_open = true;
		} else {
			child[0] = open("/dev/null", O_RDONLY | O_CLOEXEC | O_NOCTTY);
			if (child[0] < 0) {
				r = -errno;
				goto fail_fds;
			}
		}
		for (int i = 0; i < 2; i++) {
			r = ward__pipe_one_nonblock(pfd, 0);
			if (r < 0)
				goto fail_fds;
			p->out_fd[i] = pfd[0];
			child[i + 1] = pfd[1];
		}
		for (int i = 0; i < 3; i++)
			so.stdio[i] = child[i];
	}

	p->start_ns = ward__now_ns();
	r = -EAGAIN;
	/* A sandbox whose network is by domain is built at its start: its listeners are its own. */
	if (spec->pool && spec->n_keep_fds == 0 && spec->n_layers == 0 &&
	    !ward__policy_net_by_domain(spec->policy) &&
	    ward__proc_pool_take(spec->pool, spec->policy, spec->tty, so.observe_fs,
				 spec->cg_parent, &p->sb) > 0) {
		/* A sandbox built ahead for this very policy: only the command is left to send. */
		r = ward__sandbox_launch(&p->sb, &so, NULL);
		if (r < 0)
			ward__proc_abandon_sandbox(l, &p->sb);
	}
	if (spec->pool)
		p->pool = ward__proc_pool_ref(spec->pool);
	if (r < 0)
		r = ward__sandbox_spawn(&so, &p->sb, err);
	for (int i = 0; i < 3; i++)
		if (child[i] >= 0) {
			close(child[i]);
			child[i] = -1;
		}
	if (r < 0)
		goto fail;
	p->spawned = true;
	ward__sandbox_set_guard_notify(&p->sb, on_guard_notify, p);
	if (p->sb.net_fd >= 0) {
		r = ward__netproxy_start(l, &p->sb, spec->policy, spec->net_hooks, spec->net_ask,
					 &p->net, err);
		if (r < 0)
			goto fail;
	}

	if (spec->tty) {
		if (p->sb.pty_master >= 0) {
			/* The master is the proc's from here on. */
			p->out_fd[0] = TAKE_FD(p->sb.pty_master);
			ward__fd_nonblock(p->out_fd[0], true);
			p->in_fd = p->out_fd[0];
			p->stdin_open = true;
		}
		/* Without a master the child failed first; its error report says why. */
	}

	for (int i = 0; i < 2; i++)
		if (p->out_fd[i] >= 0) {
			r = ward__loop_add_io(l, p->out_fd[i], p->tty ? pty_events(p) : EPOLLIN,
					      on_out, p, &p->out_io[i]);
			if (r < 0)
				goto fail_watch;
		}
	if (!p->tty && p->in_fd >= 0) {
		r = ward__loop_add_io(l, p->in_fd, 0, on_stdin, p, &p->in_io);
		if (r < 0)
			goto fail_watch;
	}
	if (p->sb.report_fd >= 0) {
		r = ward__loop_add_io(l, p->sb.report_fd, EPOLLIN, on_report, p, &p->report_io);
		if (r < 0)
			goto fail_watch;
	}
	if (p->sb.guard_fd >= 0) {
		r = ward__loop_add_io(l, p->sb.guard_fd, EPOLLIN, on_guard, p, &p->guard_io);
		if (r < 0)
			goto fail_watch;
	}
	r = ward__loop_add_io(l, p->sb.pidfd, EPOLLIN, on_init_exit, p, &p->pid_io);
	if (r < 0)
		goto fail_watch;
	if (spec->timeout_ms > 0) {
		r = ward__loop_add_timer(l, p->start_ns + spec->timeout_ms * 1000000, on_timeout, p,
					 &p->timeout_timer);
		if (r < 0)
			goto fail_watch;
	}
	/*
	 * A setup failure or a quick command's status may have come with the
	 * start-up reports already, and the report fd will not say so again:
	 * look at once, but from the loop, so that no callback runs before the
	 * caller has the proc.
	 */
	if (p->sb.have_status || (p->sb.have_error && p->sb.error.exit_code != 0)) {
		r = ward__loop_add_timer(l, 0, on_started_exited, p, &p->start_timer);
		if (r < 0)
			goto fail_watch;
	}
	*ret = p;
	return 0;

fail_watch:
	ward__error(err, r, "exec", "cannot watch the command: %m");
	goto fail;
fail_fds:
	ward__error(err, r, "exec", "cannot set up the command's stdio: %m");
fail:
	for (int i = 0; i < 3; i++)
		if (child[i] >= 0)
			close(child[i]);
	ward__proc_free(p);
	return r;
}

/* ------------------------------------------------------------ control */

int ward__proc_write(struct ward__proc *p, const void *data, size_t len)
{
	int r;

	if (!p->stdin_open || p->stdin_close_pending || p->in_fd < 0 || p->dead)
		return -EPIPE;
	if (len == 0)
		return 0;
	if (p->inq.len - p->inq_off + len > WARD_PROC_STDIN_QUEUE_MAX)
		return -ENOBUFS;
	if (p->inq_off > 0 && p->inq.len + len > WARD_PROC_STDIN_QUEUE_MAX) {
		/* Make room by dropping what was written already. */
		memmove(p->inq.data, p->inq.data + p->inq_off, p->inq.len - p->inq_off);
		p->inq.len -= p->inq_off;
		p->inq_off = 0;
	}
	r = ward__buf_append(&p->inq, data, len);
	if (r < 0)
		return r;
	proc_enter(p);
	flush_stdin(p);
	proc_leave(p);
	return 0;
}

void ward__proc_close_stdin(struct ward__proc *p)
{
	if (!p->stdin_open)
		return;
	if (p->tty) {
		/* A terminal has no EOF of its own: send the EOF character (VEOF, ^D), as a person would. */
		struct termios t;
		char eof = 4;

		if (p->in_fd >= 0 && tcgetattr(p->in_fd, &t) == 0 && t.c_cc[VEOF])
			eof = (char)t.c_cc[VEOF];
		ward__proc_write(p, &eof, 1);
		return;
	}
	p->stdin_close_pending = true;
	proc_enter(p);
	flush_stdin(p);
	proc_leave(p);
}

bool ward__proc_stdin_open(const struct ward__proc *p)
{
	return p->stdin_open && !p->stdin_close_pending;
}

size_t ward__proc_stdin_queued(const struct ward__proc *p)
{
	return p->inq.len - p->inq_off;
}

size_t ward__proc_stdin_held(const struct ward__proc *p)
{
	/* The storage, and malloc's header and rounding. */
	return p->inq.alloc ? p->inq.alloc + 24 : 0;
}

int ward__proc_signal(struct ward__proc *p, int sig)
{
	if (p->exited)
		return -ESRCH;
	return ward__sandbox_signal(&p->sb, sig);
}

int ward__proc_resize(struct ward__proc *p, unsigned short rows, unsigned short cols)
{
	struct winsize ws = {.ws_row = rows, .ws_col = cols};

	if (!p->tty || p->out_fd[0] < 0)
		return -ENOTTY;
	if (rows == 0 || cols == 0)
		return -EINVAL;
	return RET_NERRNO(ioctl(p->out_fd[0], TIOCSWINSZ, &ws));
}

void ward__proc_terminate(struct ward__proc *p)
{
	if (p->exited)
		return;
	p->terminated = true;
	ward__sandbox_kill(&p->sb);
}

void ward__proc_pause_output(struct ward__proc *p, bool pause)
{
	if (p->paused == pause)
		return;
	p->paused = pause;
	update_interest(p);
}

void ward__proc_set_userdata(struct ward__proc *p, void *userdata)
{
	p->userdata = userdata;
}

/* ------------------------------------------------------------ free */

static void proc_destroy(struct ward__proc *p)
{
	struct ward__loop *l = p->loop;

	ward__loop_del_io(l, p->out_io[0]);
	ward__loop_del_io(l, p->out_io[1]);
	ward__loop_del_io(l, p->in_io);
	ward__loop_del_io(l, p->report_io);
	ward__loop_del_io(l, p->guard_io);
	ward__loop_del_io(l, p->pid_io);
	ward__loop_del_timer(l, p->timeout_timer);
	ward__loop_del_timer(l, p->drain_timer);
	ward__loop_del_timer(l, p->start_timer);
	for (int i = 0; i < 2; i++)
		if (p->out_fd[i] >= 0)
			close(p->out_fd[i]);
	if (!p->tty && p->in_fd >= 0)
		close(p->in_fd);
	ward__netproxy_free(p->net);
	p->net = NULL;
	if (p->spawned) {
		if (!p->init_reaped && p->sb.pidfd >= 0) {
			/*
			 * Killed, and reaped by the loop once gone (its namespaces'
			 * teardown must not stall everyone else); where the loop cannot
			 * take it, released the blocking way: the one path for this
			 * and the pool's unused sandboxes.
			 */
			ward__proc_abandon_sandbox(l, &p->sb);
		} else {
			ward__sandbox_kill(&p->sb);
			ward__sandbox_release(&p->sb);
		}
	}
	ward__buf_release(&p->inq);
	ward__proc_pool_unref(p->pool);
	free(p);
}

void ward__proc_free(struct ward__proc *p)
{
	if (!p || p->dead)
		return;
	p->dead = true;
	if (p->depth == 0)
		proc_destroy(p);
}

/* ------------------------------------------------------------ state */

int ward__proc_wait_gone(struct ward__proc *p)
{
	siginfo_t si;

	if (!p || !p->spawned || p->init_reaped || p->sb.pidfd < 0)
		return 0;
	ward__sandbox_kill(&p->sb);
	/* WNOWAIT: the loop still reaps it (on_init_exit), as for any other proc. */
	while (waitid((idtype_t)P_PIDFD, (id_t)p->sb.pidfd, &si, WEXITED | WNOWAIT) < 0)
		if (errno != EINTR)
			return -errno;
	return 0;
}

bool ward__proc_exited(const struct ward__proc *p)
{
	return p->exited;
}

bool ward__proc_closed(const struct ward__proc *p)
{
	return p->closed;
}

int ward__proc_exit_code(const struct ward__proc *p)
{
	return p->exited ? p->exit_code : -1;
}

int ward__proc_signal_number(const struct ward__proc *p)
{
	return p->exited ? p->signal : 0;
}

bool ward__proc_timed_out(const struct ward__proc *p)
{
	return p->timed_out;
}

const struct ward_error *ward__proc_error(const struct ward__proc *p)
{
	return p->sb.have_error ? &p->sb.error.error : NULL;
}

const struct ward__sandbox *ward__proc_sandbox(const struct ward__proc *p)
{
	return &p->sb;
}

int ward__proc_denied(const struct ward__proc *p)
{
	if (p->sb.guard_tripped || p->sb.n_denials > 0 || p->sb.denials_dropped > 0)
		return 1;
	return p->sb.denials_exact ? 0 : -ENODATA;
}

pid_t ward__proc_pid(const struct ward__proc *p)
{
	return p->spawned ? p->sb.pid : -1;
}

uint64_t ward__proc_wall_ms(const struct ward__proc *p)
{
	uint64_t end = p->exited ? p->end_ns : ward__now_ns();

	return (end - p->start_ns) / 1000000;
}
