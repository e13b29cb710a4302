/* SPDX-License-Identifier: MIT */
/*
 * What the rules and the approval mode say about one command, before anyone
 * is asked: Codex's create_exec_approval_requirement_for_command and
 * render_decision_for_unmatched_command (core/src/exec_policy.rs), with the
 * differences docs/rules.md lists (a script the reader does not understand
 * is never allowed by a rule or the known-safe list; project rules never take
 * a command out of the sandbox; basename matching is restrictive; wrappers
 * are read, and every command they run decides too).
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

/* Codex's fallback, with whether the known-safe list may be consulted at all. */
static enum ward__decision unmatched(const char *const *argv, size_t argc,
				     const struct ward__unmatched_ctx *c, bool safe)
{
	if (c->mode == WARD_APPROVAL_UNTRUSTED && safe)
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

enum ward__decision ward__unmatched_decision(const char *const *argv, size_t argc,
					     const struct ward__unmatched_ctx *c)
{
	return unmatched(argv, argc, c,
			 c->mode == WARD_APPROVAL_UNTRUSTED && known_safe(argv, argc));
}

void ward__evaluation_release(struct ward__evaluation *e)
{
	for (size_t i = 0; i < e->n_entries; i++)
		if (!e->entries[i].heuristic)
			free(e->entries[i].match.resolved_program);
	free(e->entries);
	free(e->nodes);
	for (size_t i = 0; i < e->n_wraps; i++)
		ward__wrap_release(&e->wraps[i]);
	free(e->wraps);
	ward__cmdv_release(&e->root);
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

static int add_node(struct ward__evaluation *e, const struct ward__eval_node *n)
{
	if (e->n_nodes == e->alloc_nodes) {
		size_t na = e->alloc_nodes ? e->alloc_nodes * 2 : 8;
		struct ward__eval_node *p = reallocarray(e->nodes, na, sizeof(*p));

		if (!p)
			return -ENOMEM;
		e->nodes = p;
		e->alloc_nodes = na;
	}
	e->nodes[e->n_nodes++] = *n;
	return 0;
}

/* Keeps a wrapper's reading (what its commands point into) for the evaluation's life. */
static int keep_wrap(struct ward__evaluation *e, struct ward__wrap *w)
{
	if (e->n_wraps == e->alloc_wraps) {
		size_t na = e->alloc_wraps ? e->alloc_wraps * 2 : 4;
		struct ward__wrap *p = reallocarray(e->wraps, na, sizeof(*p));

		if (!p)
			return -ENOMEM;
		e->wraps = p;
		e->alloc_wraps = na;
	}
	e->wraps[e->n_wraps++] = *w;
	*w = (struct ward__wrap){0};
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

struct walk {
	const struct ward__rules *r;
	const struct ward__unmatched_ctx *c;
	struct ward__match_opts o;
	struct ward__evaluation *e;
};

static void not_read(struct ward__evaluation *e, size_t node)
{
	if (e->understood) {
		e->understood = false;
		e->unread = node;
	}
}

/* Whether a word of n is not known until it runs. */
static bool unknown_words(const struct ward__eval_node *n)
{
	if (n->open_tail)
		return true;
	for (size_t i = 0; n->placeholder && i < n->argc; i++)
		if (strstr(n->argv[i], n->placeholder))
			return true;
	return false;
}

/* The rules of node i: the matches that count go into the entries. Sets *ret_matched. */
static int match_node(struct walk *x, size_t i, bool *ret_matched)
{
	struct ward__evaluation *e = x->e;
	struct ward__eval_node *n = &e->nodes[i];
	struct ward__match_opts o = x->o;
	struct ward__match_list l = {0};
	int k;

	*ret_matched = false;
	o.placeholder = n->placeholder;
	o.open_tail = n->open_tail;
	k = ward__rules_match(x->r, n->argv, n->argc, &o, &l);
	for (size_t m = 0; k >= 0 && m < l.n; m++) {
		struct ward__eval_entry en = {.command = i, .match = l.v[m]};
		bool counts = true;

		en.decision = l.v[m].group->decision;
		/*
		 * An allow counts only for words known exactly, as written, for a
		 * command no guard stands above; where the reading is not exact, only
		 * for a rule naming every word (it allows exactly that text).
		 */
		if (en.decision == WARD__DECISION_ALLOW)
			counts = !n->restrictive_only && !n->guarded && !en.match.possible &&
				(n->kind != WARD__WRAP_UNCERTAIN || en.match.n_prefix >= n->argc);
		if (!counts)
			continue;
		l.v[m].resolved_program = NULL; /* moved into the entry */
		k = add_entry(e, &en);
		if (k < 0) {
			free(en.match.resolved_program);
			break;
		}
		*ret_matched = true;
		if (en.decision == WARD__DECISION_ALLOW) {
			n->allowed = true;
			n->allow_reach = MAX(n->allow_reach, en.match.n_prefix);
			if (!x->r->sources[en.match.group->source].project) {
				n->allowed_by_user = true;
				n->user_allow_reach = MAX(n->user_allow_reach, en.match.n_prefix);
			}
		}
		if (en.decision == WARD__DECISION_PROMPT)
			e->prompt_is_rule = true;
	}
	ward__match_list_release(&l);
	return k;
}

/*
 * An allow rule of an enclosing wrapper whose pattern reaches this command's
 * program (["nice", "-n", "5", "make"], ["sudo", "apt", "update"]) names it
 * as written: it counts for it, also below a guard.
 */
static void inherit_allow(struct walk *x, size_t i)
{
	struct ward__evaluation *e = x->e;
	struct ward__eval_node *n = &e->nodes[i];
	/* Where the rule must reach: past the program, or past every word of an inexact reading. */
	size_t need = n->kind == WARD__WRAP_UNCERTAIN ? n->argc : 1;
	size_t cur = i, off = 0;

	if (n->restrictive_only)
		return;
	while (e->nodes[cur].parent != SIZE_MAX && e->nodes[cur].offset != SIZE_MAX) {
		const struct ward__eval_node *anc = &e->nodes[e->nodes[cur].parent];

		off += e->nodes[cur].offset;
		if (anc->allow_reach >= off + need)
			n->allowed = true;
		if (anc->user_allow_reach >= off + need)
			n->allowed_by_user = true;
		cur = e->nodes[cur].parent;
	}
}

/* The node for a command that p (node i), a wrapper called name, runs. */
static struct ward__eval_node child_node(const struct ward__eval_node *p, size_t i,
					 const struct ward__wrap_cmd *cmd, const char *name)
{
	return (struct ward__eval_node){
		.argv = cmd->argv,
		.argc = cmd->argc,
		.parent = i,
		.offset = cmd->offset,
		.via = name,
		.placeholder = cmd->placeholder ? cmd->placeholder : p->placeholder,
		.open_tail = cmd->open_tail || (p->open_tail && cmd->at_end),
		.guarded = p->guarded || p->kind == WARD__WRAP_GUARDED || cmd->guarded,
		.restrictive_only = p->restrictive_only || p->kind == WARD__WRAP_UNCERTAIN ||
			cmd->restrictive_only,
	};
}

/* Whether a prompt or forbidden rule has word as its program (also by basename, as restrictive matching does). */
static bool restricts(const struct ward__rules *r, const char *word)
{
	_cleanup_free_ char *base = strchr(word, '/') ? ward__path_file_name(word) : NULL;

	for (size_t i = 0; i < r->n_prefix; i++) {
		const char *first = r->prefix[i].first;

		if (r->groups[r->prefix[i].group].decision == WARD__DECISION_ALLOW)
			continue;
		if (strcmp(first, word) == 0 || (base && strcmp(first, base) == 0))
			return true;
	}
	return false;
}

/*
 * Past the caps: words are searched without reading wrappers, and each one
 * that a prompt or forbidden rule names as its program starts a candidate
 * below node i, so that `nice` forty times over `rm` is still forbidden, not
 * only asked about. argv is node i's own words (slice) or other words read
 * below it. At most WARD_WRAP_MAX_COMMANDS more nodes, one per such word.
 */
static int flat_scan(struct walk *x, size_t i, const char *const *argv, size_t argc, bool slice,
		     const char *via)
{
	struct ward__evaluation *e = x->e;

	for (size_t k = slice ? 1 : 0; k < argc; k++) {
		const struct ward__eval_node *p = &e->nodes[i];
		struct ward__eval_node cand = {
			.argv = argv + k,
			.argc = argc - k,
			.parent = i,
			.offset = slice ? k : SIZE_MAX,
			.via = via,
			.placeholder = p->placeholder,
			.open_tail = p->open_tail,
			.guarded = true,
			.restrictive_only = true,
		};
		bool matched;
		int r;

		if (!restricts(x->r, argv[k]))
			continue;
		if (e->n_nodes >= 2 * WARD_WRAP_MAX_COMMANDS)
			return 0;
		r = add_node(e, &cand);
		if (r >= 0)
			r = match_node(x, e->n_nodes - 1, &matched);
		if (r < 0)
			return r;
	}
	return 0;
}

/* Evaluates node i and, below it, what it runs. */
static int visit(struct walk *x, size_t i, unsigned depth)
{
	struct ward__evaluation *e = x->e;
	struct ward__eval_node *n = &e->nodes[i];
	struct ward__wrap w = {0};
	struct ward__wrap_cmd *cmds;
	const char *name;
	size_t n_cmds, from;
	bool matched, flat = false;
	int k;

	k = ward__wrapper_read(n->argv, n->argc, n->placeholder, n->open_tail, &w);
	if (k < 0)
		return k;
	n->kind = w.kind;
	n->why = w.why;
	if (depth >= WARD_WRAP_MAX_DEPTH && (w.n_cmds || w.candidates_from)) {
		/* Nested past the cap: not read further (searched flat at the end), and asked about. */
		e->overflow = true;
		n->kind = WARD__WRAP_UNCERTAIN;
		n->why = "wrappers nested too deeply to read";
		flat = true;
	}
	if (n->kind == WARD__WRAP_UNCERTAIN && !n->restrictive_only)
		not_read(e, i);
	n->decides = !n->restrictive_only && n->kind != WARD__WRAP_TRANSPARENT;

	k = match_node(x, i, &matched);
	if (k < 0)
		goto out;
	inherit_allow(x, i);
	n = &e->nodes[i];
	if (n->decides && !matched && !n->allowed) {
		struct ward__eval_entry en = {.command = i, .heuristic = true};
		/* The known-safe list, for exactly the words that run, below no guard. */
		bool safe = x->c->mode == WARD_APPROVAL_UNTRUSTED && !n->guarded &&
			n->kind != WARD__WRAP_UNCERTAIN &&
			(unknown_words(n) ? ward__command_safe_any_args(n->argv[0])
					  : known_safe(n->argv, n->argc));

		en.decision = unmatched(n->argv, n->argc, x->c, safe);
		k = add_entry(e, &en);
		if (k < 0)
			goto out;
	}

	cmds = w.cmds;
	n_cmds = w.n_cmds;
	name = w.name;
	from = w.candidates_from;
	k = keep_wrap(e, &w);
	if (k < 0)
		goto out;
	if (flat)
		return 0;
	/* The commands it runs, then the candidates (each word on starts one). */
	for (size_t c = 0; c < n_cmds + (from ? e->nodes[i].argc - from : 0); c++) {
		const struct ward__eval_node *p = &e->nodes[i];
		struct ward__wrap_cmd cand = {.at_end = true, .restrictive_only = true};
		struct ward__eval_node child;

		if (c >= n_cmds) {
			cand.offset = from + (c - n_cmds);
			cand.argv = p->argv + cand.offset;
			cand.argc = p->argc - cand.offset;
		}
		child = child_node(p, i, c < n_cmds ? &cmds[c] : &cand, name);
		if (child.argc == 0)
			continue;
		if (e->n_nodes >= WARD_WRAP_MAX_COMMANDS) {
			e->overflow = true;
			break;
		}
		/* Two wrappers filling in words: which words hold what is not known. */
		if (c < n_cmds && cmds[c].placeholder && p->placeholder &&
		    strcmp(cmds[c].placeholder, p->placeholder) != 0)
			child.restrictive_only = true;
		k = add_node(e, &child);
		if (k < 0)
			return k;
		k = visit(x, e->n_nodes - 1, depth + 1);
		if (k < 0)
			return k;
	}
	return 0;
out:
	ward__wrap_release(&w);
	return k;
}

int ward__rules_evaluate(const struct ward__rules *r, const char *const *argv, size_t argc,
			 const char *cwd, const char *home, const struct ward__unmatched_ctx *c,
			 struct ward__evaluation *ret)
{
	struct ward__evaluation e = {.understood = true, .unread = SIZE_MAX};
	struct walk x = {
		.r = r,
		.c = c,
		.o = {.resolve_host_executables = true,
		      .restrictive = true,
		      .cwd = cwd,
		      .home = home},
		.e = &e,
	};
	struct ward__eval_node root = {.parent = SIZE_MAX, .offset = SIZE_MAX};
	bool deciding = false;
	int k;

	k = copy_argv(argv, argc, &e.root);
	if (k >= 0) {
		root.argv = (const char *const *)e.root.v[0].argv;
		root.argc = argc;
		k = add_node(&e, &root);
	}
	if (k >= 0)
		k = visit(&x, 0, 0);
	if (k >= 0 && e.overflow) {
		/*
		 * Every word the reading got to, once: the command's own and those
		 * read from scripts and strings (the rest are slices of these).
		 */
		const char *via = e.n_wraps && e.wraps[0].name ? e.wraps[0].name : "?";

		k = flat_scan(&x, 0, e.nodes[0].argv, e.nodes[0].argc, true, via);
		for (size_t j = 0; k >= 0 && j < e.n_wraps; j++)
			for (size_t m = 0; k >= 0 && m < e.wraps[j].n_cmds; m++)
				if (e.wraps[j].cmds[m].offset == SIZE_MAX)
					k = flat_scan(&x, 0, e.wraps[j].cmds[m].argv,
						      e.wraps[j].cmds[m].argc, false,
						      e.wraps[j].name);
	}
	if (k >= 0 && e.overflow) {
		/* Too much to read: never allowed, asked about (refused where nobody can be asked). */
		struct ward__eval_entry en = {
			.command = 0, .heuristic = true, .decision = WARD__DECISION_PROMPT};

		not_read(&e, 0);
		k = add_entry(&e, &en);
	}
	if (k < 0) {
		ward__evaluation_release(&e);
		return k;
	}

	e.decision = WARD__DECISION_ALLOW;
	for (size_t i = 0; i < e.n_entries; i++)
		if (e.entries[i].decision > e.decision)
			e.decision = e.entries[i].decision;
	/*
	 * Leaving the sandbox is for a command every deciding part of which an
	 * allow rule not from a project covers, nothing else.
	 */
	e.bypass_sandbox = e.decision == WARD__DECISION_ALLOW && !e.overflow;
	for (size_t i = 0; i < e.n_nodes; i++) {
		if (!e.nodes[i].decides)
			continue;
		deciding = true;
		e.bypass_sandbox = e.bypass_sandbox && e.nodes[i].allowed_by_user;
	}
	e.bypass_sandbox = e.bypass_sandbox && deciding;
	*ret = e;
	return 0;
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
