/* SPDX-License-Identifier: MIT */
/*
 * A session's life and its calls (see calls.h): the output a session holds
 * for its next call, its end, and each call from its turn in the queue to
 * its reply (the yield window, `until`, the exit seen, progress).
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "basic/cleanup.h"
#include "basic/error.h"
#include "basic/util.h"
#include "changes/changes.h"
#include "session/session.h"
#include "session/calls.h"

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

struct session *ward__session_lookup(struct ward__sessions *s, int id)
{
	if (id < WARD_SESSION_ID_MIN || id > WARD_SESSION_ID_MAX)
		return NULL;
	return s->by_id[id - WARD_SESSION_ID_MIN];
}

int ward__session_allocate_id(struct ward__sessions *s)
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

void ward__session_touch(struct session *se)
{
	se->last_used = ++se->store->use_clock;
}

/* ------------------------------------------------------------ sessions */

static void call_finish(struct call *c, struct ward__session_reply *reply);
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
	if (ward__session_lookup(s, se->id) == se) {
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
		if (se->exited)
			r->limits = ward__proc_sandbox(se->proc)->limits;
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
/*
 * The command ended: its sandbox is torn down (the layer unmounted), then
 * its changes are read, and recorded (applied, kept for undo) or held, for
 * the reply that reports the exit.
 */
static void end_changes(struct session *se, int exit_code)
{
	struct ward_error e = {0};
	int r;

	if (!se->crun)
		return;
	r = ward__proc_wait_gone(se->proc);
	if (r >= 0)
		r = ward__changes_end(se->crun, se->policy, exit_code, &e);
	if (r < 0 &&
	    asprintf(&se->changes_note, "the changes could not be %s: %s%s%s",
		     se->crun->mode == WARD_RUN_HOLD ? "held" : "recorded", e.message,
		     e.hint[0] ? " (hint: " : "", e.hint[0] ? e.hint : "") < 0)
		se->changes_note = NULL;
	/* Held changes are listed whole (they wait for a decision); recorded ones in part. */
	if (se->crun->id != 0)
		se->changes =
			ward__changes_to_json(se->crun, se->crun->mode == WARD_RUN_HOLD ? 200 : 20);
	ward__changes_run_free(se->crun);
	se->crun = NULL;
}

void ward__session_free(struct session *se, const char *why)
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
	/* A session ended under its command: what it changed is still recorded or held. */
	end_changes(se, ward__proc_exit_code(se->proc));
	json_decref(se->changes);
	free(se->changes_note);
	ward__proc_free(se->proc);
	out_release(se);
	ward_policy_free(se->policy);
	free(se->login_note);
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
	end_changes(se, ward__proc_exit_code(p));
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

const struct ward__proc_ops ward__session_proc_ops = {
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

void ward__session_call_free(struct ward__sessions *s, struct call *c)
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

	ward__session_call_free(s, c);
	if (cancelled || !done)
		ward__session_reply_free(reply);
	else
		done(reply, ud);
}

void ward__session_call_fail(struct call *c, const char *msg)
{
	c->sess = NULL;
	call_finish(c, error_reply(NULL, msg));
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

static char *setup_note(struct session *se)
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
	if (sb->fallback_missing[0] && !se->fallback_noted) {
		se->fallback_noted = true;
		if (asprintf(&note,
			     sb->isolated ? "running in namespaces; not guaranteed here: %s"
					  : "running without namespaces; not guaranteed here: %s",
			     sb->fallback_missing) < 0)
			note = NULL;
	}
	return note;
}

/* The reply's note: the setup's (above), and once how the login shell ran. */
static char *note_for(struct session *se)
{
	char *note = setup_note(se), *both = NULL;

	/* Why the changes are not recorded (or could not be), said once. */
	if (se->changes_note) {
		if (!note)
			note = TAKE_PTR(se->changes_note);
		else if (asprintf(&both, "%s; %s", note, se->changes_note) >= 0) {
			free(note);
			note = TAKE_PTR(both);
			free(se->changes_note);
			se->changes_note = NULL;
		}
	}
	if (!se->login_note)
		return note;
	if (!note)
		return TAKE_PTR(se->login_note);
	if (asprintf(&both, "%s; %s", note, se->login_note) < 0)
		return note;
	free(note);
	free(se->login_note);
	se->login_note = NULL;
	return both;
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
	ward__session_touch(se);
	if (r) {
		chunk_id(r->chunk_id);
		r->wall_ns = ward__now_ns() - c->start_ns;
		r->session_id = se->id;
		r->exited = se->exited;
		r->exit_code = se->exited ? ward__proc_exit_code(se->proc) : 0;
		if (se->exited)
			r->limits = ward__proc_sandbox(se->proc)->limits;
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
		if (se->exited)
			r->changes = TAKE_PTR(se->changes);
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
		ward__session_free(se, why);
		return;
	}
	ward__session_begin_next(se);
	(void)s;
}

/*
 * The next call becomes the active one: a kill_session that waited for the
 * call in flight first (it reports the end), else the next one queued.
 */
void ward__session_begin_next(struct session *se)
{
	struct call *n = se->queue_head;

	if (se->kill_call) {
		n = se->kill_call;
		se->kill_call = NULL;
		ward__session_call_begin(n);
		return;
	}

	if (!n)
		return;
	se->queue_head = n->next_in_session;
	if (!se->queue_head)
		se->queue_tail = NULL;
	se->n_queued--;
	n->next_in_session = NULL;
	ward__session_call_begin(n);
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

void ward__session_on_progress(struct ward__loop *l, void *userdata)
{
	struct call *c = userdata;
	uint64_t now = ward__now_ns();
	uint64_t elapsed = (now - c->start_ns) / 1000000;

	c->progress_timer = 0;
	if (c->progress && !c->cancelled)
		c->progress(elapsed, c->yield_ns / 1000000, c->sess ? c->sess->out.total : 0,
			    c->progress_userdata);
	ward__loop_add_timer(l, now + c->progress_interval_ms * 1000000, ward__session_on_progress,
			     c, &c->progress_timer);
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
void ward__session_call_begin(struct call *c)
{
	struct session *se = c->sess;
	struct ward__sessions *s = se->store;
	bool met;

	se->active = c;
	c->started = true;
	/* A call's window opens when its turn comes (an exec's at its spawn). */
	if (c->kind != CALL_EXEC)
		c->start_ns = ward__now_ns();
	ward__session_touch(se);
	session_resume(se);
	/* What waits already answers an exec or a poll; after typed input, only what follows. */
	met = !(c->kind == CALL_WRITE && c->len > 0) && until_met_waiting(c, &se->out);
	if (c->kind == CALL_WRITE && c->len > 0) {
		if (se->tty) {
			int r = ward__proc_write(se->proc, c->chars, c->len);

			/* Now in the stdin queue, which the store's budget counts: not twice. */
			free(c->chars);
			c->chars = NULL;

			if (r < 0 && !se->exited) {
				se->active = NULL;
				call_finish(
					c,
					error_reply(
						se,
						r == -ENOBUFS
							? "the session's input queue is full (1 MiB not yet read by the process)"
							: "failed to write to stdin"));
				ward__session_begin_next(se);
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
				     ward__session_on_progress, c, &c->progress_timer);
	/* Never complete from within the call that began it: look from the loop. */
	c->until_met_at_begin = met;
	if (se->exited || se->closed || met)
		ward__loop_add_timer(s->loop, 0, on_kick, c, &c->kick_timer);
}

struct call *ward__session_call_new(struct ward__sessions *s, enum call_kind kind,
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

int ward__session_call_set_until(struct call *c, const char *until, size_t len, bool any,
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
int ward__session_call_enqueue(struct session *se, struct call *c, struct ward_error *err)
{
	c->sess = se;
	if (!se->active) {
		ward__session_call_begin(c);
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
