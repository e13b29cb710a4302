/* SPDX-License-Identifier: MIT */
/*
 * What the rules and the approval mode say about one command, before anyone
 * is asked: Codex's create_exec_approval_requirement_for_command and
 * render_decision_for_unmatched_command (core/src/exec_policy.rs), with the
 * differences docs/rules.md lists (a script the reader does not understand
 * is never allowed by a rule or the known-safe list; project rules never take
 * a command out of the sandbox; basename matching is restrictive).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "basic/cleanup.h"
#include "rules/rules.h"

/* Known safe as Codex's is_known_safe_command: a plain command, or a shell script of safe ones. */
static bool known_safe(const char *const *argv, size_t argc)
{
	struct ward__cmdv inner = {0};
	const char *script;
	bool safe;

	if (ward__command_known_safe(argv, argc))
		return true;
	script = ward__shell_wrapper_script(argv, argc);
	if (!script || ward__shell_split(script, &inner) != 1)
		return false;
	safe = inner.n > 0;
	for (size_t i = 0; i < inner.n && safe; i++)
		safe = ward__command_known_safe((const char *const *)inner.v[i].argv,
						inner.v[i].argc);
	ward__cmdv_release(&inner);
	return safe;
}

enum ward__decision ward__unmatched_decision(const char *const *argv, size_t argc,
					     const struct ward__unmatched_ctx *c)
{
	if (c->mode == WARD_APPROVAL_UNTRUSTED && known_safe(argv, argc))
		return WARD__DECISION_ALLOW;
	/*
	 * A dangerous command never runs without a question; where nobody can
	 * be asked it does not run at all.
	 */
	if (ward__command_dangerous(argv, argc))
		return c->mode == WARD_APPROVAL_NEVER ? WARD__DECISION_FORBIDDEN
						      : WARD__DECISION_PROMPT;
	switch (c->mode) {
	case WARD_APPROVAL_NEVER:
		/* Nobody to ask: the sandbox is the protection. */
		return WARD__DECISION_ALLOW;
	case WARD_APPROVAL_UNTRUSTED:
		return WARD__DECISION_PROMPT;
	case WARD_APPROVAL_ON_REQUEST:
	case WARD_APPROVAL_GRANULAR:
		/* In a restricting sandbox, ask only when the caller wants out of it. */
		if (!c->fs_restricted)
			return WARD__DECISION_ALLOW;
		return c->requests_override ? WARD__DECISION_PROMPT : WARD__DECISION_ALLOW;
	}
	return WARD__DECISION_PROMPT;
}

void ward__evaluation_release(struct ward__evaluation *e)
{
	for (size_t i = 0; i < e->n_entries; i++)
		if (!e->entries[i].heuristic)
			free(e->entries[i].match.resolved_program);
	free(e->entries);
	ward__cmdv_release(&e->commands);
	*e = (struct ward__evaluation){0};
}

static int add_entry(struct ward__evaluation *e, const struct ward__eval_entry *en)
{
	if (e->n_entries == e->alloc_entries) {
		size_t na = e->alloc_entries ? e->alloc_entries * 2 : 8;
		struct ward__eval_entry *p = reallocarray(e->entries, na, sizeof(*p));

		if (!p)
			return -ENOMEM;
		e->entries = p;
		e->alloc_entries = na;
	}
	e->entries[e->n_entries++] = *en;
	return 0;
}

static int copy_argv(const char *const *argv, size_t argc, struct ward__cmdv *out)
{
	struct ward__cmd c = {.argc = argc};

	out->v = calloc(1, sizeof(*out->v));
	c.argv = calloc(argc + 1, sizeof(char *));
	if (!out->v || !c.argv) {
		free(c.argv);
		return -ENOMEM;
	}
	for (size_t i = 0; i < argc; i++) {
		c.argv[i] = strdup(argv[i]);
		if (!c.argv[i]) {
			for (size_t k = 0; k < i; k++)
				free(c.argv[k]);
			free(c.argv);
			return -ENOMEM;
		}
	}
	out->v[0] = c;
	out->n = 1;
	return 0;
}

int ward__rules_evaluate(const struct ward__rules *r, const char *const *argv, size_t argc,
			 const char *cwd, const char *home, const struct ward__unmatched_ctx *c,
			 struct ward__evaluation *ret)
{
	struct ward__evaluation e = {.understood = true};
	struct ward__match_opts o = {
		.resolve_host_executables = true, .restrictive = true, .cwd = cwd, .home = home};
	struct ward__cmdv literal = {0};
	const char *script = ward__shell_wrapper_script(argv, argc);
	int k;

	if (script) {
		k = ward__shell_split(script, &e.commands);
		if (k < 0)
			return k;
		if (k == 0) {
			e.understood = false;
			k = ward__shell_literal_commands(script, &literal);
			if (k < 0)
				return k;
		}
	}
	if (e.commands.n == 0) {
		k = copy_argv(argv, argc, &e.commands);
		if (k < 0)
			goto fail;
	}

	e.bypass_sandbox = true;
	for (size_t i = 0; i < e.commands.n; i++) {
		const struct ward__cmd *cmd = &e.commands.v[i];
		struct ward__match_list l = {0};
		bool matched = false, allowed = false;

		k = ward__rules_match(r, (const char *const *)cmd->argv, cmd->argc, &o, &l);
		for (size_t m = 0; k >= 0 && m < l.n; m++) {
			struct ward__eval_entry en = {.command = i, .match = l.v[m]};

			en.decision = l.v[m].group->decision;
			/*
			 * A script not understood is "not matched" for allow rules: its
			 * words are not the words the shell will run. Except a rule
			 * whose pattern reaches the script itself: it allows exactly
			 * that text, compared as written.
			 */
			if (!e.understood && en.decision == WARD__DECISION_ALLOW &&
			    en.match.n_prefix < 3)
				continue;
			l.v[m].resolved_program = NULL; /* moved into the entry */
			k = add_entry(&e, &en);
			if (k < 0) {
				free(en.match.resolved_program);
				break;
			}
			matched = true;
			if (en.decision == WARD__DECISION_ALLOW &&
			    !r->sources[l.v[m].group->source].project)
				allowed = true;
			if (en.decision == WARD__DECISION_PROMPT)
				e.prompt_is_rule = true;
		}
		for (size_t m = 0; m < l.n; m++)
			free(l.v[m].resolved_program);
		free(l.v);
		if (k < 0)
			goto fail;
		if (!matched) {
			struct ward__eval_entry en = {.command = i, .heuristic = true};

			en.decision = ward__unmatched_decision((const char *const *)cmd->argv,
							       cmd->argc, c);
			k = add_entry(&e, &en);
			if (k < 0)
				goto fail;
		}
		e.bypass_sandbox = e.bypass_sandbox && allowed;
	}

	/*
	 * The literal commands of a script the reader refused: their prompt and
	 * forbidden rules still apply (`git reset --hard $(x)` is still `git reset
	 * --hard`). The matches are recorded against the whole command.
	 */
	for (size_t i = 0; i < literal.n; i++) {
		struct ward__match_list l = {0};

		k = ward__rules_match(r, (const char *const *)literal.v[i].argv, literal.v[i].argc,
				      &o, &l);
		for (size_t m = 0; k >= 0 && m < l.n; m++) {
			struct ward__eval_entry en = {.command = 0, .match = l.v[m]};

			en.decision = l.v[m].group->decision;
			if (en.decision == WARD__DECISION_ALLOW)
				continue;
			/* The matched prefix refers to the literal command's words: keep only the rule. */
			en.match.n_prefix = 1;
			l.v[m].resolved_program = NULL;
			k = add_entry(&e, &en);
			if (k < 0)
				free(en.match.resolved_program);
			if (en.decision == WARD__DECISION_PROMPT)
				e.prompt_is_rule = true;
		}
		for (size_t m = 0; m < l.n; m++)
			free(l.v[m].resolved_program);
		free(l.v);
		if (k < 0)
			goto fail;
	}

	e.decision = WARD__DECISION_ALLOW;
	for (size_t i = 0; i < e.n_entries; i++)
		if (e.entries[i].decision > e.decision)
			e.decision = e.entries[i].decision;
	/* Leaving the sandbox is for a command every part of which is allowed, nothing else. */
	if (e.decision != WARD__DECISION_ALLOW)
		e.bypass_sandbox = false;
	ward__cmdv_release(&literal);
	*ret = e;
	return 0;
fail:
	ward__cmdv_release(&literal);
	ward__evaluation_release(&e);
	return k;
}

/* ------------------------------------------------------------ modes */

static const char *const mode_names[] = {
	[WARD_APPROVAL_ON_REQUEST] = "on-request",
	[WARD_APPROVAL_UNTRUSTED] = "untrusted",
	[WARD_APPROVAL_NEVER] = "never",
	[WARD_APPROVAL_GRANULAR] = "granular",
};

WARD_PUBLIC int ward_approval_mode_from_string(const char *s, enum ward_approval_mode *ret_mode)
{
	if (!s || !ret_mode)
		return -EINVAL;
	/* Codex's deprecated alias: on-failure behaves as on-request. */
	if (strcmp(s, "on-failure") == 0) {
		*ret_mode = WARD_APPROVAL_ON_REQUEST;
		return 0;
	}
	for (size_t i = 0; i < ELEMENTSOF(mode_names); i++)
		if (strcmp(s, mode_names[i]) == 0) {
			*ret_mode = (enum ward_approval_mode)i;
			return 0;
		}
	return -EINVAL;
}

WARD_PUBLIC const char *ward_approval_mode_to_string(enum ward_approval_mode mode)
{
	if ((size_t)mode < ELEMENTSOF(mode_names))
		return mode_names[mode];
	return "unknown";
}
