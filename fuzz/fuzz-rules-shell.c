/* SPDX-License-Identifier: MIT */
/*
 * Fuzzes the shell-word reader (ward__shell_split), the literal scan
 * (ward__shell_literal_commands) and the heuristics that use them. The input
 * is a script (up to its first NUL). Invariants checked:
 *
 *   - an accepted script gives at least one command, none empty, every argv
 *     NULL-terminated, within the caps, and never more word bytes than the
 *     script has (nothing is expanded);
 *   - on an accepted script the literal scan reads the same commands;
 *   - quoting an accepted script's commands back (ward__shell_join) and
 *     reading that again gives the same commands;
 *   - the scan, the known-safe and dangerous checks never fail.
 *
 * Built with -fsanitize=fuzzer it is a libFuzzer target; linked with replay.c
 * it replays the corpus (in every test run).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rules/rules.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool reserved_word(const char *w)
{
	static const char *const words[] = {"if",   "then",	"else",	  "elif",   "fi",    "case",
					    "esac", "for",	"select", "while",  "until", "do",
					    "done", "function", "time",	  "coproc", "in",    "!",
					    "{",    "}",	"[[",	  "]]"};

	for (size_t i = 0; i < ELEMENTSOF(words); i++)
		if (strcmp(w, words[i]) == 0)
			return true;
	return false;
}

static bool same(const struct ward__cmdv *a, const struct ward__cmdv *b)
{
	if (a->n != b->n)
		return false;
	for (size_t i = 0; i < a->n; i++) {
		if (a->v[i].argc != b->v[i].argc)
			return false;
		for (size_t k = 0; k < a->v[i].argc; k++)
			if (strcmp(a->v[i].argv[k], b->v[i].argv[k]) != 0)
				return false;
	}
	return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *script = malloc(size + 1);
	struct ward__cmdv a = {0}, b = {0};
	const char *wrapper[4] = {"bash", "-lc", NULL, NULL};
	int r;

	if (!script)
		abort();
	memcpy(script, data, size);
	script[size] = '\0';
	wrapper[2] = script;

	r = ward__shell_split(script, &a);
	if (r < 0)
		abort();
	if (r == 1) {
		size_t bytes = 0;
		bool quote_free = true;

		if (a.n == 0 || a.n > WARD_SHELL_MAX_COMMANDS)
			abort();
		for (size_t i = 0; i < a.n; i++) {
			if (a.v[i].argc == 0 || a.v[i].argc > WARD_SHELL_MAX_WORDS ||
			    a.v[i].argv[a.v[i].argc] != NULL)
				abort();
			for (size_t k = 0; k < a.v[i].argc; k++) {
				bytes += strlen(a.v[i].argv[k]);
				quote_free = quote_free && !strchr(a.v[i].argv[k], '\'');
			}
		}
		if (bytes > strlen(script))
			abort();
		/*
		 * The scan drops a leading word that reads as an assignment or a
		 * reserved word even when it was quoted ('FOO=1' x, 'if' x):
		 * over-inclusive on purpose, so those scripts are not compared.
		 */
		bool comparable = true;

		for (size_t i = 0; i < a.n; i++)
			comparable = comparable && !strchr(a.v[i].argv[0], '=') &&
				!reserved_word(a.v[i].argv[0]);
		if (comparable) {
			if (ward__shell_literal_commands(script, &b) < 0 || !same(&a, &b))
				abort();
			ward__cmdv_release(&b);
		}
		/* Quoted back and read again: the same commands. */
		if (quote_free) {
			struct ward__cmdv c = {0};
			size_t total = 1;
			char *joined, *o;

			for (size_t i = 0; i < a.n; i++) {
				char *j = ward__shell_join((const char *const *)a.v[i].argv,
							   a.v[i].argc);

				if (!j)
					abort();
				total += strlen(j) + 4;
				free(j);
			}
			joined = malloc(total);
			if (!joined)
				abort();
			o = joined;
			for (size_t i = 0; i < a.n; i++) {
				char *j = ward__shell_join((const char *const *)a.v[i].argv,
							   a.v[i].argc);
				size_t n = strlen(j);

				memcpy(o, j, n);
				o += n;
				memcpy(o, " && ", 4);
				o += i + 1 < a.n ? 4 : 0;
				free(j);
			}
			*o = '\0';
			if (ward__shell_split(joined, &c) != 1 || !same(&a, &c))
				abort();
			ward__cmdv_release(&c);
			free(joined);
		}
	}
	r = ward__shell_literal_commands(script, &b);
	if (r < 0 || (size_t)r != b.n || b.n > WARD_SHELL_MAX_COMMANDS)
		abort();
	for (size_t i = 0; i < b.n; i++)
		if (b.v[i].argc == 0 || b.v[i].argv[b.v[i].argc] != NULL)
			abort();
	(void)ward__command_dangerous(wrapper, 3);
	(void)ward__command_known_safe(wrapper, 3);
	ward__cmdv_release(&a);
	ward__cmdv_release(&b);
	free(script);
	return 0;
}
