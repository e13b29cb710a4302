/* SPDX-License-Identifier: MIT */
/*
 * The exec server (see execserver.h and docs/protocol.md): Codex's
 * exec-server dialect of JSON-RPC over any transport.
 *
 * Objects:
 *   - a connection (struct xconn) speaks for at most one exec session once
 *     it has sent initialize;
 *   - a session (struct xsession) owns processes; when its connection goes,
 *     it waits WARD_XS_DETACHED_TTL_MS for a client to resume it, its
 *     processes running and their output retained, then everything of it is
 *     killed;
 *   - a process (struct xproc) is a sandboxed proc (src/exec/proc.c) with its
 *     retained output (bounded ring of chunks, numbered by seq), its waiting
 *     process/read calls and the writeIds it has seen.
 *
 * Output flows as process/output notifications to the attached connection
 * and into the retention ring for process/read. A connection that does not
 * keep up (its send queue above the high-water mark) makes the server stop
 * reading its processes' output: the processes block in write(), as under any
 * slow reader, and ward's memory stays bounded. Without a connection, output
 * is read on and only the newest WARD_XS_RETAIN_BYTES are kept.
 *
 * What all processes retain together is bounded too (retain_total): past
 * it, the oldest chunks of the process that has gone longest without output
 * go first (exited processes, typically), whatever its session.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <openssl/evp.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/random.h>
#include <unistd.h>

#include "basic/buf.h"
#include "basic/cleanup.h"
#include "basic/error.h"
#include "basic/uri.h"
#include "basic/util.h"
#include "exec/exec.h"
#include "exec/proc.h"
#include "execserver/execserver.h"
#include "execserver/fsops.h"
#include "execserver/xpolicy.h"
#include "policy/policy.h"
#include "rpc/args.h"
#include "rpc/base64.h"
#include "rpc/jsonrpc.h"
#include "ward-config.h"

/* Codex's error code for resuming a session another connection holds. */
#define XS_SESSION_ATTACHED (-32010)

struct xsession;
struct xproc;

struct xconn {
	struct ward__xserver *srv;
	struct ward__conn *c;
	struct xsession *sess;
	bool initialize_answered;
	bool initialized; /* the initialized notification arrived */
	bool overflowed; /* a reply did not fit in the send queue: the connection goes */
	uint64_t abort_timer;
	struct ward__xfs *fs; /* open file handles */
	struct xfsop *fsops; /* filesystem requests being answered */
	struct xconn *prev, *next;
};

/* A filesystem request running (in a sandbox) while its connection may go. */
struct xfsop {
	struct xfsop *next;
	struct xconn *conn; /* NULL once the connection is gone */
	struct ward__rpc_id id;
};

/* A process/read waiting for output. */
struct xread {
	struct xread *next;
	struct xproc *proc;
	struct xconn *conn;
	struct ward__rpc_id id; /* str owned */
	uint64_t after_seq;
	size_t max_bytes;
	uint64_t timer;
};

struct chunk {
	uint64_t seq;
	uint8_t stream; /* enum ward__proc_stream */
	uint32_t len;
	uint8_t *data;
};

struct xproc {
	struct xsession *sess;
	char *id;
	char *id_json; /* the id as a JSON string, for the hand-built notifications */
	struct ward__proc *proc;
	struct ward_policy *policy;
	bool sandboxed;
	bool tty, pipe_stdin;
	uint64_t seq; /* the last seq used */
	/* Retention: a ring of chunks, oldest first. */
	struct chunk *ring;
	size_t ring_cap, ring_head, ring_len;
	size_t retained_bytes;
	struct xproc *lru_prev, *lru_next; /* in the server's retention order, while it retains */
	bool in_lru;
	bool exited, closed;
	int exit_code;
	int denied;
	char *failure;
	uint64_t remove_timer;
	bool paused;
	struct xread *reads;
	size_t n_reads;
	/* The writeIds seen, with their answers: a ring. */
	char **write_ids;
	size_t n_write_ids, write_pos;
	struct xproc *prev, *next;
};

struct xsession {
	struct ward__xserver *srv;
	char id[37];
	struct xconn *conn;
	/* Sandboxes prepared for this session's policies, while one connection holds it. */
	struct ward__proc_pool *pool;
	uint64_t ttl_timer;
	uint64_t detached_at; /* ward__now_ns() when its connection went, 0 while attached */
	struct xproc *procs;
	size_t n_procs;
	struct xsession *prev, *next;
};

struct ward__xserver {
	struct ward__loop *loop;
	/*
	 * Where process/output notifications are built, kept from one to the
	 * next: a stream's chunks are hundreds of KiB, and a fresh buffer each
	 * time is fresh pages each time.
	 */
	struct ward__buf notify_buf;
	struct ward__xserver_config cfg;
	struct ward_policy *policy;
	struct ward_run_options *env;
	struct ward__rpc_codec codec;
	struct xconn *conns;
	size_t n_conns;
	struct xsession *sessions;
	size_t n_sessions;
	size_t n_procs;
	/* Retained output of every process; processes that retain, least recent output first. */
	size_t retained_total;
	struct xproc *lru_head, *lru_tail;
	char *cwd;
};

/* ------------------------------------------------------------ small helpers */

static char *b64_encode(const void *data, size_t len, size_t *ret_len)
{
	size_t n = ward__base64_encoded_len(len);
	char *out = malloc(n + 1);

	if (!out)
		return NULL;
	ward__base64_encode(data, len, out);
	out[n] = '\0';
	if (ret_len)
		*ret_len = n;
	return out;
}

/* Strict base64 (RFC 4648, padded): -EINVAL for anything else. */
static int b64_decode(const char *s, size_t len, uint8_t **ret, size_t *ret_len)
{
	uint8_t *out;
	size_t pad = 0, n;
	int k;

	if (len % 4 != 0)
		return -EINVAL;
	if (len == 0) {
		*ret = malloc(1);
		*ret_len = 0;
		return *ret ? 0 : -ENOMEM;
	}
	for (size_t i = 0; i < len; i++) {
		char ch = s[i];

		if (!((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') ||
		      (ch >= '0' && ch <= '9') || ch == '+' || ch == '/' ||
		      (ch == '=' && i >= len - 2)))
			return -EINVAL;
	}
	if (s[len - 1] == '=')
		pad++;
	if (s[len - 2] == '=')
		pad++;
	if (pad == 1 && s[len - 2] == '=')
		return -EINVAL;
	if (len > INT32_MAX)
		return -E2BIG;
	out = malloc(len / 4 * 3 + 1);
	if (!out)
		return -ENOMEM;
	k = EVP_DecodeBlock(out, (const unsigned char *)s, (int)len);
	if (k < 0) {
		free(out);
		return -EINVAL;
	}
	n = (size_t)k - pad;
	*ret = out;
	*ret_len = n;
	return 0;
}

static void uuid_v4(char out[37])
{
	uint8_t b[16];

	if (getrandom(b, sizeof(b), 0) != (ssize_t)sizeof(b)) {
		uint64_t t = ward__now_ns();

		for (size_t i = 0; i < sizeof(b); i++)
			b[i] = (uint8_t)(t >> (i % 8 * 8)) ^ (uint8_t)i;
	}
	b[6] = (uint8_t)((b[6] & 0x0f) | 0x40);
	b[8] = (uint8_t)((b[8] & 0x3f) | 0x80);
	snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		 b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12],
		 b[13], b[14], b[15]);
}

static const char *stream_name(uint8_t s)
{
	switch (s) {
	case WARD__PROC_STDOUT:
		return "stdout";
	case WARD__PROC_STDERR:
		return "stderr";
	default:
		return "pty";
	}
}

/* ------------------------------------------------------------ sending */

static void on_abort(struct ward__loop *l, void *userdata)
{
	struct xconn *x = userdata;

	x->abort_timer = 0;
	ward__conn_abort(x->c);
}

/*
 * Queues an encoded message. A reply that does not fit means the client has
 * stopped reading while asking more: the connection is dropped (from the
 * loop), its session detached as after any disconnect.
 */
static void send_bytes(struct xconn *x, const struct ward__buf *b)
{
	int r;

	if (!x || x->overflowed)
		return;
	r = ward__conn_send(x->c, b->data, b->len);
	if (r == -ENOBUFS) {
		x->overflowed = true;
		ward__loop_add_timer(x->srv->loop, 0, on_abort, x, &x->abort_timer);
	}
}

static void reply(struct xconn *x, const struct ward__rpc_id *id, json_t *result)
{
	struct ward__buf b;

	ward__buf_init(&b, (size_t)1 << 30);
	if (ward__rpc_encode_result(&x->srv->codec, &b, id, result) >= 0)
		send_bytes(x, &b);
	ward__buf_release(&b);
	json_decref(result);
}

static void reply_error(struct xconn *x, const struct ward__rpc_id *id, int code, const char *fmt,
			...) _printf_(4, 5);
static void reply_error(struct xconn *x, const struct ward__rpc_id *id, int code, const char *fmt,
			...)
{
	char msg[512];
	struct ward__buf b;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	ward__buf_init(&b, 64 * 1024);
	if (ward__rpc_encode_error(&x->srv->codec, &b, id, code, msg, NULL) >= 0)
		send_bytes(x, &b);
	ward__buf_release(&b);
}

static void notify(struct xconn *x, const char *method, json_t *params)
{
	struct ward__buf b;

	ward__buf_init(&b, (size_t)1 << 30);
	if (ward__rpc_encode_notification(&x->srv->codec, &b, method, params) >= 0)
		send_bytes(x, &b);
	ward__buf_release(&b);
	json_decref(params);
}

/* ------------------------------------------------------------ retention */

static struct chunk *ring_at(struct xproc *p, size_t i)
{
	return &p->ring[(p->ring_head + i) % p->ring_cap];
}

static void lru_remove(struct ward__xserver *s, struct xproc *p)
{
	if (!p->in_lru)
		return;
	if (p->lru_prev)
		p->lru_prev->lru_next = p->lru_next;
	else
		s->lru_head = p->lru_next;
	if (p->lru_next)
		p->lru_next->lru_prev = p->lru_prev;
	else
		s->lru_tail = p->lru_prev;
	p->lru_prev = p->lru_next = NULL;
	p->in_lru = false;
}

/* p has just retained output: it goes last in the order of eviction. */
static void lru_touch(struct ward__xserver *s, struct xproc *p)
{
	lru_remove(s, p);
	p->lru_prev = s->lru_tail;
	if (s->lru_tail)
		s->lru_tail->lru_next = p;
	else
		s->lru_head = p;
	s->lru_tail = p;
	p->in_lru = true;
}

static void ring_drop_oldest(struct xproc *p)
{
	struct chunk *c = ring_at(p, 0);

	p->sess->srv->retained_total -= c->len;
	p->retained_bytes -= c->len;
	free(c->data);
	c->data = NULL;
	p->ring_head = (p->ring_head + 1) % p->ring_cap;
	p->ring_len--;
}

/* Keeps a chunk, dropping the oldest beyond the byte and chunk limits. */
static int retain(struct xproc *p, uint64_t seq, uint8_t stream, const uint8_t *data, size_t len)
{
	struct ward__xserver *s = p->sess->srv;
	struct chunk *c;
	uint8_t *copy;

	size_t keep = MIN(s->cfg.retain_bytes, s->cfg.retain_total);

	if (len > keep) {
		/* Only the newest bytes of an oversized chunk can be kept. */
		data += len - keep;
		len = keep;
	}
	while (p->ring_len > 0 &&
	       (p->retained_bytes + len > s->cfg.retain_bytes ||
		p->ring_len >= s->cfg.retain_chunks))
		ring_drop_oldest(p);
	/* The server's budget: the least recent output anywhere goes first. */
	while (s->retained_total + len > s->cfg.retain_total && s->lru_head) {
		struct xproc *v = s->lru_head;

		if (v->ring_len > 0)
			ring_drop_oldest(v);
		if (v->ring_len == 0)
			lru_remove(s, v);
	}
	if (p->ring_len == p->ring_cap) {
		size_t ncap = p->ring_cap ? p->ring_cap * 2 : 16;
		struct chunk *n;

		ncap = MIN(ncap, (size_t)s->cfg.retain_chunks);
		n = calloc(ncap, sizeof(*n));
		if (!n)
			return -ENOMEM;
		for (size_t i = 0; i < p->ring_len; i++)
			n[i] = *ring_at(p, i);
		free(p->ring);
		p->ring = n;
		p->ring_cap = ncap;
		p->ring_head = 0;
	}
	copy = malloc(len ? len : 1);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, data, len);
	c = ring_at(p, p->ring_len);
	*c = (struct chunk){.seq = seq, .stream = stream, .len = (uint32_t)len, .data = copy};
	p->ring_len++;
	p->retained_bytes += len;
	s->retained_total += len;
	lru_touch(s, p);
	return 0;
}

/* ------------------------------------------------------------ reads */

static void xread_free(struct xread *r)
{
	struct xproc *p = r->proc;

	ward__loop_del_timer(p->sess->srv->loop, r->timer);
	for (struct xread **pp = &p->reads; *pp; pp = &(*pp)->next)
		if (*pp == r) {
			*pp = r->next;
			p->n_reads--;
			break;
		}
	ward__rpc_id_release(&r->id);
	free(r);
}

/*
 * The process/read result: the retained chunks after after_seq, within
 * max_bytes of decoded output (0: no limit) but at least one, never split.
 * nextSeq follows Codex's rule, which its client's reconnect recovery checks:
 * without a byte limit it is the process's next sequence number (exited and
 * closed count); with one, the seq after the last chunk returned (or the next
 * number when none was).
 */
static json_t *read_result(struct xproc *p, uint64_t after_seq, size_t max_bytes)
{
	json_t *chunks = json_array();
	uint64_t next = p->seq + 1;
	size_t bytes = 0;

	for (size_t i = 0; i < p->ring_len; i++) {
		struct chunk *c = ring_at(p, i);
		char *b64;

		if (c->seq <= after_seq)
			continue;
		if (max_bytes && json_array_size(chunks) > 0 && bytes + c->len > max_bytes)
			break;
		b64 = b64_encode(c->data, c->len, NULL);
		if (!b64)
			break;
		json_array_append_new(chunks,
				      json_pack("{s:I, s:s, s:s}", "seq", (json_int_t)c->seq,
						"stream", stream_name(c->stream), "chunk", b64));
		free(b64);
		bytes += c->len;
		if (max_bytes)
			next = c->seq + 1;
	}
	return json_pack("{s:o, s:I, s:b, s:o, s:b, s:o, s:b}", "chunks", chunks, "nextSeq",
			 (json_int_t)next, "exited", p->exited, "exitCode",
			 p->exited && p->exit_code >= 0 ? json_integer(p->exit_code) : json_null(),
			 "closed", p->closed, "failure",
			 p->failure ? json_string(p->failure) : json_null(), "sandboxDenied",
			 p->denied > 0);
}

/*
 * Whether a read after after_seq has something to return now (Codex's
 * exec_read): output after it, the process closed, or the exit known with
 * events the reader has not seen.
 */
static bool read_ready(struct xproc *p, uint64_t after_seq)
{
	for (size_t i = 0; i < p->ring_len; i++)
		if (ring_at(p, i)->seq > after_seq)
			return true;
	return p->closed || (p->exited && after_seq < p->seq);
}

/* Answers every waiting read that can be answered now. */
static void wake_reads(struct xproc *p)
{
	struct xread *r = p->reads, *next;

	for (; r; r = next) {
		next = r->next;
		if (read_ready(p, r->after_seq)) {
			reply(r->conn, &r->id, read_result(p, r->after_seq, r->max_bytes));
			xread_free(r);
		}
	}
}

static void on_read_timeout(struct ward__loop *l, void *userdata)
{
	struct xread *r = userdata;

	r->timer = 0;
	reply(r->conn, &r->id, read_result(r->proc, r->after_seq, r->max_bytes));
	xread_free(r);
}

/* ------------------------------------------------------------ processes */

static void proc_pause_all(struct xsession *se, bool pause)
{
	for (struct xproc *p = se->procs; p; p = p->next)
		if (p->proc && p->paused != pause) {
			p->paused = pause;
			ward__proc_pause_output(p->proc, pause);
		}
}

/* The hand-built process/output notification (hot path: no JSON tree per chunk). */
static void notify_output(struct xproc *p, uint64_t seq, uint8_t stream, const uint8_t *data,
			  size_t len)
{
	struct xconn *x = p->sess->conn;
	struct ward__buf *b = &p->sess->srv->notify_buf;
	size_t b64_len = ward__base64_encoded_len(len);
	int r;

	if (!x || !x->initialized)
		return;
	ward__buf_clear(b);
	r = ward__buf_reserve(b, b64_len + strlen(p->id_json) + 160);
	if (r >= 0)
		r = ward__buf_printf(b,
				     "{\"method\":\"process/output\",\"params\":{\"processId\":%s,"
				     "\"seq\":%" PRIu64 ",\"stream\":\"%s\",\"chunk\":\"",
				     p->id_json, seq, stream_name(stream));
	if (r >= 0) {
		b->len += ward__base64_encode(data, len, (char *)b->data + b->len);
		b->data[b->len] = '\0';
		r = ward__buf_append_str(b, "\"}}");
	}
	if (r >= 0)
		send_bytes(x, b);
	/* A single huge chunk is not worth keeping around. */
	if (b->alloc > ((size_t)4 << 20))
		ward__buf_release(b);
	else
		ward__buf_clear(b);
	if (ward__conn_congested(x->c))
		proc_pause_all(p->sess, true);
}

static void on_proc_output(struct ward__proc *pr, enum ward__proc_stream stream,
			   const uint8_t *data, size_t len, void *userdata)
{
	struct xproc *p = userdata;
	uint64_t seq = ++p->seq;

	retain(p, seq, (uint8_t)stream, data, len);
	notify_output(p, seq, (uint8_t)stream, data, len);
	wake_reads(p);
}

static json_t *denials_json(const struct ward__proc *pr)
{
	const struct ward__sandbox *sb = ward__proc_sandbox(pr);
	json_t *a;

	if (ward__proc_denied(pr) < 0)
		return json_string("unavailable");
	a = json_array();
	for (size_t i = 0; a && i < sb->n_denials; i++) {
		const struct ward__denial *d = &sb->denials[i];
		const char *en = d->error > 0 ? strerrorname_np(d->error) : NULL;

		json_array_append_new(
			a,
			json_pack("{s:s, s:o, s:o, s:o}", "access", d->access, "syscall",
				  d->syscall[0] ? json_string(d->syscall) : json_null(), "error",
				  en ? json_string(en) : json_null(), "target",
				  ward__json_string_lossy(d->target, strlen(d->target))));
	}
	return a;
}

static void on_proc_exited(struct ward__proc *pr, void *userdata)
{
	struct xproc *p = userdata;
	const struct ward_error *e = ward__proc_error(pr);
	struct xconn *x = p->sess->conn;

	p->exited = true;
	p->exit_code = ward__proc_exit_code(pr);
	p->denied = ward__proc_denied(pr);
	if (e && e->message[0] && !p->failure)
		p->failure = strdup(e->message);
	if (x && x->initialized) {
		json_t *params =
			json_pack("{s:s, s:I, s:i, s:b, s:o}", "processId", p->id, "seq",
				  (json_int_t)++p->seq, "exitCode", p->exit_code, "sandboxDenied",
				  p->denied > 0, "denials", denials_json(pr));

		if (ward__proc_timed_out(pr))
			json_object_set_new(params, "timedOut", json_true());
		if (p->failure)
			json_object_set_new(params, "failure", json_string(p->failure));
		notify(x, "process/exited", params);
	} else {
		++p->seq;
	}
	wake_reads(p);
}

static void xproc_free(struct xproc *p);

static void on_remove(struct ward__loop *l, void *userdata)
{
	struct xproc *p = userdata;

	p->remove_timer = 0;
	xproc_free(p);
}

static void on_proc_closed(struct ward__proc *pr, void *userdata)
{
	struct xproc *p = userdata;
	struct xconn *x = p->sess->conn;
	struct ward__xserver *s = p->sess->srv;

	p->closed = true;
	if (x && x->initialized)
		notify(x, "process/closed",
		       json_pack("{s:s, s:I}", "processId", p->id, "seq", (json_int_t)++p->seq));
	else
		++p->seq;
	wake_reads(p);
	/* Exited processes stay readable for a while, then go (Codex: 30 s). */
	ward__loop_add_timer(s->loop, ward__now_ns() + (uint64_t)s->cfg.exited_ttl_ms * 1000000,
			     on_remove, p, &p->remove_timer);
}

static const struct ward__proc_ops xproc_ops = {
	.output = on_proc_output,
	.exited = on_proc_exited,
	.closed = on_proc_closed,
};

static void xproc_free(struct xproc *p)
{
	struct xsession *se = p->sess;

	while (p->reads) {
		struct xread *r = p->reads;

		/* A read waiting on a process that goes answers with what is known. */
		reply(r->conn, &r->id, read_result(p, r->after_seq, r->max_bytes));
		xread_free(r);
	}
	if (p->prev)
		p->prev->next = p->next;
	else if (se->procs == p)
		se->procs = p->next;
	if (p->next)
		p->next->prev = p->prev;
	se->n_procs--;
	se->srv->n_procs--;
	ward__loop_del_timer(se->srv->loop, p->remove_timer);
	ward__proc_free(p->proc);
	ward_policy_free(p->policy);
	while (p->ring_len > 0)
		ring_drop_oldest(p);
	lru_remove(se->srv, p);
	free(p->ring);
	for (size_t i = 0; i < p->n_write_ids; i++)
		free(p->write_ids[i]);
	free(p->write_ids);
	free(p->failure);
	free(p->id_json);
	free(p->id);
	free(p);
}

static struct xproc *find_proc(struct xsession *se, const char *id)
{
	for (struct xproc *p = se->procs; p; p = p->next)
		if (strcmp(p->id, id) == 0)
			return p;
	return NULL;
}

/* ------------------------------------------------------------ sessions */

static void session_free(struct xsession *se)
{
	struct ward__xserver *s = se->srv;

	while (se->procs)
		xproc_free(se->procs);
	ward__proc_pool_free(se->pool);
	ward__loop_del_timer(s->loop, se->ttl_timer);
	if (se->conn)
		se->conn->sess = NULL;
	if (se->prev)
		se->prev->next = se->next;
	else if (s->sessions == se)
		s->sessions = se->next;
	if (se->next)
		se->next->prev = se->prev;
	s->n_sessions--;
	free(se);
}

static void on_session_ttl(struct ward__loop *l, void *userdata)
{
	struct xsession *se = userdata;

	se->ttl_timer = 0;
	/* Nobody resumed it: everything of the session dies. */
	session_free(se);
}

static void session_detach(struct xsession *se)
{
	struct ward__xserver *s = se->srv;
	struct xsession *oldest = NULL;
	size_t detached = 0;

	se->conn = NULL;
	se->detached_at = ward__now_ns();
	/*
	 * A client that connects, starts processes and goes, again and again,
	 * would leave sessions (and their processes and output) without end for
	 * the TTL: at most --max-connections wait to be resumed, the one
	 * detached longest is killed for the newest.
	 */
	for (struct xsession *o = s->sessions; o; o = o->next)
		if (!o->conn && o != se) {
			detached++;
			if (!oldest || o->detached_at < oldest->detached_at)
				oldest = o;
		}
	if (oldest && detached >= s->cfg.max_connections)
		session_free(oldest);
	/*
	 * What was prepared for this connection goes with it: a prepared sandbox
	 * is never handed to another connection, even one resuming the session.
	 */
	ward__proc_pool_flush(se->pool);
	/* Nobody reads now: retention keeps the newest output, processes are never blocked. */
	proc_pause_all(se, false);
	ward__loop_add_timer(s->loop, ward__now_ns() + (uint64_t)s->cfg.detached_ttl_ms * 1000000,
			     on_session_ttl, se, &se->ttl_timer);
}

static struct xsession *find_session(struct ward__xserver *s, const char *id)
{
	for (struct xsession *se = s->sessions; se; se = se->next)
		if (strcmp(se->id, id) == 0)
			return se;
	return NULL;
}

/* ------------------------------------------------------------ environment */

static const char *server_shell(void)
{
	const char *sh = getenv("SHELL");

	if (sh && sh[0] == '/' && access(sh, X_OK) == 0)
		return sh;
	return access("/bin/bash", X_OK) == 0 ? "/bin/bash" : "/bin/sh";
}

/*
 * environment/info, in Codex's shape (its client reads these names). The
 * capabilities say what a client may send: ward has no network proxy, no
 * environment config files and no capability discovery; it has sandboxed
 * file streaming and block writes (fs/open).
 */
static json_t *environment_info(struct ward__xserver *s)
{
	const char *shell = server_shell();
	const char *base = strrchr(shell, '/');
	const char *tmp = getenv("TMPDIR"), *home = getenv("HOME");
	_cleanup_free_ char *cwd_uri = ward__path_to_file_uri(s->cwd);
	_cleanup_free_ char *home_uri = ward__path_to_file_uri(home && home[0] == '/' ? home : "/");
	_cleanup_free_ char *tmp_uri = ward__path_to_file_uri("/tmp");
	_cleanup_free_ char *tmpdir_uri = tmp && tmp[0] == '/' ? ward__path_to_file_uri(tmp) : NULL;
	json_t *tmps = json_array();

	if (tmpdir_uri)
		json_array_append_new(tmps, json_string(tmpdir_uri));
	return json_pack(
		"{s:{s:s, s:s}, s:s, s:s, s:s, s:s, s:o, s:s, s:{s:b, s:b, s:b, s:b, s:b, s:b, s:b, "
		"s:b, s:b, s:b, s:b, s:b, s:b}, s:{s:s, s:b, s:b}}",
		"shell", "name", base ? base + 1 : shell, "path", shell, "executorVersion",
		WARD_VERSION, "cwd", cwd_uri ? cwd_uri : "file:///", "userHomeDir",
		home_uri ? home_uri : "file:///", "platformOs", "linux", "temporaryDirectories",
		tmps, "tempDir", tmpdir_uri ? tmpdir_uri : (tmp_uri ? tmp_uri : "file:///tmp"),
		"capabilities", "networkProxyLaunch", 0, "networkProxyReviewDomains", 0,
		"credentialMasking", 0, "credentialMaskingCustomProviders", 0,
		"capabilityDiscoverySandbox", 0, "fsWatchMissing", 0, "capabilityDiscoveryV2", 0,
		"environmentConfigRead", 0, "httpHeaderEnvVars", 0, "sandboxedFileStreaming", 1,
		"fileWriteStreaming", 1, "shellSnapshotV2", 0, "windowsMxc", 0, "ward", "version",
		WARD_VERSION, "exactDenials", 1, "allowUnsandboxed", s->cfg.allow_unsandboxed);
}

/* ------------------------------------------------------------ process/start */

/* argv from a JSON array of strings, bounded. */
static int parse_argv(json_t *v, char ***ret, char *why, size_t size)
{
	size_t n = json_array_size(v), bytes = 0, i;
	char **argv;
	json_t *e;

	if (!json_is_array(v) || n == 0) {
		snprintf(why, size, "argv must be a non-empty array of strings");
		return -1;
	}
	if (n > 65536) {
		snprintf(why, size, "argv has more than 65536 arguments");
		return -1;
	}
	argv = calloc(n + 1, sizeof(*argv));
	if (!argv) {
		snprintf(why, size, "out of memory");
		return -1;
	}
	json_array_foreach(v, i, e)
	{
		if (!json_is_string(e) || strlen(json_string_value(e)) != json_string_length(e) ||
		    (bytes += json_string_length(e) + 1) > WARD_XS_MAX_ARGV) {
			snprintf(why, size,
				 "argv[%zu] must be a string without NUL (argv at most %zu bytes)",
				 i, WARD_XS_MAX_ARGV);
			strv_freep(&argv);
			return -1;
		}
		argv[i] = strdup(json_string_value(e));
		if (!argv[i]) {
			snprintf(why, size, "out of memory");
			strv_freep(&argv);
			return -1;
		}
	}
	*ret = argv;
	return 0;
}

/* "NAME=VALUE" entries from a JSON object, appended to a vector. */
static int append_env(json_t *obj, char ***envp, size_t *n, char *why, size_t size)
{
	const char *k;
	json_t *v;
	size_t bytes = 0;

	json_object_foreach(obj, k, v)
	{
		char *kv, **nv;
		size_t i;

		if (!json_is_string(v) || !k[0] || strchr(k, '=') ||
		    strlen(json_string_value(v)) != json_string_length(v)) {
			snprintf(why, size,
				 "env: \"%.64s\" must be a name without '=' and a string "
				 "value without NUL",
				 k);
			return -1;
		}
		bytes += strlen(k) + json_string_length(v) + 2;
		if (*n >= WARD_ENV_MAX_VARS || bytes > WARD_ENV_MAX_BYTES) {
			snprintf(why, size, "env: more than %d variables or %zu bytes",
				 WARD_ENV_MAX_VARS, WARD_ENV_MAX_BYTES);
			return -1;
		}
		if (asprintf(&kv, "%s=%s", k, json_string_value(v)) < 0)
			return -1;
		/* A later value for the same name replaces the earlier one. */
		for (i = 0; i < *n; i++)
			if (strncmp((*envp)[i], kv, strlen(k) + 1) == 0)
				break;
		if (i < *n) {
			free((*envp)[i]);
			(*envp)[i] = kv;
			continue;
		}
		nv = reallocarray(*envp, *n + 2, sizeof(char *));
		if (!nv) {
			free(kv);
			return -1;
		}
		*envp = nv;
		nv[(*n)++] = kv;
		nv[*n] = NULL;
	}
	return 0;
}

static int strv_len(char **v)
{
	int n = 0;

	for (; v && v[n]; n++)
		;
	return n;
}

/*
 * The command's environment: exactly `env` (as Codex), or with envPolicy the
 * server's own environment filtered by it (inherit, excludes, includeOnly,
 * set) and then `env` on top.
 */
static int build_env(struct ward__xserver *s, json_t *params, const struct ward_policy *pol,
		     char ***ret, char *why, size_t size)
{
	json_t *env = json_object_get(params, "env"), *ep = json_object_get(params, "envPolicy");
	char **envp = NULL;
	size_t n = 0;

	if (env && !json_is_null(env) && !json_is_object(env)) {
		snprintf(why, size, "env must be an object of strings");
		return -1;
	}
	if (ep && !json_is_null(ep)) {
		struct ward_run_options *o = NULL;
		const char *inherit = json_string_value(json_object_get(ep, "inherit"));
		json_t *v;
		size_t i;
		int r = ward_run_options_new(&o);

		if (!json_is_object(ep) || r < 0) {
			ward_run_options_free(o);
			snprintf(why, size, "envPolicy must be an object");
			return -1;
		}
		if (!inherit || strcmp(inherit, "all") == 0)
			o->env_inherit = WARD_ENV_INHERIT_ALL;
		else if (strcmp(inherit, "core") == 0)
			o->env_inherit = WARD_ENV_INHERIT_CORE;
		else if (strcmp(inherit, "none") == 0)
			o->env_inherit = WARD_ENV_INHERIT_NONE;
		else
			r = -EINVAL;
		o->env_default_excludes =
			!json_is_true(json_object_get(ep, "ignoreDefaultExcludes"));
		json_array_foreach(json_object_get(ep, "exclude"), i, v) if (r >= 0) r =
			json_is_string(v) ? ward_run_options_env_exclude(o, json_string_value(v))
					  : -EINVAL;
		json_array_foreach(json_object_get(ep, "includeOnly"), i, v) if (r >= 0) r =
			json_is_string(v)
			? ward_run_options_env_include_only(o, json_string_value(v))
			: -EINVAL;
		{
			const char *k;

			json_object_foreach(json_object_get(ep, "set"), k, v) if (r >= 0) r =
				json_is_string(v)
				? ward_run_options_env_set(o, k, json_string_value(v))
				: -EINVAL;
		}
		if (r >= 0)
			r = ward__exec_env_build(o, pol, &envp);
		ward_run_options_free(o);
		if (r < 0) {
			snprintf(why, size, "envPolicy is invalid or too large: %s", strerror(-r));
			return -1;
		}
		n = (size_t)strv_len(envp);
	} else {
		envp = calloc(1, sizeof(char *));
		if (!envp)
			return -1;
	}
	if (env && json_is_object(env) && append_env(env, &envp, &n, why, size) < 0) {
		strv_freep(&envp);
		return -1;
	}
	*ret = envp;
	return 0;
}

/*
 * The process's policy: the server's (its workspace stays the server's: the
 * process's cwd is only where it starts), or the request's own (a sandbox
 * object or wardPolicy), whose workspace is the sandbox's cwd, else the
 * process's (as Codex).
 */
static int build_policy(struct ward__xserver *s, json_t *params, const char *cwd,
			struct ward_policy **ret, bool *ret_sandboxed, struct ward_error *e)
{
	return ward__xs_build_policy(s->policy, s->cfg.allow_unsandboxed, params, cwd, ret,
				     ret_sandboxed, e);
}

static char *json_quote(const char *s)
{
	json_t *j = json_string(s);
	char *out = j ? json_dumps(j, JSON_ENCODE_ANY) : NULL;

	json_decref(j);
	return out;
}

static void handle_start(struct xconn *x, const struct ward__rpc_msg *m)
{
	static const char *const keys[] = {"processId",
					   "argv",
					   "cwd",
					   "env",
					   "envPolicy",
					   "tty",
					   "pipeStdin",
					   "arg0",
					   "sandbox",
					   "enforceManagedNetwork",
					   "managedNetwork",
					   "networkProxy",
					   "timeoutMs",
					   "wardPolicy",
					   "rows",
					   "cols",
					   NULL};
	struct ward__xserver *s = x->srv;
	struct xsession *se = x->sess;
	json_t *params = m->params;
	const char *pid = NULL, *cwd_s = NULL, *arg0 = NULL;
	_cleanup_free_ char *cwd = NULL;
	_cleanup_strv_free_ char **argv = NULL, **envp = NULL;
	_cleanup_free_ char *exec_path = NULL;
	struct ward__proc_spec spec = {0};
	struct stat st = {0};
	struct ward_error e = {0};
	struct xproc *p;
	int64_t timeout = 0, rows = 0, cols = 0;
	bool tty = false, pipe_stdin = false, managed = false;
	char why[256];
	int r;

	if (!params || !json_is_object(params)) {
		reply_error(x, &m->id, WARD_RPC_INVALID_PARAMS, "process/start needs params");
		return;
	}
	if (!ward__check_keys(params, keys, why, sizeof(why)) ||
	    ward__arg_str(params, "processId", &pid, NULL, why, sizeof(why)) < 0 ||
	    ward__arg_str(params, "cwd", &cwd_s, NULL, why, sizeof(why)) < 0 ||
	    ward__arg_str(params, "arg0", &arg0, NULL, why, sizeof(why)) < 0 ||
	    ward__arg_bool(params, "tty", &tty, why, sizeof(why)) < 0 ||
	    ward__arg_bool(params, "pipeStdin", &pipe_stdin, why, sizeof(why)) < 0 ||
	    ward__arg_bool(params, "enforceManagedNetwork", &managed, why, sizeof(why)) < 0 ||
	    ward__arg_int(params, "timeoutMs", 1, INT64_C(1000000000000), &timeout, why,
			  sizeof(why)) < 0 ||
	    ward__arg_int(params, "rows", 1, 65535, &rows, why, sizeof(why)) < 0 ||
	    ward__arg_int(params, "cols", 1, 65535, &cols, why, sizeof(why)) < 0) {
		reply_error(x, &m->id, WARD_RPC_INVALID_PARAMS, "%s", why);
		return;
	}
	if (!pid || !pid[0] || strlen(pid) > WARD_XS_MAX_PROCESS_ID) {
		reply_error(x, &m->id, WARD_RPC_INVALID_PARAMS,
			    "processId must be a non-empty string of at most %u bytes",
			    WARD_XS_MAX_PROCESS_ID);
		return;
	}
	if (parse_argv(json_object_get(params, "argv"), &argv, why, sizeof(why)) < 0) {
		reply_error(x, &m->id, WARD_RPC_INVALID_PARAMS, "%s", why);
		return;
	}
	if (cwd_s && ward__path_or_file_uri(cwd_s, &cwd) < 0) {
		reply_error(x, &m->id, WARD_RPC_INVALID_PARAMS,
			    "cwd must be an absolute file: URI, got \"%.200s\"", cwd_s);
		return;
	}
	if (!cwd) {
		cwd = strdup(s->cwd);
		if (!cwd) {
			reply_error(x, &m->id, WARD_RPC_INTERNAL_ERROR, "out of memory");
			return;
		}
	}
	/* As Codex: a cwd that is not a directory fails the start (an internal error there). */
	if (stat(cwd, &st) < 0 || !S_ISDIR(st.st_mode)) {
		int why_errno = stat(cwd, &st) < 0 ? errno : ENOTDIR;

		reply_error(x, &m->id, WARD_RPC_INTERNAL_ERROR, "cwd %s: %s", cwd,
			    strerror(why_errno));
		return;
	}
	if (managed ||
	    (json_object_get(params, "managedNetwork") &&
	     !json_is_null(json_object_get(params, "managedNetwork")))) {
		/* Never pretend: the network would be whatever the policy says, not a proxy's. */
		reply_error(
			x, &m->id, WARD_RPC_INVALID_PARAMS,
			"managed network (a proxy with a domain policy) is not supported by ward: "
			"use network restricted or enabled");
		return;
	}
	if (find_proc(se, pid)) {
		reply_error(x, &m->id, WARD_RPC_INVALID_REQUEST, "process %s already exists", pid);
		return;
	}
	if (se->n_procs >= s->cfg.max_processes) {
		reply_error(x, &m->id, WARD_RPC_INVALID_REQUEST,
			    "too many processes in this session (%zu): terminate some first",
			    s->cfg.max_processes);
		return;
	}
	p = calloc(1, sizeof(*p));
	if (!p) {
		reply_error(x, &m->id, WARD_RPC_INTERNAL_ERROR, "out of memory");
		return;
	}
	p->sess = se;
	p->tty = tty;
	p->pipe_stdin = pipe_stdin && !tty;
	p->exit_code = -1;
	p->id = strdup(pid);
	p->id_json = json_quote(pid);
	if (!p->id || !p->id_json) {
		reply_error(x, &m->id, WARD_RPC_INTERNAL_ERROR, "out of memory");
		goto fail;
	}
	r = build_policy(s, params, cwd, &p->policy, &p->sandboxed, &e);
	if (r < 0) {
		reply_error(x, &m->id,
			    r == -ENOMEM ? WARD_RPC_INTERNAL_ERROR : WARD_RPC_INVALID_PARAMS, "%s",
			    e.message);
		goto fail;
	}
	if (build_env(s, params, p->policy, &envp, why, sizeof(why)) < 0) {
		reply_error(x, &m->id, WARD_RPC_INVALID_PARAMS, "%s", why);
		goto fail;
	}
	if (arg0 && arg0[0]) {
		/* The program is argv[0] (looked up in PATH); the process sees arg0 as its name. */
		exec_path = argv[0];
		argv[0] = strdup(arg0);
		if (!argv[0]) {
			argv[0] = exec_path;
			exec_path = NULL;
			reply_error(x, &m->id, WARD_RPC_INTERNAL_ERROR, "out of memory");
			goto fail;
		}
		spec.exec_path = exec_path;
	}
	spec.policy = p->policy;
	spec.argv = argv;
	spec.cwd = cwd;
	spec.envp = envp;
	spec.tty = tty;
	spec.rows = (unsigned short)rows;
	spec.cols = (unsigned short)cols;
	spec.stdin_pipe = p->pipe_stdin;
	spec.timeout_ms = (uint64_t)timeout;
	spec.pool = se->pool;
	/* Linked before the start: callbacks may come as soon as the loop runs. */
	p->next = se->procs;
	if (se->procs)
		se->procs->prev = p;
	se->procs = p;
	se->n_procs++;
	s->n_procs++;
	r = ward__proc_start(s->loop, &spec, &xproc_ops, p, &p->proc, &e);
	if (r < 0) {
		reply_error(x, &m->id, WARD_RPC_INTERNAL_ERROR, "cannot start '%s': %s", argv[0],
			    e.message);
		xproc_free(p);
		return;
	}
	if (x->c && ward__conn_congested(x->c)) {
		p->paused = true;
		ward__proc_pause_output(p->proc, true);
	}
	reply(x, &m->id,
	      json_pack("{s:s, s:s}", "processId", pid, "sandboxType",
			p->sandboxed ? "linuxSeccomp" : "none"));
	return;
fail:
	ward_policy_free(p->policy);
	free(p->id);
	free(p->id_json);
	free(p);
}

/* ------------------------------------------------------------ process methods */

/* The process named by params.processId, or an error answered. */
static struct xproc *param_proc(struct xconn *x, const struct ward__rpc_msg *m, bool answer)
{
	const char *pid =
		json_string_value(m->params ? json_object_get(m->params, "processId") : NULL);
	struct xproc *p;

	if (!pid) {
		reply_error(x, &m->id, WARD_RPC_INVALID_PARAMS, "processId must be a string");
		return NULL;
	}
	p = find_proc(x->sess, pid);
	if (!p && answer)
		reply_error(x, &m->id, WARD_RPC_INVALID_REQUEST, "unknown process id %s", pid);
	return p;
}

static void handle_read(struct xconn *x, const struct ward__rpc_msg *m)
{
	int64_t after = 0, max_bytes = 0, wait_ms = 0;
	struct xproc *p;
	struct xread *r;
	char why[160];

	if (!m->params ||
	    ward__arg_int(m->params, "afterSeq", 0, INT64_MAX, &after, why, sizeof(why)) < 0 ||
	    ward__arg_int(m->params, "maxBytes", 0, INT64_MAX, &max_bytes, why, sizeof(why)) < 0 ||
	    ward__arg_int(m->params, "waitMs", 0, INT64_MAX, &wait_ms, why, sizeof(why)) < 0) {
		reply_error(x, &m->id, WARD_RPC_INVALID_PARAMS, "%s",
			    m->params ? why : "invalid type: null, expected struct ReadParams");
		return;
	}
	p = param_proc(x, m, true);
	if (!p)
		return;
	/* Bounded: no long-poll longer than 5 minutes, and a few waiting reads per process. */
	wait_ms = MIN(wait_ms, (int64_t)WARD_XS_MAX_READ_WAIT_MS);
	if (read_ready(p, (uint64_t)after) || wait_ms == 0 || p->n_reads >= 64) {
		reply(x, &m->id, read_result(p, (uint64_t)after, (size_t)max_bytes));
		return;
	}
	r = calloc(1, sizeof(*r));
	if (!r || ward__rpc_id_dup(&r->id, &m->id) < 0) {
		free(r);
		reply_error(x, &m->id, WARD_RPC_INTERNAL_ERROR, "out of memory");
		return;
	}
	r->proc = p;
	r->conn = x;
	r->after_seq = (uint64_t)after;
	r->max_bytes = (size_t)max_bytes;
	r->next = p->reads;
	p->reads = r;
	p->n_reads++;
	ward__loop_add_timer(x->srv->loop, ward__now_ns() + (uint64_t)wait_ms * 1000000,
			     on_read_timeout, r, &r->timer);
}

/* Whether this writeId was accepted before (the last WARD_XS_WRITE_IDS are remembered). */
static bool seen_write_id(struct xproc *p, const char *wid)
{
	for (size_t i = 0; i < p->n_write_ids; i++)
		if (strcmp(p->write_ids[i], wid) == 0)
			return true;
	return false;
}

static void remember_write_id(struct xproc *p, const char *wid)
{
	char *copy = strdup(wid);

	if (!copy)
		return;
	if (!p->write_ids) {
		p->write_ids = calloc(WARD_XS_WRITE_IDS, sizeof(char *));
		if (!p->write_ids) {
			free(copy);
			return;
		}
	}
	if (p->n_write_ids < WARD_XS_WRITE_IDS) {
		p->write_ids[p->n_write_ids++] = copy;
		return;
	}
	/* Full: the oldest goes. */
	free(p->write_ids[p->write_pos]);
	p->write_ids[p->write_pos] = copy;
	p->write_pos = (p->write_pos + 1) % WARD_XS_WRITE_IDS;
}

static void handle_write(struct xconn *x, const struct ward__rpc_msg *m)
{
	const char *chunk = NULL, *wid = NULL;
	size_t chunk_len = 0, len = 0;
	_cleanup_free_ uint8_t *data = NULL;
	bool close_stdin = false;
	struct xproc *p;
	char why[160];
	int r;

	if (!m->params ||
	    ward__arg_str(m->params, "chunk", &chunk, &chunk_len, why, sizeof(why)) < 0 ||
	    ward__arg_str(m->params, "writeId", &wid, NULL, why, sizeof(why)) < 0 ||
	    ward__arg_bool(m->params, "closeStdin", &close_stdin, why, sizeof(why)) < 0) {
		reply_error(x, &m->id, WARD_RPC_INVALID_PARAMS, "%s",
			    m->params ? why : "invalid type: null, expected struct WriteParams");
		return;
	}
	if (!json_is_string(json_object_get(m->params, "processId"))) {
		reply_error(x, &m->id, WARD_RPC_INVALID_PARAMS, "missing field `processId`");
		return;
	}
	if (!chunk) {
		reply_error(x, &m->id, WARD_RPC_INVALID_PARAMS, "missing field `chunk`");
		return;
	}
	if (!wid) {
		reply_error(x, &m->id, WARD_RPC_INVALID_PARAMS, "missing field `writeId`");
		return;
	}
	if (!wid[0] || strlen(wid) > 256) {
		reply_error(x, &m->id, WARD_RPC_INVALID_PARAMS,
			    "writeId must not be empty (nor longer than 256 bytes)");
		return;
	}
	if (b64_decode(chunk, chunk_len, &data, &len) < 0) {
		reply_error(x, &m->id, WARD_RPC_INVALID_PARAMS, "chunk must be standard base64");
		return;
	}
	p = param_proc(x, m, false);
	if (!p) {
		reply(x, &m->id, json_pack("{s:s}", "status", "unknownProcess"));
		return;
	}
	/* A retried write (same writeId) is answered again and not written twice (as Codex). */
	if (seen_write_id(p, wid)) {
		reply(x, &m->id, json_pack("{s:s}", "status", "accepted"));
		return;
	}
	if (!p->tty && !p->pipe_stdin) {
		reply(x, &m->id, json_pack("{s:s}", "status", "stdinClosed"));
		return;
	}
	r = p->proc && !p->exited ? ward__proc_write(p->proc, data, len) : -EPIPE;
	if (r == -ENOBUFS) {
		/* Not remembered: the same writeId may be retried once the process reads. */
		reply_error(x, &m->id, WARD_RPC_INTERNAL_ERROR,
			    "failed to write to process stdin: %zu bytes wait unread already",
			    WARD_PROC_STDIN_QUEUE_MAX);
		return;
	}
	if (r < 0) {
		reply_error(x, &m->id, WARD_RPC_INTERNAL_ERROR, "failed to write to process stdin");
		return;
	}
	if (close_stdin)
		ward__proc_close_stdin(p->proc);
	remember_write_id(p, wid);
	reply(x, &m->id, json_pack("{s:s}", "status", "accepted"));
}

static const struct {
	const char *name;
	int sig;
} signal_names[] = {
	{"interrupt", SIGINT}, {"terminate", SIGTERM}, {"kill", SIGKILL},    {"hangup", SIGHUP},
	{"quit", SIGQUIT},     {"SIGINT", SIGINT},     {"SIGTERM", SIGTERM}, {"SIGKILL", SIGKILL},
	{"SIGHUP", SIGHUP},    {"SIGQUIT", SIGQUIT},
};

static void handle_signal(struct xconn *x, const struct ward__rpc_msg *m)
{
	const char *name =
		json_string_value(m->params ? json_object_get(m->params, "signal") : NULL);
	struct xproc *p;
	int sig = 0;

	if (!m->params || !json_is_string(json_object_get(m->params, "processId"))) {
		reply_error(x, &m->id, WARD_RPC_INVALID_PARAMS, "missing field `processId`");
		return;
	}
	for (size_t i = 0; name && i < ELEMENTSOF(signal_names); i++)
		if (strcmp(name, signal_names[i].name) == 0)
			sig = signal_names[i].sig;
	if (!sig) {
		reply_error(
			x, &m->id, WARD_RPC_INVALID_PARAMS,
			"unknown signal, expected `interrupt` (ward also takes terminate, kill, "
			"hangup, quit)");
		return;
	}
	/* An unknown or finished process: nothing to signal, and no error (as Codex). */
	p = param_proc(x, m, false);
	if (p && p->proc && !p->exited) {
		if (sig == SIGKILL)
			ward__proc_terminate(p->proc);
		else
			ward__proc_signal(p->proc, sig);
	}
	reply(x, &m->id, json_object());
}

static void handle_terminate(struct xconn *x, const struct ward__rpc_msg *m)
{
	struct xproc *p = param_proc(x, m, false);
	bool running;

	if (!p) {
		if (json_is_string(json_object_get(m->params, "processId")))
			reply(x, &m->id, json_pack("{s:b}", "running", 0));
		return;
	}
	running = p->proc && !p->exited;
	if (running)
		ward__proc_terminate(p->proc);
	reply(x, &m->id, json_pack("{s:b}", "running", running));
}

/* ------------------------------------------------------------ lifecycle */

static void handle_initialize(struct xconn *x, const struct ward__rpc_msg *m)
{
	struct ward__xserver *s = x->srv;
	const char *resume = NULL, *client = NULL;
	struct xsession *se;
	char why[160];
	json_t *res;

	if (!m->params ||
	    ward__arg_str(m->params, "clientName", &client, NULL, why, sizeof(why)) < 0 ||
	    ward__arg_str(m->params, "resumeSessionId", &resume, NULL, why, sizeof(why)) < 0) {
		reply_error(x, &m->id, WARD_RPC_INVALID_PARAMS, "%s",
			    m->params ? why
				      : "invalid type: null, expected struct InitializeParams");
		return;
	}
	if (!client) {
		reply_error(x, &m->id, WARD_RPC_INVALID_PARAMS, "missing field `clientName`");
		return;
	}
	/* As Codex: one successful initialize per connection (a failed one may be retried). */
	if (x->initialize_answered) {
		reply_error(x, &m->id, WARD_RPC_INVALID_REQUEST,
			    "initialize may only be sent once per connection");
		return;
	}
	if (resume) {
		se = find_session(s, resume);
		if (!se) {
			reply_error(x, &m->id, WARD_RPC_INVALID_REQUEST, "unknown session id %.64s",
				    resume);
			return;
		}
		if (se->conn) {
			reply_error(x, &m->id, XS_SESSION_ATTACHED,
				    "session %s is already attached to another connection", se->id);
			return;
		}
		ward__loop_del_timer(s->loop, se->ttl_timer);
		se->ttl_timer = 0;
		se->detached_at = 0;
	} else {
		se = calloc(1, sizeof(*se));
		if (!se) {
			reply_error(x, &m->id, WARD_RPC_INTERNAL_ERROR, "out of memory");
			return;
		}
		se->srv = s;
		if (ward__proc_pool_new(s->loop, &se->pool) < 0) {
			free(se);
			reply_error(x, &m->id, WARD_RPC_INTERNAL_ERROR, "out of memory");
			return;
		}
		uuid_v4(se->id);
		se->next = s->sessions;
		if (s->sessions)
			s->sessions->prev = se;
		s->sessions = se;
		s->n_sessions++;
	}
	se->conn = x;
	x->sess = se;
	x->initialize_answered = true;
	res = json_pack("{s:s, s:o}", "sessionId", se->id, "environmentInfo", environment_info(s));
	reply(x, &m->id, res);
}

static void on_fs_reply(void *reply_ctx, json_t *result, int code, const char *message)
{
	struct xfsop *op = reply_ctx;
	struct xconn *x = op->conn;

	if (x) {
		for (struct xfsop **pp = &x->fsops; *pp; pp = &(*pp)->next)
			if (*pp == op) {
				*pp = op->next;
				break;
			}
		if (result) {
			reply(x, &op->id, result);
		} else {
			/* Whole: a message quotes a path (up to PATH_MAX), as Codex's does. */
			struct ward__buf b;

			ward__buf_init(&b, 64 * 1024);
			if (ward__rpc_encode_error(&x->srv->codec, &b, &op->id, code,
						   message ? message : "failed", NULL) >= 0)
				send_bytes(x, &b);
			ward__buf_release(&b);
		}
	} else {
		json_decref(result);
	}
	ward__rpc_id_release(&op->id);
	free(op);
}

static void handle_fs(struct xconn *x, const struct ward__rpc_msg *m)
{
	struct ward__xfs_context ctx = {
		.policy = x->srv->policy,
		.cwd = x->srv->cwd,
		.allow_unsandboxed = x->srv->cfg.allow_unsandboxed,
	};
	struct xfsop *op = calloc(1, sizeof(*op));

	if (!op || ward__rpc_id_dup(&op->id, &m->id) < 0) {
		free(op);
		reply_error(x, &m->id, WARD_RPC_INTERNAL_ERROR, "out of memory");
		return;
	}
	op->conn = x;
	op->next = x->fsops;
	x->fsops = op;
	ward__xfs_handle(x->srv->loop, x->fs, &ctx, m->method, m->params, on_fs_reply, op);
}

/* The family word of Codex's gating errors, or NULL for a method ward does not serve. */
static const char *method_family(const char *meth)
{
	static const char *const exec_methods[] = {"process/start", "process/read", "process/write",
						   "process/signal", "process/terminate"};

	for (size_t i = 0; i < ELEMENTSOF(exec_methods); i++)
		if (strcmp(meth, exec_methods[i]) == 0)
			return "exec";
	if (ward__xfs_is_method(meth))
		return "filesystem";
	if (strcmp(meth, "environment/info") == 0)
		return "environment info";
	if (strcmp(meth, "environment/status") == 0)
		return "environment status";
	return NULL;
}

static void handle_request(struct xconn *x, const struct ward__rpc_msg *m)
{
	const char *meth = m->method;
	const char *family;

	if (m->params && !json_is_object(m->params)) {
		reply_error(x, &m->id, WARD_RPC_INVALID_PARAMS, "params must be an object");
		return;
	}
	if (strcmp(meth, "initialize") == 0) {
		handle_initialize(x, m);
		return;
	}
	family = method_family(meth);
	if (!family) {
		reply_error(x, &m->id, WARD_RPC_METHOD_NOT_FOUND,
			    "exec-server does not implement `%s`", meth);
		return;
	}
	/* Codex's gate, in its words: the method family named. */
	if (!x->initialize_answered || !x->initialized) {
		reply_error(x, &m->id, WARD_RPC_INVALID_REQUEST,
			    "client must %s before using %s methods",
			    x->initialize_answered ? "send initialized" : "call initialize",
			    family);
		return;
	}
	if (strcmp(meth, "process/start") == 0)
		handle_start(x, m);
	else if (strcmp(meth, "process/read") == 0)
		handle_read(x, m);
	else if (strcmp(meth, "process/write") == 0)
		handle_write(x, m);
	else if (strcmp(meth, "process/signal") == 0)
		handle_signal(x, m);
	else if (strcmp(meth, "process/terminate") == 0)
		handle_terminate(x, m);
	else if (strcmp(meth, "environment/info") == 0)
		reply(x, &m->id, environment_info(x->srv));
	else if (strcmp(meth, "environment/status") == 0)
		reply(x, &m->id, json_pack("{s:s}", "status", "ready"));
	else
		handle_fs(x, m);
}

/* ------------------------------------------------------------ connections */

static void *on_opened(struct ward__conn *c, void *server_userdata)
{
	struct ward__xserver *s = server_userdata;
	struct xconn *x = calloc(1, sizeof(*x));

	if (!x)
		return NULL;
	x->srv = s;
	x->c = c;
	if (ward__xfs_new(&x->fs) < 0) {
		free(x);
		return NULL;
	}
	x->next = s->conns;
	if (s->conns)
		s->conns->prev = x;
	s->conns = x;
	s->n_conns++;
	return x;
}

/*
 * A message that could not be read, answered as Codex answers: code -32600
 * and id -1, unless ward recovered the request's own id (a client waiting for
 * that id then learns why).
 */
static void answer_failure(struct xconn *x, const struct ward__rpc_failure *f)
{
	struct ward__rpc_id id = f->id;
	char msg[WARD_RPC_MESSAGE_MAX + 64];
	struct ward__buf b;

	if (id.type != WARD_RPC_ID_INT && id.type != WARD_RPC_ID_STRING)
		id = ward__rpc_id_int(-1);
	snprintf(msg, sizeof(msg), "failed to parse JSON-RPC message: %s",
		 f->batch ? "batches are not supported" : f->message);
	ward__buf_init(&b, 64 * 1024);
	if (ward__rpc_encode_error(&x->srv->codec, &b, &id, WARD_RPC_INVALID_REQUEST, msg, NULL) >=
	    0)
		send_bytes(x, &b);
	ward__buf_release(&b);
}

/* Ends a connection that broke the protocol, from the loop (its session is detached). */
static void drop_connection(struct xconn *x)
{
	if (x->overflowed)
		return;
	x->overflowed = true;
	ward__loop_add_timer(x->srv->loop, 0, on_abort, x, &x->abort_timer);
}

static void on_message(struct ward__conn *c, const char *data, size_t len, void *userdata)
{
	struct xconn *x = userdata;
	struct ward__rpc_msg m;
	struct ward__rpc_failure f;
	size_t i;

	if (x->overflowed)
		return;
	for (i = 0; i < len && (data[i] == ' ' || data[i] == '\t' || data[i] == '\r'); i++)
		;
	if (i == len)
		return;
	if (ward__rpc_parse(&x->srv->codec, data, len, &m, &f) < 0) {
		answer_failure(x, &f);
		return;
	}
	switch (m.kind) {
	case WARD_RPC_REQUEST:
		handle_request(x, &m);
		break;
	case WARD_RPC_NOTIFICATION:
		if (strcmp(m.method, "initialized") == 0 && x->initialize_answered) {
			x->initialized = true;
			break;
		}
		/* As Codex 0.169: an unexpected notification ends the connection, silently. */
		drop_connection(x);
		break;
	case WARD_RPC_RESULT:
	case WARD_RPC_ERROR:
		/* ward sends no requests: a response from the client ends it too (as Codex). */
		drop_connection(x);
		break;
	}
	ward__rpc_msg_release(&m);
}

static void on_too_large(struct ward__conn *c, const char *prefix, size_t len, void *userdata)
{
	struct xconn *x = userdata;
	struct ward__rpc_failure f;

	ward__rpc_fail_oversized(&x->srv->codec, prefix, len, &f);
	answer_failure(x, &f);
}

static void on_drained(struct ward__conn *c, void *userdata)
{
	struct xconn *x = userdata;

	if (x->sess)
		proc_pause_all(x->sess, false);
}

static void on_closed(struct ward__conn *c, void *userdata)
{
	struct xconn *x = userdata;
	struct ward__xserver *s = x->srv;

	/* Reads this connection was waiting for die with it. */
	for (struct xsession *se = s->sessions; se; se = se->next)
		for (struct xproc *p = se->procs; p; p = p->next)
			for (struct xread *r = p->reads, *n; r; r = n) {
				n = r->next;
				if (r->conn == x)
					xread_free(r);
			}
	if (x->sess)
		session_detach(x->sess);
	/* Filesystem requests still running answer nobody; their memory goes when they end. */
	for (struct xfsop *op = x->fsops; op; op = op->next)
		op->conn = NULL;
	ward__xfs_free(x->fs);
	ward__loop_del_timer(s->loop, x->abort_timer);
	if (x->prev)
		x->prev->next = x->next;
	else if (s->conns == x)
		s->conns = x->next;
	if (x->next)
		x->next->prev = x->prev;
	s->n_conns--;
	free(x);
}

static int on_admit(void *server_userdata)
{
	struct ward__xserver *s = server_userdata;

	return s->n_conns >= s->cfg.max_connections ? 503 : 0;
}

static const struct ward__conn_handler handler = {
	.opened = on_opened,
	.message = on_message,
	.too_large = on_too_large,
	.drained = on_drained,
	.closed = on_closed,
	.admit = on_admit,
};

const struct ward__conn_handler *ward__xserver_handler(void)
{
	return &handler;
}

/* ------------------------------------------------------------ the server */

int ward__xserver_new(struct ward__loop *l, const struct ward__xserver_config *c,
		      struct ward__xserver **ret, struct ward_error *err)
{
	struct ward__xserver *s = calloc(1, sizeof(*s));
	int r;

	if (!s)
		return ward__error(err, -ENOMEM, "serve", "out of memory");
	s->loop = l;
	s->cfg = *c;
	ward__buf_init(&s->notify_buf, (size_t)1 << 30);
	if (!s->cfg.max_connections)
		s->cfg.max_connections = WARD_XS_DEFAULT_MAX_CONNECTIONS;
	if (!s->cfg.max_processes)
		s->cfg.max_processes = WARD_XS_DEFAULT_MAX_PROCESSES;
	if (!s->cfg.retain_bytes)
		s->cfg.retain_bytes = WARD_XS_RETAIN_BYTES;
	if (!s->cfg.retain_chunks)
		s->cfg.retain_chunks = WARD_XS_RETAIN_CHUNKS;
	if (!s->cfg.retain_total)
		s->cfg.retain_total = WARD_XS_RETAIN_TOTAL;
	if (!s->cfg.detached_ttl_ms)
		s->cfg.detached_ttl_ms = WARD_XS_DETACHED_TTL_MS;
	if (!s->cfg.exited_ttl_ms)
		s->cfg.exited_ttl_ms = WARD_XS_EXITED_TTL_MS;
	r = ward__rpc_codec_init(&s->codec, WARD_RPC_CODEX, NULL);
	if (r >= 0)
		r = ward_policy_copy(c->policy, &s->policy);
	if (r < 0) {
		ward__xserver_free(s);
		return ward__error(err, r, "serve", "cannot set up the server: %m");
	}
	s->cwd = c->policy->cwd ? strdup(c->policy->cwd) : ward__path_absolute(".");
	if (!s->cwd) {
		ward__xserver_free(s);
		return ward__error(err, -ENOMEM, "serve", "out of memory");
	}
	s->cfg.policy = s->policy;
	*ret = s;
	return 0;
}

void ward__xserver_free(struct ward__xserver *s)
{
	if (!s)
		return;
	while (s->conns)
		ward__conn_abort(s->conns->c);
	while (s->sessions)
		session_free(s->sessions);
	ward_policy_free(s->policy);
	ward__buf_release(&s->notify_buf);
	free(s->cwd);
	free(s);
}

void ward__xserver_counts(const struct ward__xserver *s, size_t *ret_sessions,
			  size_t *ret_processes, size_t *ret_connections)
{
	if (ret_sessions)
		*ret_sessions = s->n_sessions;
	if (ret_processes)
		*ret_processes = s->n_procs;
	if (ret_connections)
		*ret_connections = s->n_conns;
}
