/* SPDX-License-Identifier: MIT */
/*
 * The wrapper reader: what `env X=1 nice rm f`, `sudo -u u make`,
 * `find . -exec rm {} +` or `flock f -c make` run, when ward can tell.
 *
 * Codex matches rules on a command's first word, so a rule forbidding rm
 * does not see `env X=1 rm f`. ward reads the programs that run their
 * arguments as a command, with their options parsed as the real programs
 * parse them: GNU getopt with a leading '+' (options stop at the first
 * operand), clustered short options, a value attached or in the next word,
 * long options by any unambiguous prefix and "--name=value", "--" ending
 * them; the shell builtins (command, exec) and doas without long options.
 *
 * Whatever it cannot read exactly makes the wrapper UNCERTAIN: an option it
 * does not know (it may take a value, so the next word may or may not be the
 * program), a value missing, an env -S string with escapes, variables or
 * comments, a script the shell-word reader refuses, a priority chrt may take
 * or not. Every later word then starts a candidate command (and an
 * unreadable string is scanned for literal commands), so that a forbidden
 * program is still found; nothing is allowed on the strength of a reading
 * that is not exact (rules/evaluate.c).
 *
 * A wrapper named by a path outside the system directories may not be the
 * program its name says: it is read the same way, but GUARDED, so that what
 * it seems to run adds restrictions and never an allow.
 *
 * Pure: argv in, commands out, no I/O (fuzz/fuzz-rules-wrappers.c).
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "basic/cleanup.h"
#include "rules/rules.h"

void ward__wrap_release(struct ward__wrap *w)
{
	free(w->cmds);
	for (size_t i = 0; i < w->n_owned; i++)
		free(w->owned[i]);
	free(w->owned);
	ward__cmdv_release(&w->script);
	*w = (struct ward__wrap){0};
}

/* ------------------------------------------------------------ results */

/* Takes p into w's memory; frees it and fails when it cannot. */
static int own(struct ward__wrap *w, void *p)
{
	if (!p)
		return -ENOMEM;
	if (w->n_owned == w->alloc_owned) {
		size_t na = w->alloc_owned ? w->alloc_owned * 2 : 4;
		void **v = reallocarray(w->owned, na, sizeof(*v));

		if (!v) {
			free(p);
			return -ENOMEM;
		}
		w->owned = v;
		w->alloc_owned = na;
	}
	w->owned[w->n_owned++] = p;
	return 0;
}

static struct ward__wrap_cmd *add_cmd(struct ward__wrap *w, const char *const *argv, size_t argc,
				      size_t offset)
{
	if (w->n_cmds == w->alloc_cmds) {
		size_t na = w->alloc_cmds ? w->alloc_cmds * 2 : 4;
		struct ward__wrap_cmd *v = reallocarray(w->cmds, na, sizeof(*v));

		if (!v)
			return NULL;
		w->cmds = v;
		w->alloc_cmds = na;
	}
	w->cmds[w->n_cmds] = (struct ward__wrap_cmd){.argv = argv, .argc = argc, .offset = offset};
	return &w->cmds[w->n_cmds++];
}

/* A copy of the pointers v[0..n) and a NULL, owned by w. */
static const char **copy_ptrs(struct ward__wrap *w, const char *const *v, size_t n)
{
	const char **c = calloc(n + 1, sizeof(char *));

	if (own(w, c) < 0)
		return NULL;
	if (n)
		memcpy(c, v, n * sizeof(char *));
	return c;
}

struct rd {
	struct ward__wrap *w;
	const char *const *argv; /* as given, NULL-terminated */
	size_t argc;
};

/*
 * The wrapper runs v[i..n) (NULL-terminated), a slice of the wrapper's argv
 * when sliced. No command there: the form runs none (kind NONE) but would
 * run one appended to it.
 */
static int runs(struct rd *rd, const char *const *v, size_t n, size_t i, bool sliced,
		enum ward__wrap_kind kind, const char *why)
{
	struct ward__wrap_cmd *c;

	if (i >= n) {
		rd->w->kind = WARD__WRAP_NONE;
		rd->w->wants_command = true;
		return 0;
	}
	c = add_cmd(rd->w, v + i, n - i, sliced ? i : SIZE_MAX);
	if (!c)
		return -ENOMEM;
	c->at_end = true;
	rd->w->kind = kind;
	rd->w->why = why;
	return 0;
}

static int none(struct rd *rd)
{
	rd->w->kind = WARD__WRAP_NONE;
	rd->w->n_cmds = 0;
	return 0;
}

/* Not readable exactly: every later word starts a candidate command. */
static int uncertain(struct rd *rd, const char *why)
{
	struct ward__wrap *w = rd->w;

	w->n_cmds = 0;
	w->kind = WARD__WRAP_UNCERTAIN;
	w->why = why;
	w->wants_command = false;
	w->candidates_from = 1;
	return 0;
}

/* Adds the literal commands of text (a script or a string ward cannot read) as candidates. */
static int add_literal(struct ward__wrap *w, const char *text)
{
	int r;

	if (w->script.n)
		return 0;
	r = ward__shell_literal_commands(text, &w->script);
	if (r < 0)
		return r;
	for (size_t i = 0; i < w->script.n; i++) {
		struct ward__wrap_cmd *c = add_cmd(w, (const char *const *)w->script.v[i].argv,
						   w->script.v[i].argc, SIZE_MAX);

		if (!c)
			return -ENOMEM;
		c->restrictive_only = true;
	}
	return 0;
}

/* A shell script: its plain commands when the reader understands it, else UNCERTAIN. */
static int read_script(struct rd *rd, const char *script, enum ward__wrap_kind kind,
		       const char *why)
{
	struct ward__wrap *w = rd->w;
	int r = ward__shell_split(script, &w->script);

	if (r < 0)
		return r;
	if (r == 0) {
		w->kind = WARD__WRAP_UNCERTAIN;
		w->why = "its shell script cannot be read exactly";
		return add_literal(w, script);
	}
	for (size_t i = 0; i < w->script.n; i++)
		if (!add_cmd(w, (const char *const *)w->script.v[i].argv, w->script.v[i].argc,
			     SIZE_MAX))
			return -ENOMEM;
	w->kind = kind;
	w->why = why;
	return 0;
}

/* ------------------------------------------------------------ options */

enum arg {
	A_NONE,
	A_REQ, /* in the rest of the cluster or the next word; "--name=value" or "--name value" */
	A_OPT, /* only attached: "-xVALUE", "--name=VALUE" */
};

/* What an option means to the wrapper that reads it. */
enum effect {
	E_PLAIN, /* nothing that changes what runs or how a rule sees it */
	E_NO_COMMAND, /* this form runs no command (--help, command -v, sudo -l) */
	E_GUARD, /* changes who runs it, where, or with what environment */
	E_SPLIT, /* env -S: a string split into more arguments */
	E_REPLACE, /* xargs -I R, -i[R]: R in the arguments is replaced by input */
	E_NAME, /* exec -a NAME */
};

struct optspec {
	char s; /* short name, 0 when none */
	const char *l; /* long name, NULL when none */
	enum arg arg;
	enum effect effect;
};

struct opts {
	const char *const *v;
	size_t n, i; /* v[i] is the next word */
	const char *cluster; /* the rest of a short-option cluster */
	bool prefixes; /* GNU getopt_long: a long option by any unambiguous prefix */
	const struct optspec *spec;
	size_t n_spec;
};

#define SPEC(a) .spec = (a), .n_spec = ELEMENTSOF(a)

static bool same_option(const struct optspec *a, const struct optspec *b)
{
	return a == b || (a->s && a->s == b->s && a->arg == b->arg);
}

static const struct optspec *long_option(const struct opts *o, const char *name, size_t len)
{
	const struct optspec *found = NULL;

	for (size_t k = 0; k < o->n_spec; k++) {
		const char *l = o->spec[k].l;

		if (l && strlen(l) == len && memcmp(l, name, len) == 0)
			return &o->spec[k];
	}
	if (!o->prefixes || len == 0)
		return NULL;
	for (size_t k = 0; k < o->n_spec; k++) {
		const char *l = o->spec[k].l;

		if (!l || strncmp(l, name, len) != 0)
			continue;
		/* Ambiguous unless every candidate is the same option (--nonblock, --nonblocking). */
		if (found && !same_option(found, &o->spec[k]))
			return NULL;
		found = &o->spec[k];
	}
	return found;
}

/*
 * The next option: 1 with *ret and *ret_val (NULL when none); 0 when the
 * options end (o->i at the first operand, past a "--"); -1 when the word is
 * not an option ward knows or a value is missing.
 */
static int next_opt(struct opts *o, const struct optspec **ret, const char **ret_val)
{
	const struct optspec *sp = NULL;
	const char *a;
	char c;

	*ret_val = NULL;
	if (!o->cluster || !*o->cluster) {
		o->cluster = NULL;
		if (o->i >= o->n)
			return 0;
		a = o->v[o->i];
		if (a[0] != '-' || a[1] == '\0')
			return 0;
		o->i++;
		if (strcmp(a, "--") == 0)
			return 0;
		if (a[1] == '-') {
			const char *name = a + 2, *eq = strchr(name, '=');
			size_t len = eq ? (size_t)(eq - name) : strlen(name);

			sp = long_option(o, name, len);
			if (!sp || (sp->arg == A_NONE && eq))
				return -1;
			if (eq && sp->arg != A_NONE) {
				*ret_val = eq + 1;
			} else if (sp->arg == A_REQ) {
				if (o->i >= o->n)
					return -1;
				*ret_val = o->v[o->i++];
			}
			*ret = sp;
			return 1;
		}
		o->cluster = a + 1;
	}
	c = *o->cluster++;
	for (size_t k = 0; k < o->n_spec && !sp; k++)
		if (o->spec[k].s == c)
			sp = &o->spec[k];
	if (!sp)
		return -1;
	if (sp->arg != A_NONE) {
		if (*o->cluster) {
			*ret_val = o->cluster;
		} else if (sp->arg == A_REQ) {
			if (o->i >= o->n)
				return -1;
			*ret_val = o->v[o->i++];
		}
		o->cluster = NULL;
	}
	*ret = sp;
	return 1;
}

static const char unknown_option[] =
	"an option ward does not know (it may take a value), or a value missing";

/*
 * Reads the options of a wrapper without operands of its own before the
 * command. Returns 1 and *ret_i at the command, 0 when a form runs no command
 * (done), -ENOMEM; *guard set when an option changes how the command runs.
 */
static int plain_options(struct rd *rd, struct opts *o, bool *guard, size_t *ret_i)
{
	const struct optspec *sp;
	const char *val;
	int k;

	while ((k = next_opt(o, &sp, &val)) > 0) {
		if (sp->effect == E_NO_COMMAND)
			return none(rd);
		if (sp->effect == E_GUARD && guard)
			*guard = true;
	}
	if (k < 0) {
		k = uncertain(rd, unknown_option);
		return k < 0 ? k : 0;
	}
	*ret_i = o->i;
	return 1;
}

/* ------------------------------------------------------------ env */

/*
 * Splits an env -S string as GNU env does, for strings without its escapes,
 * variables and comments: words separated by spaces and tabs, '...' and
 * "..." quoting, pieces written together joined. 1 with the words (owned by
 * w), 0 when the string holds anything else, -ENOMEM.
 */
static int split_string(struct ward__wrap *w, const char *s, const char ***ret, size_t *ret_n)
{
	size_t len = strlen(s), n = 0;
	char *buf = malloc(len + 1), *o;
	const char **words;
	const char *p = s;

	if (own(w, buf) < 0)
		return -ENOMEM;
	words = calloc(len / 2 + 2, sizeof(char *));
	if (own(w, words) < 0)
		return -ENOMEM;
	o = buf;
	for (;;) {
		char *start;

		while (*p == ' ' || *p == '\t')
			p++;
		if (!*p)
			break;
		start = o;
		while (*p && *p != ' ' && *p != '\t') {
			char c = *p;

			if (c == '\'' || c == '"') {
				const char *q = p + 1;

				for (; *q && *q != c; q++) {
					if (*q == '\\' || *q == '$' || *q == '#' ||
					    (unsigned char)*q < 0x20 || *q == 0x7f)
						return 0;
					*o++ = *q;
				}
				if (!*q)
					return 0;
				p = q + 1;
			} else if (c == '\\' || c == '$' || c == '#' || (unsigned char)c < 0x20 ||
				   c == 0x7f) {
				return 0;
			} else {
				*o++ = *p++;
			}
		}
		if (o == start)
			return 0; /* an empty word ('' or "") */
		*o++ = '\0';
		words[n++] = start;
	}
	*ret = words;
	*ret_n = n;
	return 1;
}

static const struct optspec env_spec[] = {
	{'i', "ignore-environment", A_NONE, E_GUARD},
	{'0', "null", A_NONE, E_PLAIN},
	{'u', "unset", A_REQ, E_GUARD},
	{'C', "chdir", A_REQ, E_GUARD},
	{'S', "split-string", A_REQ, E_SPLIT},
	{'v', "debug", A_NONE, E_PLAIN},
	{0, "block-signal", A_OPT, E_PLAIN},
	{0, "default-signal", A_OPT, E_PLAIN},
	{0, "ignore-signal", A_OPT, E_PLAIN},
	{0, "list-signal-handling", A_NONE, E_PLAIN},
	{0, "help", A_NONE, E_NO_COMMAND},
	{0, "version", A_NONE, E_NO_COMMAND},
};

static int read_env(struct rd *rd)
{
	struct opts o = {.v = rd->argv, .n = rd->argc, .i = 1, .prefixes = true, SPEC(env_spec)};
	const struct optspec *sp;
	const char *val;
	bool guard = false, sliced = true;
	unsigned splits = 0;
	size_t i;
	int k;

	while ((k = next_opt(&o, &sp, &val)) > 0) {
		const char **words, **v;
		size_t n_words, rest;

		if (sp->effect == E_NO_COMMAND)
			return none(rd);
		if (sp->effect == E_GUARD)
			guard = true;
		if (sp->effect != E_SPLIT)
			continue;
		/*
		 * GNU env splits the string and parses again from the first of its
		 * words, the words after the option following them.
		 */
		k = ++splits > WARD_WRAP_MAX_SPLITS ? 0
						    : split_string(rd->w, val, &words, &n_words);
		if (k < 0)
			return k;
		if (k == 0) {
			k = uncertain(rd, "an env -S string with escapes, variables or comments");
			return k < 0 ? k : add_literal(rd->w, val);
		}
		rest = o.n - o.i;
		v = calloc(1 + n_words + rest + 1, sizeof(char *));
		if (own(rd->w, v) < 0)
			return -ENOMEM;
		v[0] = o.v[0];
		memcpy(v + 1, words, n_words * sizeof(char *));
		if (rest)
			memcpy(v + 1 + n_words, o.v + o.i, rest * sizeof(char *));
		o.v = v;
		o.n = 1 + n_words + rest;
		o.i = 1;
		o.cluster = NULL;
		sliced = false;
	}
	if (k < 0)
		return uncertain(rd, unknown_option);
	i = o.i;
	/* A lone "-" is -i; then NAME=VALUE words, then the command. */
	if (i < o.n && strcmp(o.v[i], "-") == 0) {
		guard = true;
		i++;
	}
	while (i < o.n && strchr(o.v[i], '=')) {
		guard = true;
		i++;
	}
	return runs(rd, o.v, o.n, i, sliced, guard ? WARD__WRAP_GUARDED : WARD__WRAP_TRANSPARENT,
		    guard ? "env changes the environment or the directory of the program" : NULL);
}

/* ------------------------------------------------------------ scheduling, sessions, time */

static const struct optspec nice_spec[] = {
	{'n', "adjustment", A_REQ, E_PLAIN},
	{0, "help", A_NONE, E_NO_COMMAND},
	{0, "version", A_NONE, E_NO_COMMAND},
};

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static int read_nice(struct rd *rd)
{
	struct opts o = {.v = rd->argv, .n = rd->argc, .i = 1, .prefixes = true, SPEC(nice_spec)};
	const struct optspec *sp;
	const char *val;
	int k;

	for (;;) {
		const char *a = o.i < o.n ? o.v[o.i] : NULL;

		/* nice's own older form, checked at each word: -N, --N, -+N. */
		if (!o.cluster && a && a[0] == '-' &&
		    is_digit(a[1 + (a[1] == '-' || a[1] == '+')])) {
			o.i++;
			continue;
		}
		k = next_opt(&o, &sp, &val);
		if (k <= 0)
			break;
		if (sp->effect == E_NO_COMMAND)
			return none(rd);
	}
	if (k < 0)
		return uncertain(rd, unknown_option);
	return runs(rd, o.v, o.n, o.i, true, WARD__WRAP_TRANSPARENT, NULL);
}

/* Wrappers with options and then the command: the table and the kind their options give. */
static int read_simple(struct rd *rd, const struct optspec *spec, size_t n_spec, bool prefixes,
		       const char *guard_why)
{
	struct opts o = {.v = rd->argv, .n = rd->argc, .i = 1, .prefixes = prefixes};
	bool guard = false;
	size_t i;
	int k;

	o.spec = spec;
	o.n_spec = n_spec;
	k = plain_options(rd, &o, &guard, &i);
	if (k <= 0)
		return k;
	return runs(rd, o.v, o.n, i, true, guard ? WARD__WRAP_GUARDED : WARD__WRAP_TRANSPARENT,
		    guard ? guard_why : NULL);
}

static const struct optspec ionice_spec[] = {
	{'c', "class", A_REQ, E_PLAIN},	     {'n', "classdata", A_REQ, E_PLAIN},
	{'p', "pid", A_REQ, E_NO_COMMAND},   {'P', "pgid", A_REQ, E_NO_COMMAND},
	{'u', "uid", A_REQ, E_NO_COMMAND},   {'t', "ignore", A_NONE, E_PLAIN},
	{'h', "help", A_NONE, E_NO_COMMAND}, {'V', "version", A_NONE, E_NO_COMMAND},
};

static int read_ionice(struct rd *rd)
{
	return read_simple(rd, ionice_spec, ELEMENTSOF(ionice_spec), true, NULL);
}

static const struct optspec nohup_spec[] = {
	{0, "help", A_NONE, E_NO_COMMAND},
	{0, "version", A_NONE, E_NO_COMMAND},
};

static int read_nohup(struct rd *rd)
{
	return read_simple(rd, nohup_spec, ELEMENTSOF(nohup_spec), true, NULL);
}

static const struct optspec setsid_spec[] = {
	{'c', "ctty", A_NONE, E_PLAIN},		{'f', "fork", A_NONE, E_PLAIN},
	{'w', "wait", A_NONE, E_PLAIN},		{'h', "help", A_NONE, E_NO_COMMAND},
	{'V', "version", A_NONE, E_NO_COMMAND},
};

static int read_setsid(struct rd *rd)
{
	return read_simple(rd, setsid_spec, ELEMENTSOF(setsid_spec), true, NULL);
}

static const struct optspec stdbuf_spec[] = {
	{'i', "input", A_REQ, E_PLAIN},	      {'o', "output", A_REQ, E_PLAIN},
	{'e', "error", A_REQ, E_PLAIN},	      {0, "help", A_NONE, E_NO_COMMAND},
	{0, "version", A_NONE, E_NO_COMMAND},
};

static int read_stdbuf(struct rd *rd)
{
	return read_simple(rd, stdbuf_spec, ELEMENTSOF(stdbuf_spec), true, NULL);
}

/* GNU time (/usr/bin/time); the shell keyword is refused by the shell-word reader. */
static const struct optspec time_spec[] = {
	{'a', "append", A_NONE, E_PLAIN},	{'f', "format", A_REQ, E_PLAIN},
	{'o', "output", A_REQ, E_GUARD},	{'p', "portability", A_NONE, E_PLAIN},
	{'q', "quiet", A_NONE, E_PLAIN},	{'v', "verbose", A_NONE, E_PLAIN},
	{'V', "version", A_NONE, E_NO_COMMAND}, {0, "help", A_NONE, E_NO_COMMAND},
};

static int read_time(struct rd *rd)
{
	return read_simple(
		rd, time_spec, ELEMENTSOF(time_spec), true,
		"time -o writes a file of its own, with a format the command line chooses");
}

static const struct optspec timeout_spec[] = {
	{'f', "foreground", A_NONE, E_PLAIN},	   {'k', "kill-after", A_REQ, E_PLAIN},
	{'p', "preserve-status", A_NONE, E_PLAIN}, {'s', "signal", A_REQ, E_PLAIN},
	{'v', "verbose", A_NONE, E_PLAIN},	   {0, "help", A_NONE, E_NO_COMMAND},
	{0, "version", A_NONE, E_NO_COMMAND},
};

/* timeout [OPTION] DURATION COMMAND: the duration is an operand before the command. */
static int read_timeout(struct rd *rd)
{
	struct opts o = {
		.v = rd->argv, .n = rd->argc, .i = 1, .prefixes = true, SPEC(timeout_spec)};
	size_t i;
	int k = plain_options(rd, &o, NULL, &i);

	if (k <= 0)
		return k;
	return runs(rd, o.v, o.n, i + 1, true, WARD__WRAP_TRANSPARENT, NULL);
}

static const struct optspec taskset_spec[] = {
	{'a', "all-tasks", A_NONE, E_PLAIN},	{'c', "cpu-list", A_NONE, E_PLAIN},
	{'p', "pid", A_NONE, E_NO_COMMAND},	{'h', "help", A_NONE, E_NO_COMMAND},
	{'V', "version", A_NONE, E_NO_COMMAND},
};

/* taskset [OPTIONS] MASK|LIST COMMAND (with -p: a process id, no command). */
static int read_taskset(struct rd *rd)
{
	struct opts o = {
		.v = rd->argv, .n = rd->argc, .i = 1, .prefixes = true, SPEC(taskset_spec)};
	size_t i;
	int k = plain_options(rd, &o, NULL, &i);

	if (k <= 0)
		return k;
	return runs(rd, o.v, o.n, i + 1, true, WARD__WRAP_TRANSPARENT, NULL);
}

static const struct optspec chrt_spec[] = {
	{'a', "all-tasks", A_NONE, E_PLAIN},   {'b', "batch", A_NONE, E_PLAIN},
	{'d', "deadline", A_NONE, E_PLAIN},    {'f', "fifo", A_NONE, E_PLAIN},
	{'i', "idle", A_NONE, E_PLAIN},	       {'o', "other", A_NONE, E_PLAIN},
	{'r', "rr", A_NONE, E_PLAIN},	       {'R', "reset-on-fork", A_NONE, E_PLAIN},
	{'v', "verbose", A_NONE, E_PLAIN},     {'D', "sched-deadline", A_REQ, E_PLAIN},
	{'P', "sched-period", A_REQ, E_PLAIN}, {'T', "sched-runtime", A_REQ, E_PLAIN},
	{'p', "pid", A_NONE, E_NO_COMMAND},    {'m', "max", A_NONE, E_NO_COMMAND},
	{'h', "help", A_NONE, E_NO_COMMAND},   {'V', "version", A_NONE, E_NO_COMMAND},
};

/*
 * chrt [OPTIONS] PRIORITY COMMAND. A first operand that is not a number may
 * be the command of a chrt that lets the priority be left out: not exact.
 */
static int read_chrt(struct rd *rd)
{
	struct opts o = {.v = rd->argv, .n = rd->argc, .i = 1, .prefixes = true, SPEC(chrt_spec)};
	const char *prio;
	size_t i;
	int k = plain_options(rd, &o, NULL, &i);

	if (k <= 0)
		return k;
	if (i >= o.n)
		return runs(rd, o.v, o.n, i, true, WARD__WRAP_TRANSPARENT, NULL);
	prio = o.v[i];
	if (*prio == '-' || *prio == '+')
		prio++;
	if (!*prio || strspn(prio, "0123456789") != strlen(prio))
		return uncertain(rd, "a chrt priority that is not a number");
	return runs(rd, o.v, o.n, i + 1, true, WARD__WRAP_TRANSPARENT, NULL);
}

static const struct optspec flock_spec[] = {
	{'s', "shared", A_NONE, E_PLAIN},	{'x', "exclusive", A_NONE, E_PLAIN},
	{'e', NULL, A_NONE, E_PLAIN},		{'u', "unlock", A_NONE, E_PLAIN},
	{'n', "nonblocking", A_NONE, E_PLAIN},	{'n', "nonblock", A_NONE, E_PLAIN},
	{'n', "nb", A_NONE, E_PLAIN},		{'w', "timeout", A_REQ, E_PLAIN},
	{'w', "wait", A_REQ, E_PLAIN},		{'E', "conflict-exit-code", A_REQ, E_PLAIN},
	{'o', "close", A_NONE, E_PLAIN},	{'F', "no-fork", A_NONE, E_PLAIN},
	{0, "verbose", A_NONE, E_PLAIN},	{'h', "help", A_NONE, E_NO_COMMAND},
	{'V', "version", A_NONE, E_NO_COMMAND},
};

/*
 * flock [OPTIONS] FILE COMMAND..., flock [OPTIONS] FILE -c STRING (the string
 * run by a shell), flock [OPTIONS] FD (no command).
 */
static int read_flock(struct rd *rd)
{
	struct opts o = {.v = rd->argv, .n = rd->argc, .i = 1, .prefixes = true, SPEC(flock_spec)};
	size_t i;
	int k = plain_options(rd, &o, NULL, &i);

	if (k <= 0)
		return k;
	if (i + 1 < o.n &&
	    (strcmp(o.v[i + 1], "-c") == 0 || strcmp(o.v[i + 1], "--command") == 0)) {
		if (i + 3 != o.n) {
			/* flock refuses anything but exactly one string; appended words could complete it. */
			rd->w->wants_command = i + 2 == o.n;
			return none(rd);
		}
		return read_script(rd, o.v[i + 2], WARD__WRAP_TRANSPARENT, NULL);
	}
	return runs(rd, o.v, o.n, i + 1, true, WARD__WRAP_TRANSPARENT, NULL);
}

/* ------------------------------------------------------------ shell builtins */

static const struct optspec command_spec[] = {
	{'p', NULL, A_NONE, E_PLAIN},
	{'v', NULL, A_NONE, E_NO_COMMAND},
	{'V', NULL, A_NONE, E_NO_COMMAND},
};

/* The builtin: command -p runs the program found in a default PATH; -v and -V only say what it is. */
static int read_command(struct rd *rd)
{
	return read_simple(rd, command_spec, ELEMENTSOF(command_spec), false, NULL);
}

static const struct optspec exec_spec[] = {
	{'c', NULL, A_NONE, E_GUARD},
	{'l', NULL, A_NONE, E_PLAIN},
	{'a', NULL, A_REQ, E_NAME},
};

/*
 * The builtin: exec [-cl] [-a NAME] COMMAND. With -a the program sees NAME
 * as its name: a multi-call program (busybox) does what that name says, so
 * NAME with the arguments is a candidate as well.
 */
static int read_exec(struct rd *rd)
{
	struct opts o = {.v = rd->argv, .n = rd->argc, .i = 1, SPEC(exec_spec)};
	const struct optspec *sp;
	const char *val, *name = NULL;
	bool guard = false;
	int k;

	while ((k = next_opt(&o, &sp, &val)) > 0) {
		if (sp->effect == E_GUARD)
			guard = true;
		if (sp->effect == E_NAME)
			name = val;
	}
	if (k < 0)
		return uncertain(rd, unknown_option);
	if (name) {
		const char **alias;
		struct ward__wrap_cmd *c;

		k = runs(
			rd, o.v, o.n, o.i, true, WARD__WRAP_GUARDED,
			"exec -a gives the program another name, which a multi-call program obeys");
		if (k < 0 || rd->w->kind == WARD__WRAP_NONE)
			return k;
		alias = copy_ptrs(rd->w, o.v + o.i, o.n - o.i);
		if (!alias)
			return -ENOMEM;
		alias[0] = name;
		c = add_cmd(rd->w, alias, o.n - o.i, SIZE_MAX);
		if (!c)
			return -ENOMEM;
		c->restrictive_only = true;
		c->at_end = true;
		return 0;
	}
	return runs(rd, o.v, o.n, o.i, true, guard ? WARD__WRAP_GUARDED : WARD__WRAP_TRANSPARENT,
		    guard ? "exec -c empties the environment of the program" : NULL);
}

/* ------------------------------------------------------------ xargs */

static const struct optspec xargs_spec[] = {
	{'0', "null", A_NONE, E_PLAIN},
	{'a', "arg-file", A_REQ, E_PLAIN},
	{'d', "delimiter", A_REQ, E_PLAIN},
	{'E', NULL, A_REQ, E_PLAIN},
	{'e', "eof", A_OPT, E_PLAIN},
	{'I', NULL, A_REQ, E_REPLACE},
	{'i', "replace", A_OPT, E_REPLACE},
	{'L', NULL, A_REQ, E_PLAIN},
	/* --max-lines, like -l, takes only an attached value: "--max-lines 1" runs "1". */
	{'l', "max-lines", A_OPT, E_PLAIN},
	{'n', "max-args", A_REQ, E_PLAIN},
	{'o', "open-tty", A_NONE, E_PLAIN},
	{'p', "interactive", A_NONE, E_PLAIN},
	{'P', "max-procs", A_REQ, E_PLAIN},
	{'r', "no-run-if-empty", A_NONE, E_PLAIN},
	{'s', "max-chars", A_REQ, E_PLAIN},
	{'t', "verbose", A_NONE, E_PLAIN},
	{'x', "exit", A_NONE, E_PLAIN},
	{0, "process-slot-var", A_REQ, E_GUARD},
	{0, "show-limits", A_NONE, E_PLAIN},
	{0, "help", A_NONE, E_NO_COMMAND},
	{0, "version", A_NONE, E_NO_COMMAND},
};

/*
 * xargs [OPTIONS] [COMMAND [ARGS]]: COMMAND (echo when none) with words from
 * its input appended, or with -I/-i R replacing R in the words.
 */
static int read_xargs(struct rd *rd)
{
	static const char *const echo[] = {"echo", NULL};
	struct opts o = {.v = rd->argv, .n = rd->argc, .i = 1, .prefixes = true, SPEC(xargs_spec)};
	const struct optspec *sp;
	const char *val, *replace = NULL;
	struct ward__wrap_cmd *c;
	bool guard = false;
	int k;

	while ((k = next_opt(&o, &sp, &val)) > 0) {
		if (sp->effect == E_NO_COMMAND)
			return none(rd);
		if (sp->effect == E_GUARD)
			guard = true;
		if (sp->effect == E_REPLACE)
			replace = val ? val : "{}";
	}
	if (k < 0)
		return uncertain(rd, unknown_option);
	if (replace && !*replace)
		return uncertain(rd, "an empty xargs replacement string");
	if (o.i >= o.n) {
		/* No command: echo, and whatever is appended to this xargs becomes its options or command. */
		rd->w->wants_command = true;
		c = add_cmd(rd->w, echo, 1, SIZE_MAX);
		if (!c)
			return -ENOMEM;
	} else {
		if (replace && strstr(o.v[o.i], replace))
			return uncertain(rd, "the program is filled in from the input");
		c = add_cmd(rd->w, o.v + o.i, o.n - o.i, o.i);
		if (!c)
			return -ENOMEM;
	}
	c->at_end = true;
	c->placeholder = replace;
	c->open_tail = !replace;
	rd->w->kind = guard ? WARD__WRAP_GUARDED : WARD__WRAP_TRANSPARENT;
	rd->w->why = guard ? "xargs --process-slot-var sets a variable in the environment" : NULL;
	return 0;
}

/* ------------------------------------------------------------ sudo, doas */

static const struct optspec sudo_spec[] = {
	{'A', "askpass", A_NONE, E_PLAIN},
	{'a', "auth-type", A_REQ, E_PLAIN},
	{'B', "bell", A_NONE, E_PLAIN},
	{'b', "background", A_NONE, E_PLAIN},
	{'C', "close-from", A_REQ, E_PLAIN},
	{'c', "login-class", A_REQ, E_PLAIN},
	{'D', "chdir", A_REQ, E_PLAIN},
	/* Short -E takes no value; --preserve-env takes an optional list. */
	{'E', NULL, A_NONE, E_PLAIN},
	{0, "preserve-env", A_OPT, E_PLAIN},
	{'e', "edit", A_NONE, E_NO_COMMAND},
	{'g', "group", A_REQ, E_PLAIN},
	{'H', "set-home", A_NONE, E_PLAIN},
	{'i', "login", A_NONE, E_PLAIN},
	{'K', "remove-timestamp", A_NONE, E_NO_COMMAND},
	{'k', "reset-timestamp", A_NONE, E_PLAIN},
	{'l', "list", A_NONE, E_NO_COMMAND},
	{'N', "no-update", A_NONE, E_PLAIN},
	{'n', "non-interactive", A_NONE, E_PLAIN},
	{'P', "preserve-groups", A_NONE, E_PLAIN},
	{'p', "prompt", A_REQ, E_PLAIN},
	{'R', "chroot", A_REQ, E_PLAIN},
	{'r', "role", A_REQ, E_PLAIN},
	{'S', "stdin", A_NONE, E_PLAIN},
	{'s', "shell", A_NONE, E_PLAIN},
	{'T', "command-timeout", A_REQ, E_PLAIN},
	{'t', "type", A_REQ, E_PLAIN},
	{'U', "other-user", A_REQ, E_PLAIN},
	{'u', "user", A_REQ, E_PLAIN},
	{'V', "version", A_NONE, E_NO_COMMAND},
	{'v', "validate", A_NONE, E_NO_COMMAND},
	{0, "help", A_NONE, E_NO_COMMAND},
	{0, "host", A_REQ, E_PLAIN},
};

static const char privilege[] = "it runs the command as another user";

/*
 * sudo [OPTIONS] [NAME=VALUE...] COMMAND. -h is left out of the table: sudo
 * reads "-h" as help or as a host depending on what follows, so it is not
 * exact. -s and -i run the command through a shell, its words quoted.
 */
static int read_sudo(struct rd *rd)
{
	struct opts o = {.v = rd->argv, .n = rd->argc, .i = 1, .prefixes = true, SPEC(sudo_spec)};
	size_t i;
	int k = plain_options(rd, &o, NULL, &i);

	if (k <= 0)
		return k;
	while (i < o.n && strchr(o.v[i], '='))
		i++;
	return runs(rd, o.v, o.n, i, true, WARD__WRAP_GUARDED, privilege);
}

static const struct optspec doas_spec[] = {
	{'a', NULL, A_REQ, E_PLAIN},	   {'C', NULL, A_REQ, E_NO_COMMAND},
	{'L', NULL, A_NONE, E_NO_COMMAND}, {'n', NULL, A_NONE, E_PLAIN},
	{'s', NULL, A_NONE, E_NO_COMMAND}, {'u', NULL, A_REQ, E_PLAIN},
};

static int read_doas(struct rd *rd)
{
	struct opts o = {.v = rd->argv, .n = rd->argc, .i = 1, SPEC(doas_spec)};
	size_t i;
	int k = plain_options(rd, &o, NULL, &i);

	if (k <= 0)
		return k;
	return runs(rd, o.v, o.n, i, true, WARD__WRAP_GUARDED, privilege);
}

/* ------------------------------------------------------------ find */

/*
 * find's -exec, -execdir, -ok and -okdir: each runs the words up to ";" (or
 * up to "{}" "+", with many file names in place of the "{}"), "{}" replaced
 * by a file name wherever it appears. find is a program of its own as well
 * (-delete, -fprint): it decides as written and its commands do too.
 */
static int read_find(struct rd *rd)
{
	static const char *const actions[] = {"-exec", "-execdir", "-ok", "-okdir"};
	struct ward__wrap *w = rd->w;

	for (size_t i = 1; i < rd->argc; i++) {
		const char *const *v = rd->argv;
		struct ward__wrap_cmd *c;
		const char **cmd;
		bool found = false, in_dir;
		size_t start = i + 1, j;

		for (size_t a = 0; a < ELEMENTSOF(actions); a++)
			found = found || strcmp(v[i], actions[a]) == 0;
		if (!found)
			continue;
		in_dir = strstr(v[i], "dir") != NULL;
		for (j = start; j < rd->argc; j++)
			if (strcmp(v[j], ";") == 0 ||
			    (strcmp(v[j], "+") == 0 && j > start && strcmp(v[j - 1], "{}") == 0))
				break;
		if (j >= rd->argc || j == start)
			return uncertain(rd, "a find -exec without its command or its ';' or '+'");
		if (strstr(v[start], "{}"))
			return uncertain(rd, "the program is a file name find fills in");
		cmd = copy_ptrs(w, v + start, j - start);
		if (!cmd)
			return -ENOMEM;
		c = add_cmd(w, cmd, j - start, start);
		if (!c)
			return -ENOMEM;
		c->placeholder = "{}";
		c->open_tail = strcmp(v[j], "+") == 0;
		/* -execdir runs in each file's directory: a relative program is a different file there. */
		c->guarded = in_dir && strchr(cmd[0], '/') && cmd[0][0] != '/';
		i = j;
	}
	w->kind = w->n_cmds ? WARD__WRAP_ALSO : WARD__WRAP_NONE;
	/* More of the expression (-exec, -delete) can always follow. */
	w->wants_command = true;
	return 0;
}

/* ------------------------------------------------------------ shells */

/*
 * `bash -lc SCRIPT` exactly as Codex reads it (the exact names of
 * ward__shell_wrapper_script) runs the script's commands. Any other -c form
 * of a shell (`bash -e -c`, arguments after the script, a shell at another
 * path) is one Codex evaluates as written: ward does too, and reads the
 * script for what it adds (GUARDED).
 */
static int read_shell(struct rd *rd)
{
	const char *script = ward__shell_wrapper_script(rd->argv, rd->argc);
	bool dash_c = false;
	size_t i = 1;

	if (script)
		return read_script(rd, script, WARD__WRAP_TRANSPARENT, NULL);
	while (i < rd->argc) {
		const char *a = rd->argv[i];

		if (strcmp(a, "--") == 0 || strcmp(a, "-") == 0) {
			i++;
			break;
		}
		if ((a[0] != '-' && a[0] != '+') || !a[1])
			break;
		i++;
		if (a[0] == '-' && a[1] == '-') {
			/* Long options: two take a value. */
			if (strcmp(a, "--rcfile") == 0 || strcmp(a, "--init-file") == 0)
				i++;
			continue;
		}
		for (const char *p = a + 1; *p; p++) {
			if (*p == 'c' && a[0] == '-')
				dash_c = true;
			if (*p == 'o' || *p == 'O')
				i++; /* -o NAME: the option's name is the next word */
		}
	}
	if (!dash_c)
		return none(rd);
	if (i >= rd->argc) {
		rd->w->wants_command = true;
		return none(rd);
	}
	return read_script(rd, rd->argv[i], WARD__WRAP_GUARDED,
			   "a shell's -c in a form Codex does not split");
}

/* ------------------------------------------------------------ the table */

struct wrapper {
	const char *name;
	int (*read)(struct rd *rd);
	bool shell; /* trusted by the exact names Codex accepts, not by the directory */
};

static const struct wrapper wrappers[] = {
	{"env", read_env},	   {"nice", read_nice},	       {"ionice", read_ionice},
	{"nohup", read_nohup},	   {"setsid", read_setsid},    {"timeout", read_timeout},
	{"stdbuf", read_stdbuf},   {"time", read_time},	       {"command", read_command},
	{"exec", read_exec},	   {"xargs", read_xargs},      {"taskset", read_taskset},
	{"chrt", read_chrt},	   {"flock", read_flock},      {"sudo", read_sudo},
	{"doas", read_doas},	   {"find", read_find},	       {"bash", read_shell, true},
	{"sh", read_shell, true},  {"zsh", read_shell, true},  {"dash", read_shell, true},
	{"ksh", read_shell, true}, {"mksh", read_shell, true}, {"ash", read_shell, true},
};

/*
 * A bare name is found through PATH (whose directories the sandbox keeps
 * read-only); a path is the real wrapper only in a system directory.
 */
static bool system_path(const char *argv0)
{
	static const char *const dirs[] = {"/bin/",  "/usr/bin/",  "/usr/local/bin/",
					   "/sbin/", "/usr/sbin/", "/usr/local/sbin/"};

	if (!strchr(argv0, '/'))
		return true;
	for (size_t i = 0; i < ELEMENTSOF(dirs); i++) {
		size_t n = strlen(dirs[i]);

		if (strncmp(argv0, dirs[i], n) == 0 && !strchr(argv0 + n, '/'))
			return true;
	}
	return false;
}

/*
 * A reading that the words filled in later may change: what it read stays,
 * as candidates, and every later word starts one as well.
 */
static void unsure(struct ward__wrap *w, const char *why)
{
	for (size_t i = 0; i < w->n_cmds; i++)
		w->cmds[i].restrictive_only = true;
	w->kind = WARD__WRAP_UNCERTAIN;
	w->why = why;
	w->wants_command = false;
	w->candidates_from = 1;
}

/* Whether a word of the wrapper's own (not in a command it runs as a slice) holds ph. */
static int own_word_has(const struct ward__wrap *w, const char *const *argv, size_t argc,
			const char *ph, bool *ret)
{
	_cleanup_free_ bool *inner = calloc(argc, sizeof(bool));

	if (!inner)
		return -ENOMEM;
	for (size_t k = 0; k < w->n_cmds; k++)
		if (w->cmds[k].offset != SIZE_MAX)
			for (size_t i = 0; i < w->cmds[k].argc; i++)
				inner[w->cmds[k].offset + i] = true;
	*ret = false;
	for (size_t i = 1; i < argc && !*ret; i++)
		*ret = !inner[i] && strstr(argv[i], ph);
	return 0;
}

int ward__wrapper_read(const char *const *argv, size_t argc, const char *placeholder,
		       bool open_tail, struct ward__wrap *ret)
{
	struct ward__wrap w = {0};
	struct rd rd = {.w = &w, .argv = argv, .argc = argc};
	const struct wrapper *t = NULL;
	const char *base;
	int r;

	*ret = w;
	if (argc == 0)
		return 0;
	base = strrchr(argv[0], '/');
	base = base ? base + 1 : argv[0];
	for (size_t i = 0; i < ELEMENTSOF(wrappers) && !t; i++)
		if (strcmp(base, wrappers[i].name) == 0)
			t = &wrappers[i];
	if (!t)
		return 0;
	w.name = t->name;
	r = t->read(&rd);
	if (r < 0) {
		ward__wrap_release(&w);
		return r;
	}
	if (w.kind != WARD__WRAP_UNCERTAIN && placeholder && *placeholder) {
		bool unknown;

		r = own_word_has(&w, argv, argc, placeholder, &unknown);
		for (size_t i = 0; r >= 0 && !unknown && i < w.n_cmds; i++)
			unknown = strstr(w.cmds[i].argv[0], placeholder) != NULL;
		if (r >= 0 && unknown)
			unsure(&w,
			       "words of the wrapper, or the program it runs, are filled in when it runs");
	}
	if (r >= 0 && open_tail && w.wants_command && w.kind != WARD__WRAP_UNCERTAIN)
		unsure(&w, "its command would come from the words appended when it runs");
	if (r < 0) {
		ward__wrap_release(&w);
		return r;
	}
	if (!t->shell && !system_path(argv[0]) &&
	    (w.kind == WARD__WRAP_TRANSPARENT || w.kind == WARD__WRAP_ALSO)) {
		w.kind = WARD__WRAP_GUARDED;
		w.why = "it is not at a system path, so it may not be the program its name says";
	}
	if (w.kind == WARD__WRAP_NONE)
		w.n_cmds = 0;
	*ret = w;
	return 0;
}
