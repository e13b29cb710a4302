/* SPDX-License-Identifier: MIT */
/*
 * A call's reply (see session.h): its text and JSON forms, as Codex's
 * unified exec writes them, and the output cut to a token budget.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "basic/buf.h"
#include "basic/util.h"
#include "session/session.h"

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
	json_decref(r->changes);
	free(r);
}

static const char *denial_errno_name(int e)
{
	return e > 0 ? strerror(e) : "removed";
}

/*
 * What the command changed (review and undo, src/changes' JSON): one line
 * with the run, its state and the counts, what can be done with it, then a
 * line per change (at most a few).
 */
static int changes_text(struct ward__buf *b, const json_t *c)
{
	const json_t *counts = json_object_get(c, "counts"), *list = json_object_get(c, "changes");
	const char *state = json_string_value(json_object_get(c, "state"));
	json_int_t run = json_integer_value(json_object_get(c, "run"));
	bool held = state && strcmp(state, "held") == 0;
	size_t i, shown = 0;
	json_t *e;
	int q;

	q = ward__buf_printf(
		b,
		"Changes: run %" JSON_INTEGER_FORMAT " %s: %" JSON_INTEGER_FORMAT
		" added, %" JSON_INTEGER_FORMAT " modified, %" JSON_INTEGER_FORMAT
		" deleted (%s)\n",
		run, state ? state : "?", json_integer_value(json_object_get(counts, "added")),
		json_integer_value(json_object_get(counts, "modified")),
		json_integer_value(json_object_get(counts, "deleted")),
		held ? "changes_apply or changes_discard decides; the host has none of them yet"
		     : "changes_undo takes them back");
	json_array_foreach(list, i, e)
	{
		const char *path = json_string_value(json_object_get(e, "path"));
		const char *what = json_string_value(json_object_get(e, "change"));

		if (q < 0 || !path || !what || json_object_get(e, "inside"))
			continue;
		if (shown++ >= 10) {
			q = ward__buf_printf(b, "  ... (changes_show lists them all)\n");
			break;
		}
		q = ward__buf_printf(b, "  %s %s%s%s\n", what, path,
				     json_object_get(e, "refused") ? " (refused: protected)" : "",
				     json_object_get(e, "cannot_undo") ? " (cannot be undone)"
								       : "");
	}
	return q;
}

char *ward__session_reply_text(const struct ward__session_reply *r)
{
	struct ward__buf b;
	int q;

	ward__buf_init(&b, r->output_len + 128 * 1024 + (size_t)r->n_denials * 4200);
	q = ward__buf_printf(&b, "Chunk ID: %s\nWall time: %.4f seconds\n", r->chunk_id,
			     (double)r->wall_ns / 1e9);
	if (q >= 0 && r->exited)
		q = ward__buf_printf(&b, "Process exited with code %d\n", r->exit_code);
	else if (q >= 0)
		q = ward__buf_printf(&b, "Process running with session ID %d\n", r->session_id);
	/* The model reads why a command died: a limit is not a crash of its own. */
	if (q >= 0 && r->exited && r->limits.hit && r->limits.hit_resource == WARD_RES_MEMORY)
		q = ward__buf_printf(
			&b, "Limit: killed at the %smemory limit of %llu bytes (peak %llu)\n",
			r->limits.hit_budget ? "server's " : "",
			(unsigned long long)r->limits.hit_max,
			(unsigned long long)r->limits.hit_peak);
	else if (q >= 0 && r->exited && r->limits.hit)
		q = ward__buf_printf(&b,
				     "Limit: %llu forks refused at the %sprocess limit of %llu\n",
				     (unsigned long long)r->limits.hit_count,
				     r->limits.hit_budget ? "server's " : "",
				     (unsigned long long)r->limits.hit_max);
	if (q >= 0)
		q = ward__buf_printf(&b, "Original token count: %" PRIu64 "\n",
				     r->original_token_count);
	if (q >= 0 && r->note)
		q = ward__buf_printf(&b, "Note: %s\n", r->note);
	for (size_t i = 0; q >= 0 && i < r->n_denials; i++)
		q = r->denials[i].reason && strcmp(r->denials[i].access, "network") == 0
			? ward__buf_printf(&b, "Sandbox denied: network %s (%s)\n",
					   r->denials[i].target, r->denials[i].reason)
			: ward__buf_printf(
				  &b, "Sandbox denied: %s %s%s%s (%s%s%s)\n", r->denials[i].access,
				  r->denials[i].target, r->denials[i].syscall[0] ? " by " : "",
				  r->denials[i].syscall, denial_errno_name(r->denials[i].error),
				  r->denials[i].reason ? "; " : "",
				  r->denials[i].reason ? r->denials[i].reason : "");
	if (q >= 0 && r->denials_dropped)
		q = ward__buf_printf(&b, "Sandbox denied: %zu more\n", r->denials_dropped);
	if (q >= 0 && r->changes)
		q = changes_text(&b, r->changes);
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

/*
 * One refusal as the text's "Sandbox denied:" line says it: access, target,
 * syscall, error, and which protection refused it and why when ward knows.
 */
static json_t *denial_line(const struct ward__denial *x)
{
	struct ward__buf b;
	json_t *v;

	ward__buf_init(&b, strlen(x->target) + 256);
	if ((x->reason && strcmp(x->access, "network") == 0
		     ? ward__buf_printf(&b, "network %s (%s)", x->target, x->reason)
		     : ward__buf_printf(&b, "%s %s%s%s (%s%s%s)", x->access, x->target,
					x->syscall[0] ? " by " : "", x->syscall,
					denial_errno_name(x->error), x->reason ? "; " : "",
					x->reason ? x->reason : "")) < 0) {
		ward__buf_release(&b);
		return NULL;
	}
	v = ward__json_string_lossy(b.data, b.len);
	ward__buf_release(&b);
	return v;
}

/*
 * The structured result is what the model reads: Codex and Claude Code hand
 * a model the structuredContent of a tool result as JSON and drop the text
 * when both are there. So it says everything the text says, in the text's
 * order (the figures, the notes and refusals, then the output), each
 * refusal as the sentence the text prints, and the wall time to 0.1 ms as
 * the text rounds it (a double's 17 digits are noise to a model).
 */
json_t *ward__session_reply_json(const struct ward__session_reply *r)
{
	json_t *o = json_object(), *d;
	uint64_t tenths_ms = (r->wall_ns + 50000) / 100000;

	if (!o)
		return NULL;
	json_object_set_new(o, "chunk_id", json_string(r->chunk_id));
	json_object_set_new(o, "wall_time_seconds", json_real((double)tenths_ms / 1e4));
	if (r->exited)
		json_object_set_new(o, "exit_code", json_integer(r->exit_code));
	else
		json_object_set_new(o, "session_id", json_integer(r->session_id));
	json_object_set_new(o, "original_token_count",
			    json_integer((json_int_t)r->original_token_count));
	if (r->truncated)
		json_object_set_new(o, "truncated", json_true());
	if (r->note)
		json_object_set_new(o, "note", ward__json_string_lossy(r->note, strlen(r->note)));
	if (r->killed)
		json_object_set_new(o, "killed", json_true());
	/* What the command used and the limit it hit, once it is over (as ward run --json). */
	if (r->exited)
		ward__limits_json_add(o, &r->limits);
	if (r->denied < 0) {
		/* Without an exact signal from the host, say so; never guess (as ward run --json). */
		json_object_set_new(o, "sandbox_denied", json_string("unavailable"));
		json_object_set_new(o, "denials", json_string("unavailable"));
	} else {
		json_object_set_new(o, "sandbox_denied", json_boolean(r->denied > 0));
		d = json_array();
		for (size_t i = 0; d && i < r->n_denials; i++)
			json_array_append_new(d, denial_line(&r->denials[i]));
		json_object_set_new(o, "denials", d ? d : json_array());
	}
	if (r->denials_dropped)
		json_object_set_new(o, "denials_dropped",
				    json_integer((json_int_t)r->denials_dropped));
	if (r->changes)
		json_object_set(o, "changes", r->changes);
	json_object_set_new(o, "output", ward__json_string_lossy(r->output, r->output_len));
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
