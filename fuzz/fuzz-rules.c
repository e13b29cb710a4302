/* SPDX-License-Identifier: MIT */
/*
 * Fuzzes the rules parser (ward__rules_parse) and what consumes its result:
 * matching, the `policy check` JSON and the approval evaluation. The input is
 * a rules file, optionally followed by a NUL and a command whose words are
 * separated by NULs. The file is added to a set that already holds a rule and
 * a host_executable(), so that merging is exercised. Invariants checked:
 *
 *   - a refused file leaves the set exactly as it was, and the error is one
 *     line starting with "<fuzz>:";
 *   - an accepted file parses the same way a second time (same rules,
 *     decisions and hosts added);
 *   - every rule has a program, a valid decision, and alternatives;
 *   - matching and the JSON never fail except for memory, the JSON has the
 *     Codex shape, and every evaluation's decision is the strictest entry.
 *
 * Built with -fsanitize=fuzzer it is a libFuzzer target; linked with replay.c
 * it replays the corpus (in every test run).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "basic/error.h"
#include "rules/rules.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define ORIGIN "<fuzz>"
#define MAX_WORDS 64

static void seed(struct ward__rules *r)
{
	static const char text[] = "prefix_rule(pattern=[\"git\", \"push\"], decision=\"prompt\")\n"
				   "host_executable(name=\"git\", paths=[\"/usr/bin/git\"])\n";
	struct ward_error err = {0};

	ward__rules_init(r);
	if (ward__rules_parse(r, "seed", text, sizeof(text) - 1, false, NULL, &err) < 0)
		abort();
}

static void check_set(const struct ward__rules *r)
{
	for (size_t i = 0; i < r->n_prefix; i++) {
		const struct ward__rule_group *g;

		if (!r->prefix[i].first || r->prefix[i].group >= r->n_groups)
			abort();
		g = &r->groups[r->prefix[i].group];
		if (g->decision > WARD__DECISION_FORBIDDEN || g->source >= r->n_sources)
			abort();
		for (size_t k = 0; k < g->n_rest; k++)
			if (g->rest[k].n_alts == 0 || g->rest[k].n_alts > WARD_RULES_MAX_ALTS)
				abort();
		if (g->n_rest >= WARD_RULES_MAX_TOKENS)
			abort();
	}
	if (r->n_prefix > WARD_RULES_MAX_PREFIX || r->n_hosts > WARD_RULES_MAX_HOSTS)
		abort();
	for (size_t i = 0; i < r->n_hosts; i++)
		for (size_t k = 0; k < r->hosts[i].n_paths; k++)
			if (r->hosts[i].paths[k][0] != '/')
				abort();
}

static void use(const struct ward__rules *r, const char *const *argv, size_t argc)
{
	static const enum ward_approval_mode modes[] = {
		WARD_APPROVAL_ON_REQUEST, WARD_APPROVAL_UNTRUSTED, WARD_APPROVAL_NEVER};
	struct ward__match_opts o = {.resolve_host_executables = true, .cwd = "/w", .home = "/h"};
	char *json = NULL;

	for (int pretty = 0; pretty < 2; pretty++) {
		if (ward__rules_check_json(r, argv, argc, &o, pretty, &json) < 0)
			abort();
		if (strncmp(json, pretty ? "{\n  \"matchedRules\": [" : "{\"matchedRules\":[",
			    pretty ? 20 : 16) != 0)
			abort();
		free(json);
	}
	for (size_t m = 0; m < ELEMENTSOF(modes); m++) {
		struct ward__unmatched_ctx c = {.mode = modes[m], .fs_restricted = true};
		struct ward__evaluation e = {0};
		enum ward__decision max = WARD__DECISION_ALLOW;

		if (ward__rules_evaluate(r, argv, argc, "/w", "/h", &c, &e) < 0)
			abort();
		if (e.n_entries == 0)
			abort();
		for (size_t i = 0; i < e.n_entries; i++)
			if (e.entries[i].decision > max)
				max = e.entries[i].decision;
		if (max != e.decision || (e.bypass_sandbox && e.decision != WARD__DECISION_ALLOW))
			abort();
		ward__evaluation_release(&e);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ward__rules r, again;
	struct ward_error err = {0};
	const char *text = (const char *)data;
	const uint8_t *nul = memchr(data, 0, size);
	size_t len = nul ? (size_t)(nul - data) : size;
	size_t n_prefix, n_groups, n_network, n_hosts, n_sources;
	char *cmdbuf = NULL;
	const char *argv[MAX_WORDS + 1];
	size_t argc = 0;
	int ret;

	seed(&r);
	n_prefix = r.n_prefix;
	n_groups = r.n_groups;
	n_network = r.n_network;
	n_hosts = r.n_hosts;
	n_sources = r.n_sources;
	ret = ward__rules_parse(&r, ORIGIN, text, len, false, NULL, &err);
	if (ret < 0) {
		if (!err.message[0] || strchr(err.message, '\n') ||
		    strncmp(err.message, ORIGIN ":", strlen(ORIGIN) + 1) != 0)
			abort();
		if (r.n_prefix != n_prefix || r.n_groups != n_groups || r.n_network != n_network ||
		    r.n_hosts != n_hosts || r.n_sources != n_sources ||
		    strcmp(r.hosts[0].paths[0], "/usr/bin/git") != 0)
			abort();
	} else {
		seed(&again);
		if (ward__rules_parse(&again, ORIGIN, text, len, false, NULL, &err) < 0)
			abort();
		if (again.n_prefix != r.n_prefix || again.n_network != r.n_network ||
		    again.n_hosts != r.n_hosts)
			abort();
		for (size_t i = 0; i < r.n_prefix; i++)
			if (strcmp(again.prefix[i].first, r.prefix[i].first) != 0 ||
			    again.groups[again.prefix[i].group].decision !=
				    r.groups[r.prefix[i].group].decision)
				abort();
		ward__rules_release(&again);
	}
	check_set(&r);

	/* The command after the NUL: words separated by NULs. */
	if (nul) {
		size_t clen = size - len - 1;

		cmdbuf = malloc(clen + 1);
		if (!cmdbuf)
			abort();
		memcpy(cmdbuf, nul + 1, clen);
		cmdbuf[clen] = '\0';
		for (size_t i = 0; i <= clen && argc < MAX_WORDS;) {
			argv[argc++] = cmdbuf + i;
			i += strlen(cmdbuf + i) + 1;
		}
	} else {
		argv[argc++] = "git";
		argv[argc++] = "push";
	}
	argv[argc] = NULL;
	use(&r, argv, argc);
	free(cmdbuf);
	ward__rules_release(&r);
	return 0;
}
