/* SPDX-License-Identifier: MIT */
/*
 * The byte mover of the proxy: one established connection between a client
 * in the sandbox and an upstream host.
 *
 * Why splice(2): the bytes of a download never need to enter ward's memory.
 * socket -> pipe -> socket moves page references in the kernel; ward's cost
 * per connection is this struct and, while bytes flow, two pipes. The pipe
 * is the only buffer of a direction (64 KiB, the kernel's default): a
 * direction splices into its pipe only when the pipe is empty, and out of
 * it only as fast as the destination takes, so a slow reader stops the
 * writer (back-pressure) instead of making anything grow.
 *
 * Pipes are made on a direction's first read, not at accept: a connection
 * that never sends (a slow client, or one of 10,000 opened to exhaust
 * ward) costs two descriptors, not six.
 */
#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include "basic/loop.h"
#include "net/net-internal.h"

/* Bytes one direction moves per wake-up before it lets the others run. */
#define PUMP_BUDGET ((size_t)1 << 20)
#define COPY_BUF ((size_t)16 << 10)
#define SPLICE_CHUNK ((size_t)1 << 16)
/*
 * A direction that has moved this much is a bulk transfer: its pipe grows
 * to BULK_PIPE, so each wake-up moves sixteen times more per splice pair.
 * Still one bounded kernel buffer per direction; connections that move
 * little keep the kernel's default pipe.
 */
#define BULK_AFTER ((uint64_t)1 << 20)
#define BULK_PIPE ((size_t)1 << 20)

struct dir {
	int src, dst;
	int pipe[2];
	size_t in_pipe;
	size_t pipe_size; /* what one splice into the pipe may move */
	bool bulk_tried; /* the pipe was grown for a bulk transfer (or could not be) */
	uint8_t *buf; /* bytes to write first, or the copy buffer of a framed body */
	size_t buf_off, buf_len;
	bool eof; /* nothing more will be read */
	bool done; /* and everything read was written (and dst shut down) */
	bool framed; /* copied through buf, as far as the body goes */
	bool keep_open; /* no shutdown(SHUT_WR) when done (a framed request) */
	uint64_t bytes;
};

struct ward__tunnel {
	struct ward__loop *loop;
	int fd[2]; /* client, upstream */
	uint64_t io[2];
	uint32_t want[2];
	struct dir d[2]; /* 0: client -> upstream, 1: upstream -> client */
	struct ward__body body;
	bool ends_with_response; /* a plain HTTP request: over when the response is delivered */
	bool finished;
	unsigned *bulk_pipes, bulk_pipes_max; /* the proxy's count (see ward__tunnel_opts) */
	unsigned grown; /* of this tunnel's directions */
	ward__tunnel_done_fn fn;
	void *userdata;
};

static bool pending(const struct dir *d)
{
	return d->buf_off < d->buf_len || d->in_pipe > 0;
}

static int dir_flush(struct dir *d)
{
	while (d->buf_off < d->buf_len) {
		ssize_t n = send(d->dst, d->buf + d->buf_off, d->buf_len - d->buf_off,
				 MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errno == EAGAIN ? 0 : -errno;
		}
		d->buf_off += (size_t)n;
		d->bytes += (uint64_t)n;
	}
	if (!d->framed && d->buf) {
		/* The first bytes are out: the buffer is not needed again. */
		free(d->buf);
		d->buf = NULL;
		d->buf_off = d->buf_len = 0;
	}
	while (d->in_pipe > 0) {
		ssize_t n = splice(d->pipe[0], NULL, d->dst, NULL, d->in_pipe,
				   SPLICE_F_MOVE | SPLICE_F_NONBLOCK);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errno == EAGAIN ? 0 : -errno;
		}
		if (n == 0)
			return -EIO;
		d->in_pipe -= (size_t)n;
		d->bytes += (uint64_t)n;
	}
	return 0;
}

static int dir_read(struct ward__tunnel *t, struct dir *d, size_t *ret_n)
{
	ssize_t n;

	*ret_n = 0;
	if (d->framed) {
		ssize_t m;

		n = recv(d->src, d->buf, COPY_BUF, MSG_DONTWAIT);
		if (n < 0)
			return errno == EAGAIN || errno == EINTR ? 0 : -errno;
		if (n == 0)
			return -EPIPE; /* the client went away in the middle of its request body */
		m = ward__body_feed(&t->body, d->buf, (size_t)n);
		if (m < 0)
			return -EPROTO;
		/* What follows the body is not forwarded (see httpfwd.c). */
		d->buf_off = 0;
		d->buf_len = (size_t)m;
		d->eof = t->body.done;
		*ret_n = (size_t)n;
		return 0;
	}
	if (d->pipe[0] < 0) {
		if (pipe2(d->pipe, O_CLOEXEC | O_NONBLOCK) < 0)
			return -errno;
		d->pipe_size = SPLICE_CHUNK;
	}
	if (d->bytes >= BULK_AFTER && !d->bulk_tried) {
		/*
		 * Past the per-user pipe budget the kernel says no: the default pipe
		 * still works. A sandbox's bulk transfers together grow at most
		 * bulk_pipes_max pipes: a megabyte each that a slow upstream may keep
		 * full, kernel memory a command would otherwise multiply by its
		 * connections.
		 */
		d->bulk_tried = true;
		if (t->bulk_pipes && *t->bulk_pipes < t->bulk_pipes_max) {
			int sz = fcntl(d->pipe[1], F_SETPIPE_SZ, (int)BULK_PIPE);

			if (sz > 0) {
				d->pipe_size = (size_t)sz;
				(*t->bulk_pipes)++;
				t->grown++;
			}
		}
	}
	/* The pipe is empty here (a direction reads only after it wrote everything). */
	n = splice(d->src, NULL, d->pipe[1], NULL, d->pipe_size, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
	if (n < 0)
		return errno == EAGAIN || errno == EINTR ? 0 : -errno;
	if (n == 0)
		d->eof = true;
	d->in_pipe = (size_t)n;
	*ret_n = (size_t)n;
	return 0;
}

/*
 * Moves what it can in one direction; 0 when it has to wait, -errno when the
 * tunnel is broken. Reads only when may_read (the source polled readable):
 * a direction that never gets data never makes its pipe.
 */
static int pump(struct ward__tunnel *t, struct dir *d, bool may_read)
{
	size_t budget = PUMP_BUDGET;

	while (!d->done) {
		size_t n;
		int r = dir_flush(d);

		if (r < 0)
			return r;
		if (pending(d))
			return 0;
		if (d->eof) {
			if (!d->keep_open)
				shutdown(d->dst, SHUT_WR);
			d->done = true;
			break;
		}
		if (budget == 0 || !may_read)
			return 0;
		r = dir_read(t, d, &n);
		if (r < 0)
			return r;
		if (n == 0 && !d->eof)
			return 0;
		budget -= MIN(budget, n);
	}
	return 0;
}

static bool over(const struct ward__tunnel *t)
{
	if (t->ends_with_response)
		return t->d[1].done;
	return t->d[0].done && t->d[1].done;
}

static int update(struct ward__tunnel *t)
{
	for (int s = 0; s < 2; s++) {
		/* Side s reads for direction s and is written by direction 1 - s. */
		const struct dir *rd = &t->d[s], *wr = &t->d[1 - s];
		uint32_t want = 0;

		if (!rd->done && !rd->eof && !pending(rd))
			want |= EPOLLIN;
		if (!wr->done && pending(wr))
			want |= EPOLLOUT;
		/* A client that hangs up after its request does not want the answer any more. */
		if (s == 0 && t->ends_with_response && rd->done)
			want |= EPOLLRDHUP;
		if (want != t->want[s]) {
			int r = ward__loop_mod_io(t->loop, t->io[s], want);

			if (r < 0)
				return r;
			t->want[s] = want;
		}
	}
	return 0;
}

static void finish(struct ward__tunnel *t, int error)
{
	if (t->finished)
		return;
	t->finished = true;
	for (int s = 0; s < 2; s++)
		ward__loop_del_io(t->loop, t->io[s]);
	t->io[0] = t->io[1] = 0;
	/* Last: the owner may free the tunnel here. */
	t->fn(t->userdata, error);
}

static void on_io(struct ward__loop *l, int fd, uint32_t events, void *userdata)
{
	struct ward__tunnel *t = userdata;
	int s = fd == t->fd[0] ? 0 : 1, r = 0;

	if (t->finished)
		return;
	if (events & EPOLLERR) {
		int e = 0;
		socklen_t el = sizeof(e);

		getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &el);
		finish(t, e ? -e : -ECONNRESET);
		return;
	}
	if (s == 0 && (events & EPOLLRDHUP) && t->ends_with_response && t->d[0].done) {
		finish(t, 0);
		return;
	}
	/* Reading side s (EPOLLIN, or EPOLLHUP which may still have data), writing side s. */
	if (events & (EPOLLIN | EPOLLHUP))
		r = pump(t, &t->d[s], true);
	if (r == 0 && (events & (EPOLLOUT | EPOLLHUP)))
		r = pump(t, &t->d[1 - s], false);
	if (r == 0 && over(t)) {
		finish(t, 0);
		return;
	}
	/*
	 * A hang-up with the reading direction stuck behind a write that cannot
	 * proceed would wake the loop forever (EPOLLHUP cannot be masked): the
	 * peer is gone both ways, so the tunnel is over.
	 */
	if (r == 0 && (events & EPOLLHUP) && !t->d[s].eof && !t->d[s].done)
		r = -ECONNRESET;
	if (r == 0)
		r = update(t);
	if (r < 0)
		finish(t, r);
}

static int dir_init(struct dir *d, int src, int dst, const void *first, size_t len, bool framed)
{
	*d = (struct dir){.src = src, .dst = dst, .pipe = {-1, -1}, .framed = framed};
	if (len > 0 || framed) {
		d->buf = malloc(MAX(len, framed ? COPY_BUF : 0));
		if (!d->buf)
			return -ENOMEM;
		if (len)
			memcpy(d->buf, first, len);
		d->buf_len = len;
	}
	return 0;
}

int ward__tunnel_new(struct ward__loop *l, const struct ward__tunnel_opts *o,
		     ward__tunnel_done_fn fn, void *userdata, struct ward__tunnel **ret)
{
	struct ward__tunnel *t = calloc(1, sizeof(*t));
	int r;

	if (!t) {
		close(o->client);
		close(o->upstream);
		return -ENOMEM;
	}
	t->loop = l;
	t->fd[0] = o->client;
	t->fd[1] = o->upstream;
	t->fn = fn;
	t->userdata = userdata;
	t->bulk_pipes = o->bulk_pipes;
	t->bulk_pipes_max = o->bulk_pipes_max;
	t->d[0].pipe[0] = t->d[0].pipe[1] = t->d[1].pipe[0] = t->d[1].pipe[1] = -1;
	if (o->body) {
		t->body = *o->body;
		t->ends_with_response = true;
	}
	r = dir_init(&t->d[0], o->client, o->upstream, o->to_upstream, o->to_upstream_len,
		     o->body && !o->to_upstream_ends);
	if (r >= 0)
		r = dir_init(&t->d[1], o->upstream, o->client, o->to_client, o->to_client_len,
			     false);
	if (r < 0) {
		ward__tunnel_free(t);
		return r;
	}
	if (o->body) {
		/* A request is never half-closed upstream: some servers take that for an abort. */
		t->d[0].keep_open = true;
		t->d[0].eof = o->to_upstream_ends;
	}
	for (int s = 0; s < 2 && r >= 0; s++)
		r = ward__loop_add_io(l, t->fd[s], 0, on_io, t, &t->io[s]);
	if (r >= 0) {
		/* The first bytes go out now; what cannot waits for EPOLLOUT. */
		r = pump(t, &t->d[0], false);
		if (r >= 0)
			r = pump(t, &t->d[1], false);
		if (r >= 0)
			r = update(t);
	}
	if (r < 0) {
		ward__tunnel_free(t);
		return r;
	}
	*ret = t;
	return 0;
}

void ward__tunnel_free(struct ward__tunnel *t)
{
	if (!t)
		return;
	for (int s = 0; s < 2; s++) {
		ward__loop_del_io(t->loop, t->io[s]);
		if (t->fd[s] >= 0)
			close(t->fd[s]);
		for (int i = 0; i < 2; i++)
			if (t->d[s].pipe[i] >= 0)
				close(t->d[s].pipe[i]);
		free(t->d[s].buf);
	}
	if (t->bulk_pipes)
		*t->bulk_pipes -= t->grown;
	free(t);
}

void ward__tunnel_bytes(const struct ward__tunnel *t, uint64_t *ret_out, uint64_t *ret_in)
{
	*ret_out = t->d[0].bytes;
	*ret_in = t->d[1].bytes;
}
