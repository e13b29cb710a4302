/* SPDX-License-Identifier: MIT */
#pragma once

#include "basic/macro.h"
#include "rules/lex.h"

/*
 * The syntax of the rules language above the tokens (syntax.c): literal
 * values (strings, lists, and the values refused with a reason) and the
 * calls of the three builtins with their positional and keyword arguments.
 * What the values mean is parse.c's. Private to src/rules.
 */

enum ward__vtype {
	V_STR,
	V_LIST,
	V_INT,
	V_NONE,
	V_BOOL,
	V_BYTES,
};

struct ward__value {
	enum ward__vtype type;
	unsigned line, col;
	char *s; /* V_STR, V_BYTES */
	struct ward__value *items; /* V_LIST */
	size_t n;
};

WARD_INTERNAL void ward__value_release(struct ward__value *v);
/* The Starlark type name of t, for messages ("string", "list", "NoneType"). */
WARD_INTERNAL const char *ward__vtype_name(enum ward__vtype t);

struct ward__parser {
	struct ward__lexer lx;
	struct ward__tok cur;
	size_t values; /* values parsed in this file, bounded by the file size anyway */
};

/* Moves to the next token (the current one is released). */
WARD_INTERNAL int ward__syntax_next(struct ward__parser *p);
/* Fails with "unexpected TOKEN, expected WHAT" at the current token. -EINVAL. */
WARD_INTERNAL int ward__syntax_unexpected(struct ward__parser *p, const char *expected);

#define WARD__MAX_PARAMS 5

struct ward__call {
	const char *name;
	unsigned line, col;
	struct ward__value args[WARD__MAX_PARAMS];
	bool given[WARD__MAX_PARAMS];
};

WARD_INTERNAL void ward__call_release(struct ward__call *c);

struct ward__builtin {
	const char *name;
	const char *params[WARD__MAX_PARAMS + 1]; /* positional order, NULL-terminated */
	unsigned required; /* bit i: params[i] is required */
};

/*
 * Parses the call of b at the current token (its name) through its closing
 * parenthesis into c: positional arguments in b's order, then keyword ones,
 * each at most once, the required ones present. -EINVAL with the lexer's
 * error filled, -E2BIG, -ENOMEM.
 */
WARD_INTERNAL int ward__syntax_call(struct ward__parser *p, const struct ward__builtin *b,
				    struct ward__call *c);
