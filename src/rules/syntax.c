/* SPDX-License-Identifier: MIT */
/*
 * The syntax layer of the rules parser (see syntax.h and parse.c's opening
 * comment for the grammar): values and calls, read from the lexer's tokens.
 * Every list and every value counted is bounded (WARD_RULES_MAX_*).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "basic/cleanup.h"
#include "rules/syntax.h"

/* ------------------------------------------------------------ values */

void ward__value_release(struct ward__value *v)
{
	free(v->s);
	for (size_t i = 0; i < v->n; i++)
		ward__value_release(&v->items[i]);
	free(v->items);
	*v = (struct ward__value){0};
}

const char *ward__vtype_name(enum ward__vtype t)
{
	switch (t) {
	case V_STR:
		return "string";
	case V_LIST:
		return "list";
	case V_INT:
		return "int";
	case V_NONE:
		return "NoneType";
	case V_BOOL:
		return "bool";
	case V_BYTES:
		return "bytes";
	}
	return "value";
}

int ward__syntax_next(struct ward__parser *p)
{
	ward__tok_release(&p->cur);
	return ward__lex_next(&p->lx, &p->cur);
}

int ward__syntax_unexpected(struct ward__parser *p, const char *expected)
{
	char buf[64];

	return ward__lex_fail(&p->lx, p->cur.line, p->cur.col, "unexpected %s, expected %s",
			      ward__tok_desc(&p->cur, buf, sizeof(buf)), expected);
}

static int parse_value(struct ward__parser *p, struct ward__value *v, int depth);

static int parse_list(struct ward__parser *p, struct ward__value *v, int depth)
{
	size_t alloc = 0;
	int r;

	v->type = V_LIST;
	r = ward__syntax_next(p); /* past '[' */
	if (r < 0)
		return r;
	while (p->cur.kind != T_RBRACK) {
		if (v->n >= WARD_RULES_MAX_TOKENS * WARD_RULES_MAX_ALTS)
			return ward__lex_fail(&p->lx, p->cur.line, p->cur.col, "list too long");
		if (v->n == alloc) {
			struct ward__value *items;

			alloc = alloc ? alloc * 2 : 4;
			items = reallocarray(v->items, alloc, sizeof(*items));
			if (!items)
				return -ENOMEM;
			v->items = items;
		}
		v->items[v->n] = (struct ward__value){0};
		v->n++;
		r = parse_value(p, &v->items[v->n - 1], depth + 1);
		if (r < 0)
			return r;
		if (p->cur.kind == T_COMMA) {
			r = ward__syntax_next(p);
			if (r < 0)
				return r;
		} else if (p->cur.kind != T_RBRACK) {
			return ward__syntax_unexpected(p, "',' or ']'");
		}
	}
	return ward__syntax_next(p); /* past ']' */
}

static int parse_value(struct ward__parser *p, struct ward__value *v, int depth)
{
	struct ward__tok *t = &p->cur;
	int r;

	v->line = t->line;
	v->col = t->col;
	if (++p->values > WARD_RULES_MAX_FILE)
		return ward__lex_fail(&p->lx, t->line, t->col, "too many values");
	switch (t->kind) {
	case T_STRING:
		v->type = t->bytes ? V_BYTES : V_STR;
		v->s = TAKE_PTR(t->str);
		r = ward__syntax_next(p);
		break;
	case T_LBRACK:
		r = parse_list(p, v, depth);
		break;
	case T_INT:
		v->type = V_INT;
		r = ward__syntax_next(p);
		break;
	case T_NAME:
		if (t->len == 4 && memcmp(t->start, "None", 4) == 0)
			v->type = V_NONE;
		else if ((t->len == 4 && memcmp(t->start, "True", 4) == 0) ||
			 (t->len == 5 && memcmp(t->start, "False", 5) == 0))
			v->type = V_BOOL;
		else
			return ward__lex_fail(
				&p->lx, t->line, t->col,
				"'%.*s' is not supported: values must be written out (strings and lists), this is not a Starlark interpreter",
				(int)MIN(t->len, (size_t)40), t->start);
		r = ward__syntax_next(p);
		break;
	case T_LPAREN:
		return ward__lex_fail(
			&p->lx, t->line, t->col,
			"tuples and parenthesised expressions are not supported (write a list)");
	case T_EOF:
	case T_NEWLINE:
	case T_RPAREN:
	case T_RBRACK:
	case T_COMMA:
	case T_EQ:
	case T_SEMI:
	case T_OTHER:
	default:
		return ward__syntax_unexpected(p, "a string or a list");
	}
	if (r < 0)
		return r;
	/* A value ends at ',' ')' or ']': anything else is an expression. */
	if (p->cur.kind == T_EOF || p->cur.kind == T_NEWLINE || p->cur.kind == T_SEMI)
		return ward__syntax_unexpected(p, "',' or a closing bracket");
	if (p->cur.kind != T_COMMA && p->cur.kind != T_RPAREN && p->cur.kind != T_RBRACK) {
		char buf[64];

		return ward__lex_fail(&p->lx, p->cur.line, p->cur.col,
				      "unexpected %s after a value: expressions are not supported",
				      ward__tok_desc(&p->cur, buf, sizeof(buf)));
	}
	return 0;
}

/* ------------------------------------------------------------ calls */

void ward__call_release(struct ward__call *c)
{
	for (size_t i = 0; i < WARD__MAX_PARAMS; i++)
		ward__value_release(&c->args[i]);
}

int ward__syntax_call(struct ward__parser *p, const struct ward__builtin *b, struct ward__call *c)
{
	size_t nparams = 0, positional = 0;
	bool named_seen = false;
	int r;

	while (b->params[nparams])
		nparams++;
	r = ward__syntax_next(p); /* past the name */
	if (r < 0)
		return r;
	if (p->cur.kind != T_LPAREN)
		return ward__syntax_unexpected(p, "'('");
	r = ward__syntax_next(p);
	if (r < 0)
		return r;
	while (p->cur.kind != T_RPAREN) {
		size_t idx;
		unsigned line = p->cur.line, col = p->cur.col;

		if (p->cur.kind == T_OTHER && p->cur.start[0] == '*')
			return ward__lex_fail(&p->lx, line, col,
					      "*args and **kwargs are not supported");
		if (p->cur.kind == T_NAME && p->lx.pos < p->lx.len) {
			/* NAME '=' value: peek for the '=' without consuming the name. */
			struct ward__lexer save = p->lx;
			struct ward__tok name = p->cur, eq;
			bool is_kw;

			r = ward__lex_next(&p->lx, &eq);
			if (r < 0)
				return r;
			is_kw = eq.kind == T_EQ;
			ward__tok_release(&eq);
			if (is_kw) {
				for (idx = 0; idx < nparams; idx++)
					if (strlen(b->params[idx]) == name.len &&
					    memcmp(b->params[idx], name.start, name.len) == 0)
						break;
				if (idx == nparams)
					return ward__lex_fail(
						&p->lx, line, col, "%s() has no parameter '%.*s'",
						b->name, (int)MIN(name.len, (size_t)40),
						name.start);
				if (c->given[idx])
					return ward__lex_fail(
						&p->lx, line, col,
						"%s(): argument '%s' given more than once", b->name,
						b->params[idx]);
				named_seen = true;
				r = ward__lex_next(&p->lx, &p->cur); /* past '=' */
				if (r < 0)
					return r;
				goto value;
			}
			p->lx = save;
		}
		if (named_seen)
			return ward__lex_fail(&p->lx, line, col,
					      "%s(): positional argument after a named one",
					      b->name);
		if (positional >= nparams)
			return ward__lex_fail(&p->lx, line, col, "%s() takes at most %zu arguments",
					      b->name, nparams);
		idx = positional++;
	value:
		c->given[idx] = true;
		r = parse_value(p, &c->args[idx], 0);
		if (r < 0)
			return r;
		if (p->cur.kind == T_COMMA) {
			r = ward__syntax_next(p);
			if (r < 0)
				return r;
		} else if (p->cur.kind != T_RPAREN) {
			return ward__syntax_unexpected(p, "',' or ')'");
		}
	}
	for (size_t i = 0; i < nparams; i++)
		if ((b->required & (1u << i)) && !c->given[i])
			return ward__lex_fail(&p->lx, c->line, c->col,
					      "%s(): missing argument '%s'", b->name, b->params[i]);
	return ward__syntax_next(p); /* past ')' */
}
