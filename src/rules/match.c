/* SPDX-License-Identifier: MIT */
/*
 * Matching a command against a set of rules, as Codex's execpolicy Policy
 * does (execpolicy/src/policy.rs, rule.rs): a rule matches when argv is at
 * least as long as its pattern, argv[0] equals its program exactly and every
 * further pattern element equals (one of the alternatives of) the argument
 * at the same place. When no rule of argv[0] matches and the caller asks for
 * it, a program given as a path is tried under its basename, limited by
 * host_executable().
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "basic/cleanup.h"
#include "rules/rules.h"

void ward__match_list_release(struct ward__match_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i].resolved_program);
	free(l->v);
	*l = (struct ward__match_list){0};
}

bool ward__match_list_decision(const struct ward__match_list *l, enum ward__decision *ret)
{
	enum ward__decision d = WARD__DECISION_ALLOW;

	if (l->n == 0)
		return false;
	for (size_t i = 0; i < l->n; i++)
		if (l->v[i].group->decision > d)
			d = l->v[i].group->decision;
	*ret = d;
	return true;
}

/* ------------------------------------------------------------ paths */

char *ward__path_file_name(const char *path)
{
	size_t end = strlen(path), start;

	/*
	 * Rust's Path::file_name: the last component, trailing slashes and
	 * "." components ignored; none when that component is ".." or the path
	 * is the root or empty.
	 */
	for (;;) {
		while (end > 0 && path[end - 1] == '/')
			end--;
		if (end == 1 && path[0] == '.')
			return NULL; /* "." alone */
		if (end >= 2 && path[end - 1] == '.' && path[end - 2] == '/') {
			end -= 1; /* ".../." */
			continue;
		}
		break;
	}
	if (end == 0)
		return NULL;
	start = end;
	while (start > 0 && path[start - 1] != '/')
		start--;
	if (end - start == 2 && path[start] == '.' && path[start + 1] == '.')
		return NULL;
	return strndup(path + start, end - start);
}

char *ward__rules_absolute_path(const char *path, const char *cwd, const char *home)
{
	_cleanup_free_ char *joined = NULL;
	const char *src = path;
	char *out;
	size_t o = 0, n;

	if (path[0] == '~' && (path[1] == '\0' || path[1] == '/') && home && home[0] == '/') {
		n = strlen(home) + strlen(path) + 2;
		joined = malloc(n);
		if (!joined)
			return NULL;
		snprintf(joined, n, "%s/%s", home, path + 1);
		src = joined;
	} else if (path[0] != '/') {
		if (!cwd || cwd[0] != '/')
			return NULL;
		n = strlen(cwd) + strlen(path) + 2;
		joined = malloc(n);
		if (!joined)
			return NULL;
		snprintf(joined, n, "%s/%s", cwd, path);
		src = joined;
	}
	/* Lexical normalisation: components of "." vanish, ".." removes one, never above "/". */
	out = malloc(strlen(src) + 2);
	if (!out)
		return NULL;
	out[o++] = '/';
	for (const char *p = src; *p;) {
		const char *e;
		size_t len;

		while (*p == '/')
			p++;
		if (!*p)
			break;
		e = strchr(p, '/');
		len = e ? (size_t)(e - p) : strlen(p);
		if (len == 1 && p[0] == '.') {
			/* nothing */
		} else if (len == 2 && p[0] == '.' && p[1] == '.') {
			while (o > 1 && out[o - 1] != '/')
				o--;
			if (o > 1)
				o--; /* the slash before the removed component */
		} else {
			if (o > 1)
				out[o++] = '/';
			memcpy(out + o, p, len);
			o += len;
		}
		p += len;
	}
	out[o] = '\0';
	return out;
}

/* ------------------------------------------------------------ rules */

static bool token_matches(const struct ward__pattern_token *t, const char *arg)
{
	for (size_t i = 0; i < t->n_alts; i++)
		if (strcmp(t->alts[i], arg) == 0)
			return true;
	return false;
}

/*
 * Whether word, its placeholders replaced by any text, can equal s: the
 * placeholders are wildcards, the text between them literal.
 */
static bool may_become(const char *word, const char *ph, const char *s)
{
	size_t pl = strlen(ph);
	const char *next = strstr(word, ph);
	size_t lit;

	if (!next)
		return strcmp(word, s) == 0;
	/* The literal text before the first placeholder starts s. */
	lit = (size_t)(next - word);
	if (strncmp(word, s, lit) != 0)
		return false;
	word = next + pl;
	s += lit;
	/* Each later piece: at its leftmost place (greedy is exact for literal pieces), the last at the end. */
	for (;;) {
		const char *found;

		next = strstr(word, ph);
		lit = next ? (size_t)(next - word) : strlen(word);
		if (!next) {
			size_t sl = strlen(s);

			return sl >= lit && memcmp(s + sl - lit, word, lit) == 0;
		}
		if (lit) {
			char *piece = strndup(word, lit);

			/* Out of memory: "may" is the answer that keeps prompts and refusals. */
			if (!piece)
				return true;
			found = strstr(s, piece);
			free(piece);
			if (!found)
				return false;
			s = found + lit;
		}
		word = next + pl;
	}
}

static bool token_may_match(const struct ward__pattern_token *t, const char *arg, const char *ph)
{
	for (size_t i = 0; i < t->n_alts; i++)
		if (may_become(arg, ph, t->alts[i]))
			return true;
	return false;
}

/*
 * Whether rule matches [program, argv[1], ...] (program replaces argv[0]):
 * 0 no, 1 yes, 2 possibly (the unknown words of opts may make it match).
 */
static int rule_matches(const struct ward__rules *r, const struct ward__prefix_rule *rule,
			const char *program, const char *const *argv, size_t argc,
			const struct ward__match_opts *opts)
{
	const struct ward__rule_group *g = &r->groups[rule->group];
	const char *ph = opts && opts->placeholder && *opts->placeholder ? opts->placeholder : NULL;
	bool possible = false;

	if (strcmp(rule->first, program) != 0)
		return 0;
	for (size_t i = 0; i < g->n_rest; i++) {
		if (i + 1 >= argc)
			return opts && opts->open_tail ? 2 : 0;
		if (ph && strstr(argv[i + 1], ph)) {
			if (!token_may_match(&g->rest[i], argv[i + 1], ph))
				return 0;
			possible = true;
			continue;
		}
		if (!token_matches(&g->rest[i], argv[i + 1]))
			return 0;
	}
	return possible ? 2 : 1;
}

static int push(struct ward__match_list *l, const struct ward__rules *r,
		const struct ward__prefix_rule *rule, const char *resolved, bool possible)
{
	const struct ward__rule_group *g = &r->groups[rule->group];
	struct ward__rule_match *m;

	if (l->n == l->alloc) {
		size_t na = l->alloc ? l->alloc * 2 : 4;

		m = reallocarray(l->v, na, sizeof(*m));
		if (!m)
			return -ENOMEM;
		l->v = m;
		l->alloc = na;
	}
	m = &l->v[l->n];
	*m = (struct ward__rule_match){
		.rule = rule, .group = g, .n_prefix = g->n_rest + 1, .possible = possible};
	if (resolved) {
		m->resolved_program = strdup(resolved);
		if (!m->resolved_program)
			return -ENOMEM;
	}
	l->n++;
	return 0;
}

static const struct ward__host_executable *host_for(const struct ward__rules *r, const char *name)
{
	for (size_t i = 0; i < r->n_hosts; i++)
		if (strcmp(r->hosts[i].name, name) == 0)
			return &r->hosts[i];
	return NULL;
}

static bool host_lists(const struct ward__host_executable *h, const char *path)
{
	for (size_t i = 0; i < h->n_paths; i++)
		if (strcmp(h->paths[i], path) == 0)
			return true;
	return false;
}

int ward__rules_match(const struct ward__rules *r, const char *const *argv, size_t argc,
		      const struct ward__match_opts *opts, struct ward__match_list *out)
{
	_cleanup_free_ char *base = NULL, *program = NULL;
	const struct ward__host_executable *h;
	size_t before = out->n;
	bool listed;
	int ret;

	if (argc == 0)
		return 0;
	for (size_t i = 0; i < r->n_prefix; i++) {
		int k = rule_matches(r, &r->prefix[i], argv[0], argv, argc, opts);

		if (k) {
			ret = push(out, r, &r->prefix[i], NULL, k == 2);
			if (ret < 0)
				return ret;
		}
	}
	if (out->n > before || !opts || !opts->resolve_host_executables)
		return 0;

	/* The basename fallback (Codex's match_host_executable_rules). */
	base = ward__path_file_name(argv[0]);
	if (!base)
		return 0;
	program = ward__rules_absolute_path(argv[0], opts->cwd, opts->home);
	if (!program)
		return 0;
	h = host_for(r, base);
	listed = h && host_lists(h, program);
	if (!opts->restrictive && h && !listed)
		return 0;
	for (size_t i = 0; i < r->n_prefix; i++) {
		const struct ward__prefix_rule *rule = &r->prefix[i];
		int k = rule_matches(r, rule, base, argv, argc, opts);

		if (!k)
			continue;
		/*
		 * Restrictive (ward's approvals): prompt and forbidden follow the
		 * basename whatever the path; allow only for a path that
		 * host_executable() lists, because any other file of that name
		 * may be one the sandboxed command planted.
		 */
		if (opts->restrictive && r->groups[rule->group].decision == WARD__DECISION_ALLOW &&
		    !listed)
			continue;
		ret = push(out, r, rule, program, k == 2);
		if (ret < 0)
			return ret;
	}
	return 0;
}
