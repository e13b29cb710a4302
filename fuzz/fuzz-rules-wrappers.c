/* SPDX-License-Identifier: MIT */
/*
 * Fuzzes the wrapper reader (ward__wrapper_read) and the evaluation that
 * walks it (ward__rules_evaluate). The input is one flags byte, then the
 * words of a command separated by NULs. Flags: bits 0-1 the approval mode,
 * bit 2 a "{}" placeholder, bit 3 an open tail (for the reader alone).
 * Invariants checked:
 *
 *   - every command a wrapper runs is non-empty and NULL-terminated; a slice
 *     is the wrapper's own words from its offset (to the end when at_end);
 *     only an uncertain reading has candidates;
 *   - the evaluation's decision is the strictest entry, leaving the sandbox
 *     needs an allow, and each entry names a node that exists;
 *   - with rules forbidding rm and allowing npm test: a forbidden command
 *     stays forbidden behind nice, timeout, sudo, env, xargs and bash -lc;
 *     nice and timeout change nothing else (same decision, same sandbox);
 *     behind sudo, env A=1 or ./nice it never leaves the sandbox (no rule
 *     names them).
 *
 * Built with -fsanitize=fuzzer it is a libFuzzer target; linked with replay.c
 * it replays the corpus (in every test run).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "basic/error.h"
#include "rules/rules.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_WORDS 64

static struct ward__rules rules;
static bool loaded;

static void load(void)
{
	static const char text[] =
		"prefix_rule(pattern=[\"rm\"], decision=\"forbidden\")\n"
		"prefix_rule(pattern=[\"npm\", \"test\"])\n"
		"prefix_rule(pattern=[\"git\", \"push\"], decision=\"prompt\")\n"
		"prefix_rule(pattern=[\"git\", \"reset\", \"--hard\"], decision=\"forbidden\")\n";
	struct ward_error err = {0};

	if (loaded)
		return;
	ward__rules_init(&rules);
	if (ward__rules_parse(&rules, "fuzz", text, sizeof(text) - 1, false, NULL, &err) < 0)
		abort();
	loaded = true;
}

static void check_reading(const char *const *argv, size_t argc, const char *ph, bool tail)
{
	struct ward__wrap w;

	if (ward__wrapper_read(argv, argc, ph, tail, &w) < 0)
		abort();
	if (w.kind > WARD__WRAP_UNCERTAIN || (w.kind == WARD__WRAP_NONE && w.n_cmds))
		abort();
	if (w.candidates_from && (w.kind != WARD__WRAP_UNCERTAIN || w.candidates_from >= argc + 1))
		abort();
	if ((w.kind == WARD__WRAP_GUARDED || w.kind == WARD__WRAP_UNCERTAIN) && !w.why)
		abort();
	for (size_t i = 0; i < w.n_cmds; i++) {
		const struct ward__wrap_cmd *c = &w.cmds[i];

		if (c->argc == 0 || c->argv[c->argc] != NULL)
			abort();
		for (size_t k = 0; k < c->argc; k++)
			if (!c->argv[k])
				abort();
		if (c->offset != SIZE_MAX) {
			if (c->offset == 0 || c->offset + c->argc > argc)
				abort();
			for (size_t k = 0; k < c->argc; k++)
				if (c->argv[k] != argv[c->offset + k])
					abort();
			if (c->at_end && c->offset + c->argc != argc)
				abort();
		}
	}
	ward__wrap_release(&w);
}

static void evaluate(const char *const *argv, size_t argc, enum ward_approval_mode mode,
		     struct ward__evaluation *e)
{
	struct ward__unmatched_ctx c = {.mode = mode, .fs_restricted = true};
	enum ward__decision max = WARD__DECISION_ALLOW;

	if (ward__rules_evaluate(&rules, argv, argc, "/w", "/h", &c, e) < 0)
		abort();
	for (size_t i = 0; i < e->n_entries; i++) {
		if (e->entries[i].command >= e->n_nodes)
			abort();
		if (e->entries[i].decision > max)
			max = e->entries[i].decision;
	}
	if (max != e->decision || e->n_nodes == 0 || e->n_nodes > 2 * WARD_WRAP_MAX_COMMANDS + 1)
		abort();
	if (e->bypass_sandbox && e->decision != WARD__DECISION_ALLOW)
		abort();
	if (!e->understood && e->unread >= e->n_nodes)
		abort();
}

/* Evaluates prefix + argv. */
static void wrapped(const char *const *prefix, size_t np, const char *const *argv, size_t argc,
		    enum ward_approval_mode mode, struct ward__evaluation *e)
{
	const char *v[MAX_WORDS + 4];

	memcpy(v, prefix, np * sizeof(char *));
	memcpy(v + np, argv, argc * sizeof(char *));
	v[np + argc] = NULL;
	evaluate(v, np + argc, mode, e);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const nice[] = {"nice", "--"};
	static const char *const timeout[] = {"timeout", "5"};
	static const char *const sudo[] = {"sudo", "--"};
	static const char *const env[] = {"env", "A=1"};
	static const char *const xargs[] = {"xargs", "--"};
	static const char *const planted[] = {"./nice", "--"};
	static const enum ward_approval_mode modes[] = {
		WARD_APPROVAL_ON_REQUEST, WARD_APPROVAL_UNTRUSTED, WARD_APPROVAL_NEVER,
		WARD_APPROVAL_GRANULAR};
	const char *argv[MAX_WORDS + 1];
	struct ward__evaluation e = {0}, w = {0};
	enum ward_approval_mode mode;
	char *text;
	size_t argc = 0;
	bool assignment;

	if (size < 2)
		return 0;
	load();
	mode = modes[data[0] & 3];
	text = malloc(size);
	if (!text)
		abort();
	memcpy(text, data + 1, size - 1);
	text[size - 1] = '\0';
	for (char *p = text; argc < MAX_WORDS && p < text + size - 1; p += strlen(p) + 1)
		argv[argc++] = p;
	argv[argc] = NULL;

	check_reading(argv, argc, data[0] & 4 ? "{}" : NULL, data[0] & 8);
	evaluate(argv, argc, mode, &e);
	assignment = strchr(argv[0], '=') != NULL;

	/* Transparent: the same answer, unless the caps stopped one of the readings. */
	for (int k = 0; k < 2; k++) {
		wrapped(k ? timeout : nice, 2, argv, argc, mode, &w);
		if (!e.overflow && !w.overflow &&
		    (w.decision != e.decision || w.bypass_sandbox != e.bypass_sandbox))
			abort();
		if (e.decision == WARD__DECISION_FORBIDDEN && w.decision != e.decision &&
		    !w.overflow)
			abort();
		ward__evaluation_release(&w);
	}
	/* Forbidden stays forbidden; guarded never leaves the sandbox. */
	for (int k = 0; k < 4; k++) {
		const char *const *pre = k == 0 ? sudo : k == 1 ? env : k == 2 ? planted : xargs;

		wrapped(pre, 2, argv, argc, mode, &w);
		if (e.decision == WARD__DECISION_FORBIDDEN && w.decision != e.decision &&
		    !w.overflow && !(assignment && k < 2))
			abort();
		if (w.bypass_sandbox && k < 3)
			abort();
		ward__evaluation_release(&w);
	}
	ward__evaluation_release(&e);
	free(text);
	return 0;
}
