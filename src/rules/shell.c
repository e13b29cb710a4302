/* SPDX-License-Identifier: MIT */
/*
 * The shell-word reader: what `bash -lc "a && b"` runs, when ward can tell.
 *
 * Codex parses such scripts with tree-sitter-bash and accepts a script when
 * its syntax tree holds only plain commands of words and quoted strings
 * joined by &&, ||, ; and | (shell-command/src/bash.rs). ward has no bash
 * grammar and wants none: this reader accepts a strict subset of what that
 * tree accepts, byte by byte, and says "not understood" for anything else.
 * The subset: words of ordinary characters, '...' strings, "..." strings
 * without $, ` or \, adjacent pieces concatenated (-g"*.py"), commands
 * separated by &&, ||, |, ; and newlines. Refused, because the words the
 * shell would really pass are not the words written:
 *   - $ and ` (expansions, substitutions), \ (escapes), unquoted *, ? and [
 *     (globs: a file named "-delete" in the directory turns `find . *` into
 *     `find . -delete`), { } (brace expansion and groups), ~ where the shell
 *     expands it, unquoted ! and # at a word's start;
 *   - ( ) < > & and the operators made of them (subshells, redirections,
 *     heredocs, background jobs), ;; and |&;
 *   - a first word that is an assignment (FOO=bar cmd) or a reserved word
 *     (if, for, while, case, function, time, [[, ...);
 *   - control characters, empty commands (ls &&, && ls, ls | | wc).
 * A refused script is "not matched": its rules and the known-safe list do not
 * apply to its parts, and the approval runner never lets it skip the sandbox.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "basic/cleanup.h"
#include "rules/rules.h"

void ward__cmdv_release(struct ward__cmdv *c)
{
	for (size_t i = 0; i < c->n; i++) {
		for (size_t k = 0; k < c->v[i].argc; k++)
			free(c->v[i].argv[k]);
		free(c->v[i].argv);
	}
	free(c->v);
	*c = (struct ward__cmdv){0};
}

/* ------------------------------------------------------------ wrappers */

/* Exactly the names Codex's detect_shell_type accepts for bash, sh and zsh: a copy elsewhere is not trusted. */
static const char *const shell_names[] = {
	"bash",
	"/bin/bash",
	"/usr/bin/bash",
	"/usr/local/bin/bash",
	"/opt/homebrew/bin/bash",
	"sh",
	"/bin/sh",
	"/usr/bin/sh",
	"zsh",
	"/bin/zsh",
	"/usr/bin/zsh",
	"/usr/local/bin/zsh",
	"/opt/homebrew/bin/zsh",
};

const char *ward__shell_wrapper_script(const char *const *argv, size_t argc)
{
	if (argc != 3 || (strcmp(argv[1], "-c") != 0 && strcmp(argv[1], "-lc") != 0))
		return NULL;
	for (size_t i = 0; i < ELEMENTSOF(shell_names); i++)
		if (strcmp(argv[0], shell_names[i]) == 0)
			return argv[2];
	return NULL;
}

/* ------------------------------------------------------------ building commands */

struct builder {
	struct ward__cmdv out;
	size_t alloc_cmds;
	char **words;
	size_t n_words, alloc_words;
	char *word;
	size_t word_len, word_alloc;
	bool in_word;
	size_t word_cap; /* words per command */
	size_t cmd_cap;
	bool overflow;
};

static void builder_release(struct builder *b)
{
	for (size_t i = 0; i < b->n_words; i++)
		free(b->words[i]);
	free(b->words);
	free(b->word);
	ward__cmdv_release(&b->out);
}

static int word_add(struct builder *b, const char *s, size_t n)
{
	b->in_word = true;
	if (b->word_len + n + 1 > b->word_alloc) {
		size_t na = b->word_alloc ? b->word_alloc : 32;
		char *p;

		while (na < b->word_len + n + 1)
			na *= 2;
		p = realloc(b->word, na);
		if (!p)
			return -ENOMEM;
		b->word = p;
		b->word_alloc = na;
	}
	memcpy(b->word + b->word_len, s, n);
	b->word_len += n;
	b->word[b->word_len] = '\0';
	return 0;
}

static int word_end(struct builder *b)
{
	char *w;

	if (!b->in_word)
		return 0;
	b->in_word = false;
	if (b->n_words >= b->word_cap) {
		b->overflow = true;
		b->word_len = 0;
		return 0;
	}
	if (b->n_words + 1 >= b->alloc_words) {
		size_t na = b->alloc_words ? b->alloc_words * 2 : 8;
		char **p = reallocarray(b->words, na, sizeof(char *));

		if (!p)
			return -ENOMEM;
		b->words = p;
		b->alloc_words = na;
	}
	w = strndup(b->word ? b->word : "", b->word_len);
	if (!w)
		return -ENOMEM;
	b->words[b->n_words++] = w;
	b->words[b->n_words] = NULL;
	b->word_len = 0;
	return 0;
}

/* Ends the current command; empty commands are dropped (the caller decides whether that is an error). */
static int command_end(struct builder *b)
{
	int r = word_end(b);

	if (r < 0 || b->n_words == 0)
		return r;
	if (b->out.n >= b->cmd_cap) {
		b->overflow = true;
		for (size_t i = 0; i < b->n_words; i++)
			free(b->words[i]);
		b->n_words = 0;
		return 0;
	}
	if (b->out.n == b->alloc_cmds) {
		size_t na = b->alloc_cmds ? b->alloc_cmds * 2 : 4;
		struct ward__cmd *p = reallocarray(b->out.v, na, sizeof(*p));

		if (!p)
			return -ENOMEM;
		b->out.v = p;
		b->alloc_cmds = na;
	}
	if (!b->words) {
		b->words = calloc(1, sizeof(char *));
		if (!b->words)
			return -ENOMEM;
	}
	b->out.v[b->out.n++] = (struct ward__cmd){.argv = b->words, .argc = b->n_words};
	b->words = NULL;
	b->n_words = b->alloc_words = 0;
	return 0;
}

/* ------------------------------------------------------------ the strict reader */

static const char *const reserved[] = {
	"if",	  "then",  "else",  "elif", "fi",   "case",	"esac", "for",
	"select", "while", "until", "do",   "done", "function", "time", "coproc",
	"in",	  "!",	   "{",	    "}",    "[[",   "]]",
};

static bool is_reserved(const char *w, size_t n)
{
	for (size_t i = 0; i < ELEMENTSOF(reserved); i++)
		if (strlen(reserved[i]) == n && memcmp(reserved[i], w, n) == 0)
			return true;
	return false;
}

/* Characters that may appear unquoted in a word (beyond letters, digits and bytes >= 0x80). */
static bool plain_char(unsigned char c)
{
	if (c >= 0x80)
		return true;
	if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
		return true;
	return strchr("-_./:=+,%@^]", c) != NULL && c != '\0';
}

static bool is_name_start(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static bool is_name_char(unsigned char c)
{
	return is_name_start(c) || (c >= '0' && c <= '9');
}

/* An assignment prefix: NAME= or NAME+= at the start of what was written. */
static bool looks_like_assignment(const char *s, size_t n)
{
	size_t i = 0;

	if (n == 0 || !is_name_start((unsigned char)s[0]))
		return false;
	while (i < n && is_name_char((unsigned char)s[i]))
		i++;
	return (i < n && s[i] == '=') || (i + 1 < n && s[i] == '+' && s[i + 1] == '=');
}

/*
 * Reads one word starting at *pp. Returns 1 when a word was read, 0 when the
 * input at *pp is not understood, -ENOMEM.
 */
static int read_word(struct builder *b, const char **pp, bool first_word)
{
	const char *p = *pp, *start = p;
	int r;

	if (first_word) {
		size_t n = 0;

		/* The word as written, up to the next blank or operator, for the checks on first words. */
		while (p[n] && p[n] != ' ' && p[n] != '\t' && p[n] != '\n' && p[n] != ';' &&
		       p[n] != '&' && p[n] != '|')
			n++;
		if (is_reserved(p, n) || looks_like_assignment(p, n))
			return 0;
	}
	if (*p == '#' || *p == '~' || *p == '!')
		return 0;
	for (;;) {
		unsigned char c = (unsigned char)*p;

		if (c == '\'') {
			const char *e = strchr(p + 1, '\'');

			if (!e)
				return 0;
			r = word_add(b, p + 1, (size_t)(e - p - 1));
			if (r < 0)
				return r;
			p = e + 1;
		} else if (c == '"') {
			const char *q = p + 1;

			while (*q && *q != '"') {
				if (*q == '$' || *q == '`' || *q == '\\')
					return 0;
				if ((unsigned char)*q < 0x20 && *q != '\n' && *q != '\t')
					return 0;
				q++;
			}
			if (!*q)
				return 0;
			r = word_add(b, p + 1, (size_t)(q - p - 1));
			if (r < 0)
				return r;
			p = q + 1;
		} else if (plain_char(c) || ((c == '~' || c == '#') && p != start)) {
			/*
			 * Inside a word ~ (HEAD~1) and # (a#b) are literal; at a word's start
			 * they expand or begin a comment.
			 */
			/* Tilde expansion after = and : (assignment-like words): not what was written. */
			if ((c == '=' || c == ':') && p[1] == '~')
				return 0;
			r = word_add(b, p, 1);
			if (r < 0)
				return r;
			p++;
		} else if (c == '\0' || c == ' ' || c == '\t' || c == '\n' || c == ';' ||
			   c == '&' || c == '|') {
			break;
		} else {
			/* $ ` \ * ? [ { } ( ) < > ! # ~ " and control characters inside a word. */
			return 0;
		}
	}
	if (p == start)
		return 0;
	r = word_end(b);
	if (r < 0)
		return r;
	*pp = p;
	return 1;
}

int ward__shell_split(const char *script, struct ward__cmdv *ret)
{
	struct builder b = {.word_cap = WARD_SHELL_MAX_WORDS, .cmd_cap = WARD_SHELL_MAX_COMMANDS};
	const char *p = script;
	/* What may come next: a command is required after &&, || and | (and at the start). */
	bool need_command = false, any = false;
	int r;

	if (strlen(script) > WARD_SHELL_MAX_SCRIPT)
		return 0;
	for (;;) {
		/* Blanks; newlines also end a command or, after an operator, are skipped. */
		while (*p == ' ' || *p == '\t' ||
		       (*p == '\n' && (need_command || b.n_words == 0))) {
			p++;
		}
		if (!*p)
			break;
		if (*p == '\n' || *p == ';') {
			if (b.n_words == 0)
				goto not_understood; /* ";" with no command before it, or ";;" */
			r = command_end(&b);
			if (r < 0)
				goto fail;
			p++;
			continue;
		}
		if (*p == '&' || *p == '|') {
			bool dbl = p[1] == p[0];

			if (b.n_words == 0 || (*p == '&' && !dbl) || (p[0] == '|' && p[1] == '&'))
				goto not_understood; /* a leading operator, "&" (background) or "|&" */
			r = command_end(&b);
			if (r < 0)
				goto fail;
			p += dbl ? 2 : 1;
			need_command = true;
			continue;
		}
		r = read_word(&b, &p, b.n_words == 0);
		if (r < 0)
			goto fail;
		if (r == 0)
			goto not_understood;
		need_command = false;
		any = true;
		/* A word must be followed by a blank, an operator or the end. */
		if (*p && *p != ' ' && *p != '\t' && *p != '\n' && *p != ';' && *p != '&' &&
		    *p != '|')
			goto not_understood;
	}
	if (need_command || !any)
		goto not_understood;
	r = command_end(&b);
	if (r < 0)
		goto fail;
	if (b.overflow || b.out.n == 0)
		goto not_understood;
	*ret = b.out;
	b.out = (struct ward__cmdv){0};
	builder_release(&b);
	return 1;
not_understood:
	builder_release(&b);
	return 0;
fail:
	builder_release(&b);
	return r;
}

/* ------------------------------------------------------------ the literal scan */

/*
 * One level of the scan: the top, or a $( ... ) / ` ... ` inside it. Each
 * level builds its own commands' words; a nested level's commands are
 * emitted when it closes, the outer word goes on after it.
 */
struct frame {
	struct builder b;
	bool dquote; /* inside "..." at this level */
	char closer; /* ')' for $( ), '`' for backticks, 0 at the top */
	int parens; /* unmatched ( inside this level */
};

#define SCAN_MAX_DEPTH 32

/* Emits cmd to out, without leading assignments and reserved words. */
static int emit(struct ward__cmdv *out, size_t *alloc, struct ward__cmd *c)
{
	size_t skip = 0;

	while (skip < c->argc &&
	       (looks_like_assignment(c->argv[skip], strlen(c->argv[skip])) ||
		is_reserved(c->argv[skip], strlen(c->argv[skip])))) {
		/* The keyword `time -p`: its option is not the command either. */
		bool timed = strcmp(c->argv[skip], "time") == 0;

		skip++;
		if (timed && skip < c->argc && strcmp(c->argv[skip], "-p") == 0)
			skip++;
	}
	if (skip == c->argc || out->n >= WARD_SHELL_MAX_COMMANDS) {
		for (size_t i = 0; i < c->argc; i++)
			free(c->argv[i]);
		free(c->argv);
		return 0;
	}
	for (size_t i = 0; i < skip; i++)
		free(c->argv[i]);
	memmove(c->argv, c->argv + skip, (c->argc - skip + 1) * sizeof(char *));
	c->argc -= skip;
	if (out->n == *alloc) {
		size_t na = *alloc ? *alloc * 2 : 4;
		struct ward__cmd *p = reallocarray(out->v, na, sizeof(*p));

		if (!p) {
			for (size_t i = 0; i < c->argc; i++)
				free(c->argv[i]);
			free(c->argv);
			return -ENOMEM;
		}
		out->v = p;
		*alloc = na;
	}
	out->v[out->n++] = *c;
	return 0;
}

/* Ends the frame's current command and moves all its commands to out. */
static int flush(struct frame *f, struct ward__cmdv *out, size_t *alloc)
{
	int r = command_end(&f->b);

	for (size_t i = 0; r >= 0 && i < f->b.out.n; i++) {
		r = emit(out, alloc, &f->b.out.v[i]);
		f->b.out.v[i] = (struct ward__cmd){0};
	}
	f->b.out.n = 0;
	return r;
}

int ward__shell_literal_commands(const char *script, struct ward__cmdv *ret)
{
	struct frame st[SCAN_MAX_DEPTH];
	struct ward__cmdv out = {0};
	size_t alloc = 0, depth = 0;
	const char *p = script;
	int r = 0;

	st[0] = (struct frame){.b = {.word_cap = WARD_SHELL_MAX_WORDS, .cmd_cap = 64}};
	while (r >= 0 && *p) {
		struct frame *f = &st[depth];
		char c = *p;

		if (f->dquote) {
			if (c == '"') {
				f->dquote = false;
				p++;
			} else if (c == '\\' && p[1]) {
				r = word_add(&f->b, p + 1, 1);
				p += 2;
			} else if ((c == '$' && p[1] == '(') || c == '`') {
				goto open_level;
			} else {
				r = word_add(&f->b, p, 1);
				p++;
			}
			continue;
		}
		switch (c) {
		case ' ':
		case '\t':
			r = word_end(&f->b);
			p++;
			continue;
		case '\n':
		case ';':
		case '&':
		case '|':
		case '(':
		case '{':
		case '}':
			if (c == '(')
				f->parens++;
			r = flush(f, &out, &alloc);
			p++;
			continue;
		case ')':
			if (f->closer == ')' && f->parens == 0 && depth > 0) {
				r = flush(f, &out, &alloc);
				builder_release(&f->b);
				depth--;
			} else {
				if (f->parens > 0)
					f->parens--;
				r = flush(f, &out, &alloc);
			}
			p++;
			continue;
		case '`':
			if (f->closer == '`' && depth > 0) {
				r = flush(f, &out, &alloc);
				builder_release(&f->b);
				depth--;
				p++;
				continue;
			}
			goto open_level;
		case '\'': {
			const char *e = strchr(p + 1, '\'');
			size_t n = e ? (size_t)(e - p - 1) : strlen(p + 1);

			r = word_add(&f->b, p + 1, n);
			p = e ? e + 1 : p + 1 + n;
			continue;
		}
		case '"':
			f->dquote = true;
			f->b.in_word = true;
			p++;
			continue;
		case '\\':
			if (p[1] && p[1] != '\n')
				r = word_add(&f->b, p + 1, 1);
			p += p[1] ? 2 : 1;
			continue;
		case '#':
			if (!f->b.in_word) {
				while (*p && *p != '\n')
					p++;
				continue;
			}
			r = word_add(&f->b, p, 1);
			p++;
			continue;
		case '<':
		case '>':
			/* A redirection: the operator and its target stay out of the command's words. */
			r = word_end(&f->b);
			if (r >= 0 && f->b.n_words > 0) {
				const char *w = f->b.words[f->b.n_words - 1];

				/* "2>" : the fd number was read as a word. */
				if (w[0] && strspn(w, "0123456789") == strlen(w) && p[-1] != ' ') {
					free(f->b.words[--f->b.n_words]);
					f->b.words[f->b.n_words] = NULL;
				}
			}
			while (*p == '<' || *p == '>' || *p == '&' || *p == '-' || *p == '|')
				p++;
			while (*p == ' ' || *p == '\t')
				p++;
			while (*p && !strchr(" \t\n;&|()<>`", *p)) {
				if (*p == '\'' || *p == '"') {
					const char *e = strchr(p + 1, *p);

					p = e ? e + 1 : p + strlen(p);
				} else {
					p++;
				}
			}
			continue;
		case '$':
			if (p[1] == '(')
				goto open_level;
			if (p[1] == '{') {
				const char *e = strchr(p, '}');
				size_t n = e ? (size_t)(e - p + 1) : strlen(p);

				r = word_add(&f->b, p, n);
				p += n;
				continue;
			}
			r = word_add(&f->b, p, 1);
			p++;
			continue;
		default:
			r = word_add(&f->b, p, 1);
			p++;
			continue;
		}
	open_level:
		/* $( or ` : a nested level of commands. Past the depth cap it is only text. */
		if (depth + 1 >= SCAN_MAX_DEPTH) {
			r = word_add(&f->b, p, 1);
			p++;
			continue;
		}
		{
			char closer = c == '`' ? '`' : ')';

			p += c == '`' ? 1 : 2;
			depth++;
			st[depth] = (struct frame){
				.b = {.word_cap = WARD_SHELL_MAX_WORDS, .cmd_cap = 64},
				.closer = closer};
		}
	}
	for (;;) {
		if (r >= 0)
			r = flush(&st[depth], &out, &alloc);
		builder_release(&st[depth].b);
		if (depth == 0)
			break;
		depth--;
	}
	if (r < 0) {
		ward__cmdv_release(&out);
		return r;
	}
	*ret = out;
	return (int)out.n;
}

/* ------------------------------------------------------------ quoting */

static bool shell_safe(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      strchr("_@%+=:,./-", c)))
			return false;
	}
	return true;
}

char *ward__shell_join(const char *const *argv, size_t argc)
{
	size_t len = 1;
	char *out, *o;

	for (size_t i = 0; i < argc; i++)
		len += strlen(argv[i]) * 4 + 3;
	out = malloc(len);
	if (!out)
		return NULL;
	o = out;
	for (size_t i = 0; i < argc; i++) {
		const char *s = argv[i];

		if (i)
			*o++ = ' ';
		/* A command name that is a reserved word or contains '=' reads differently bare. */
		if (shell_safe(s) && !(i == 0 && (is_reserved(s, strlen(s)) || strchr(s, '=')))) {
			size_t n = strlen(s);

			memcpy(o, s, n);
			o += n;
			continue;
		}
		*o++ = '\'';
		for (; *s; s++) {
			if (*s == '\'') {
				memcpy(o, "'\\''", 4);
				o += 4;
			} else {
				*o++ = *s;
			}
		}
		*o++ = '\'';
	}
	*o = '\0';
	return out;
}
