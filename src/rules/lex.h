/* SPDX-License-Identifier: MIT */
#pragma once

#include "basic/macro.h"
#include "rules/rules.h"

/*
 * The lexer of the rules language (lex.c), shared with the parser
 * (parse.c). Private to src/rules.
 */

enum tok_kind {
	T_EOF = 0,
	T_NEWLINE,
	T_NAME,
	T_STRING,
	T_INT,
	T_LPAREN,
	T_RPAREN,
	T_LBRACK,
	T_RBRACK,
	T_COMMA,
	T_EQ,
	T_SEMI,
	T_OTHER,
};

struct ward__tok {
	enum tok_kind kind;
	unsigned line, col;
	const char *start; /* in the source */
	size_t len;
	char *str; /* T_STRING: the decoded value (owned), NUL-free */
	size_t str_len;
	bool bytes; /* T_STRING: a b"" literal */
};

struct ward__lexer {
	const char *origin;
	const char *s;
	size_t len, pos;
	unsigned line, col;
	int depth; /* open brackets: newlines inside are not statement ends */
	bool line_start; /* at the first token of a logical line */
	struct ward_error *err;
};

struct ward__strbuf {
	char *p;
	size_t n, alloc;
};

/* Fills the error as "origin:line:col: message" and returns -EINVAL. */
WARD_INTERNAL int ward__lex_fail(struct ward__lexer *lx, unsigned line, unsigned col,
				 const char *fmt, ...) _printf_(4, 5);
/*
 * The next token. Whitespace, comments, continuation lines and, inside
 * brackets, newlines are skipped. Refuses tabs and indentation as Starlark
 * does. A T_STRING owns its decoded value (ward__tok_release()).
 */
WARD_INTERNAL int ward__lex_next(struct ward__lexer *lx, struct ward__tok *t);
WARD_INTERNAL void ward__tok_release(struct ward__tok *t);
/* The token for an error message ("end of file", "'x'"). */
WARD_INTERNAL const char *ward__tok_desc(const struct ward__tok *t, char *buf, size_t size);
/* Appends n bytes; -E2BIG past WARD_RULES_MAX_STRING, -ENOMEM. */
WARD_INTERNAL int ward__strbuf_add(struct ward__strbuf *b, const char *s, size_t n);
/* True when s[0..len) is valid UTF-8; else *ret_bad is the offset of the first bad byte. */
WARD_INTERNAL bool ward__valid_utf8(const unsigned char *s, size_t len, size_t *ret_bad);
