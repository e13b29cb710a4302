/* SPDX-License-Identifier: MIT */
/*
 * The output of `ward policy check`: the JSON object `codex execpolicy check`
 * prints (execpolicy/src/execpolicycheck.rs), byte for byte, so that scripts
 * written against one work with the other. Field names and order come from
 * Codex's serde derives: "matchedRules" (each {"prefixRuleMatch":
 * {"matchedPrefix", "decision", "resolvedProgram" when set, "justification"
 * when set}}), then "decision" (the strictest) only when something matched.
 * Compact, or serde_json's pretty form (two-space indent, "key": value).
 *
 * And `ward policy check --effective`: what the approval runner enforces
 * (rules/evaluate.c), in the same shape with what only ward has added: every
 * counted match with the command it matched and the wrapper chain that
 * leads to it, the commands no rule decided, the effective decision.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/buf.h"
#include "rules/rules.h"

#define CHECK_JSON_MAX ((size_t)64 << 20)

int ward__rules_json_string(struct ward__buf *b, const char *s)
{
	static const char hex[] = "0123456789abcdef";
	int r = ward__buf_append_byte(b, '"');

	for (const unsigned char *p = (const unsigned char *)s; r >= 0 && *p; p++) {
		char esc[7];

		/* serde_json: short escapes where JSON has them, \u00xx (lowercase) for the other controls. */
		switch (*p) {
		case '"':
			r = ward__buf_append(b, "\\\"", 2);
			break;
		case '\\':
			r = ward__buf_append(b, "\\\\", 2);
			break;
		case '\b':
			r = ward__buf_append(b, "\\b", 2);
			break;
		case '\f':
			r = ward__buf_append(b, "\\f", 2);
			break;
		case '\n':
			r = ward__buf_append(b, "\\n", 2);
			break;
		case '\r':
			r = ward__buf_append(b, "\\r", 2);
			break;
		case '\t':
			r = ward__buf_append(b, "\\t", 2);
			break;
		default:
			if (*p < 0x20) {
				memcpy(esc, "\\u00", 4);
				esc[4] = hex[*p >> 4];
				esc[5] = hex[*p & 15];
				r = ward__buf_append(b, esc, 6);
			} else {
				r = ward__buf_append_byte(b, *p);
			}
			break;
		}
	}
	if (r >= 0)
		r = ward__buf_append_byte(b, '"');
	return r;
}

/* A small writer for the two layouts. */
struct jw {
	struct ward__buf *b;
	bool pretty;
	int depth;
	bool first; /* no member written yet at this depth */
	int r;
};

static void jw_raw(struct jw *w, const char *s)
{
	if (w->r >= 0)
		w->r = ward__buf_append_str(w->b, s);
}

static void jw_newline(struct jw *w)
{
	if (!w->pretty)
		return;
	jw_raw(w, "\n");
	for (int i = 0; i < w->depth; i++)
		jw_raw(w, "  ");
}

/* Starts a member or an element: the comma, the line break, the key. */
static void jw_item(struct jw *w, const char *key)
{
	if (!w->first)
		jw_raw(w, ",");
	w->first = false;
	jw_newline(w);
	if (key) {
		if (w->r >= 0)
			w->r = ward__rules_json_string(w->b, key);
		jw_raw(w, w->pretty ? ": " : ":");
	}
}

static void jw_open(struct jw *w, const char *bracket)
{
	jw_raw(w, bracket);
	w->depth++;
	w->first = true;
}

static void jw_close(struct jw *w, const char *bracket)
{
	bool empty = w->first;

	w->depth--;
	if (!empty)
		jw_newline(w);
	jw_raw(w, bracket);
	w->first = false;
}

static void jw_string(struct jw *w, const char *s)
{
	if (w->r >= 0)
		w->r = ward__rules_json_string(w->b, s);
}

int ward__rules_check_json(const struct ward__rules *r, const char *const *argv, size_t argc,
			   const struct ward__match_opts *opts, bool pretty, char **ret_json)
{
	struct ward__match_list l = {0};
	struct ward__buf b;
	struct jw w = {.b = &b, .pretty = pretty, .first = true};
	enum ward__decision d;
	uint8_t *out;
	int ret;

	ret = ward__buf_init(&b, CHECK_JSON_MAX);
	if (ret < 0)
		return ret;
	ret = ward__rules_match(r, argv, argc, opts, &l);
	if (ret < 0)
		goto out;

	jw_open(&w, "{");
	jw_item(&w, "matchedRules");
	jw_open(&w, "[");
	for (size_t i = 0; i < l.n; i++) {
		const struct ward__rule_match *m = &l.v[i];

		jw_item(&w, NULL);
		jw_open(&w, "{");
		jw_item(&w, "prefixRuleMatch");
		jw_open(&w, "{");
		jw_item(&w, "matchedPrefix");
		jw_open(&w, "[");
		jw_item(&w, NULL);
		jw_string(&w, m->rule->first);
		for (size_t k = 1; k < m->n_prefix; k++) {
			jw_item(&w, NULL);
			jw_string(&w, argv[k]);
		}
		jw_close(&w, "]");
		jw_item(&w, "decision");
		jw_string(&w, ward__decision_to_string(m->group->decision));
		if (m->resolved_program) {
			jw_item(&w, "resolvedProgram");
			jw_string(&w, m->resolved_program);
		}
		if (m->group->justification) {
			jw_item(&w, "justification");
			jw_string(&w, m->group->justification);
		}
		jw_close(&w, "}");
		jw_close(&w, "}");
	}
	jw_close(&w, "]");
	if (ward__match_list_decision(&l, &d)) {
		jw_item(&w, "decision");
		jw_string(&w, ward__decision_to_string(d));
	}
	jw_close(&w, "}");
	ret = w.r;
	if (ret < 0)
		goto out;
	out = ward__buf_steal(&b, NULL);
	if (!out) {
		ret = -ENOMEM;
		goto out;
	}
	*ret_json = (char *)out;
out:
	ward__match_list_release(&l);
	ward__buf_release(&b);
	return ret;
}

/* ------------------------------------------------------------ the effective decision */

static void jw_words(struct jw *w, const char *const *argv, size_t argc)
{
	jw_open(w, "[");
	for (size_t i = 0; i < argc; i++) {
		jw_item(w, NULL);
		jw_string(w, argv[i]);
	}
	jw_close(w, "]");
}

/* The wrappers that lead to node i, outermost first. */
static void jw_chain(struct jw *w, const struct ward__evaluation *e, size_t i)
{
	const char *names[WARD_WRAP_MAX_DEPTH + 1];
	size_t n = 0;

	for (size_t k = i; e->nodes[k].parent != SIZE_MAX && n < ELEMENTSOF(names);
	     k = e->nodes[k].parent)
		names[n++] = e->nodes[k].via;
	jw_open(w, "[");
	while (n-- > 0) {
		jw_item(w, NULL);
		jw_string(w, names[n]);
	}
	jw_close(w, "]");
}

static void jw_bool(struct jw *w, bool v)
{
	jw_raw(w, v ? "true" : "false");
}

int ward__rules_effective_json(const struct ward__evaluation *e, enum ward_approval_mode mode,
			       bool pretty, char **ret_json)
{
	struct ward__buf b;
	struct jw w = {.b = &b, .pretty = pretty, .first = true};
	uint8_t *out;
	int ret;

	ret = ward__buf_init(&b, CHECK_JSON_MAX);
	if (ret < 0)
		return ret;
	jw_open(&w, "{");
	jw_item(&w, "matchedRules");
	jw_open(&w, "[");
	for (size_t i = 0; i < e->n_entries; i++) {
		const struct ward__eval_entry *en = &e->entries[i];
		const struct ward__rule_match *m = &en->match;
		const struct ward__eval_node *n = &e->nodes[en->command];

		if (en->heuristic)
			continue;
		jw_item(&w, NULL);
		jw_open(&w, "{");
		jw_item(&w, "prefixRuleMatch");
		jw_open(&w, "{");
		jw_item(&w, "matchedPrefix");
		jw_open(&w, "[");
		jw_item(&w, NULL);
		jw_string(&w, m->rule->first);
		for (size_t k = 1; k < m->n_prefix && k < n->argc; k++) {
			jw_item(&w, NULL);
			jw_string(&w, n->argv[k]);
		}
		jw_close(&w, "]");
		jw_item(&w, "decision");
		jw_string(&w, ward__decision_to_string(en->decision));
		if (m->resolved_program) {
			jw_item(&w, "resolvedProgram");
			jw_string(&w, m->resolved_program);
		}
		if (m->group->justification) {
			jw_item(&w, "justification");
			jw_string(&w, m->group->justification);
		}
		jw_item(&w, "command");
		jw_words(&w, n->argv, n->argc);
		jw_item(&w, "chain");
		jw_chain(&w, e, en->command);
		if (n->restrictive_only) {
			jw_item(&w, "candidate");
			jw_bool(&w, true);
		}
		if (m->possible) {
			jw_item(&w, "possible");
			jw_bool(&w, true);
		}
		jw_close(&w, "}");
		jw_close(&w, "}");
	}
	jw_close(&w, "]");
	jw_item(&w, "unmatchedCommands");
	jw_open(&w, "[");
	for (size_t i = 0; i < e->n_entries; i++) {
		const struct ward__eval_entry *en = &e->entries[i];
		const struct ward__eval_node *n = &e->nodes[en->command];

		if (!en->heuristic)
			continue;
		jw_item(&w, NULL);
		jw_open(&w, "{");
		jw_item(&w, "command");
		jw_words(&w, n->argv, n->argc);
		jw_item(&w, "chain");
		jw_chain(&w, e, en->command);
		jw_item(&w, "decision");
		jw_string(&w, ward__decision_to_string(en->decision));
		jw_close(&w, "}");
	}
	jw_close(&w, "]");
	jw_item(&w, "decision");
	jw_string(&w, ward__decision_to_string(e->decision));
	jw_item(&w, "runsOutsideSandbox");
	jw_bool(&w, e->bypass_sandbox);
	jw_item(&w, "readExactly");
	jw_bool(&w, e->understood);
	if (!e->understood) {
		const struct ward__eval_node *n = &e->nodes[e->unread];

		jw_item(&w, "unread");
		jw_open(&w, "{");
		jw_item(&w, "command");
		jw_words(&w, n->argv, n->argc);
		jw_item(&w, "chain");
		jw_chain(&w, e, e->unread);
		jw_item(&w, "why");
		jw_string(&w,
			  e->overflow	   ? "too many commands to read"
				  : n->why ? n->why
					   : "unknown");
		jw_close(&w, "}");
	}
	jw_item(&w, "approvalMode");
	jw_string(&w, ward_approval_mode_to_string(mode));
	jw_close(&w, "}");
	ret = w.r;
	if (ret < 0)
		goto out;
	out = ward__buf_steal(&b, NULL);
	if (!out) {
		ret = -ENOMEM;
		goto out;
	}
	*ret_json = (char *)out;
out:
	ward__buf_release(&b);
	return ret;
}
