/* SPDX-License-Identifier: MIT */
/*
 * Interactive sessions (see session.h): the store, the calls, pruning.
 *
 * A session is a proc plus what the calls need: the output since the last
 * call (a 1 MiB head+tail capture, so a flood costs 1 MiB and keeps both
 * ends), the denials already reported, and a queue of calls waiting their
 * turn. A call completes when its yield window closes, or earlier when the
 * command has exited and its output is closed (at most 50 ms after the exit,
 * as Codex waits). A call that reports the exit also ends the session.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "basic/buf.h"
#include "basic/cleanup.h"
#include "basic/error.h"
#include "basic/util.h"
#include "exec/exec.h"
#include "policy/policy.h"
#include "session/session.h"

enum call_kind {
	CALL_EXEC = 1,
	CALL_WRITE,
	CALL_KILL,
};

struct session;

struct call {
	struct ward__sessions *store;
	uint64_t id;
	enum call_kind kind;
	struct session *sess;
	ward__session_done_fn done;
	void *userdata;
	bool cancelled;
	bool started;
	uint64_t start_ns;
	uint64_t yield_ns;
	int64_t max_tokens;
	char *chars; /* a queued write's bytes */
	size_t len;
	char *until; /* end the call once the output since its start contains this */
	size_t until_len;
	bool until_any_output;
	bool until_met_at_begin; /* the output waiting when the call began met until */
	/* The last until_len - 1 bytes seen, so that a match split across reads is found. */
	char *window;
	size_t window_len;
	uint64_t yield_timer, post_exit_timer, progress_timer, kick_timer;
	uint64_t progress_interval_ms;
	ward__session_progress_fn progress;
	void *progress_userdata;
	struct call *next_in_session; /* the session's queue */
	struct call *prev_all, *next_all;
};

struct session {
	int id;
	struct ward__sessions *store;
	struct ward__proc *proc;
	struct ward_policy *policy;
	struct ward__capture out;
	uint64_t last_used;
	size_t denials_reported;
	bool tty;
	bool exited;
	bool closed;
	bool killed;
	bool fallback_noted; /* the missing isolation was told (once per session) */
	bool paused; /* output not read: the store's byte budget is spent */
	char *command;
	char *workdir;
	time_t started;
	struct call *active;
	struct call *queue_head, *queue_tail;
	size_t n_queued;
	struct call *kill_call; /* a kill_session waiting for the call in flight */
	struct session *prev, *next;
};

struct ward__sessions {
	struct ward__loop *loop;
	struct ward_policy *policy;
	struct ward__proc_pool *pool; /* sandboxes prepared for the sessions to come */
	struct ward_run_options *env_opts, *env_opts_pipes; /* tty, pipes */
	char **envp_pipes, **envp_tty;
	char *cwd;
	char *shell;
	bool login;
	size_t max;
	struct session **by_id; /* indexed by id - WARD_SESSION_ID_MIN */
	struct session *head; /* every session, newest first */
	size_t count;
	struct call *calls; /* every call not yet completed */
	size_t n_calls;
	uint64_t next_call_id;
	uint64_t use_clock;
	size_t held; /* bytes of unread output in every session's capture */
	size_t n_paused;
};

#define ID_SLOTS (WARD_SESSION_ID_MAX - WARD_SESSION_ID_MIN + 1)

/* ------------------------------------------------------------ replies */

void ward__session_reply_free(struct ward__session_reply *r)
{
	if (!r)
		return;
	free(r->output);
	for (size_t i = 0; i < r->n_denials; i++)
		free(r->denials[i].target);
	free(r->denials);
	free(r->note);
	free(r->error);
	free(r);
}

static const char *denial_errno_name(int e)
{
	return e > 0 ? strerror(e) : "removed";
}

char *ward__session_reply_text(const struct ward__session_reply *r)
{
	struct ward__buf b;
	int q;

	ward__buf_init(&b, r->output_len + 64 * 1024 + (size_t)r->n_denials * 4200);
	q = ward__buf_printf(&b, "Chunk ID: %s\nWall time: %.4f seconds\n", r->chunk_id,
			     (double)r->wall_ns / 1e9);
	if (q >= 0 && r->exited)
		q = ward__buf_printf(&b, "Process exited with code %d\n", r->exit_code);
	else if (q >= 0)
		q = ward__buf_printf(&b, "Process running with session ID %d\n", r->session_id);
	if (q >= 0)
		q = ward__buf_printf(&b, "Original token count: %" PRIu64 "\n",
				     r->original_token_count);
	if (q >= 0 && r->note)
		q = ward__buf_printf(&b, "Note: %s\n", r->note);
	for (size_t i = 0; q >= 0 && i < r->n_denials; i++)
		q = ward__buf_printf(&b, "Sandbox denied: %s %s%s%s (%s)\n", r->denials[i].access,
				     r->denials[i].target, r->denials[i].syscall[0] ? " by " : "",
				     r->denials[i].syscall, denial_errno_name(r->denials[i].error));
	if (q >= 0 && r->denials_dropped)
		q = ward__buf_printf(&b, "Sandbox denied: %zu more\n", r->denials_dropped);
	if (q >= 0)
		q = ward__buf_append_str(&b, "Output:\n");
	if (q >= 0)
		q = ward__buf_append(&b, r->output, r->output_len);
	if (q < 0) {
		ward__buf_release(&b);
		return NULL;
	}
	return (char *)ward__buf_steal(&b, NULL);
}

json_t *ward__session_reply_json(const struct ward__session_reply *r)
{
	json_t *o = json_object(), *d;

	if (!o)
		return NULL;
	json_object_set_new(o, "chunk_id", json_string(r->chunk_id));
	json_object_set_new(o, "wall_time_seconds", json_real((double)r->wall_ns / 1e9));
	if (r->exited)
		json_object_set_new(o, "exit_code", json_integer(r->exit_code));
	else
		json_object_set_new(o, "session_id", json_integer(r->session_id));
	json_object_set_new(o, "original_token_count",
			    json_integer((json_int_t)r->original_token_count));
	json_object_set_new(o, "output", ward__json_string_lossy(r->output, r->output_len));
	json_object_set_new(o, "truncated", json_boolean(r->truncated));
	if (r->denied >= 0)
		json_object_set_new(o, "sandbox_denied", json_boolean(r->denied > 0));
	else
		json_object_set_new(o, "sandbox_denied", json_string("unavailable"));
	if (r->denied < 0) {
		/* Without an exact signal from the host, say so; never guess (as ward run --json). */
		json_object_set_new(o, "denials", json_string("unavailable"));
	} else {
		d = json_array();
		for (size_t i = 0; d && i < r->n_denials; i++) {
			const struct ward__denial *x = &r->denials[i];
			const char *ename = x->error > 0 ? strerrorname_np(x->error) : NULL;
			json_t *e = json_object();

			json_object_set_new(e, "access", json_string(x->access));
			json_object_set_new(e, "syscall",
					    x->syscall[0] ? json_string(x->syscall) : json_null());
			if (x->error == 0)
				json_object_set_new(e, "error", json_null());
			else if (ename)
				json_object_set_new(e, "error", json_string(ename));
			else
				json_object_set_new(e, "error", json_sprintf("errno %d", x->error));
			json_object_set_new(e, "target",
					    ward__json_string_lossy(x->target, strlen(x->target)));
			json_array_append_new(d, e);
		}
		json_object_set_new(o, "denials", d ? d : json_array());
	}
	if (r->denials_dropped)
		json_object_set_new(o, "denials_dropped",
				    json_integer((json_int_t)r->denials_dropped));
	if (r->note)
		json_object_set_new(o, "note", ward__json_string_lossy(r->note, strlen(r->note)));
	if (r->killed)
		json_object_set_new(o, "killed", json_true());
	return o;
}

/* ------------------------------------------------------------ truncation */

char *ward__truncate_tokens(const char *s, size_t len, uint64_t max_tokens, size_t *ret_len,
			    bool *ret_truncated)
{
	uint64_t budget = max_tokens > UINT64_MAX / 4 ? UINT64_MAX : max_tokens * 4;
	size_t head, tail_start, removed;
	char marker[64];
	int m;
	char *out;

	*ret_truncated = false;
	if (len <= budget) {
		out = malloc(len + 1);
		if (!out)
			return NULL;
		memcpy(out, s, len);
		out[len] = '\0';
		*ret_len = len;
		return out;
	}
	/* Half the budget from each end, never splitting a UTF-8 sequence. */
	head = (size_t)(budget / 2);
	tail_start = len - (size_t)(budget - budget / 2);
	while (head > 0 && ((unsigned char)s[head] & 0xc0) == 0x80)
		head--;
	while (tail_start < len && ((unsigned char)s[tail_start] & 0xc0) == 0x80)
		tail_start++;
	removed = tail_start - head;
	m = snprintf(marker, sizeof(marker), "\xe2\x80\xa6%zu tokens truncated\xe2\x80\xa6",
		     (removed + 3) / 4);
	out = malloc(head + (size_t)m + (len - tail_start) + 1);
	if (!out)
		return NULL;
	memcpy(out, s, head);
	memcpy(out + head, marker, (size_t)m);
	memcpy(out + head + (size_t)m, s + tail_start, len - tail_start);
	*ret_len = head + (size_t)m + (len - tail_start);
	out[*ret_len] = '\0';
	*ret_truncated = true;
	return out;
}

/* ------------------------------------------------------------ helpers */

/*
 * A chunk id only tells one result from another (as Codex's): a generator
 * seeded once from the kernel serves, without a syscall per call.
 */
static uint64_t chunk_rng;

static void chunk_id(char out[8])
{
	uint64_t x;

	if (!chunk_rng &&
	    getrandom(&chunk_rng, sizeof(chunk_rng), GRND_NONBLOCK) != (ssize_t)sizeof(chunk_rng))
		chunk_rng = ward__now_ns();
	chunk_rng |= 1;
	/* xorshift64 */
	x = chunk_rng;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	chunk_rng = x;
	snprintf(out, 8, "%06x", (unsigned)(x >> 40) & 0xffffffu);
}

static struct session *lookup(struct ward__sessions *s, int id)
{
	if (id < WARD_SESSION_ID_MIN || id > WARD_SESSION_ID_MAX)
		return NULL;
	return s->by_id[id - WARD_SESSION_ID_MIN];
}

static int allocate_id(struct ward__sessions *s)
{
	uint32_t r;

	/* Random, as Codex's, so that an id guessed from an earlier run is rarely alive. */
	for (int tries = 0; tries < 64; tries++) {
		if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != (ssize_t)sizeof(r))
			r = (uint32_t)ward__now_ns();
		r = WARD_SESSION_ID_MIN + r % ID_SLOTS;
		if (!s->by_id[r - WARD_SESSION_ID_MIN])
			return (int)r;
	}
	for (uint32_t i = 0; i < ID_SLOTS; i++) {
		uint32_t k = (r - WARD_SESSION_ID_MIN + i) % ID_SLOTS;

		if (!s->by_id[k])
			return (int)(k + WARD_SESSION_ID_MIN);
	}
	return -ENOSPC;
}

static void touch(struct session *se)
{
	se->last_used = ++se->store->use_clock;
}

/* ------------------------------------------------------------ sessions */

static void call_finish(struct call *c, struct ward__session_reply *reply);
static void call_begin(struct call *c);
static void begin_next(struct session *se);
static void out_release(struct session *se);

static void session_unlink(struct session *se)
{
	struct ward__sessions *s = se->store;

	if (se->prev)
		se->prev->next = se->next;
	else if (s->head == se)
		s->head = se->next;
	if (se->next)
		se->next->prev = se->prev;
	se->prev = se->next = NULL;
	if (lookup(s, se->id) == se) {
		s->by_id[se->id - WARD_SESSION_ID_MIN] = NULL;
		s->count--;
	}
}

static struct ward__session_reply *error_reply(struct session *se, const char *msg);

/* The final word to a kill_session whose session's output went to the call in flight. */
static void finish_kill_call(struct session *se)
{
	struct call *k = se->kill_call;
	struct ward__session_reply *r;

	if (!k)
		return;
	se->kill_call = NULL;
	r = calloc(1, sizeof(*r));
	if (r) {
		chunk_id(r->chunk_id);
		r->wall_ns = ward__now_ns() - k->start_ns;
		r->session_id = se->id;
		r->exited = se->exited;
		r->exit_code = se->exited ? ward__proc_exit_code(se->proc) : 0;
		r->killed = true;
		r->denied = ward__proc_denied(se->proc);
		r->output = strdup("");
		r->note =
			strdup("the session's last output went to the call that was waiting on it");
		if (!r->output) {
			ward__session_reply_free(r);
			r = NULL;
		}
	}
	k->sess = NULL;
	call_finish(k, r);
}

/* Removes a session: its processes die; calls still waiting on it get why as an error. */
static void session_free(struct session *se, const char *why)
{
	struct ward__sessions *s = se->store;

	session_unlink(se);
	while (se->queue_head) {
		struct call *c = se->queue_head;

		se->queue_head = c->next_in_session;
		se->n_queued--;
		c->sess = NULL;
		call_finish(c, error_reply(NULL, why));
	}
	se->queue_tail = NULL;
	if (se->active) {
		struct call *c = se->active;

		se->active = NULL;
		c->sess = NULL;
		call_finish(c, error_reply(NULL, why));
	}
	finish_kill_call(se);
	if (se->paused) {
		se->paused = false;
		s->n_paused--;
	}
	ward__proc_free(se->proc);
	out_release(se);
	ward_policy_free(se->policy);
	free(se->command);
	free(se->workdir);
	free(se);
}

static void call_complete(struct call *c);

/*
 * Whether the output the call has seen now meets its `until`: searched in
 * what came since the call began, across read boundaries (the last
 * until_len - 1 bytes of earlier reads are kept for that).
 */
static bool until_met(struct call *c, const uint8_t *data, size_t len)
{
	size_t keep;
	char *joined;
	bool found;

	if (c->until_any_output)
		return len > 0;
	if (!c->until)
		return false;
	joined = malloc(c->window_len + len);
	if (!joined)
		return false;
	memcpy(joined, c->window, c->window_len);
	memcpy(joined + c->window_len, data, len);
	found = memmem(joined, c->window_len + len, c->until, c->until_len) != NULL;
	keep = MIN(c->until_len - 1, c->window_len + len);
	memcpy(c->window, joined + c->window_len + len - keep, keep);
	c->window_len = keep;
	free(joined);
	return found;
}

/* Resumes reading a session paused for the budget. */
static void session_resume(struct session *se)
{
	if (!se->paused)
		return;
	se->paused = false;
	se->store->n_paused--;
	ward__proc_pause_output(se->proc, false);
}

/* Once half the budget is free again, every paused session is read again. */
static void budget_check(struct ward__sessions *s)
{
	if (s->n_paused == 0 || s->held > WARD_SESSIONS_BYTES_BUDGET / 2)
		return;
	for (struct session *se = s->head; se && s->n_paused > 0; se = se->next)
		session_resume(se);
}

/* Takes the session's unread output (the capture is empty after). */
static int out_take(struct session *se, uint8_t **ret, size_t *ret_len, uint64_t *ret_omitted)
{
	size_t before = se->out.buf.len;
	int r = ward__capture_finish(&se->out, ret, ret_len, ret_omitted);

	if (r >= 0) {
		se->store->held -= before;
		budget_check(se->store);
	}
	return r;
}

static void out_release(struct session *se)
{
	se->store->held -= se->out.buf.len;
	ward__capture_release(&se->out);
	budget_check(se->store);
}

static void on_output(struct ward__proc *p, enum ward__proc_stream stream, const uint8_t *data,
		      size_t len, void *userdata)
{
	struct session *se = userdata;
	struct ward__sessions *s = se->store;
	size_t before = se->out.buf.len;

	/* Only -ENOMEM can fail here; the bytes are then lost, the session goes on. */
	ward__capture_append(&se->out, data, len);
	s->held += se->out.buf.len - before;
	/* Over the budget, a session nobody is waiting on stops being read. */
	if (s->held > WARD_SESSIONS_BYTES_BUDGET && !se->active && !se->paused) {
		se->paused = true;
		s->n_paused++;
		ward__proc_pause_output(se->proc, true);
	}
	/* Answered at once: the proc tolerates its owner completing (even freeing) in a callback. */
	if (se->active && until_met(se->active, data, len))
		call_complete(se->active);
}

static void check_call(struct call *c);

static void on_exited(struct ward__proc *p, void *userdata)
{
	struct session *se = userdata;

	se->exited = true;
	if (se->active)
		check_call(se->active);
}

static void on_closed(struct ward__proc *p, void *userdata)
{
	struct session *se = userdata;

	se->closed = true;
	if (se->active)
		check_call(se->active);
}

static const struct ward__proc_ops session_ops = {
	.output = on_output,
	.exited = on_exited,
	.closed = on_closed,
};

/* ------------------------------------------------------------ calls */

static struct ward__session_reply *error_reply(struct session *se, const char *msg)
{
	struct ward__session_reply *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	chunk_id(r->chunk_id);
	r->output = strdup("");
	r->error = strdup(msg);
	r->session_id = se ? se->id : 0;
	if (!r->output || !r->error) {
		ward__session_reply_free(r);
		return NULL;
	}
	return r;
}

static void call_free(struct ward__sessions *s, struct call *c)
{
	ward__loop_del_timer(s->loop, c->yield_timer);
	ward__loop_del_timer(s->loop, c->post_exit_timer);
	ward__loop_del_timer(s->loop, c->progress_timer);
	ward__loop_del_timer(s->loop, c->kick_timer);
	if (c->prev_all)
		c->prev_all->next_all = c->next_all;
	else if (s->calls == c)
		s->calls = c->next_all;
	if (c->next_all)
		c->next_all->prev_all = c->prev_all;
	s->n_calls--;
	free(c->chars);
	free(c->until);
	free(c->window);
	free(c);
}

/* Hands the reply to the caller (unless cancelled) and frees the call. */
static void call_finish(struct call *c, struct ward__session_reply *reply)
{
	struct ward__sessions *s = c->store;
	ward__session_done_fn done = c->done;
	void *ud = c->userdata;
	bool cancelled = c->cancelled;

	call_free(s, c);
	if (cancelled || !done)
		ward__session_reply_free(reply);
	else
		done(reply, ud);
}

/* Copies the denials the session has not reported yet into the reply. */
static void take_denials(struct session *se, struct ward__session_reply *r)
{
	const struct ward__sandbox *sb = ward__proc_sandbox(se->proc);
	size_t n = sb->n_denials > se->denials_reported ? sb->n_denials - se->denials_reported : 0;

	r->denied = ward__proc_denied(se->proc);
	r->denials_dropped = sb->denials_dropped;
	if (n == 0)
		return;
	r->denials = calloc(n, sizeof(*r->denials));
	if (!r->denials)
		return;
	for (size_t i = 0; i < n; i++) {
		const struct ward__denial *d = &sb->denials[se->denials_reported + i];

		r->denials[i] = *d;
		r->denials[i].target = strdup(d->target ? d->target : "");
		if (!r->denials[i].target)
			break;
		r->n_denials++;
	}
	se->denials_reported += r->n_denials;
}

static char *note_for(struct session *se)
{
	const struct ward_error *e = ward__proc_error(se->proc);
	const struct ward__sandbox *sb = ward__proc_sandbox(se->proc);
	char *note = NULL;

	if (e && e->message[0]) {
		if (asprintf(&note, "%s%s%s", e->message, e->hint[0] ? " (hint: " : "",
			     e->hint[0] ? e->hint : "") >= 0 &&
		    e->hint[0]) {
			size_t l = strlen(note);
			char *n2 = realloc(note, l + 2);

			if (n2) {
				note = n2;
				note[l] = ')';
				note[l + 1] = '\0';
			}
		}
		return note;
	}
	if (sb->guard_tripped && sb->guard_left[0]) {
		if (asprintf(&note, "a protected path was created and could not be removed: %s",
			     sb->guard_left) < 0)
			note = NULL;
		return note;
	}
	if (!sb->isolated && sb->fallback_missing[0] && !se->fallback_noted) {
		se->fallback_noted = true;
		if (asprintf(&note, "running without namespaces; not guaranteed here: %s",
			     sb->fallback_missing) < 0)
			note = NULL;
	}
	return note;
}

/* Completes the active call of a session with what it has now. */
static void call_complete(struct call *c)
{
	struct session *se = c->sess;
	struct ward__sessions *s = se->store;
	struct ward__session_reply *r = calloc(1, sizeof(*r));
	_cleanup_free_ uint8_t *raw = NULL;
	size_t raw_len = 0;
	uint64_t total = se->out.total, omitted = 0;
	bool ends;

	se->active = NULL;
	touch(se);
	if (r) {
		chunk_id(r->chunk_id);
		r->wall_ns = ward__now_ns() - c->start_ns;
		r->session_id = se->id;
		r->exited = se->exited;
		r->exit_code = se->exited ? ward__proc_exit_code(se->proc) : 0;
		r->killed = se->killed;
		r->original_token_count = (total + 3) / 4;
		if (out_take(se, &raw, &raw_len, &omitted) < 0) {
			raw = NULL;
			raw_len = 0;
		}
		r->output = ward__truncate_tokens(raw ? (const char *)raw : "", raw_len,
						  (uint64_t)c->max_tokens, &r->output_len,
						  &r->truncated);
		/* Bytes the 1 MiB head+tail dropped are truncation too. */
		if (omitted > 0)
			r->truncated = true;
		r->note = note_for(se);
		take_denials(se, r);
		if (!r->output) {
			ward__session_reply_free(r);
			r = NULL;
		}
	}
	/* The exit has been reported: the session is over (its id may be reused). */
	ends = se->exited;
	if (ends && r && c->kind == CALL_EXEC)
		r->session_id = 0;
	call_finish(c, r);
	if (ends) {
		char why[160];

		snprintf(
			why, sizeof(why),
			"Unknown process id %d: it exited and its exit code went to an earlier call",
			se->id);
		session_free(se, why);
		return;
	}
	begin_next(se);
	(void)s;
}

/*
 * The next call becomes the active one: a kill_session that waited for the
 * call in flight first (it reports the end), else the next one queued.
 */
static void begin_next(struct session *se)
{
	struct call *n = se->queue_head;

	if (se->kill_call) {
		n = se->kill_call;
		se->kill_call = NULL;
		call_begin(n);
		return;
	}

	if (!n)
		return;
	se->queue_head = n->next_in_session;
	if (!se->queue_head)
		se->queue_tail = NULL;
	se->n_queued--;
	n->next_in_session = NULL;
	call_begin(n);
}

static void on_post_exit(struct ward__loop *l, void *userdata)
{
	struct call *c = userdata;

	c->post_exit_timer = 0;
	call_complete(c);
}

static void on_yield(struct ward__loop *l, void *userdata)
{
	struct call *c = userdata;

	c->yield_timer = 0;
	call_complete(c);
}

static void on_progress(struct ward__loop *l, void *userdata)
{
	struct call *c = userdata;
	uint64_t now = ward__now_ns();
	uint64_t elapsed = (now - c->start_ns) / 1000000;

	c->progress_timer = 0;
	if (c->progress && !c->cancelled)
		c->progress(elapsed, c->yield_ns / 1000000, c->sess ? c->sess->out.total : 0,
			    c->progress_userdata);
	ward__loop_add_timer(l, now + c->progress_interval_ms * 1000000, on_progress, c,
			     &c->progress_timer);
}

/* Completes the call now if the command is over, or soon after its exit. */
static void check_call(struct call *c)
{
	struct session *se = c->sess;

	if (se->closed) {
		call_complete(c);
		return;
	}
	if (se->exited && !c->post_exit_timer)
		ward__loop_add_timer(se->store->loop,
				     ward__now_ns() +
					     (uint64_t)WARD_SESSION_POST_EXIT_WAIT_MS * 1000000,
				     on_post_exit, c, &c->post_exit_timer);
}

static void on_kick(struct ward__loop *l, void *userdata)
{
	struct call *c = userdata;

	c->kick_timer = 0;
	if (c->until_met_at_begin) {
		call_complete(c);
		return;
	}
	check_call(c);
}

/*
 * Whether the output already waiting meets the call's `until` (fed through
 * until_met in the order it came: the head, then the tail ring oldest first).
 */
static bool until_met_waiting(struct call *c, const struct ward__capture *o)
{
	const uint8_t *d = o->buf.data;
	size_t head = MIN(o->buf.len, o->head_cap);

	if (o->total == 0 || (!c->until && !c->until_any_output))
		return false;
	if (until_met(c, d, head))
		return true;
	if (o->buf.len <= o->head_cap)
		return false;
	if (o->ring_pos == 0)
		return until_met(c, d + o->head_cap, o->buf.len - o->head_cap);
	return until_met(c, d + o->head_cap + o->ring_pos, o->tail_cap - o->ring_pos) ||
		until_met(c, d + o->head_cap, o->ring_pos);
}

/* The call becomes the session's active one: deliver its input, arm its window. */
static void call_begin(struct call *c)
{
	struct session *se = c->sess;
	struct ward__sessions *s = se->store;
	bool met;

	se->active = c;
	c->started = true;
	/* A call's window opens when its turn comes (an exec's at its spawn). */
	if (c->kind != CALL_EXEC)
		c->start_ns = ward__now_ns();
	touch(se);
	session_resume(se);
	/* What waits already answers an exec or a poll; after typed input, only what follows. */
	met = !(c->kind == CALL_WRITE && c->len > 0) && until_met_waiting(c, &se->out);
	if (c->kind == CALL_WRITE && c->len > 0) {
		if (se->tty) {
			int r = ward__proc_write(se->proc, c->chars, c->len);

			if (r < 0 && !se->exited) {
				se->active = NULL;
				call_finish(
					c,
					error_reply(
						se,
						r == -ENOBUFS
							? "the session's input queue is full (1 MiB not yet read by the process)"
							: "failed to write to stdin"));
				begin_next(se);
				return;
			}
		} else {
			/* Only "\u0003" gets here without a tty (checked when the call was made). */
			ward__proc_signal(se->proc, SIGINT);
		}
	} else if (c->kind == CALL_KILL) {
		se->killed = true;
		ward__proc_terminate(se->proc);
	}
	ward__loop_add_timer(s->loop, c->start_ns + c->yield_ns, on_yield, c, &c->yield_timer);
	if (c->progress && !c->progress_timer)
		ward__loop_add_timer(s->loop, ward__now_ns() + c->progress_interval_ms * 1000000,
				     on_progress, c, &c->progress_timer);
	/* Never complete from within the call that began it: look from the loop. */
	c->until_met_at_begin = met;
	if (se->exited || se->closed || met)
		ward__loop_add_timer(s->loop, 0, on_kick, c, &c->kick_timer);
}

static struct call *call_new(struct ward__sessions *s, enum call_kind kind,
			     ward__session_done_fn done, void *userdata)
{
	struct call *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->store = s;
	c->id = ++s->next_call_id;
	c->kind = kind;
	c->done = done;
	c->userdata = userdata;
	c->start_ns = ward__now_ns();
	c->next_all = s->calls;
	if (s->calls)
		s->calls->prev_all = c;
	s->calls = c;
	s->n_calls++;
	return c;
}

static int call_set_until(struct call *c, const char *until, size_t len, bool any,
			  struct ward_error *err)
{
	c->until_any_output = any;
	if (!until || len == 0)
		return 0;
	if (len > WARD_SESSION_UNTIL_MAX)
		return ward__error(err, -E2BIG, "session", "until is longer than %d bytes",
				   WARD_SESSION_UNTIL_MAX);
	c->until = malloc(len);
	c->window = malloc(len);
	if (!c->until || !c->window)
		return ward__error(err, -ENOMEM, "session", "out of memory");
	memcpy(c->until, until, len);
	c->until_len = len;
	return 0;
}

/* Queues a call behind the running one, or begins it. */
static int call_enqueue(struct session *se, struct call *c, struct ward_error *err)
{
	c->sess = se;
	if (!se->active) {
		call_begin(c);
		return 0;
	}
	if (se->n_queued >= WARD_SESSION_PENDING_MAX)
		return ward__error(
			err, -EBUSY, "session",
			"session %d already has %d calls waiting; wait for their results", se->id,
			WARD_SESSION_PENDING_MAX);
	if (se->queue_tail)
		se->queue_tail->next_in_session = c;
	else
		se->queue_head = c;
	se->queue_tail = c;
	se->n_queued++;
	return 0;
}

static int64_t clamp(int64_t v, int64_t lo, int64_t hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

static int64_t tokens_arg(int64_t v)
{
	return v < 0 ? WARD_MAX_OUTPUT_TOKENS_DEFAULT : MIN(v, (int64_t)WARD_MAX_OUTPUT_TOKENS_MAX);
}

/* ------------------------------------------------------------ pruning */

/*
 * Makes room for one more session, as Codex prunes: never one of the
 * WARD_SESSION_PROTECTED_MRU most recently used, never one with a call in
 * flight or waiting; the least recently used exited session first, else the
 * least recently used live one (killed).
 */
static int prune(struct ward__sessions *s, struct ward_error *err)
{
	uint64_t top[WARD_SESSION_PROTECTED_MRU] = {0};
	uint64_t threshold;
	struct session *victim = NULL;

	if (s->count < s->max)
		return 0;
	/* The smallest of the MRU set: anything used later is protected. */
	for (struct session *se = s->head; se; se = se->next) {
		uint64_t v = se->last_used;

		for (size_t i = 0; i < WARD_SESSION_PROTECTED_MRU; i++)
			if (v > top[i]) {
				uint64_t t = top[i];

				top[i] = v;
				v = t;
			}
	}
	threshold = top[WARD_SESSION_PROTECTED_MRU - 1];
	for (int pass = 0; pass < 2 && !victim; pass++)
		for (struct session *se = s->head; se; se = se->next) {
			if (se->last_used >= threshold && threshold != 0)
				continue;
			if (se->active || se->queue_head)
				continue;
			if (pass == 0 && !se->exited)
				continue;
			if (!victim || se->last_used < victim->last_used)
				victim = se;
		}
	if (!victim)
		return ward__error(
			err, -EBUSY, "session",
			"too many sessions (%zu, all busy or recently used); end one with "
			"kill_session or wait for one to finish",
			s->count);
	session_free(victim, "the session was ended to make room for a new one");
	return 0;
}

/* ------------------------------------------------------------ the store */

static char *default_shell(const char *configured)
{
	const char *cands[4] = {configured, getenv("SHELL"), "/bin/bash", "/bin/sh"};

	for (size_t i = 0; i < ELEMENTSOF(cands); i++) {
		if (!cands[i] || cands[i][0] != '/')
			continue;
		if (access(cands[i], X_OK) == 0)
			return strdup(cands[i]);
	}
	return strdup("/bin/sh");
}

/*
 * The variables that keep tools quiet and non-interactive under an agent
 * (Codex's UNIFIED_EXEC_ENV): set first, so the caller's own --env-set
 * entries override them.
 */
static const char *const quiet_env[][2] = {
	{"NO_COLOR", "1"},     {"LANG", "C.UTF-8"}, {"LC_CTYPE", "C.UTF-8"},
	{"LC_ALL", "C.UTF-8"}, {"COLORTERM", ""},   {"PAGER", "cat"},
	{"GIT_PAGER", "cat"},  {"GH_PAGER", "cat"}, {"CODEX_CI", "1"},
};

static int env_options(const struct ward_run_options *user, bool tty, struct ward_run_options **ret)
{
	struct ward_run_options *o;
	int r;

	r = ward_run_options_new(&o);
	if (r < 0)
		return r;
	for (size_t i = 0; i < ELEMENTSOF(quiet_env) && r >= 0; i++)
		r = ward_run_options_env_set(o, quiet_env[i][0], quiet_env[i][1]);
	/* A terminal session gets a terminal type that full-screen programs know. */
	if (r >= 0)
		r = ward_run_options_env_set(o, "TERM", tty ? "xterm-256color" : "dumb");
	if (r >= 0 && user) {
		o->env_inherit = user->env_inherit;
		o->env_default_excludes = user->env_default_excludes;
		for (size_t i = 0; i < user->n_env_exclude && r >= 0; i++)
			r = ward_run_options_env_exclude(o, user->env_exclude[i]);
		for (size_t i = 0; i < user->n_env_include_only && r >= 0; i++)
			r = ward_run_options_env_include_only(o, user->env_include_only[i]);
		for (size_t i = 0; i < user->n_env_set && r >= 0; i++) {
			_cleanup_free_ char *kv = strdup(user->env_set[i]);
			char *eq = kv ? strchr(kv, '=') : NULL;

			if (!eq) {
				r = -ENOMEM;
				break;
			}
			*eq = '\0';
			r = ward_run_options_env_set(o, kv, eq + 1);
		}
	}
	if (r < 0) {
		ward_run_options_free(o);
		return r;
	}
	*ret = o;
	return 0;
}

int ward__sessions_new(struct ward__loop *l, const struct ward__sessions_config *c,
		       struct ward__sessions **ret, struct ward_error *err)
{
	struct ward__sessions *s;
	struct ward_run_options *eo = NULL;
	int r;

	if (!c || !c->policy)
		return ward__error(err, -EINVAL, "session", "no policy given");
	if (c->max_sessions > WARD_SESSIONS_MAX)
		return ward__error(err, -ERANGE, "session", "at most %d sessions can be kept",
				   WARD_SESSIONS_MAX);
	s = calloc(1, sizeof(*s));
	if (!s)
		return ward__error(err, -ENOMEM, "session", "out of memory");
	s->loop = l;
	s->max = c->max_sessions ? c->max_sessions : WARD_SESSIONS_DEFAULT_MAX;
	s->login = c->login != 0;
	/* Untouched pages of this table cost nothing: only used ids are ever written. */
	s->by_id = calloc(ID_SLOTS, sizeof(*s->by_id));
	s->shell = default_shell(c->shell);
	if (!s->by_id || !s->shell) {
		r = ward__error(err, -ENOMEM, "session", "out of memory");
		goto fail;
	}
	r = ward_policy_copy(c->policy, &s->policy);
	if (r < 0) {
		ward__error(err, r, "session", "cannot copy the policy: %m");
		goto fail;
	}
	/* The store's client alone uses the sandboxes prepared for its sessions. */
	r = ward__proc_pool_new(l, &s->pool);
	if (r < 0) {
		ward__error(err, r, "session", "out of memory");
		goto fail;
	}
	/* The base directory of relative workdirs: the policy's cwd, else ours. */
	s->cwd = c->policy->cwd ? strdup(c->policy->cwd) : ward__path_absolute(".");
	if (!s->cwd) {
		r = ward__error(err, -ENOMEM, "session", "out of memory");
		goto fail;
	}
	for (int tty = 0; tty < 2; tty++) {
		r = env_options(c->env, tty, &eo);
		if (r >= 0)
			r = ward__exec_env_build(eo, s->policy,
						 tty ? &s->envp_tty : &s->envp_pipes);
		if (r < 0) {
			ward__error(err, r, "env", "cannot build the sessions' environment: %m");
			goto fail;
		}
		if (tty)
			s->env_opts = eo;
		else
			s->env_opts_pipes = eo;
		eo = NULL;
	}
	*ret = s;
	return 0;
fail:
	ward_run_options_free(eo);
	ward__sessions_free(s);
	return r;
}

void ward__sessions_free(struct ward__sessions *s)
{
	if (!s)
		return;
	/* Calls in flight are forgotten, not answered: whoever made them is going away too. */
	for (struct call *c = s->calls; c; c = c->next_all)
		c->cancelled = true;
	while (s->head)
		session_free(s->head, "the session store is closing");
	while (s->calls)
		call_free(s, s->calls);
	ward__proc_pool_free(s->pool);
	ward_policy_free(s->policy);
	ward_run_options_free(s->env_opts);
	ward_run_options_free(s->env_opts_pipes);
	strv_freep(&s->envp_pipes);
	strv_freep(&s->envp_tty);
	free(s->by_id);
	free(s->cwd);
	free(s->shell);
	free(s);
}

/* ------------------------------------------------------------ the calls */

/*
 * The environment with PWD naming dir, when the environment carries PWD (it
 * names the policy's cwd there): NULL with *ret untouched when there is none.
 */
static int env_with_pwd(char *const *envp, const char *dir, char ***ret)
{
	size_t n = 0, at = SIZE_MAX;
	char **v;

	for (; envp && envp[n]; n++)
		if (strncmp(envp[n], "PWD=", 4) == 0)
			at = n;
	if (at == SIZE_MAX)
		return 0;
	v = calloc(n + 1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		v[i] = i == at ? NULL : strdup(envp[i]);
		if (i == at && asprintf(&v[i], "PWD=%s", dir) < 0)
			v[i] = NULL;
		if (!v[i]) {
			strv_freep(&v);
			return -ENOMEM;
		}
	}
	*ret = v;
	return 0;
}

/*
 * The command's directory: workdir (relative to the store's cwd), which must
 * be a directory. It is only where the command starts: the writable roots
 * stay the store policy's, whatever directory the model names.
 */
static int resolve_workdir(struct ward__sessions *s, const char *workdir, char **ret,
			   struct ward_error *err)
{
	_cleanup_free_ char *w = NULL;
	struct stat st;

	if (workdir && workdir[0])
		w = workdir[0] == '/' ? strdup(workdir) : ward__path_join(s->cwd, workdir);
	else
		w = strdup(s->cwd);
	if (!w)
		return ward__error(err, -ENOMEM, "session", "out of memory");
	if (stat(w, &st) < 0)
		return ward__error(err, -errno, "session", "workdir '%s': %m", w);
	if (!S_ISDIR(st.st_mode))
		return ward__error(err, -ENOTDIR, "session", "workdir '%s' is not a directory", w);
	*ret = TAKE_PTR(w);
	return 0;
}

static int start_session(struct ward__sessions *s, const struct ward__exec_args *a, char *workdir,
			 struct session **ret, struct ward_error *err)
{
	_cleanup_strv_free_ char **own_env = NULL;
	struct ward__proc_spec spec = {0};
	struct session *se;
	const char *shell = a->shell && a->shell[0] ? a->shell : s->shell;
	int login = a->login < 0 ? s->login : a->login;
	char *argv[4];
	int id, r;

	id = allocate_id(s);
	if (id < 0)
		return ward__error(err, id, "session", "no free session id");
	se = calloc(1, sizeof(*se));
	if (!se)
		return ward__error(err, -ENOMEM, "session", "out of memory");
	se->store = s;
	se->id = id;
	se->tty = a->tty;
	se->started = time(NULL);
	se->workdir = workdir;
	ward__capture_init(&se->out, WARD_SESSION_OUTPUT_MAX);
	/* Resolved per session: what exists (a .git made since) is looked at anew. */
	r = ward_policy_copy(a->policy ? a->policy : s->policy, &se->policy);
	if (r >= 0 && a->unsandboxed)
		r = ward_policy_set_mode(se->policy, WARD_MODE_DANGER_FULL_ACCESS);
	if (r < 0) {
		ward__error(err, r, "session", "cannot set up the session's policy: %m");
		goto fail;
	}
	if (a->unsandboxed) {
		/*
		 * Danger-full-access refuses what it cannot honour, and an approved
		 * escalation drops it, except a denied read: that exists only inside
		 * the sandbox, so such a policy never runs outside (as Codex).
		 */
		ward__strv_release(&se->policy->deny_read);
		ward__strv_release(&se->policy->protect);
		ward__strv_release(&se->policy->unix_sockets);
		se->policy->network = true;
	}
	r = ward_policy_resolve(se->policy, err);
	if (r < 0)
		goto fail;
	se->command = strdup(a->cmd);
	if (!se->command) {
		r = ward__error(err, -ENOMEM, "session", "out of memory");
		goto fail;
	}
	argv[0] = (char *)shell;
	argv[1] = login ? (char *)"-lc" : (char *)"-c";
	argv[2] = (char *)a->cmd;
	argv[3] = NULL;
	spec.policy = se->policy;
	spec.pool = s->pool;
	spec.argv = argv;
	spec.cwd = se->workdir;
	if (a->unsandboxed || a->policy) {
		r = ward__exec_env_build(a->tty ? s->env_opts : s->env_opts_pipes, se->policy,
					 &own_env);
		if (r < 0) {
			ward__error(err, r, "env", "cannot build the command's environment: %m");
			goto fail;
		}
	}
	spec.envp = own_env ? own_env : a->tty ? s->envp_tty : s->envp_pipes;
	if (strcmp(se->workdir, se->policy->resolved_cwd) != 0) {
		char **v = NULL;

		r = env_with_pwd(spec.envp, se->workdir, &v);
		if (r < 0) {
			ward__error(err, r, "env", "cannot build the command's environment: %m");
			goto fail;
		}
		if (v) {
			strv_freep(&own_env);
			own_env = v;
			spec.envp = own_env;
		}
	}
	spec.tty = a->tty;
	spec.rows = a->rows;
	spec.cols = a->cols;
	r = ward__proc_start(s->loop, &spec, &session_ops, se, &se->proc, err);
	if (r < 0)
		goto fail;
	s->by_id[id - WARD_SESSION_ID_MIN] = se;
	s->count++;
	se->next = s->head;
	if (s->head)
		s->head->prev = se;
	s->head = se;
	touch(se);
	*ret = se;
	return 0;
fail:
	se->workdir = NULL; /* the caller's still */
	ward__capture_release(&se->out);
	ward_policy_free(se->policy);
	free(se->command);
	free(se);
	return r;
}

int ward__sessions_exec(struct ward__sessions *s, const struct ward__exec_args *a,
			ward__session_done_fn done, void *userdata, uint64_t *ret_call,
			struct ward_error *err)
{
	_cleanup_free_ char *workdir = NULL;
	struct session *se = NULL;
	struct call *c;
	uint64_t t0;
	int r;

	if (!a || !a->cmd)
		return ward__error(err, -EINVAL, "session", "cmd is required");
	if (!a->cmd[0])
		return ward__error(err, -EINVAL, "session", "cmd is empty");
	if (strlen(a->cmd) > WARD_SESSION_CMD_MAX)
		return ward__error(err, -E2BIG, "session",
				   "cmd is longer than %zu bytes (the kernel's limit for one "
				   "argument): write the script to a file and run that",
				   WARD_SESSION_CMD_MAX);
	if (a->shell && a->shell[0] && a->shell[0] != '/' && strchr(a->shell, '/'))
		return ward__error(err, -EINVAL, "session",
				   "shell '%s' must be an absolute path or a name in PATH",
				   a->shell);
	if (a->unsandboxed && (a->policy ? a->policy : s->policy)->deny_read.n > 0)
		return ward__error(
			err, -EPERM, "session",
			"cannot run outside the sandbox: the policy denies reads, which only "
			"the sandbox enforces");
	r = resolve_workdir(s, a->workdir, &workdir, err);
	if (r < 0)
		return r;
	/* Only a call that is going to start a session may end another one. */
	r = prune(s, err);
	if (r < 0)
		return r;
	t0 = ward__now_ns();
	r = start_session(s, a, workdir, &se, err);
	if (r < 0)
		return r;
	workdir = NULL;
	c = call_new(s, CALL_EXEC, done, userdata);
	if (!c) {
		session_free(se, "out of memory");
		return ward__error(err, -ENOMEM, "session", "out of memory");
	}
	/* The wall time and the window include the spawn. */
	c->start_ns = t0;
	c->yield_ns = (uint64_t)clamp(a->yield_ms < 0 ? WARD_EXEC_YIELD_DEFAULT_MS : a->yield_ms,
				      WARD_EXEC_YIELD_MIN_MS, WARD_EXEC_YIELD_MAX_MS) *
		1000000;
	c->max_tokens = tokens_arg(a->max_output_tokens);
	r = call_set_until(c, a->until, a->until_len, a->until_any_output, err);
	if (r < 0) {
		call_free(s, c);
		session_free(se, "out of memory");
		return r;
	}
	if (ret_call)
		*ret_call = c->id;
	call_enqueue(se, c, NULL);
	return 0;
}

/* Input queued in every session's stdin, and in calls waiting their turn. */
static size_t input_held(struct ward__sessions *s)
{
	size_t n = 0;

	for (struct session *se = s->head; se; se = se->next)
		if (se->tty)
			n += ward__proc_stdin_queued(se->proc);
	for (struct call *c = s->calls; c; c = c->next_all)
		if (!c->started)
			n += c->len;
	return n;
}

int ward__sessions_write(struct ward__sessions *s, const struct ward__write_args *a,
			 ward__session_done_fn done, void *userdata, uint64_t *ret_call,
			 struct ward_error *err)
{
	struct session *se;
	struct call *c;
	int64_t y;
	int r;

	if (!a)
		return ward__error(err, -EINVAL, "session", "invalid arguments");
	se = lookup(s, a->session_id);
	if (!se)
		return ward__error(err, -ENOENT, "session", "Unknown process id %d", a->session_id);
	if (a->len > WARD_SESSION_CHARS_MAX)
		return ward__error(err, -E2BIG, "session", "chars is longer than %zu bytes",
				   WARD_SESSION_CHARS_MAX);
	if (a->len > 0 && !se->tty && !(a->len == 1 && a->chars[0] == '\x03'))
		return ward__error(err, -EPIPE, "session",
				   "stdin is closed for this session; rerun exec_command with "
				   "tty=true to keep stdin open");
	if (a->len > 0 && se->exited)
		return ward__error(err, -EPIPE, "session",
				   "process %d has exited; poll it with empty chars to collect its "
				   "output and exit code",
				   se->id);
	if (a->len > 1 && input_held(s) + a->len > WARD_SESSIONS_BYTES_BUDGET)
		return ward__error(err, -ENOBUFS, "session",
				   "the sessions hold %zu MiB of input not yet read by their "
				   "processes; wait for them to read it",
				   WARD_SESSIONS_BYTES_BUDGET >> 20);
	c = call_new(s, CALL_WRITE, done, userdata);
	if (!c)
		return ward__error(err, -ENOMEM, "session", "out of memory");
	if (a->len > 0) {
		c->chars = malloc(a->len);
		if (!c->chars) {
			call_free(s, c);
			return ward__error(err, -ENOMEM, "session", "out of memory");
		}
		memcpy(c->chars, a->chars, a->len);
		c->len = a->len;
		y = a->yield_ms < 0 ? WARD_WRITE_YIELD_DEFAULT_MS : a->yield_ms;
		y = clamp(y, WARD_EXEC_YIELD_MIN_MS, WARD_EXEC_YIELD_MAX_MS);
	} else {
		y = a->yield_ms < 0 ? WARD_WRITE_YIELD_DEFAULT_MS : a->yield_ms;
		y = clamp(y, WARD_POLL_YIELD_MIN_MS, WARD_POLL_YIELD_MAX_MS);
	}
	c->yield_ns = (uint64_t)y * 1000000;
	c->max_tokens = tokens_arg(a->max_output_tokens);
	r = call_set_until(c, a->until, a->until_len, a->until_any_output, err);
	if (r >= 0)
		r = call_enqueue(se, c, err);
	if (r < 0) {
		call_free(s, c);
		return r;
	}
	if (ret_call)
		*ret_call = c->id;
	return 0;
}

int ward__sessions_kill(struct ward__sessions *s, int session_id, ward__session_done_fn done,
			void *userdata, uint64_t *ret_call, struct ward_error *err)
{
	struct session *se;
	struct call *c;

	se = lookup(s, session_id);
	if (!se)
		return ward__error(err, -ENOENT, "session", "Unknown process id %d", session_id);
	if (se->kill_call)
		return ward__error(err, -EALREADY, "session", "session %d is already being killed",
				   session_id);
	c = call_new(s, CALL_KILL, done, userdata);
	if (!c)
		return ward__error(err, -ENOMEM, "session", "out of memory");
	c->sess = se;
	c->yield_ns = (uint64_t)WARD_EXEC_YIELD_MAX_MS * 1000000;
	c->max_tokens = WARD_MAX_OUTPUT_TOKENS_DEFAULT;
	if (ret_call)
		*ret_call = c->id;
	/* The kill takes effect at once, ahead of any queued call. */
	se->killed = true;
	ward__proc_terminate(se->proc);
	if (se->active) {
		/* The call in flight collects the last output; this one reports the end. */
		se->kill_call = c;
		return 0;
	}
	call_begin(c);
	return 0;
}

void ward__sessions_cancel(struct ward__sessions *s, uint64_t call)
{
	struct session *se;
	struct call *c;

	for (c = s->calls; c && c->id != call; c = c->next_all)
		;
	if (!c || c->cancelled)
		return;
	c->cancelled = true;
	se = c->sess;
	if (!se || se->kill_call == c)
		return; /* the kill goes on; its end is not reported */
	if (se->active == c) {
		/* It stops waiting now; its output stays for the next call. */
		se->active = NULL;
		call_free(s, c);
		begin_next(se);
		return;
	}
	for (struct call **pp = &se->queue_head; *pp; pp = &(*pp)->next_in_session) {
		if (*pp != c)
			continue;
		*pp = c->next_in_session;
		if (se->queue_tail == c) {
			se->queue_tail = NULL;
			for (struct call *q = se->queue_head; q; q = q->next_in_session)
				se->queue_tail = q;
		}
		se->n_queued--;
		call_free(s, c);
		return;
	}
}

int ward__sessions_set_progress(struct ward__sessions *s, uint64_t call, uint64_t interval_ms,
				ward__session_progress_fn fn, void *userdata)
{
	for (struct call *c = s->calls; c; c = c->next_all)
		if (c->id == call) {
			c->progress = fn;
			c->progress_userdata = userdata;
			c->progress_interval_ms = MAX(interval_ms, (uint64_t)100);
			if (c->started && !c->progress_timer)
				return ward__loop_add_timer(
					s->loop, ward__now_ns() + c->progress_interval_ms * 1000000,
					on_progress, c, &c->progress_timer);
			return 0;
		}
	return -ENOENT;
}

json_t *ward__sessions_list(struct ward__sessions *s)
{
	json_t *a = json_array();

	for (struct session *se = s->head; a && se; se = se->next) {
		json_t *o = json_object();
		char when[32];
		struct tm tm;

		if (!o)
			break;
		gmtime_r(&se->started, &tm);
		strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
		json_object_set_new(o, "session_id", json_integer(se->id));
		json_object_set_new(o, "command", json_string(se->command));
		json_object_set_new(o, "workdir", json_string(se->workdir));
		json_object_set_new(o, "tty", json_boolean(se->tty));
		json_object_set_new(o, "running", json_boolean(!se->exited));
		if (se->exited)
			json_object_set_new(o, "exit_code",
					    json_integer(ward__proc_exit_code(se->proc)));
		json_object_set_new(o, "started", json_string(when));
		json_object_set_new(o, "pending_output_bytes",
				    json_integer((json_int_t)se->out.total));
		json_object_set_new(o, "busy", json_boolean(se->active != NULL));
		json_array_append_new(a, o);
	}
	return a;
}

void ward__sessions_terminate_all(struct ward__sessions *s)
{
	for (struct session *se = s->head; se; se = se->next)
		ward__proc_terminate(se->proc);
}

size_t ward__sessions_count(const struct ward__sessions *s)
{
	return s->count;
}

const char *ward__sessions_shell(const struct ward__sessions *s)
{
	return s->shell;
}

const char *ward__sessions_cwd(const struct ward__sessions *s)
{
	return s->cwd;
}

size_t ward__sessions_calls_in_flight(const struct ward__sessions *s)
{
	return s->n_calls;
}
