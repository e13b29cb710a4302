/* SPDX-License-Identifier: MIT */
/*
 * The parser of Codex's execpolicy rules files.
 *
 * Codex evaluates these files with a Starlark interpreter (the Rust
 * "starlark" crate). No Starlark interpreter exists in C, and none is
 * needed: the files Codex documents, ships as examples and writes itself
 * (amendments) are a flat sequence of calls to three builtins whose
 * arguments are literals. So this is not an interpreter but a parser for
 * exactly that subset:
 *
 *   file      := { statement }
 *   statement := call { ";" call } [ ";" ] NEWLINE       (at column 1)
 *   call      := ("prefix_rule" | "network_rule" | "host_executable")
 *                "(" [ arg { "," arg } [ "," ] ] ")"
 *   arg       := [ NAME "=" ] value                      (positional first)
 *   value     := STRING | "[" [ value { "," value } [ "," ] ] "]"
 *                | INT | None | True | False             (only to say why not)
 *
 * with Starlark's lexical rules for what is accepted: '#' comments, implicit
 * line joining inside brackets, backslash-newline continuation, string
 * literals in both quote styles, triple-quoted and raw, with Starlark's
 * escapes. Everything else a Starlark file could hold (variables,
 * expressions, functions, loops, load(), f-strings, bytes, dicts, tuples) is
 * refused with "file:line:col: reason" instead of being guessed at: a rules
 * file decides what runs outside the sandbox, so a construct that is not
 * understood must stop the load, not be skipped. Also refused, though the
 * Rust interpreter takes them: byte escapes above 0x7f and NUL (they would
 * make a string that is not the UTF-8 text it looks like, or that no argv
 * can hold).
 *
 * The values and calls are read by syntax.c (on lex.c's tokens); this file
 * gives them their meaning, checks the examples and merges a file into a set.
 *
 * Semantics follow Codex's builtins (execpolicy/src/parser.rs): parameter
 * order for positional arguments, defaults, the checks on each value, the
 * expansion of first-token alternatives into separate rules, and the
 * match/not_match examples checked at the end of the file against the rules
 * of their own call, with the host executables known at that point.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/cleanup.h"
#include "basic/error.h"
#include "rules/lex.h"
#include "rules/rules.h"
#include "rules/syntax.h"

/* ------------------------------------------------------------ the set */

void ward__rules_init(struct ward__rules *r)
{
	*r = (struct ward__rules){0};
}

static void free_strv(char **v, size_t n)
{
	if (!v)
		return;
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

static void group_release(struct ward__rule_group *g)
{
	for (size_t i = 0; i < g->n_rest; i++)
		free_strv(g->rest[i].alts, g->rest[i].n_alts);
	free(g->rest);
	free(g->justification);
}

static void host_release(struct ward__host_executable *h)
{
	free(h->name);
	free_strv(h->paths, h->n_paths);
}

void ward__rules_release(struct ward__rules *r)
{
	for (size_t i = 0; i < r->n_groups; i++)
		group_release(&r->groups[i]);
	free(r->groups);
	for (size_t i = 0; i < r->n_prefix; i++)
		free(r->prefix[i].first);
	free(r->prefix);
	for (size_t i = 0; i < r->n_network; i++) {
		free(r->network[i].host);
		free(r->network[i].justification);
	}
	free(r->network);
	for (size_t i = 0; i < r->n_hosts; i++)
		host_release(&r->hosts[i]);
	free(r->hosts);
	for (size_t i = 0; i < r->n_sources; i++)
		free(r->sources[i].path);
	free(r->sources);
	*r = (struct ward__rules){0};
}

const char *ward__decision_to_string(enum ward__decision d)
{
	switch (d) {
	case WARD__DECISION_ALLOW:
		return "allow";
	case WARD__DECISION_PROMPT:
		return "prompt";
	case WARD__DECISION_FORBIDDEN:
		return "forbidden";
	}
	return "forbidden";
}

/* Grows *v (elements of size sz) so that one more fits; capacity doubles. */
static int grow(void **v, size_t *alloc, size_t n, size_t sz)
{
	size_t na;
	void *p;

	if (n < *alloc)
		return 0;
	na = *alloc ? *alloc * 2 : 8;
	p = reallocarray(*v, na, sz);
	if (!p)
		return -ENOMEM;
	*v = p;
	*alloc = na;
	return 0;
}

/* Makes room for extra more elements at once (so that moving a parsed file in cannot fail). */
static int reserve(void **v, size_t *alloc, size_t n, size_t extra, size_t sz)
{
	size_t need = n + extra, na = *alloc;
	void *p;

	if (need <= *alloc)
		return 0;
	while (na < need)
		na = na ? na * 2 : 8;
	p = reallocarray(*v, na, sz);
	if (!p)
		return -ENOMEM;
	*v = p;
	*alloc = na;
	return 0;
}

/* ------------------------------------------------------------ the builtins */

/* Positional order as Codex's builtins declare their parameters. */
static const struct ward__builtin builtins[] = {
	{"prefix_rule",
	 {"pattern", "decision", "match", "not_match", "justification", NULL},
	 1u << 0},
	{"network_rule", {"host", "protocol", "decision", "justification", NULL}, 7u},
	{"host_executable", {"name", "paths", NULL}, 3u},
};

/* ------------------------------------------------------------ one file */

/* Examples of one prefix_rule() call, checked when the file is complete. */
struct pending {
	size_t first_rule; /* the call's rules: file->prefix[first_rule .. first_rule + n_rules) */
	size_t n_rules;
	struct ward__cmd *match;
	size_t n_match;
	struct ward__cmd *not_match;
	size_t n_not_match;
	unsigned line, col;
};

struct file {
	struct ward__rules *into; /* the set the file is added to (for its host executables) */
	struct ward__rules r; /* what this file adds */
	struct pending *pending;
	size_t n_pending, alloc_pending;
	size_t n_examples;
	struct ward__parser p;
	unsigned source;
	const struct ward__match_opts *opts;
};

static void cmd_release(struct ward__cmd *c)
{
	free_strv(c->argv, c->argc);
	*c = (struct ward__cmd){0};
}

static void pending_release(struct pending *pd)
{
	for (size_t i = 0; i < pd->n_match; i++)
		cmd_release(&pd->match[i]);
	free(pd->match);
	for (size_t i = 0; i < pd->n_not_match; i++)
		cmd_release(&pd->not_match[i]);
	free(pd->not_match);
}

static int vfail(struct file *f, const struct ward__value *v, const char *fmt, ...) _printf_(3, 4);

static int vfail(struct file *f, const struct ward__value *v, const char *fmt, ...)
{
	char msg[384];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return ward__lex_fail(&f->p.lx, v->line, v->col, "%s", msg);
}

static int cfail(struct file *f, const struct ward__call *c, const char *fmt, ...) _printf_(3, 4);

static int cfail(struct file *f, const struct ward__call *c, const char *fmt, ...)
{
	char msg[384];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return ward__lex_fail(&f->p.lx, c->line, c->col, "%s", msg);
}

static int parse_decision(struct file *f, const struct ward__value *v, bool network,
			  enum ward__decision *ret)
{
	if (v->type != V_STR)
		return vfail(f, v, "decision must be a string (got %s)", ward__vtype_name(v->type));
	if (strcmp(v->s, "allow") == 0)
		*ret = WARD__DECISION_ALLOW;
	else if (strcmp(v->s, "prompt") == 0)
		*ret = WARD__DECISION_PROMPT;
	else if (strcmp(v->s, "forbidden") == 0 || (network && strcmp(v->s, "deny") == 0))
		*ret = WARD__DECISION_FORBIDDEN;
	else
		return vfail(f, v, "invalid decision '%.64s' (expected %s)", v->s,
			     network ? "allow, prompt, forbidden or deny"
				     : "allow, prompt or forbidden");
	return 0;
}

static bool blank(const char *s)
{
	for (; *s; s++)
		if (*s != ' ' && *s != '\t' && *s != '\n' && *s != '\r' && *s != '\v' && *s != '\f')
			return false;
	return true;
}

static int parse_justification(struct file *f, const struct ward__call *c, size_t idx, char **ret)
{
	const struct ward__value *v = &c->args[idx];

	*ret = NULL;
	if (!c->given[idx])
		return 0;
	if (v->type != V_STR)
		return vfail(f, v, "justification must be a string (got %s)",
			     ward__vtype_name(v->type));
	if (blank(v->s))
		return vfail(f, v, "justification cannot be empty");
	*ret = strdup(v->s);
	return *ret ? 0 : -ENOMEM;
}

static int strv_from_list(const struct ward__value *v, char ***ret, size_t *ret_n)
{
	char **out = calloc(v->n + 1, sizeof(char *));

	if (!out)
		return -ENOMEM;
	for (size_t i = 0; i < v->n; i++) {
		out[i] = strdup(v->items[i].s);
		if (!out[i]) {
			free_strv(out, i);
			return -ENOMEM;
		}
	}
	*ret = out;
	*ret_n = v->n;
	return 0;
}

/* Splits an example string as the Rust shlex crate does (POSIX-like, with '#' comments). */
static int shlex_split(const char *s, struct ward__cmd *ret)
{
	char **words = NULL;
	size_t n = 0, alloc = 0;
	struct ward__strbuf w = {0};
	int r = 0;

	for (;;) {
		bool in_word = false;

		while (*s == ' ' || *s == '\t' || *s == '\n')
			s++;
		if (*s == '#') {
			while (*s && *s != '\n')
				s++;
			continue;
		}
		if (!*s)
			break;
		w.n = 0;
		r = ward__strbuf_add(&w, "", 0);
		while (r >= 0 && *s && *s != ' ' && *s != '\t' && *s != '\n') {
			in_word = true;
			if (*s == '\'') {
				const char *e = strchr(s + 1, '\'');

				if (!e) {
					r = -EINVAL;
					break;
				}
				r = ward__strbuf_add(&w, s + 1, (size_t)(e - s - 1));
				s = e + 1;
			} else if (*s == '"') {
				s++;
				while (r >= 0 && *s != '"') {
					if (!*s) {
						r = -EINVAL;
						break;
					}
					if (*s == '\\') {
						s++;
						if (!*s) {
							r = -EINVAL;
							break;
						}
						if (*s == '$' || *s == '`' || *s == '"' ||
						    *s == '\\') {
							r = ward__strbuf_add(&w, s, 1);
						} else if (*s != '\n') {
							r = ward__strbuf_add(&w, "\\", 1);
							if (r >= 0)
								r = ward__strbuf_add(&w, s, 1);
						}
						s++;
					} else {
						r = ward__strbuf_add(&w, s++, 1);
					}
				}
				if (r >= 0)
					s++;
			} else if (*s == '\\') {
				s++;
				if (!*s) {
					r = -EINVAL;
					break;
				}
				if (*s != '\n')
					r = ward__strbuf_add(&w, s, 1);
				s++;
			} else {
				r = ward__strbuf_add(&w, s++, 1);
			}
		}
		if (r < 0)
			break;
		if (!in_word)
			continue;
		if (n >= WARD_RULES_MAX_TOKENS) {
			r = -E2BIG;
			break;
		}
		if (n + 1 >= alloc) {
			char **nw;

			alloc = alloc ? alloc * 2 : 8;
			nw = reallocarray(words, alloc, sizeof(char *));
			if (!nw) {
				r = -ENOMEM;
				break;
			}
			words = nw;
		}
		words[n] = strdup(w.p);
		if (!words[n]) {
			r = -ENOMEM;
			break;
		}
		words[++n] = NULL;
	}
	free(w.p);
	if (r < 0) {
		free_strv(words, n);
		return r == -E2BIG ? -E2BIG : r == -ENOMEM ? -ENOMEM : -EINVAL;
	}
	ret->argv = words;
	ret->argc = n;
	return 0;
}

static int parse_examples(struct file *f, const struct ward__value *v, const char *what,
			  struct ward__cmd **ret, size_t *ret_n)
{
	struct ward__cmd *out;
	int r;

	if (v->type != V_LIST)
		return vfail(f, v, "%s must be a list (got %s)", what, ward__vtype_name(v->type));
	f->n_examples += v->n;
	if (f->n_examples > WARD_RULES_MAX_EXAMPLES * 64 || v->n > WARD_RULES_MAX_EXAMPLES)
		return vfail(f, v, "too many examples (at most %d per rule)",
			     WARD_RULES_MAX_EXAMPLES);
	out = calloc(v->n ? v->n : 1, sizeof(*out));
	if (!out)
		return -ENOMEM;
	for (size_t i = 0; i < v->n; i++) {
		const struct ward__value *e = &v->items[i];

		if (e->type == V_STR) {
			r = shlex_split(e->s, &out[i]);
			if (r == -EINVAL)
				r = vfail(
					f, e,
					"invalid example: example string has invalid shell syntax");
			else if (r == -E2BIG)
				r = vfail(f, e, "invalid example: more than %d words",
					  WARD_RULES_MAX_TOKENS);
			else if (r >= 0 && out[i].argc == 0)
				r = vfail(f, e,
					  "invalid example: example cannot be an empty string");
		} else if (e->type == V_LIST) {
			r = 0;
			if (e->n == 0)
				r = vfail(f, e, "invalid example: example cannot be an empty list");
			else if (e->n > WARD_RULES_MAX_TOKENS)
				r = vfail(f, e, "invalid example: more than %d words",
					  WARD_RULES_MAX_TOKENS);
			for (size_t j = 0; r >= 0 && j < e->n; j++)
				if (e->items[j].type != V_STR)
					r = vfail(
						f, &e->items[j],
						"invalid example: example tokens must be strings (got %s)",
						ward__vtype_name(e->items[j].type));
			if (r >= 0)
				r = strv_from_list(e, &out[i].argv, &out[i].argc);
		} else {
			r = vfail(
				f, e,
				"invalid example: example must be a string or list of strings (got %s)",
				ward__vtype_name(e->type));
		}
		if (r < 0) {
			for (size_t j = 0; j <= i; j++)
				cmd_release(&out[j]);
			free(out);
			return r;
		}
	}
	*ret = out;
	*ret_n = v->n;
	return 0;
}

static int parse_pattern_token(struct file *f, const struct ward__value *v,
			       struct ward__pattern_token *t)
{
	if (v->type == V_STR) {
		t->alts = calloc(2, sizeof(char *));
		if (!t->alts)
			return -ENOMEM;
		t->alts[0] = strdup(v->s);
		if (!t->alts[0])
			return -ENOMEM;
		t->n_alts = 1;
		return 0;
	}
	if (v->type != V_LIST)
		return vfail(
			f, v,
			"invalid pattern element: pattern element must be a string or list of strings (got %s)",
			ward__vtype_name(v->type));
	if (v->n == 0)
		return vfail(f, v, "invalid pattern element: pattern alternatives cannot be empty");
	if (v->n > WARD_RULES_MAX_ALTS)
		return vfail(f, v, "invalid pattern element: more than %d alternatives",
			     WARD_RULES_MAX_ALTS);
	for (size_t i = 0; i < v->n; i++)
		if (v->items[i].type != V_STR)
			return vfail(
				f, &v->items[i],
				"invalid pattern element: pattern alternative must be a string (got %s)",
				ward__vtype_name(v->items[i].type));
	return strv_from_list(v, &t->alts, &t->n_alts);
}

static int add_source_rule(struct file *f, const char *first, size_t group)
{
	struct ward__rules *r = &f->r;

	if (f->into->n_prefix + r->n_prefix >= WARD_RULES_MAX_PREFIX)
		return -E2BIG;
	if (grow((void **)&r->prefix, &r->alloc_prefix, r->n_prefix, sizeof(*r->prefix)) < 0)
		return -ENOMEM;
	r->prefix[r->n_prefix].first = strdup(first);
	if (!r->prefix[r->n_prefix].first)
		return -ENOMEM;
	r->prefix[r->n_prefix].group = group;
	r->n_prefix++;
	return 0;
}

static int do_prefix_rule(struct file *f, struct ward__call *c)
{
	const struct ward__value *pat = &c->args[0];
	struct ward__rule_group g = {.source = f->source, .line = c->line, .col = c->col};
	struct pending pd = {.line = c->line, .col = c->col};
	struct ward__pattern_token first = {0};
	size_t gi;
	int r;

	if (pat->type != V_LIST)
		return vfail(f, pat, "pattern must be a list (got %s)",
			     ward__vtype_name(pat->type));
	if (pat->n == 0)
		return vfail(f, pat, "invalid pattern element: pattern cannot be empty");
	if (pat->n > WARD_RULES_MAX_TOKENS)
		return vfail(f, pat, "invalid pattern element: more than %d elements",
			     WARD_RULES_MAX_TOKENS);
	g.decision = WARD__DECISION_ALLOW;
	if (c->given[1]) {
		r = parse_decision(f, &c->args[1], false, &g.decision);
		if (r < 0)
			return r;
	}
	r = parse_justification(f, c, 4, &g.justification);
	if (r < 0)
		return r;
	r = parse_pattern_token(f, &pat->items[0], &first);
	if (r >= 0 && pat->n > 1) {
		g.rest = calloc(pat->n - 1, sizeof(*g.rest));
		if (!g.rest)
			r = -ENOMEM;
	}
	for (size_t i = 1; r >= 0 && i < pat->n; i++) {
		r = parse_pattern_token(f, &pat->items[i], &g.rest[i - 1]);
		g.n_rest = i;
	}
	if (r >= 0 && c->given[2])
		r = parse_examples(f, &c->args[2], "match", &pd.match, &pd.n_match);
	if (r >= 0 && c->given[3])
		r = parse_examples(f, &c->args[3], "not_match", &pd.not_match, &pd.n_not_match);
	if (r >= 0)
		r = grow((void **)&f->r.groups, &f->r.alloc_groups, f->r.n_groups,
			 sizeof(*f->r.groups));
	if (r >= 0)
		r = grow((void **)&f->pending, &f->alloc_pending, f->n_pending,
			 sizeof(*f->pending));
	if (r < 0) {
		free_strv(first.alts, first.n_alts);
		group_release(&g);
		pending_release(&pd);
		return r;
	}
	gi = f->r.n_groups++;
	f->r.groups[gi] = g;
	pd.first_rule = f->r.n_prefix;
	for (size_t i = 0; r >= 0 && i < first.n_alts; i++)
		r = add_source_rule(f, first.alts[i], gi);
	free_strv(first.alts, first.n_alts);
	pd.n_rules = f->r.n_prefix - pd.first_rule;
	f->pending[f->n_pending++] = pd;
	if (r == -E2BIG)
		return cfail(f, c, "more than %d prefix rules", WARD_RULES_MAX_PREFIX);
	return r;
}

/* Codex's normalize_network_rule_host: a hostname or IP literal, no scheme, port, path or wildcard. */
static int normalize_host(struct file *f, const struct ward__value *v, char **ret)
{
	const char *s = v->s, *e;
	_cleanup_free_ char *h = NULL;
	size_t n;

	while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r')
		s++;
	e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\n' || e[-1] == '\r'))
		e--;
	n = (size_t)(e - s);
	if (n == 0)
		return vfail(f, v, "invalid rule: network_rule host cannot be empty");
	h = strndup(s, n);
	if (!h)
		return -ENOMEM;
	if (strstr(h, "://") || strpbrk(h, "/?#"))
		return vfail(
			f, v,
			"invalid rule: network_rule host must be a hostname or IP literal (without scheme or path)");
	if (h[0] == '[') {
		char *close = strchr(h, ']');
		const char *port;

		if (!close)
			return vfail(
				f, v,
				"invalid rule: network_rule host has an invalid bracketed IPv6 literal");
		port = close + 1;
		if (*port) {
			bool ok = port[0] == ':' && port[1];

			for (const char *q = port + 1; ok && *q; q++)
				ok = *q >= '0' && *q <= '9';
			if (!ok)
				return vfail(
					f, v,
					"invalid rule: network_rule host contains an unsupported suffix: %.64s",
					v->s);
		}
		*close = '\0';
		memmove(h, h + 1, strlen(h + 1) + 1);
	} else {
		char *colon = strchr(h, ':');

		if (colon && !strchr(colon + 1, ':') && colon != h && colon[1]) {
			bool digits = true;

			for (const char *q = colon + 1; *q; q++)
				digits = digits && *q >= '0' && *q <= '9';
			if (digits)
				*colon = '\0';
		}
	}
	n = strlen(h);
	while (n > 0 && h[n - 1] == '.')
		h[--n] = '\0';
	while (n > 0 && (h[n - 1] == ' ' || h[n - 1] == '\t'))
		h[--n] = '\0';
	for (size_t i = 0; i < n; i++)
		if (h[i] >= 'A' && h[i] <= 'Z')
			h[i] = (char)(h[i] - 'A' + 'a');
	if (n == 0)
		return vfail(f, v, "invalid rule: network_rule host cannot be empty");
	if (strchr(h, '*'))
		return vfail(
			f, v,
			"invalid rule: network_rule host must be a specific host; wildcards are not allowed");
	for (size_t i = 0; i < n; i++)
		if (h[i] == ' ' || h[i] == '\t' || h[i] == '\n' || h[i] == '\r' || h[i] == '\v' ||
		    h[i] == '\f')
			return vfail(f, v,
				     "invalid rule: network_rule host cannot contain whitespace");
	*ret = TAKE_PTR(h);
	return 0;
}

static int do_network_rule(struct file *f, struct ward__call *c)
{
	struct ward__network_rule nr = {.source = f->source, .line = c->line};
	const struct ward__value *proto = &c->args[1];
	int r;

	if (c->args[0].type != V_STR)
		return vfail(f, &c->args[0], "host must be a string (got %s)",
			     ward__vtype_name(c->args[0].type));
	if (proto->type != V_STR)
		return vfail(f, proto, "protocol must be a string (got %s)",
			     ward__vtype_name(proto->type));
	if (strcmp(proto->s, "http") == 0)
		nr.protocol = WARD__NET_HTTP;
	else if (strcmp(proto->s, "https") == 0 || strcmp(proto->s, "https_connect") == 0 ||
		 strcmp(proto->s, "http-connect") == 0)
		nr.protocol = WARD__NET_HTTPS;
	else if (strcmp(proto->s, "socks5_tcp") == 0)
		nr.protocol = WARD__NET_SOCKS5_TCP;
	else if (strcmp(proto->s, "socks5_udp") == 0)
		nr.protocol = WARD__NET_SOCKS5_UDP;
	else
		return vfail(
			f, proto,
			"invalid rule: network_rule protocol must be one of http, https, socks5_tcp, socks5_udp (got %.64s)",
			proto->s);
	r = parse_decision(f, &c->args[2], true, &nr.decision);
	if (r < 0)
		return r;
	r = parse_justification(f, c, 3, &nr.justification);
	if (r < 0)
		return r;
	r = normalize_host(f, &c->args[0], &nr.host);
	if (r < 0) {
		free(nr.justification);
		return r;
	}
	if (f->into->n_network + f->r.n_network >= WARD_RULES_MAX_NETWORK)
		r = cfail(f, c, "more than %d network rules", WARD_RULES_MAX_NETWORK);
	else
		r = grow((void **)&f->r.network, &f->r.alloc_network, f->r.n_network,
			 sizeof(*f->r.network));
	if (r < 0) {
		free(nr.host);
		free(nr.justification);
		return r;
	}
	f->r.network[f->r.n_network++] = nr;
	return 0;
}

static struct ward__host_executable *find_host(struct ward__host_executable *v, size_t n,
					       const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(v[i].name, name) == 0)
			return &v[i];
	return NULL;
}

static int do_host_executable(struct file *f, struct ward__call *c)
{
	const struct ward__value *name = &c->args[0], *paths = &c->args[1];
	struct ward__host_executable h = {0}, *old;
	int r = 0;

	if (name->type != V_STR)
		return vfail(f, name, "name must be a string (got %s)",
			     ward__vtype_name(name->type));
	if (paths->type != V_LIST)
		return vfail(f, paths, "paths must be a list (got %s)",
			     ward__vtype_name(paths->type));
	if (!name->s[0])
		return vfail(f, name, "invalid rule: host_executable name cannot be empty");
	if (strchr(name->s, '/') || strcmp(name->s, ".") == 0 || strcmp(name->s, "..") == 0)
		return vfail(
			f, name,
			"invalid rule: host_executable name must be a bare executable name (got %.64s)",
			name->s);
	if (paths->n > WARD_RULES_MAX_HOST_PATHS)
		return vfail(f, paths, "invalid rule: more than %d host_executable paths",
			     WARD_RULES_MAX_HOST_PATHS);
	h.name = strdup(name->s);
	h.paths = calloc(paths->n + 1, sizeof(char *));
	if (!h.name || !h.paths) {
		host_release(&h);
		return -ENOMEM;
	}
	for (size_t i = 0; r >= 0 && i < paths->n; i++) {
		const struct ward__value *pv = &paths->items[i];
		_cleanup_free_ char *abs = NULL, *base = NULL;
		bool dup = false;

		if (pv->type != V_STR) {
			r = vfail(f, pv,
				  "invalid rule: host_executable paths must be strings (got %s)",
				  ward__vtype_name(pv->type));
			break;
		}
		if (pv->s[0] != '/') {
			r = vfail(
				f, pv,
				"invalid rule: host_executable paths must be absolute (got %.64s)",
				pv->s);
			break;
		}
		abs = ward__rules_absolute_path(pv->s, "/", NULL);
		if (!abs) {
			r = -ENOMEM;
			break;
		}
		base = ward__path_file_name(abs);
		if (!base || strcmp(base, name->s) != 0) {
			r = vfail(
				f, pv,
				"invalid rule: host_executable path '%.64s' must have basename '%.64s'",
				pv->s, name->s);
			break;
		}
		for (size_t j = 0; j < h.n_paths; j++)
			dup = dup || strcmp(h.paths[j], abs) == 0;
		if (!dup)
			h.paths[h.n_paths++] = TAKE_PTR(abs);
	}
	if (r < 0) {
		host_release(&h);
		return r;
	}
	/* A later definition of the same name replaces the earlier one, as in Codex. */
	old = find_host(f->r.hosts, f->r.n_hosts, h.name);
	if (old) {
		host_release(old);
		*old = h;
		return 0;
	}
	if (f->into->n_hosts + f->r.n_hosts >= WARD_RULES_MAX_HOSTS) {
		host_release(&h);
		return cfail(f, c, "more than %d host_executable() names", WARD_RULES_MAX_HOSTS);
	}
	if (grow((void **)&f->r.hosts, &f->r.alloc_hosts, f->r.n_hosts, sizeof(*f->r.hosts)) < 0) {
		host_release(&h);
		return -ENOMEM;
	}
	f->r.hosts[f->r.n_hosts++] = h;
	return 0;
}

static int parse_statement(struct file *f)
{
	struct ward__parser *p = &f->p;
	const struct ward__builtin *b = NULL;
	struct ward__call c = {.line = p->cur.line, .col = p->cur.col};
	int r;

	if (p->cur.kind != T_NAME) {
		if (p->cur.kind == T_OTHER || p->cur.kind == T_STRING || p->cur.kind == T_LBRACK ||
		    p->cur.kind == T_LPAREN || p->cur.kind == T_INT)
			return ward__lex_fail(
				&p->lx, p->cur.line, p->cur.col,
				"only prefix_rule(), network_rule() and host_executable() calls are supported");
		return ward__syntax_unexpected(p, "a rule");
	}
	for (size_t i = 0; i < ELEMENTSOF(builtins); i++)
		if (strlen(builtins[i].name) == p->cur.len &&
		    memcmp(builtins[i].name, p->cur.start, p->cur.len) == 0)
			b = &builtins[i];
	if (!b) {
		const char *what = "is not supported";
		struct ward__lexer save = p->lx;
		struct ward__tok after;

		/* NAME = ...: say what it is. */
		if (ward__lex_next(&p->lx, &after) >= 0 && after.kind == T_EQ)
			what = "is not supported: assignments (write the values into the call)";
		ward__tok_release(&after);
		p->lx = save;

		if (p->cur.len == 4 && memcmp(p->cur.start, "load", 4) == 0)
			what = "is not supported: load() of other files";
		else if (p->cur.len == 3 && memcmp(p->cur.start, "def", 3) == 0)
			what = "is not supported: function definitions";
		return ward__lex_fail(
			&p->lx, p->cur.line, p->cur.col,
			"'%.*s' %s (only prefix_rule(), network_rule() and host_executable() calls are; this is not a Starlark interpreter)",
			(int)MIN(p->cur.len, (size_t)40), p->cur.start, what);
	}
	c.name = b->name;
	r = ward__syntax_call(p, b, &c);
	if (r >= 0) {
		if (b == &builtins[0])
			r = do_prefix_rule(f, &c);
		else if (b == &builtins[1])
			r = do_network_rule(f, &c);
		else
			r = do_host_executable(f, &c);
	}
	ward__call_release(&c);
	return r;
}

/* ------------------------------------------------------------ examples */

/* The host executables visible to the file's examples: the set's, then the file's own. */
static int merged_hosts(const struct file *f, struct ward__rules *view)
{
	size_t n = f->into->n_hosts + f->r.n_hosts;

	view->hosts = calloc(n ? n : 1, sizeof(*view->hosts));
	if (!view->hosts)
		return -ENOMEM;
	for (size_t i = 0; i < f->into->n_hosts; i++) {
		const struct ward__host_executable *o =
			find_host(f->r.hosts, f->r.n_hosts, f->into->hosts[i].name);

		view->hosts[view->n_hosts++] = o ? *o : f->into->hosts[i];
	}
	for (size_t i = 0; i < f->r.n_hosts; i++)
		if (!find_host(f->into->hosts, f->into->n_hosts, f->r.hosts[i].name))
			view->hosts[view->n_hosts++] = f->r.hosts[i];
	return 0;
}

static void render_example(const struct ward__cmd *e, char *buf, size_t size)
{
	_cleanup_free_ char *s = ward__shell_join((const char *const *)e->argv, e->argc);

	snprintf(buf, size, "%s", s ? s : "?");
	if (strlen(buf) >= 120)
		memcpy(buf + 116, "...", 4);
}

static void render_rule(const struct file *f, const struct pending *pd, char *buf, size_t size)
{
	const struct ward__rule_group *g = &f->r.groups[f->r.prefix[pd->first_rule].group];
	size_t o = 0;

	o += (size_t)snprintf(buf, size, "[\"%s\"", f->r.prefix[pd->first_rule].first);
	for (size_t i = 0; i < g->n_rest && o < size; i++)
		o += (size_t)snprintf(buf + o, size - o, ", \"%s\"", g->rest[i].alts[0]);
	if (o < size)
		snprintf(buf + o, size - o, "]");
	if (strlen(buf) >= 120)
		memcpy(buf + 116, "...", 4);
}

/*
 * Checks the examples of every prefix_rule() of the file: each not_match
 * example must match none of the call's rules, each match example at least
 * one, with the host executables of the whole file, as Codex checks them.
 */
static int check_examples(struct file *f)
{
	struct ward__rules view = {0};
	struct ward__match_opts o = {.resolve_host_executables = true};
	int r;

	if (f->opts) {
		o.cwd = f->opts->cwd;
		o.home = f->opts->home;
	}
	r = merged_hosts(f, &view);
	if (r < 0)
		return r;
	view.groups = f->r.groups;
	view.n_groups = f->r.n_groups;
	for (size_t i = 0; r >= 0 && i < f->n_pending; i++) {
		const struct pending *pd = &f->pending[i];
		struct ward__match_list l = {0};
		char ex[128], rule[128];

		view.prefix = f->r.prefix + pd->first_rule;
		view.n_prefix = pd->n_rules;
		for (size_t j = 0; r >= 0 && j < pd->n_not_match; j++) {
			r = ward__rules_match(&view, (const char *const *)pd->not_match[j].argv,
					      pd->not_match[j].argc, &o, &l);
			if (r >= 0 && l.n > 0) {
				render_example(&pd->not_match[j], ex, sizeof(ex));
				render_rule(f, pd, rule, sizeof(rule));
				r = ward__lex_fail(
					&f->p.lx, pd->line, pd->col,
					"not_match example '%s' matches the rule's pattern %s", ex,
					rule);
			}
			ward__match_list_release(&l);
		}
		for (size_t j = 0; r >= 0 && j < pd->n_match; j++) {
			r = ward__rules_match(&view, (const char *const *)pd->match[j].argv,
					      pd->match[j].argc, &o, &l);
			if (r >= 0 && l.n == 0) {
				render_example(&pd->match[j], ex, sizeof(ex));
				render_rule(f, pd, rule, sizeof(rule));
				r = ward__lex_fail(
					&f->p.lx, pd->line, pd->col,
					"match example '%s' does not match the rule's pattern %s",
					ex, rule);
			}
			ward__match_list_release(&l);
		}
	}
	free(view.hosts);
	return r;
}

/* ------------------------------------------------------------ merging */

/* Moves what the file added into the set; the capacity is reserved first, so this cannot fail. */
static int merge(struct file *f, const char *origin, bool project)
{
	struct ward__rules *d = f->into, *s = &f->r;
	size_t new_hosts = 0, base_group = d->n_groups;
	char *path;

	for (size_t i = 0; i < s->n_hosts; i++)
		if (!find_host(d->hosts, d->n_hosts, s->hosts[i].name))
			new_hosts++;
	path = strdup(origin);
	if (!path)
		return -ENOMEM;
	if (reserve((void **)&d->groups, &d->alloc_groups, d->n_groups, s->n_groups,
		    sizeof(*d->groups)) < 0 ||
	    reserve((void **)&d->prefix, &d->alloc_prefix, d->n_prefix, s->n_prefix,
		    sizeof(*d->prefix)) < 0 ||
	    reserve((void **)&d->network, &d->alloc_network, d->n_network, s->n_network,
		    sizeof(*d->network)) < 0 ||
	    reserve((void **)&d->hosts, &d->alloc_hosts, d->n_hosts, new_hosts, sizeof(*d->hosts)) <
		    0 ||
	    reserve((void **)&d->sources, &d->alloc_sources, d->n_sources, 1, sizeof(*d->sources)) <
		    0) {
		free(path);
		return -ENOMEM;
	}
	d->sources[d->n_sources++] = (struct ward__rules_source){.path = path, .project = project};
	/* (memcpy from or to NULL is undefined even for 0 bytes: an empty file has no arrays.) */
	if (s->n_groups)
		memcpy(d->groups + d->n_groups, s->groups, s->n_groups * sizeof(*s->groups));
	d->n_groups += s->n_groups;
	for (size_t i = 0; i < s->n_prefix; i++) {
		d->prefix[d->n_prefix] = s->prefix[i];
		d->prefix[d->n_prefix].group += base_group;
		d->n_prefix++;
	}
	if (s->n_network)
		memcpy(d->network + d->n_network, s->network, s->n_network * sizeof(*s->network));
	d->n_network += s->n_network;
	for (size_t i = 0; i < s->n_hosts; i++) {
		struct ward__host_executable *old =
			find_host(d->hosts, d->n_hosts, s->hosts[i].name);

		if (old) {
			host_release(old);
			*old = s->hosts[i];
		} else {
			d->hosts[d->n_hosts++] = s->hosts[i];
		}
	}
	free(s->groups);
	free(s->prefix);
	free(s->network);
	free(s->hosts);
	*s = (struct ward__rules){0};
	return 0;
}

int ward__rules_parse(struct ward__rules *r, const char *origin, const char *text, size_t len,
		      bool project, const struct ward__match_opts *opts, struct ward_error *err)
{
	struct file f = {.into = r, .opts = opts};
	size_t bad = 0;
	int ret = 0;

	if (!origin)
		origin = "<rules>";
	if (len > WARD_RULES_MAX_FILE)
		return ward__error(err, -E2BIG, "rules", "%s: larger than %zu bytes", origin,
				   WARD_RULES_MAX_FILE);
	if (r->total_bytes + len > WARD_RULES_MAX_TOTAL)
		return ward__error(err, -E2BIG, "rules",
				   "%s: the rules files together are larger than %zu bytes", origin,
				   WARD_RULES_MAX_TOTAL);
	if (r->n_sources >= WARD_RULES_MAX_FILES)
		return ward__error(err, -E2BIG, "rules", "%s: more than %d rules files", origin,
				   WARD_RULES_MAX_FILES);
	if (!ward__valid_utf8((const unsigned char *)text, len, &bad)) {
		unsigned line = 1;

		for (size_t i = 0; i < bad; i++)
			line += text[i] == '\n';
		return ward__error(err, -EINVAL, "rules", "%s:%u: not valid UTF-8", origin, line);
	}
	if (memchr(text, '\0', len))
		return ward__error(err, -EINVAL, "rules", "%s: contains a NUL byte", origin);
	f.source = (unsigned)r->n_sources;
	f.p.lx = (struct ward__lexer){.origin = origin,
				      .s = text,
				      .len = len,
				      .line = 1,
				      .col = 1,
				      .line_start = true,
				      .err = err};
	ret = ward__syntax_next(&f.p);
	while (ret >= 0 && f.p.cur.kind != T_EOF) {
		ret = parse_statement(&f);
		if (ret < 0)
			break;
		/* A statement ends at a newline, a ';' (then maybe another call) or the end. */
		if (f.p.cur.kind == T_SEMI) {
			ret = ward__syntax_next(&f.p);
			if (ret >= 0 && f.p.cur.kind == T_SEMI)
				ret = ward__syntax_unexpected(&f.p, "a rule");
			if (ret >= 0 && f.p.cur.kind == T_NEWLINE)
				ret = ward__syntax_next(&f.p);
		} else if (f.p.cur.kind == T_NEWLINE) {
			ret = ward__syntax_next(&f.p);
		} else if (f.p.cur.kind != T_EOF) {
			ret = ward__syntax_unexpected(&f.p, "end of line");
		}
	}
	ward__tok_release(&f.p.cur);
	if (ret >= 0)
		ret = check_examples(&f);
	if (ret >= 0)
		ret = merge(&f, origin, project);
	if (ret >= 0)
		r->total_bytes += len;
	if (ret == -ENOMEM)
		ward__error(err, -ENOMEM, "rules", "%s: out of memory", origin);
	for (size_t i = 0; i < f.n_pending; i++)
		pending_release(&f.pending[i]);
	free(f.pending);
	ward__rules_release(&f.r);
	return ret;
}
