/* SPDX-License-Identifier: MIT */
/*
 * The lexer of the rules language: Starlark's lexical rules for what the
 * subset accepts (parse.c says which subset and why): names, string literals
 * in both quote styles, triple-quoted and raw, with Starlark's escapes,
 * integers (only to say why not), punctuation, '#' comments, implicit line
 * joining inside brackets, backslash-newline continuation. Tabs and
 * indentation are refused as Starlark refuses them.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/error.h"
#include "basic/util.h"
#include "rules/lex.h"

int ward__lex_fail(struct ward__lexer *lx, unsigned line, unsigned col, const char *fmt, ...)
{
	char msg[384];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return ward__error(lx->err, -EINVAL, "rules", "%s:%u:%u: %s", lx->origin, line, col, msg);
}

static int peekc(const struct ward__lexer *lx, size_t ahead)
{
	return lx->pos + ahead < lx->len ? (unsigned char)lx->s[lx->pos + ahead] : -1;
}

/* Advances one byte, keeping line and column (columns count characters, not bytes). */
static void advance(struct ward__lexer *lx)
{
	unsigned char c = (unsigned char)lx->s[lx->pos++];

	if (c == '\n') {
		lx->line++;
		lx->col = 1;
	} else if ((c & 0xC0) != 0x80) {
		lx->col++;
	}
}

static bool is_name_start(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static bool is_name_char(int c)
{
	return is_name_start(c) || (c >= '0' && c <= '9');
}

static size_t utf8_encode(uint32_t cp, char out[4])
{
	if (cp < 0x80) {
		out[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (char)(0xC0 | (cp >> 6));
		out[1] = (char)(0x80 | (cp & 0x3F));
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = (char)(0xE0 | (cp >> 12));
		out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
		out[2] = (char)(0x80 | (cp & 0x3F));
		return 3;
	}
	out[0] = (char)(0xF0 | (cp >> 18));
	out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
	out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
	out[3] = (char)(0x80 | (cp & 0x3F));
	return 4;
}

int ward__strbuf_add(struct ward__strbuf *b, const char *s, size_t n)
{
	if (b->n + n > WARD_RULES_MAX_STRING)
		return -E2BIG;
	if (b->n + n + 1 > b->alloc) {
		size_t na = b->alloc ? b->alloc : 32;
		char *p;

		while (na < b->n + n + 1)
			na *= 2;
		p = realloc(b->p, na);
		if (!p)
			return -ENOMEM;
		b->p = p;
		b->alloc = na;
	}
	memcpy(b->p + b->n, s, n);
	b->n += n;
	b->p[b->n] = '\0';
	return 0;
}

/*
 * Decodes one escape after a backslash (the backslash is consumed). Returns
 * 0, or -EINVAL/-E2BIG/-ENOMEM after filling the error.
 */
static int lex_escape(struct ward__lexer *lx, struct ward__strbuf *b, unsigned line, unsigned col)
{
	int c = peekc(lx, 0);
	uint32_t cp = 0;
	char enc[4];
	int r;

	switch (c) {
	case '\n':
		/* A backslash-newline inside a string joins the lines. */
		advance(lx);
		return 0;
	case 'a':
		cp = 7;
		break;
	case 'b':
		cp = 8;
		break;
	case 'f':
		cp = 12;
		break;
	case 'n':
		cp = '\n';
		break;
	case 'r':
		cp = '\r';
		break;
	case 't':
		cp = '\t';
		break;
	case 'v':
		cp = 11;
		break;
	case '\\':
	case '\'':
	case '"':
		cp = (uint32_t)c;
		break;
	case 'x': {
		int h1 = peekc(lx, 1), h2 = peekc(lx, 2);

		if (ward__hexval(h1) < 0 || ward__hexval(h2) < 0)
			return ward__lex_fail(
				lx, line, col,
				"invalid string escape '\\x': two hex digits expected");
		cp = (uint32_t)(ward__hexval(h1) * 16 + ward__hexval(h2));
		for (int i = 0; i < 3; i++)
			advance(lx); /* x and the two digits */
		goto byte_escape;
	}
	case 'u':
	case 'U': {
		int ndig = c == 'u' ? 4 : 8;

		for (int i = 1; i <= ndig; i++) {
			int h = ward__hexval(peekc(lx, (size_t)i));

			if (h < 0)
				return ward__lex_fail(
					lx, line, col,
					"invalid string escape '\\%c': %d hex digits expected", c,
					ndig);
			cp = cp * 16 + (uint32_t)h;
		}
		for (int i = 0; i < ndig; i++)
			advance(lx);
		if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
			return ward__lex_fail(lx, line, col,
					      "invalid string escape: U+%X is not a character", cp);
		if (cp == 0)
			return ward__lex_fail(
				lx, line, col,
				"string escape for NUL is not supported (no command can hold it)");
		break;
	}
	default:
		if (c >= '0' && c <= '7') {
			int n = 0;

			while (n < 3 && peekc(lx, 0) >= '0' && peekc(lx, 0) <= '7') {
				cp = cp * 8 + (uint32_t)(peekc(lx, 0) - '0');
				advance(lx);
				n++;
			}
			goto byte_escape;
		}
		/* Starlark keeps an unknown escape as it is: the backslash and the character. */
		return ward__strbuf_add(b, "\\", 1);
	}
	advance(lx);
	r = ward__strbuf_add(b, enc, utf8_encode(cp, enc));
	if (r == -E2BIG)
		return ward__lex_fail(lx, line, col, "string longer than %zu bytes",
				      WARD_RULES_MAX_STRING);
	return r;

byte_escape:
	if (cp == 0)
		return ward__lex_fail(
			lx, line, col,
			"string escape for NUL is not supported (no command can hold it)");
	if (cp >= 0x80)
		return ward__lex_fail(
			lx, line, col,
			"byte escape above \\x7f is not supported (write the character itself)");
	enc[0] = (char)cp;
	r = ward__strbuf_add(b, enc, 1);
	if (r == -E2BIG)
		return ward__lex_fail(lx, line, col, "string longer than %zu bytes",
				      WARD_RULES_MAX_STRING);
	return r;
}

/* A string literal; lx is at its first quote, after any prefix letters. */
static int lex_string(struct ward__lexer *lx, struct ward__tok *t, bool raw)
{
	struct ward__strbuf b = {0};
	int q = peekc(lx, 0);
	bool triple = peekc(lx, 1) == q && peekc(lx, 2) == q;
	int r;

	for (int i = 0; i < (triple ? 3 : 1); i++)
		advance(lx);
	for (;;) {
		int c = peekc(lx, 0);

		if (c < 0 || (c == '\n' && !triple)) {
			free(b.p);
			return ward__lex_fail(lx, t->line, t->col, "unterminated string literal");
		}
		if (c == q && (!triple || (peekc(lx, 1) == q && peekc(lx, 2) == q))) {
			for (int i = 0; i < (triple ? 3 : 1); i++)
				advance(lx);
			break;
		}
		if (c == '\\') {
			unsigned line = lx->line, col = lx->col;

			advance(lx);
			if (raw) {
				/* In a raw string a backslash only keeps the next quote from ending it. */
				int n = peekc(lx, 0);

				r = ward__strbuf_add(&b, "\\", 1);
				if (r >= 0 && n >= 0 && (n == q || n == '\\')) {
					char ch = (char)n;

					advance(lx);
					r = ward__strbuf_add(&b, &ch, 1);
				}
			} else {
				r = lex_escape(lx, &b, line, col);
			}
			if (r < 0) {
				free(b.p);
				if (r == -E2BIG)
					return ward__lex_fail(lx, t->line, t->col,
							      "string longer than %zu bytes",
							      WARD_RULES_MAX_STRING);
				return r;
			}
			continue;
		}
		if (c == 0) {
			free(b.p);
			return ward__lex_fail(lx, lx->line, lx->col,
					      "NUL byte in a string literal is not supported");
		}
		{
			char ch = (char)c;

			advance(lx);
			r = ward__strbuf_add(&b, &ch, 1);
		}
		if (r < 0) {
			free(b.p);
			if (r == -E2BIG)
				return ward__lex_fail(lx, t->line, t->col,
						      "string longer than %zu bytes",
						      WARD_RULES_MAX_STRING);
			return r;
		}
	}
	if (!b.p) {
		b.p = strdup("");
		if (!b.p)
			return -ENOMEM;
	}
	t->kind = T_STRING;
	t->str = b.p;
	t->str_len = b.n;
	return 0;
}

/*
 * The next token. Whitespace, comments, continuation lines and, inside
 * brackets, newlines are skipped. Refuses tabs and indentation as Starlark
 * does.
 */
int ward__lex_next(struct ward__lexer *lx, struct ward__tok *t)
{
	int c;

	*t = (struct ward__tok){0};
	for (;;) {
		c = peekc(lx, 0);
		if (c == ' ' || c == '\r') {
			advance(lx);
		} else if (c == '\t') {
			return ward__lex_fail(lx, lx->line, lx->col, "tabs are not allowed");
		} else if (c == '#') {
			while (peekc(lx, 0) >= 0 && peekc(lx, 0) != '\n')
				advance(lx);
		} else if (c == '\\' && peekc(lx, 1) == '\n') {
			advance(lx);
			advance(lx);
		} else if (c == '\\' && peekc(lx, 1) == '\r' && peekc(lx, 2) == '\n') {
			advance(lx);
			advance(lx);
			advance(lx);
		} else if (c == '\n' && (lx->depth > 0 || lx->line_start)) {
			/* Inside brackets, and blank or comment-only lines: not a statement end. */
			advance(lx);
		} else {
			break;
		}
	}
	t->line = lx->line;
	t->col = lx->col;
	t->start = lx->s + lx->pos;
	if (c < 0) {
		t->kind = T_EOF;
		return 0;
	}
	if (lx->line_start && lx->depth == 0 && c != '\n') {
		/* The first token of a statement: Starlark has no indented top-level code. */
		if (t->col != 1)
			return ward__lex_fail(lx, t->line, 1, "unexpected indentation");
		lx->line_start = false;
	}
	if (c == '\n') {
		advance(lx);
		t->kind = T_NEWLINE;
		lx->line_start = true;
		t->len = 1;
		return 0;
	}
	if (is_name_start(c)) {
		size_t n = 0;

		while (is_name_char(peekc(lx, n)))
			n++;
		/* String prefixes: r (raw), and b and f, named only to be refused. */
		if (n <= 2 && (peekc(lx, n) == '"' || peekc(lx, n) == '\'')) {
			bool raw = false, bytes = false, fstr = false, ok = true;

			for (size_t i = 0; i < n; i++) {
				int p = peekc(lx, i) | 0x20;

				if (p == 'r')
					raw = true;
				else if (p == 'b')
					bytes = true;
				else if (p == 'f')
					fstr = true;
				else
					ok = false;
			}
			if (ok) {
				if (fstr)
					return ward__lex_fail(
						lx, t->line, t->col,
						"f-strings are not supported (write a plain string)");
				for (size_t i = 0; i < n; i++)
					advance(lx);
				t->bytes = bytes;
				return lex_string(lx, t, raw);
			}
		}
		for (size_t i = 0; i < n; i++)
			advance(lx);
		t->kind = T_NAME;
		t->len = n;
		return 0;
	}
	if (c == '"' || c == '\'')
		return lex_string(lx, t, false);
	if (c >= '0' && c <= '9') {
		size_t n = 0;

		while (is_name_char(peekc(lx, n)) || peekc(lx, n) == '.')
			n++;
		for (size_t i = 0; i < n; i++)
			advance(lx);
		t->kind = T_INT;
		t->len = n;
		return 0;
	}
	t->len = 1;
	switch (c) {
	case '(':
	case '[':
		if (lx->depth >= WARD_RULES_MAX_NESTING)
			return ward__lex_fail(lx, t->line, t->col, "brackets nested deeper than %d",
					      WARD_RULES_MAX_NESTING);
		lx->depth++;
		t->kind = c == '(' ? T_LPAREN : T_LBRACK;
		break;
	case ')':
	case ']':
		if (lx->depth > 0)
			lx->depth--;
		t->kind = c == ')' ? T_RPAREN : T_RBRACK;
		break;
	case ',':
		t->kind = T_COMMA;
		break;
	case '=':
		t->kind = peekc(lx, 1) == '=' ? T_OTHER : T_EQ;
		break;
	case ';':
		t->kind = T_SEMI;
		break;
	default:
		if (c == 0xEF && peekc(lx, 1) == 0xBB && peekc(lx, 2) == 0xBF)
			return ward__lex_fail(
				lx, t->line, t->col,
				"byte order mark is not supported (save the file as UTF-8 without one)");
		t->kind = T_OTHER;
		/* Name the whole character in the error, even a multi-byte one. */
		while (lx->pos + t->len < lx->len &&
		       ((unsigned char)lx->s[lx->pos + t->len] & 0xC0) == 0x80)
			t->len++;
		break;
	}
	for (size_t i = 0; i < t->len; i++)
		advance(lx);
	return 0;
}

void ward__tok_release(struct ward__tok *t)
{
	free(t->str);
	t->str = NULL;
}

const char *ward__tok_desc(const struct ward__tok *t, char *buf, size_t size)
{
	if (t->kind == T_EOF)
		return "end of file";
	if (t->kind == T_NEWLINE)
		return "end of line";
	if (t->kind == T_STRING)
		return "a string";
	snprintf(buf, size, "'%.*s'", (int)MIN(t->len, (size_t)40), t->start);
	return buf;
}

/* True when s[0..len) is valid UTF-8 (no overlongs, surrogates or code points past U+10FFFF). */
bool ward__valid_utf8(const unsigned char *s, size_t len, size_t *ret_bad)
{
	for (size_t i = 0; i < len;) {
		unsigned char c = s[i];
		size_t n;
		unsigned char lo = 0x80, hi = 0xBF;

		if (c < 0x80) {
			i++;
			continue;
		}
		if (c >= 0xC2 && c <= 0xDF)
			n = 2;
		else if (c >= 0xE0 && c <= 0xEF) {
			n = 3;
			if (c == 0xE0)
				lo = 0xA0;
			else if (c == 0xED)
				hi = 0x9F;
		} else if (c >= 0xF0 && c <= 0xF4) {
			n = 4;
			if (c == 0xF0)
				lo = 0x90;
			else if (c == 0xF4)
				hi = 0x8F;
		} else {
			*ret_bad = i;
			return false;
		}
		for (size_t k = 1; k < n; k++) {
			if (i + k >= len || s[i + k] < lo || s[i + k] > hi) {
				*ret_bad = i;
				return false;
			}
			lo = 0x80;
			hi = 0xBF;
		}
		i += n;
	}
	return true;
}
