/* SPDX-License-Identifier: MIT */
/*
 * Newline-delimited connections (see lineconn.h). Input goes through the
 * pure framer (src/rpc/lines.c); this file only moves bytes between fds and
 * the loop, with back-pressure both ways.
 */
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "basic/buf.h"
#include "basic/util.h"
#include "rpc/lines.h"
#include "transport/lineconn.h"

#define LINECONN_READ_CHUNK ((size_t)64 << 10)

struct ward__lineconn {
	struct ward__loop *loop;
	struct ward__lineconn_ops ops;
	void *userdata;
	struct ward__lineconn_limits lim;
	int in_fd, out_fd;
	int in_flags, out_flags; /* to restore */
	bool own_fds;
	bool same_fd;
	uint64_t in_io, out_io;
	uint32_t in_events, out_events; /* the interest registered */
	struct ward__lines framer;
	/* Bytes read but not yet framed (input paused mid-buffer). */
	uint8_t *rbuf;
	size_t roff, rlen;
	struct ward__buf out;
	size_t out_off;
	bool paused_by_owner;
	bool paused_by_queue;
	bool input_done;
	bool in_parked; /* the input fd left the loop: its peer hung up while input was paused */
	/*
	 * A regular file (or /dev/null) cannot be in epoll: input from one is
	 * read from a timer, output to one written at once (it never blocks).
	 */
	bool in_file, out_file;
	uint64_t in_timer;
	bool output_dead;
	bool drain_pending; /* the queue drained: tell the owner from the event handler */
	unsigned depth;
	bool dead;
};

static void lineconn_destroy(struct ward__lineconn *c);

static bool leave(struct ward__lineconn *c)
{
	if (--c->depth == 0 && c->dead) {
		lineconn_destroy(c);
		return true;
	}
	return c->dead;
}

static bool input_wanted(const struct ward__lineconn *c)
{
	return !c->input_done && !c->paused_by_owner && !c->paused_by_queue;
}

/* Sets an fd's interest, only when it changes (an epoll_ctl per message is not free). */
static void set_interest(struct ward__lineconn *c, uint64_t io, uint32_t *cur, uint32_t ev)
{
	if (!io || *cur == ev)
		return;
	if (ward__loop_mod_io(c->loop, io, ev) >= 0)
		*cur = ev;
}

static void on_io(struct ward__loop *l, int fd, uint32_t events, void *userdata);
static void on_file_input(struct ward__loop *l, void *userdata);

static void update_interest(struct ward__lineconn *c)
{
	uint32_t in = input_wanted(c) ? EPOLLIN : 0;
	uint32_t out = !c->output_dead && c->out.len > c->out_off ? EPOLLOUT : 0;

	if (c->in_file) {
		if (in && !c->in_timer)
			ward__loop_add_timer(c->loop, 0, on_file_input, c, &c->in_timer);
		else if (!in && c->in_timer) {
			ward__loop_del_timer(c->loop, c->in_timer);
			c->in_timer = 0;
		}
	}
	/* Wanted again after a hang-up: back in the loop, which reports the rest and the end. */
	if (c->in_parked && in &&
	    ward__loop_add_io(c->loop, c->in_fd, EPOLLIN, on_io, c, &c->in_io) >= 0) {
		c->in_parked = false;
		c->in_events = EPOLLIN;
	}

	if (c->same_fd) {
		set_interest(c, c->in_io, &c->in_events, in | out);
		return;
	}
	set_interest(c, c->in_io, &c->in_events, in);
	set_interest(c, c->out_io, &c->out_events, out);
}

static void check_water(struct ward__lineconn *c)
{
	size_t q = c->out.len - c->out_off;

	if (!c->paused_by_queue && q > c->lim.high_water) {
		c->paused_by_queue = true;
	} else if (c->paused_by_queue && q <= c->lim.high_water / 4) {
		c->paused_by_queue = false;
		c->drain_pending = true;
	}
}

static void fail_output(struct ward__lineconn *c, int error)
{
	if (c->output_dead)
		return;
	c->output_dead = true;
	ward__buf_release(&c->out);
	c->out_off = 0;
	c->paused_by_queue = false;
	update_interest(c);
	if (c->ops.output_failed)
		c->ops.output_failed(c, error, c->userdata);
}

/* Writes what it can without blocking. */
static void write_out(struct ward__lineconn *c)
{
	while (!c->output_dead && c->out.len > c->out_off) {
		ssize_t w = ward__write_nosigpipe(c->out_fd, c->out.data + c->out_off,
						  c->out.len - c->out_off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == EAGAIN)
			break;
		if (w <= 0) {
			fail_output(c, w < 0 ? -errno : -EPIPE);
			return;
		}
		c->out_off += (size_t)w;
	}
	if (c->out_off == c->out.len) {
		ward__buf_clear(&c->out);
		c->out_off = 0;
	} else if (c->out_off > ((size_t)1 << 20) && c->out_off > c->out.len / 2) {
		/* Keep the queue compact without moving bytes on every write. */
		memmove(c->out.data, c->out.data + c->out_off, c->out.len - c->out_off);
		c->out.len -= c->out_off;
		c->out.data[c->out.len] = '\0';
		c->out_off = 0;
	}
	check_water(c);
	update_interest(c);
}

/* Frames the buffered bytes, one line at a time, while input is wanted. */
static void frame(struct ward__lineconn *c)
{
	while (c->roff < c->rlen && !c->dead && !c->paused_by_owner && !c->paused_by_queue) {
		struct ward__line line;
		size_t used = 0;
		int ev = ward__lines_next(&c->framer, c->rbuf + c->roff, c->rlen - c->roff, &used,
					  &line);

		if (ev < 0)
			return; /* -ENOMEM: try again at the next event. */
		c->roff += used;
		if (ev == WARD_LINES_LINE && c->ops.message)
			c->ops.message(c, (const char *)line.data, line.len, c->userdata);
		else if (ev == WARD_LINES_TOO_LONG && c->ops.too_large)
			c->ops.too_large(c, (const char *)line.data, line.len, c->userdata);
		else if (ev == WARD_LINES_NEED_MORE)
			break;
	}
	if (c->roff == c->rlen)
		c->roff = c->rlen = 0;
}

static void end_input(struct ward__lineconn *c, int error)
{
	struct ward__line line;

	if (c->input_done)
		return;
	c->input_done = true;
	/* A last line without its newline still counts. */
	if (ward__lines_finish(&c->framer, &line) == WARD_LINES_LINE && line.len > 0 &&
	    c->ops.message)
		c->ops.message(c, (const char *)line.data, line.len, c->userdata);
	if (c->dead)
		return;
	update_interest(c);
	if (c->ops.input_closed)
		c->ops.input_closed(c, error, c->userdata);
}

static void read_in(struct ward__lineconn *c)
{
	ssize_t n;

	if (c->rlen > c->roff) {
		frame(c);
		return;
	}
	n = read(c->in_fd, c->rbuf, LINECONN_READ_CHUNK);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		end_input(c, n < 0 ? -errno : 0);
		return;
	}
	c->roff = 0;
	c->rlen = (size_t)n;
	frame(c);
}

/* Input from a file: a chunk per loop turn, so that answers and other work interleave. */
static void on_file_input(struct ward__loop *l, void *userdata)
{
	struct ward__lineconn *c = userdata;

	c->in_timer = 0;
	c->depth++;
	if (input_wanted(c))
		read_in(c);
	if (!c->dead)
		update_interest(c);
	leave(c);
}

static void on_io(struct ward__loop *l, int fd, uint32_t events, void *userdata)
{
	struct ward__lineconn *c = userdata;

	c->depth++;
	if ((events & (EPOLLOUT | EPOLLERR)) && (fd == c->out_fd) && !c->output_dead) {
		write_out(c);
		if (c->drain_pending && !c->dead) {
			c->drain_pending = false;
			if (c->ops.drained)
				c->ops.drained(c, c->userdata);
		}
		/* The queue drained below the water mark: go on with lines already read. */
		if (!c->dead && input_wanted(c) && c->rlen > c->roff)
			frame(c);
	}
	if (!c->dead && fd == c->in_fd && (events & (EPOLLIN | EPOLLHUP | EPOLLERR)) &&
	    input_wanted(c))
		read_in(c);
	else if (!c->dead && fd == c->in_fd && (events & (EPOLLHUP | EPOLLERR)) && !c->same_fd &&
		 !input_wanted(c) && !c->input_done) {
		/*
		 * Paused with the peer gone: the kernel reports a hang-up whatever
		 * the interest, so the fd leaves the loop until input is wanted
		 * again (what is still in the pipe is read then).
		 */
		ward__loop_del_io(c->loop, c->in_io);
		c->in_io = 0;
		c->in_events = 0;
		c->in_parked = true;
	}
	leave(c);
}

int ward__lineconn_new(struct ward__loop *l, int in_fd, int out_fd, bool own_fds,
		       const struct ward__lineconn_limits *lim,
		       const struct ward__lineconn_ops *ops, void *userdata,
		       struct ward__lineconn **ret)
{
	struct ward__lineconn *c;
	int r;

	if (!lim || lim->max_line == 0 || lim->max_queue == 0)
		return -EINVAL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->loop = l;
	c->ops = *ops;
	c->userdata = userdata;
	c->lim = *lim;
	c->in_fd = in_fd;
	c->out_fd = out_fd;
	c->own_fds = own_fds;
	c->same_fd = in_fd == out_fd;
	c->in_flags = fcntl(in_fd, F_GETFL);
	c->out_flags = fcntl(out_fd, F_GETFL);
	r = ward__lines_init(&c->framer, lim->max_line);
	if (r >= 0)
		r = ward__buf_init(&c->out, lim->max_queue);
	if (r < 0)
		goto fail;
	c->rbuf = malloc(LINECONN_READ_CHUNK);
	if (!c->rbuf) {
		r = -ENOMEM;
		goto fail;
	}
	ward__fd_nonblock(in_fd, true);
	ward__fd_nonblock(out_fd, true);
	r = ward__loop_add_io(l, in_fd, EPOLLIN, on_io, c, &c->in_io);
	if (r == -EPERM && !c->same_fd) {
		c->in_file = true;
		r = ward__loop_add_timer(l, 0, on_file_input, c, &c->in_timer);
	} else if (r >= 0) {
		c->in_events = EPOLLIN;
	}
	if (r < 0)
		goto fail;
	if (!c->same_fd) {
		r = ward__loop_add_io(l, out_fd, 0, on_io, c, &c->out_io);
		if (r == -EPERM) {
			c->out_file = true;
			c->out_io = 0;
			r = 0;
		}
		if (r < 0)
			goto fail;
	}
	*ret = c;
	return 0;
fail:
	lineconn_destroy(c);
	return r;
}

static void lineconn_destroy(struct ward__lineconn *c)
{
	ward__loop_del_timer(c->loop, c->in_timer);
	ward__loop_del_io(c->loop, c->in_io);
	ward__loop_del_io(c->loop, c->out_io);
	if (c->own_fds) {
		close(c->in_fd);
		if (!c->same_fd)
			close(c->out_fd);
	} else {
		/* stdio is shared with whoever started us: leave its flags as they were. */
		if (c->in_flags >= 0)
			fcntl(c->in_fd, F_SETFL, c->in_flags);
		if (c->out_flags >= 0 && !c->same_fd)
			fcntl(c->out_fd, F_SETFL, c->out_flags);
	}
	ward__lines_release(&c->framer);
	ward__buf_release(&c->out);
	free(c->rbuf);
	free(c);
}

void ward__lineconn_free(struct ward__lineconn *c)
{
	if (!c || c->dead)
		return;
	c->dead = true;
	if (c->depth == 0)
		lineconn_destroy(c);
}

int ward__lineconn_send(struct ward__lineconn *c, const void *data, size_t len)
{
	int r;

	if (c->output_dead)
		return -EPIPE;
	if (memchr(data, '\n', len))
		return -EINVAL;
	if (len + 1 > ward__buf_room(&c->out)) {
		/* Room may be hidden behind what was written already. */
		if (c->out_off > 0 && len + 1 <= c->out.max - (c->out.len - c->out_off)) {
			memmove(c->out.data, c->out.data + c->out_off, c->out.len - c->out_off);
			c->out.len -= c->out_off;
			c->out_off = 0;
		} else {
			return -ENOBUFS;
		}
	}
	r = ward__buf_reserve(&c->out, len + 1);
	if (r < 0)
		return r;
	ward__buf_append(&c->out, data, len);
	ward__buf_append_byte(&c->out, '\n');
	c->depth++;
	write_out(c);
	leave(c);
	return 0;
}

bool ward__lineconn_congested(const struct ward__lineconn *c)
{
	return c->paused_by_queue;
}

size_t ward__lineconn_queued(const struct ward__lineconn *c)
{
	return c->out.len - c->out_off;
}

void ward__lineconn_pause(struct ward__lineconn *c, bool pause)
{
	c->paused_by_owner = pause;
	update_interest(c);
	if (!pause && c->rlen > c->roff) {
		c->depth++;
		frame(c);
		leave(c);
	}
}

int ward__lineconn_flush(struct ward__lineconn *c, int timeout_ms)
{
	uint64_t deadline = ward__now_ms() + (uint64_t)(timeout_ms > 0 ? timeout_ms : 0);

	while (!c->output_dead && c->out.len > c->out_off) {
		struct pollfd p = {.fd = c->out_fd, .events = POLLOUT};
		uint64_t now = ward__now_ms();

		if (now >= deadline)
			return -ETIMEDOUT;
		if (poll(&p, 1, (int)(deadline - now)) < 0 && errno != EINTR)
			return -errno;
		write_out(c);
	}
	return c->output_dead ? -EPIPE : 0;
}
