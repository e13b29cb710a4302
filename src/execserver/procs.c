/* SPDX-License-Identifier: MIT */
/*
 * The processes of the exec server (see xserver.h): a sandboxed proc with
 * its retained output (a list of chunks, bounded per process and across the
 * server by what they cost, least recent output evicted first), the process/read calls waiting
 * on it, its process/output, process/exited and process/closed
 * notifications, and its end.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "basic/buf.h"
#include "basic/util.h"
#include "exec/proc.h"

#include "execserver/xserver.h"

#include "rpc/base64.h"

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

/* ------------------------------------------------------------ retention */

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

static void drop_oldest(struct xproc *p)
{
	struct chunk *c = p->oldest;

	p->sess->srv->retained_total -= XS_CHUNK_COST(c->len);
	p->retained_bytes -= XS_CHUNK_COST(c->len);
	p->oldest = c->next;
	if (!p->oldest)
		p->newest = NULL;
	p->n_chunks--;
	free(c);
}

/* Keeps a chunk, dropping the oldest beyond the limits (what chunks cost, their number). */
static int retain(struct xproc *p, uint64_t seq, uint8_t stream, const uint8_t *data, size_t len)
{
	struct ward__xserver *s = p->sess->srv;
	size_t keep = MIN(s->cfg.retain_bytes, s->cfg.retain_total), cost;
	struct chunk *c;

	if (XS_CHUNK_COST(len) > keep) {
		/* Only the newest bytes of an oversized chunk can be kept. */
		size_t room = keep > XS_CHUNK_COST(0) ? keep - XS_CHUNK_COST(0) : 0;

		data += len - room;
		len = room;
	}
	cost = XS_CHUNK_COST(len);
	while (p->n_chunks > 0 &&
	       (p->retained_bytes + cost > s->cfg.retain_bytes ||
		p->n_chunks >= s->cfg.retain_chunks))
		drop_oldest(p);
	/* The server's budget: the least recent output anywhere goes first. */
	while (s->retained_total + cost > s->cfg.retain_total && s->lru_head) {
		struct xproc *v = s->lru_head;

		if (v->n_chunks > 0)
			drop_oldest(v);
		if (v->n_chunks == 0)
			lru_remove(s, v);
	}
	c = malloc(sizeof(*c) + len);
	if (!c)
		return -ENOMEM;
	*c = (struct chunk){.seq = seq, .stream = stream, .len = (uint32_t)len};
	memcpy(c->data, data, len);
	if (p->newest)
		p->newest->next = c;
	else
		p->oldest = c;
	p->newest = c;
	p->n_chunks++;
	p->retained_bytes += cost;
	s->retained_total += cost;
	lru_touch(s, p);
	return 0;
}

/* ------------------------------------------------------------ reads */

void ward__xs_read_free(struct xread *r)
{
	struct xproc *p = r->proc;

	ward__loop_del_timer(p->sess->srv->loop, r->timer);
	for (struct xread **pp = &p->reads; *pp; pp = &(*pp)->next)
		if (*pp == r) {
			*pp = r->next;
			p->n_reads--;
			r->conn->n_reads--;
			break;
		}
	ward__rpc_id_release(&r->id);
	free(r);
}

/*
 * sandboxDenied as Codex's client reads it: the process failed because the
 * sandbox refused it something, so that asking to run it again outside the
 * sandbox makes sense (Codex's orchestrator may offer exactly that, and
 * reports a zero wall time on this path). So: sandboxed, a non-zero exit,
 * and a refusal the sandbox itself reported; never on success, never
 * guessed from the output as Codex's own server does. What was refused, to
 * the last access, is in "denials" whatever the exit.
 */
static bool sandbox_denied(const struct xproc *p)
{
	return p->sandboxed && p->exited && p->exit_code != 0 && p->denied > 0;
}

/*
 * The process/read result: the retained chunks after after_seq, within
 * max_bytes of decoded output (0: no limit) but at least one, never split.
 * nextSeq follows Codex's rule, which its client's reconnect recovery checks:
 * without a byte limit it is the process's next sequence number (exited and
 * closed count); with one, the seq after the last chunk returned (or the next
 * number when none was).
 */
json_t *ward__xs_read_result(struct xproc *p, uint64_t after_seq, size_t max_bytes)
{
	json_t *chunks = json_array();
	uint64_t next = p->seq + 1;
	size_t bytes = 0;

	for (struct chunk *c = p->oldest; c; c = c->next) {
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
			 sandbox_denied(p));
}

/*
 * Whether a read after after_seq has something to return now (Codex's
 * exec_read): output after it, the process closed, or the exit known with
 * events the reader has not seen.
 */
bool ward__xs_read_ready(struct xproc *p, uint64_t after_seq)
{
	/* Seqs increase from the oldest chunk to the newest: the newest tells. */
	if (p->newest && p->newest->seq > after_seq)
		return true;
	return p->closed || (p->exited && after_seq < p->seq);
}

/* Answers every waiting read that can be answered now. */
static void wake_reads(struct xproc *p)
{
	struct xread *r = p->reads, *next;

	for (; r; r = next) {
		next = r->next;
		if (ward__xs_read_ready(p, r->after_seq)) {
			ward__xs_reply(r->conn, &r->id,
				       ward__xs_read_result(p, r->after_seq, r->max_bytes));
			ward__xs_read_free(r);
		}
	}
}

void ward__xs_on_read_timeout(struct ward__loop *l, void *userdata)
{
	struct xread *r = userdata;

	r->timer = 0;
	ward__xs_reply(r->conn, &r->id, ward__xs_read_result(r->proc, r->after_seq, r->max_bytes));
	ward__xs_read_free(r);
}

/* ------------------------------------------------------------ writeIds */

static void wid_forget(struct xwid *w)
{
	struct xproc *p = w->proc;
	struct xsession *se = p->sess;

	if (w->p_prev)
		w->p_prev->p_next = w->p_next;
	else
		p->wids_oldest = w->p_next;
	if (w->p_next)
		w->p_next->p_prev = w->p_prev;
	else
		p->wids_newest = w->p_prev;
	if (w->s_prev)
		w->s_prev->s_next = w->s_next;
	else
		se->wids_oldest = w->s_next;
	if (w->s_next)
		w->s_next->s_prev = w->s_prev;
	else
		se->wids_newest = w->s_prev;
	p->n_wids--;
	se->wid_bytes -= w->cost;
	free(w);
}

bool ward__xs_write_id_seen(const struct xproc *p, const char *wid)
{
	for (const struct xwid *w = p->wids_oldest; w; w = w->p_next)
		if (strcmp(w->id, wid) == 0)
			return true;
	return false;
}

/*
 * A retried write (the same writeId) must not be written twice, so accepted
 * ids are remembered: the last WARD_XS_WRITE_IDS of each process, within
 * WARD_XS_SESSION_WRITE_IDS for the whole session, the session's oldest
 * forgotten first. Each id is charged its bytes, its record and malloc's
 * overhead: 4,096 ids of 256 bytes for each of 4,096 processes held 4.5 GB.
 */
void ward__xs_write_id_remember(struct xproc *p, const char *wid)
{
	struct xsession *se = p->sess;
	size_t len = strlen(wid);
	struct xwid *w;

	if (p->n_wids >= WARD_XS_WRITE_IDS)
		wid_forget(p->wids_oldest);
	w = malloc(sizeof(*w) + len + 1);
	if (!w)
		return;
	*w = (struct xwid){.proc = p, .cost = sizeof(*w) + len + 1 + 24};
	memcpy(w->id, wid, len + 1);
	while (se->wids_oldest && se->wid_bytes + w->cost > WARD_XS_SESSION_WRITE_IDS)
		wid_forget(se->wids_oldest);
	w->p_prev = p->wids_newest;
	if (p->wids_newest)
		p->wids_newest->p_next = w;
	else
		p->wids_oldest = w;
	p->wids_newest = w;
	w->s_prev = se->wids_newest;
	if (se->wids_newest)
		se->wids_newest->s_next = w;
	else
		se->wids_oldest = w;
	se->wids_newest = w;
	p->n_wids++;
	se->wid_bytes += w->cost;
}

/* ------------------------------------------------------------ processes */

void ward__xs_procs_pause(struct xsession *se, bool pause)
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
		ward__xs_send_bytes(x, b);
	/* A single huge chunk is not worth keeping around. */
	if (b->alloc > ((size_t)4 << 20))
		ward__buf_release(b);
	else
		ward__buf_clear(b);
	if (ward__conn_congested(x->c))
		ward__xs_procs_pause(p->sess, true);
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
		json_t *e = json_pack("{s:s, s:o, s:o, s:o}", "access", d->access, "syscall",
				      d->syscall[0] ? json_string(d->syscall) : json_null(),
				      "error", en ? json_string(en) : json_null(), "target",
				      ward__json_string_lossy(d->target, strlen(d->target)));

		/* Which protection refused it and why (ward's extension, absent when unknown). */
		if (e && d->reason)
			json_object_set_new(e, "reason", json_string(d->reason));
		json_array_append_new(a, e);
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
	ward__xs_changes_end(p->sess->srv, p);
	if (x && x->initialized) {
		json_t *params =
			json_pack("{s:s, s:I, s:i, s:b, s:o}", "processId", p->id, "seq",
				  (json_int_t)++p->seq, "exitCode", p->exit_code, "sandboxDenied",
				  sandbox_denied(p), "denials", denials_json(pr));

		if (ward__proc_timed_out(pr))
			json_object_set_new(params, "timedOut", json_true());
		if (p->failure)
			json_object_set_new(params, "failure", json_string(p->failure));
		/* ward's extension: what the process changed (review and undo). */
		if (p->changes)
			json_object_set(params, "changes", p->changes);
		/* ward's extension: how the limits were enforced, what it used, the one it hit. */
		if (params)
			ward__limits_json_add(params, &ward__proc_sandbox(pr)->limits);
		ward__xs_notify(x, "process/exited", params);
	} else {
		++p->seq;
	}
	wake_reads(p);
}

/* Frees the proc and its policy (from the proc's own callback too: proc.h allows it). */
static void release_proc(struct xproc *p)
{
	ward__proc_free(p->proc);
	p->proc = NULL;
	ward_policy_free(p->policy);
	p->policy = NULL;
	p->sess->policy_bytes -= p->policy_weight;
	p->policy_weight = 0;
}

static void on_remove(struct ward__loop *l, void *userdata)
{
	struct xproc *p = userdata;

	p->remove_timer = 0;
	ward__xs_proc_free(p);
}

static void on_proc_closed(struct ward__proc *pr, void *userdata)
{
	struct xproc *p = userdata;
	struct xconn *x = p->sess->conn;
	struct ward__xserver *s = p->sess->srv;

	p->closed = true;
	if (x && x->initialized)
		ward__xs_notify(
			x, "process/closed",
			json_pack("{s:s, s:I}", "processId", p->id, "seq", (json_int_t)++p->seq));
	else
		++p->seq;
	wake_reads(p);
	/*
	 * Its status is all that stays: the proc (its sandbox's denials, its
	 * stdin queue) and its policy go now, not when the record does.
	 */
	release_proc(p);
	/* Exited processes stay readable for a while, then go (Codex: 30 s). */
	ward__loop_add_timer(s->loop, ward__now_ns() + (uint64_t)s->cfg.exited_ttl_ms * 1000000,
			     on_remove, p, &p->remove_timer);
}

const struct ward__proc_ops ward__xs_proc_ops = {
	.output = on_proc_output,
	.exited = on_proc_exited,
	.closed = on_proc_closed,
};

void ward__xs_proc_free(struct xproc *p)
{
	struct xsession *se = p->sess;

	while (p->reads) {
		struct xread *r = p->reads;

		/* A read waiting on a process that goes answers with what is known. */
		ward__xs_reply(r->conn, &r->id,
			       ward__xs_read_result(p, r->after_seq, r->max_bytes));
		ward__xs_read_free(r);
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
	/* A process that goes before its end: what it changed is still recorded or held. */
	ward__xs_changes_end(se->srv, p);
	json_decref(p->changes);
	release_proc(p);
	while (p->n_chunks > 0)
		drop_oldest(p);
	lru_remove(se->srv, p);
	while (p->wids_oldest)
		wid_forget(p->wids_oldest);
	free(p->failure);
	free(p->thread);
	free(p->tool_call);
	free(p->id_json);
	free(p->id);
	free(p);
}

struct xproc *ward__xs_proc_find(struct xsession *se, const char *id)
{
	for (struct xproc *p = se->procs; p; p = p->next)
		if (strcmp(p->id, id) == 0)
			return p;
	return NULL;
}
