/* SPDX-License-Identifier: MIT */
/*
 * Command rules (src/rules): the parser of Codex's rules language against
 * the data files in tests/data/rules (the rules of Codex's example, ward's
 * example, files both refuse, files ward refuses on purpose), the
 * `policy check` JSON for every row of check.table (the same rows
 * scripts/compare-execpolicy.sh runs through Codex), the shell-word reader
 * (shell.table), the evaluation for approvals (approval.table), the safety
 * lists, the caps, and adding rules to a file (atomic, deduplicated,
 * refusing banned prefixes, under concurrency). Works unprivileged.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "basic/cleanup.h"
#include "basic/error.h"
#include "basic/util.h"
#include "rules/rules.h"
#include "tap.h"

#ifndef WARD_TEST_DATA
#define WARD_TEST_DATA "tests/data"
#endif

static char scratch[] = "/var/tmp/ward-rules-XXXXXX";

/* ------------------------------------------------------------------ helpers */

static const char *data_dir(void)
{
	static char path[PATH_MAX];
	const char *src = getenv("WARD_SRC");

	if (src)
		snprintf(path, sizeof(path), "%s/tests/data/rules", src);
	else
		snprintf(path, sizeof(path), "%s/rules", WARD_TEST_DATA);
	return path;
}

static void test_dir(char *out, size_t size)
{
	snprintf(out, size, "%s/%d", scratch, (int)getpid());
	ASSERT_EQ(mkdir(out, 0755), 0);
}

static void write_file(const char *path, const char *content)
{
	int fd = open(path, O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0644);

	if (fd < 0)
		tap_fail(__FILE__, __LINE__, "open %s: %s", path, strerror(errno));
	ASSERT_EQ(write(fd, content, strlen(content)), (ssize_t)strlen(content));
	close(fd);
}

static char *read_all(const char *path)
{
	char *buf = NULL;
	size_t len = 0;

	ASSERT_OK(ward__read_file(path, 1 << 24, &buf, &len));
	return buf;
}

/* Parses text into r; returns the result, err holds the message. */
static int parse(struct ward__rules *r, const char *text, struct ward_error *err)
{
	struct ward__match_opts o = {.resolve_host_executables = true, .cwd = "/w", .home = "/h"};

	memset(err, 0, sizeof(*err));
	return ward__rules_parse(r, "t.rules", text, strlen(text), false, &o, err);
}

static void parses(struct ward__rules *r, const char *text)
{
	struct ward_error err;

	if (parse(r, text, &err) < 0)
		tap_fail(__FILE__, __LINE__, "refused: %s", err.message);
}

/* text is refused with a one-line message starting "t.rules:" and holding needle. */
static void refuses(const char *text, const char *needle)
{
	struct ward__rules r;
	struct ward_error err;
	int ret;

	ward__rules_init(&r);
	ret = parse(&r, text, &err);
	if (ret >= 0)
		tap_fail(__FILE__, __LINE__, "accepted: %s", text);
	ASSERT_TRUE(strncmp(err.message, "t.rules:", 8) == 0);
	ASSERT_TRUE(strchr(err.message, '\n') == NULL);
	ASSERT_CONTAINS(err.message, needle);
	ASSERT_EQ(r.n_prefix, 0);
	ASSERT_EQ(r.n_sources, 0);
	ward__rules_release(&r);
}

/* A JSON array of strings as a NULL-terminated vector (jansson). */
static char **argv_from_json(json_t *a, size_t *ret_n)
{
	size_t n = json_array_size(a);
	char **v = calloc(n + 1, sizeof(char *));

	ASSERT_TRUE(v != NULL);
	for (size_t i = 0; i < n; i++) {
		ASSERT_TRUE(json_is_string(json_array_get(a, i)));
		v[i] = strdup(json_string_value(json_array_get(a, i)));
	}
	*ret_n = n;
	return v;
}

/* Splits a table line at tabs into at most max fields. */
static size_t fields(char *line, char **f, size_t max)
{
	size_t n = 0;

	line[strcspn(line, "\n")] = '\0';
	while (n < max) {
		f[n++] = line;
		line = strchr(line, '\t');
		if (!line)
			break;
		*line++ = '\0';
	}
	return n;
}

static FILE *open_table(const char *name)
{
	char path[PATH_MAX];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", data_dir(), name);
	f = fopen(path, "re");
	if (!f)
		tap_fail(__FILE__, __LINE__, "open %s: %s", path, strerror(errno));
	return f;
}

/* ------------------------------------------------------------------ data files */

TEST(codex_example_loads)
{
	struct ward__rules r;
	struct ward_error err = {0};
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/codex-example.rules", data_dir());
	ward__rules_init(&r);
	if (ward__rules_load_file(&r, path, false, NULL, &err) < 0)
		tap_fail(__FILE__, __LINE__, "%s", err.message);
	ASSERT_EQ(r.n_prefix, 8);
	ASSERT_EQ(r.n_sources, 1);
	ASSERT_STREQ(r.prefix[0].first, "git");
	ASSERT_EQ(r.groups[r.prefix[0].group].decision, WARD__DECISION_FORBIDDEN);
	ASSERT_STREQ(r.groups[r.prefix[0].group].justification, "destructive operation");
	ASSERT_EQ(r.groups[r.prefix[3].group].decision, WARD__DECISION_PROMPT);
	ward__rules_release(&r);
}

TEST(ward_example_loads)
{
	struct ward__rules r;
	struct ward_error err = {0};
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/ward-example.rules", data_dir());
	ward__rules_init(&r);
	if (ward__rules_load_file(&r, path, false, NULL, &err) < 0)
		tap_fail(__FILE__, __LINE__, "%s", err.message);
	/* npm/pnpm/yarn expand into three rules; two network rules; one host_executable. */
	ASSERT_STREQ(r.prefix[0].first, "npm");
	ASSERT_STREQ(r.prefix[1].first, "pnpm");
	ASSERT_STREQ(r.prefix[2].first, "yarn");
	ASSERT_EQ(r.prefix[0].group, r.prefix[2].group);
	ASSERT_EQ(r.n_network, 2);
	ASSERT_STREQ(r.network[1].host, "example.com");
	ASSERT_EQ(r.network[1].decision, WARD__DECISION_FORBIDDEN);
	ASSERT_EQ(r.n_hosts, 1);
	ASSERT_EQ(r.hosts[0].n_paths, 2);
	ward__rules_release(&r);
}

/* Every row of check.table: the exact JSON Codex prints (scripts/compare-execpolicy.sh checks Codex). */
TEST(check_table)
{
	FILE *f = open_table("check.table");
	char line[8192];
	unsigned rows = 0;

	ASSERT_EQ(chdir(data_dir()), 0);
	while (fgets(line, sizeof(line), f)) {
		char *fl[4];
		struct ward__rules r;
		struct ward_error err = {0};
		struct ward__match_opts o = {.cwd = data_dir(), .home = "/nonexistent"};
		_cleanup_free_ char *json = NULL;
		json_error_t jerr;
		json_t *a;
		char **argv;
		size_t n;

		if (line[0] == '#' || line[0] == '\n')
			continue;
		ASSERT_EQ(fields(line, fl, 4), 4);
		o.resolve_host_executables = strcmp(fl[1], "resolve") == 0;
		a = json_loads(fl[2], 0, &jerr);
		ASSERT_TRUE(a != NULL);
		argv = argv_from_json(a, &n);
		ward__rules_init(&r);
		if (ward__rules_load_file(&r, fl[0], false, &o, &err) < 0)
			tap_fail(__FILE__, __LINE__, "%s", err.message);
		ASSERT_OK(
			ward__rules_check_json(&r, (const char *const *)argv, n, &o, false, &json));
		if (strcmp(json, fl[3]) != 0)
			tap_fail(__FILE__, __LINE__, "%s %s:\n#   got      %s\n#   expected %s",
				 fl[0], fl[2], json, fl[3]);
		ward__rules_release(&r);
		for (size_t i = 0; i < n; i++)
			free(argv[i]);
		free(argv);
		json_decref(a);
		rows++;
	}
	fclose(f);
	ASSERT_GE(rows, 50);
}

/* Files both ward and Codex refuse, and files ward refuses on purpose: a one-line error naming file:line:col. */
static void refuses_dir(const char *sub)
{
	char dir[PATH_MAX];
	DIR *d;
	struct dirent *de;
	unsigned n = 0;

	snprintf(dir, sizeof(dir), "%s/%s", data_dir(), sub);
	d = opendir(dir);
	ASSERT_TRUE(d != NULL);
	while ((de = readdir(d))) {
		char path[PATH_MAX * 2];
		struct ward__rules r;
		struct ward_error err = {0};

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		ward__rules_init(&r);
		if (ward__rules_load_file(&r, path, false, NULL, &err) >= 0)
			tap_fail(__FILE__, __LINE__, "accepted %s", path);
		ASSERT_TRUE(strncmp(err.message, path, strlen(path)) == 0);
		ASSERT_TRUE(err.message[strlen(path)] == ':');
		ASSERT_TRUE(strchr(err.message, '\n') == NULL);
		ASSERT_EQ(r.n_prefix, 0);
		ward__rules_release(&r);
		n++;
	}
	closedir(d);
	ASSERT_GE(n, 5);
}

TEST(bad_files_refused)
{
	refuses_dir("bad");
}

TEST(refused_files_refused)
{
	refuses_dir("refused");
}

/* ------------------------------------------------------------------ the language */

static const char *tok(const struct ward__rules *r, size_t rule, size_t i)
{
	const struct ward__rule_group *g = &r->groups[r->prefix[rule].group];

	if (i == 0)
		return r->prefix[rule].first;
	ASSERT_LE(i, g->n_rest);
	return g->rest[i - 1].alts[0];
}

TEST(string_literals)
{
	struct ward__rules r;

	ward__rules_init(&r);
	parses(&r,
	       "prefix_rule(pattern=[\"a\\x41\\101\\u00e9\\U0001F600\", 'b\\n\\t\\\\\\\"\\'c', "
	       "r\"\\d\\\"\", '''x\ny''', \"j\\\nk\", \"\\q\", '\\a\\b\\f\\v\\r', \"\", "
	       "'''it's''', r'''raw\\n''', \"\"\"a\"b\"\"\"])\n");
	ASSERT_STREQ(tok(&r, 0, 0), "aAA\xc3\xa9\xf0\x9f\x98\x80");
	ASSERT_STREQ(tok(&r, 0, 1), "b\n\t\\\"'c");
	ASSERT_STREQ(tok(&r, 0, 2), "\\d\\\"");
	ASSERT_STREQ(tok(&r, 0, 3), "x\ny");
	ASSERT_STREQ(tok(&r, 0, 4), "jk");
	/* Starlark keeps an unknown escape as written. */
	ASSERT_STREQ(tok(&r, 0, 5), "\\q");
	ASSERT_STREQ(tok(&r, 0, 6), "\a\b\f\v\r");
	ASSERT_STREQ(tok(&r, 0, 7), "");
	ASSERT_STREQ(tok(&r, 0, 8), "it's");
	ASSERT_STREQ(tok(&r, 0, 9), "raw\\n");
	ASSERT_STREQ(tok(&r, 0, 10), "a\"b");
	ward__rules_release(&r);
}

TEST(call_forms)
{
	struct ward__rules r;
	const struct ward__rule_group *g;

	ward__rules_init(&r);
	/* Positional order: pattern, decision, match, not_match, justification. */
	parses(&r,
	       "prefix_rule([\"ls\"], \"prompt\", [\"ls -l\"], [\"cat\"], \"why\")\n"
	       "# a comment\n\n"
	       "prefix_rule(\n    pattern = [ \"cat\" , ] ,  # trailing commas\n"
	       "    decision = \"forbidden\",\n)\n"
	       "prefix_rule(pattern=[\"a\"]); prefix_rule(pattern=[\"b\"]);\n"
	       "prefix_rule \\\n(pattern=[\"c\"])\r\n"
	       "prefix_rule(pattern=[\"d\"])  # no newline at the end");
	ASSERT_EQ(r.n_prefix, 6);
	g = &r.groups[r.prefix[0].group];
	ASSERT_EQ(g->decision, WARD__DECISION_PROMPT);
	ASSERT_STREQ(g->justification, "why");
	ASSERT_EQ(r.groups[r.prefix[1].group].decision, WARD__DECISION_FORBIDDEN);
	ASSERT_EQ(r.groups[r.prefix[2].group].decision, WARD__DECISION_ALLOW);
	ASSERT_EQ(r.groups[r.prefix[4].group].line, 9);
	ward__rules_release(&r);
}

TEST(alternatives)
{
	struct ward__rules r;
	struct ward__match_list l = {0};
	const char *cmd[] = {"b", "y", "z", NULL};

	ward__rules_init(&r);
	parses(&r, "prefix_rule(pattern=[[\"a\", \"b\", \"c\"], [\"x\", \"y\"], [\"z\"]])\n");
	/* First-token alternatives expand into one rule per program, sharing the rest. */
	ASSERT_EQ(r.n_prefix, 3);
	ASSERT_EQ(r.n_groups, 1);
	ASSERT_EQ(r.groups[0].n_rest, 2);
	ASSERT_EQ(r.groups[0].rest[0].n_alts, 2);
	ASSERT_OK(ward__rules_match(&r, cmd, 3, NULL, &l));
	ASSERT_EQ(l.n, 1);
	ASSERT_TRUE(l.v[0].rule == &r.prefix[1]);
	ASSERT_EQ(l.v[0].n_prefix, 3);
	ward__match_list_release(&l);
	ward__rules_release(&r);
}

TEST(refusals)
{
	refuses("prefix_rule(pattern=[\"a\"], decision=\"deny\")", "1:37: invalid decision 'deny'");
	refuses("prefix_rule(pattern=[])",
		"1:21: invalid pattern element: pattern cannot be empty");
	refuses("prefix_rule(pattern=\"ls\")", "pattern must be a list (got string)");
	refuses("prefix_rule(pattern=[\"a\"], justification=\"\")",
		"justification cannot be empty");
	refuses("prefix_rule(pattern=[\"a\"], nope=1)", "has no parameter 'nope'");
	refuses("prefix_rule([\"a\"], \"allow\", [], [], \"j\", 5)", "takes at most 5 arguments");
	refuses("prefix_rule(*x)", "*args and **kwargs are not supported");
	refuses("prefix_rule(pattern=[\"a\"], decision=True)",
		"decision must be a string (got bool)");
	refuses("prefix_rule(pattern=[b\"a\"])", "(got bytes)");
	refuses("prefix_rule(pattern=[f\"a\"])", "f-strings are not supported");
	refuses("prefix_rule(pattern=[\"a\" + \"b\"])", "expressions are not supported");
	refuses("prefix_rule(pattern=[\"a\"] if x else [])", "expressions are not supported");
	refuses("prefix_rule(pattern={\"a\": 1})", "1:21: unexpected '{'");
	refuses("prefix_rule(pattern=[x])", "'x' is not supported");
	refuses("x = 1", "assignments");
	refuses("def f():\n  pass", "function definitions");
	refuses("load(\"a.rules\", \"b\")", "load() of other files");
	refuses("  prefix_rule(pattern=[\"a\"])", "1:1: unexpected indentation");
	refuses("prefix_rule(pattern=[\"a\"])\n\tprefix_rule(pattern=[\"b\"])",
		"2:1: tabs are not allowed");
	refuses("prefix_rule(pattern=[\"a\"]", "unexpected end of file");
	refuses("prefix_rule(pattern=[\"a])", "1:22: unterminated string literal");
	refuses("prefix_rule(pattern=[\"a\nb\"])", "unterminated string literal");
	refuses("prefix_rule(pattern=[\"\\x4\"])", "two hex digits expected");
	refuses("prefix_rule(pattern=[\"\\xc3\\xa9\"])", "byte escape above \\x7f");
	refuses("prefix_rule(pattern=[\"\\0\"])", "NUL");
	refuses("prefix_rule(pattern=[\"\\U00110000\"])", "is not a character");
	refuses("prefix_rule(pattern=[\"\\u12\"])", "4 hex digits expected");
	refuses("prefix_rule(pattern=[\"a\"], match=[\"a 'x\"])", "invalid shell syntax");
	refuses("prefix_rule(pattern=[\"a\"], match=[\"b\"])", "match example 'b' does not match");
	refuses("prefix_rule(pattern=[\"a\"], not_match=[[\"a\", \"x\"]])",
		"not_match example 'a x' matches");
	refuses("network_rule(host=\"a\", protocol=\"https\", decision=\"allow\", justification=\" \")",
		"justification cannot be empty");
	refuses("network_rule(host=\" \", protocol=\"https\", decision=\"allow\")",
		"cannot be empty");
	refuses("network_rule(host=\"a b\", protocol=\"https\", decision=\"allow\")", "whitespace");
	refuses("network_rule(host=\"[::1\", protocol=\"https\", decision=\"allow\")", "IPv6");
	refuses("network_rule(host=\"[::1]x\", protocol=\"https\", decision=\"allow\")",
		"unsupported suffix");
	refuses("host_executable(name=\"..\", paths=[])", "bare executable name");
	refuses("host_executable(name=\"git\", paths=[\"/bin/\"])", "must have basename 'git'");
	refuses("prefix_rule(pattern=[\"a\"])\nprefix_rule(pattern=[\"b\"], match=[\"c\"])",
		"2:1: match example");
	refuses("prefix_rule(pattern=[\"a\"]);;", "unexpected ';'");
	refuses("\xef\xbb\xbfprefix_rule(pattern=[\"a\"])", "byte order mark");
	refuses("prefix_rule(pattern=[\"a\"])\n\xc3\x28", "2: not valid UTF-8");
}

/* A refused file changes nothing in the set it was loaded into. */
TEST(all_or_nothing)
{
	struct ward__rules r;
	struct ward_error err;

	ward__rules_init(&r);
	parses(&r,
	       "host_executable(name=\"git\", paths=[\"/usr/bin/git\"])\n"
	       "prefix_rule(pattern=[\"ls\"])\n");
	ASSERT_TRUE(parse(&r,
			  "host_executable(name=\"git\", paths=[\"/opt/git\"])\n"
			  "network_rule(host=\"a\", protocol=\"http\", decision=\"allow\")\n"
			  "prefix_rule(pattern=[\"cat\"])\nprefix_rule(pattern=[1])\n",
			  &err) < 0);
	ASSERT_EQ(r.n_prefix, 1);
	ASSERT_EQ(r.n_network, 0);
	ASSERT_EQ(r.n_sources, 1);
	ASSERT_STREQ(r.hosts[0].paths[0], "/usr/bin/git");
	ward__rules_release(&r);
}

/*
 * host_executable(): a later definition replaces an earlier one (also from an
 * earlier file), and examples see the definitions of the whole file.
 */
TEST(host_executables)
{
	struct ward__rules r;
	struct ward__match_list l = {0};
	struct ward__match_opts o = {.resolve_host_executables = true, .cwd = "/w"};
	const char *usr[] = {"/usr/bin/git", "status", NULL};
	const char *opt[] = {"/opt/../opt/git", "status", NULL};

	ward__rules_init(&r);
	parses(&r, "host_executable(name=\"git\", paths=[\"/usr/bin/git\", \"/usr/bin//git\"])\n");
	ASSERT_EQ(r.hosts[0].n_paths, 1);
	parses(&r,
	       "prefix_rule(pattern=[\"git\", \"status\"], match=[[\"/opt/git\", \"status\"]],\n"
	       "            not_match=[[\"/usr/bin/git\", \"status\"]])\n"
	       "host_executable(name=\"git\", paths=[\"/opt/git\"])\n");
	ASSERT_EQ(r.n_hosts, 1);
	ASSERT_STREQ(r.hosts[0].paths[0], "/opt/git");
	ASSERT_OK(ward__rules_match(&r, usr, 2, &o, &l));
	ASSERT_EQ(l.n, 0);
	ASSERT_OK(ward__rules_match(&r, opt, 2, &o, &l));
	ASSERT_EQ(l.n, 1);
	ASSERT_STREQ(l.v[0].resolved_program, "/opt/git");
	ward__match_list_release(&l);
	ward__rules_release(&r);
}

TEST(network_rules)
{
	struct ward__rules r;

	ward__rules_init(&r);
	parses(&r,
	       "network_rule(host=\" Example.COM.:443 \", protocol=\"https_connect\", decision=\"deny\")\n"
	       "network_rule(\"[::1]:80\", \"socks5_udp\", \"prompt\", \"local\")\n"
	       "network_rule(host=\"a:b:c\", protocol=\"http-connect\", decision=\"allow\")\n");
	ASSERT_EQ(r.n_network, 3);
	ASSERT_STREQ(r.network[0].host, "example.com");
	ASSERT_EQ(r.network[0].protocol, WARD__NET_HTTPS);
	ASSERT_EQ(r.network[0].decision, WARD__DECISION_FORBIDDEN);
	ASSERT_STREQ(r.network[1].host, "::1");
	ASSERT_EQ(r.network[1].protocol, WARD__NET_SOCKS5_UDP);
	ASSERT_STREQ(r.network[1].justification, "local");
	ASSERT_STREQ(r.network[2].host, "a:b:c");
	ward__rules_release(&r);
}

static char *repeat(const char *unit, size_t n, const char *before, const char *after)
{
	size_t lu = strlen(unit), lb = strlen(before), la = strlen(after);
	char *s = malloc(lb + lu * n + la + 1), *o = s;

	ASSERT_TRUE(s != NULL);
	memcpy(o, before, lb);
	o += lb;
	for (size_t i = 0; i < n; i++, o += lu)
		memcpy(o, unit, lu);
	memcpy(o, after, la + 1);
	return s;
}

TEST(caps)
{
	_cleanup_free_ char *deep = repeat("[", WARD_RULES_MAX_NESTING, "prefix_rule(pattern=", "");
	_cleanup_free_ char *longstr =
		repeat("a", WARD_RULES_MAX_STRING + 1, "prefix_rule(pattern=[\"", "\"])");
	_cleanup_free_ char *alts =
		repeat("\"a\",", WARD_RULES_MAX_ALTS + 1, "prefix_rule(pattern=[[", "]])");
	_cleanup_free_ char *examples = repeat("\"a\",", WARD_RULES_MAX_EXAMPLES + 1,
					       "prefix_rule(pattern=[\"a\"], match=[", "])");
	_cleanup_free_ char *many =
		repeat("prefix_rule(pattern=[\"a\"])\n", WARD_RULES_MAX_PREFIX + 1, "", "");
	_cleanup_free_ char *big = repeat("#", WARD_RULES_MAX_FILE + 1, "", "");
	struct ward__rules r;
	struct ward_error err;

	refuses(deep, "nested deeper than");
	refuses(longstr, "string longer than");
	refuses(alts, "more than 256 alternatives");
	refuses(examples, "too many examples");
	refuses(many, "more than 16384 prefix rules");
	ward__rules_init(&r);
	ASSERT_EQ(parse(&r, big, &err), -E2BIG);
	ASSERT_CONTAINS(err.message, "larger than");
	ward__rules_release(&r);
}

/* ------------------------------------------------------------------ matching */

TEST(absolute_paths)
{
	static const char *const cases[][3] = {
		{"/usr/bin/../bin/git", "/usr/bin/git", NULL},
		{"//usr//bin/./git/", "/usr/bin/git", NULL},
		{"/../../x", "/x", NULL},
		{"./rm", "/w/d/rm", NULL},
		{"../rm", "/w/rm", NULL},
		{"a/b/..", "/w/d/a", NULL},
		{"~/bin/rm", "/h/bin/rm", NULL},
		{"~", "/h", NULL},
		{"~user/x", "/w/d/~user/x", NULL},
		{"/", "/", NULL},
	};

	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		_cleanup_free_ char *a = ward__rules_absolute_path(cases[i][0], "/w/d", "/h");

		ASSERT_STREQ(a, cases[i][1]);
	}
	ASSERT_TRUE(ward__rules_absolute_path("rel", NULL, NULL) == NULL);
}

TEST(file_names)
{
	static const char *const cases[][2] = {
		{"/usr/bin/git", "git"},
		{"git", "git"},
		{"rm/", "rm"},
		{"a/.", "a"},
		{"a/./", "a"},
		{".", NULL},
		{"/", NULL},
		{"a/..", NULL},
		{"", NULL},
		{"./", NULL},
		{"/.", NULL},
		{"x/.hidden", ".hidden"},
	};

	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		_cleanup_free_ char *n = ward__path_file_name(cases[i][0]);

		if (!cases[i][1])
			ASSERT_TRUE(n == NULL);
		else
			ASSERT_STREQ(n, cases[i][1]);
	}
}

TEST(restrictive_matching)
{
	struct ward__rules r;
	struct ward__match_opts o = {
		.resolve_host_executables = true, .restrictive = true, .cwd = "/w", .home = "/h"};
	static const struct {
		const char *argv[4];
		size_t n;
		int decision; /* -1: no match */
	} cases[] = {
		{{"/usr/bin/git", "status"}, 2, WARD__DECISION_ALLOW},
		{{"./git", "status"}, 2, -1},
		{{"/opt/git", "status"}, 2, -1},
		{{"/opt/git", "push"}, 2, WARD__DECISION_PROMPT},
		{{"./rm", "-rf"}, 2, WARD__DECISION_FORBIDDEN},
		{{"/tmp/x/rm"}, 1, WARD__DECISION_FORBIDDEN},
		{{"/bin/cat"}, 1, -1},
		{{"git", "status"}, 2, WARD__DECISION_ALLOW},
	};

	ward__rules_init(&r);
	parses(&r,
	       "prefix_rule(pattern=[\"git\", \"status\"])\n"
	       "prefix_rule(pattern=[\"git\", \"push\"], decision=\"prompt\")\n"
	       "prefix_rule(pattern=[\"rm\"], decision=\"forbidden\")\n"
	       "prefix_rule(pattern=[\"cat\"])\n"
	       "host_executable(name=\"git\", paths=[\"/usr/bin/git\"])\n"
	       "host_executable(name=\"rm\", paths=[\"/bin/rm\"])\n");
	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		struct ward__match_list l = {0};
		enum ward__decision d;

		ASSERT_OK(ward__rules_match(&r, cases[i].argv, cases[i].n, &o, &l));
		if (cases[i].decision < 0) {
			if (l.n != 0)
				tap_fail(__FILE__, __LINE__, "case %zu matched", i);
		} else {
			ASSERT_TRUE(ward__match_list_decision(&l, &d));
			if ((int)d != cases[i].decision)
				tap_fail(__FILE__, __LINE__, "case %zu: %d != %d", i, d,
					 cases[i].decision);
		}
		ward__match_list_release(&l);
	}
	ward__rules_release(&r);
}

/* ------------------------------------------------------------------ shell words */

TEST(shell_table)
{
	FILE *f = open_table("shell.table");
	char line[8192];
	unsigned rows = 0;

	while (fgets(line, sizeof(line), f)) {
		char *fl[2];
		json_error_t jerr;
		json_t *script, *want;
		struct ward__cmdv c = {0};
		int r;

		if (line[0] == '#' || line[0] == '\n')
			continue;
		ASSERT_EQ(fields(line, fl, 2), 2);
		script = json_loads(fl[0], JSON_DECODE_ANY, &jerr);
		ASSERT_TRUE(json_is_string(script));
		r = ward__shell_split(json_string_value(script), &c);
		ASSERT_GE(r, 0);
		if (strcmp(fl[1], "refused") == 0) {
			if (r != 0)
				tap_fail(__FILE__, __LINE__, "accepted %s", fl[0]);
		} else {
			want = json_loads(fl[1], 0, &jerr);
			ASSERT_TRUE(want != NULL);
			if (r != 1)
				tap_fail(__FILE__, __LINE__, "refused %s", fl[0]);
			ASSERT_EQ(c.n, json_array_size(want));
			for (size_t i = 0; i < c.n; i++) {
				json_t *w = json_array_get(want, i);

				ASSERT_EQ(c.v[i].argc, json_array_size(w));
				for (size_t k = 0; k < c.v[i].argc; k++)
					ASSERT_STREQ(c.v[i].argv[k],
						     json_string_value(json_array_get(w, k)));
				ASSERT_TRUE(c.v[i].argv[c.v[i].argc] == NULL);
			}
			json_decref(want);
		}
		ward__cmdv_release(&c);
		json_decref(script);
		rows++;
	}
	fclose(f);
	ASSERT_GE(rows, 80);
}

TEST(shell_wrappers)
{
	const char *ok[][3] = {{"bash", "-lc", "x"},
			       {"/bin/sh", "-c", "x"},
			       {"zsh", "-lc", "x"},
			       {"/usr/local/bin/bash", "-c", "x"}};
	const char *no[][3] = {{"/tmp/bash", "-lc", "x"},
			       {"bash", "-l", "x"},
			       {"dash", "-c", "x"},
			       {"./sh", "-c", "x"},
			       {"bash", "-ic", "x"}};
	const char *four[] = {"bash", "-c", "x", "y"};

	for (size_t i = 0; i < ELEMENTSOF(ok); i++)
		ASSERT_TRUE(ward__shell_wrapper_script(ok[i], 3) == ok[i][2]);
	for (size_t i = 0; i < ELEMENTSOF(no); i++)
		ASSERT_TRUE(ward__shell_wrapper_script(no[i], 3) == NULL);
	ASSERT_TRUE(ward__shell_wrapper_script(four, 4) == NULL);
}

/* The literal scan of a refused script finds the commands hidden in it. */
static bool scan_has(const char *script, const char *const *want)
{
	struct ward__cmdv c = {0};
	bool found = false;

	ASSERT_GE(ward__shell_literal_commands(script, &c), 0);
	for (size_t i = 0; i < c.n && !found; i++) {
		size_t k = 0;

		while (want[k] && k < c.v[i].argc && strcmp(want[k], c.v[i].argv[k]) == 0)
			k++;
		found = !want[k];
	}
	ward__cmdv_release(&c);
	return found;
}

TEST(literal_scan)
{
	const char *rm[] = {"rm", "-rf", "x", NULL};

	ASSERT_TRUE(scan_has("echo $(rm -rf x)", rm));
	ASSERT_TRUE(scan_has("echo \"a $(rm -rf x) b\"", rm));
	ASSERT_TRUE(scan_has("echo `rm -rf x`", rm));
	ASSERT_TRUE(scan_has("if true; then rm -rf x; fi", rm));
	ASSERT_TRUE(scan_has("for a in b; do FOO=1 rm -rf x; done", rm));
	ASSERT_TRUE(scan_has("rm -rf x >/dev/null 2>&1", rm));
	ASSERT_TRUE(scan_has("(cd y && rm -rf x)", rm));
	ASSERT_TRUE(scan_has("{ rm -rf x; }", rm));
	ASSERT_TRUE(scan_has("a | rm -rf 'x'", rm));
	ASSERT_TRUE(scan_has("x=$(y $(z $(rm -rf x)))", rm));
	ASSERT_FALSE(scan_has("echo 'rm -rf x'", rm));
	ASSERT_FALSE(scan_has("echo rm -rf x", rm));
	ASSERT_FALSE(scan_has("# rm -rf x", rm));
	/* Unbalanced input ends the scan without harm. */
	ASSERT_TRUE(scan_has("rm -rf x; echo $(((((", rm));
}

/*
 * When the strict reader accepts a script, the literal scan reads exactly the
 * same commands (except a command named after a quoted reserved word, 'if',
 * which the scan, over-inclusive on purpose, reads without it).
 */
TEST(readers_agree)
{
	FILE *f = open_table("shell.table");
	char line[8192];

	while (fgets(line, sizeof(line), f)) {
		char *fl[2];
		json_error_t jerr;
		json_t *script;
		struct ward__cmdv a = {0}, b = {0};

		if (line[0] == '#' || line[0] == '\n')
			continue;
		fields(line, fl, 2);
		script = json_loads(fl[0], JSON_DECODE_ANY, &jerr);
		if (ward__shell_split(json_string_value(script), &a) == 1 &&
		    strcmp(a.v[0].argv[0], "if") != 0) {
			ASSERT_GE(ward__shell_literal_commands(json_string_value(script), &b), 0);
			ASSERT_EQ(a.n, b.n);
			for (size_t i = 0; i < a.n; i++) {
				ASSERT_EQ(a.v[i].argc, b.v[i].argc);
				for (size_t k = 0; k < a.v[i].argc; k++)
					ASSERT_STREQ(a.v[i].argv[k], b.v[i].argv[k]);
			}
		}
		ward__cmdv_release(&a);
		ward__cmdv_release(&b);
		json_decref(script);
	}
	fclose(f);
}

TEST(shell_caps)
{
	_cleanup_free_ char *words = repeat("a ", WARD_SHELL_MAX_WORDS + 1, "", "");
	_cleanup_free_ char *cmds = repeat("a;", WARD_SHELL_MAX_COMMANDS + 1, "", "");
	_cleanup_free_ char *ok = repeat("a ", WARD_SHELL_MAX_WORDS, "", "");
	struct ward__cmdv c = {0};

	ASSERT_EQ(ward__shell_split(words, &c), 0);
	ASSERT_EQ(ward__shell_split(cmds, &c), 0);
	ASSERT_EQ(ward__shell_split(ok, &c), 1);
	ASSERT_EQ(c.v[0].argc, WARD_SHELL_MAX_WORDS);
	ward__cmdv_release(&c);
}

TEST(shell_join)
{
	const char *argv[] = {"ls", "a b", "", "it's", "-x=1,2", "$HOME"};
	_cleanup_free_ char *s = ward__shell_join(argv, ELEMENTSOF(argv));

	ASSERT_STREQ(s, "ls 'a b' '' 'it'\\''s' -x=1,2 '$HOME'");
}

/* ------------------------------------------------------------------ safety lists */

#define CMD(...) \
	((const char *const[]){__VA_ARGS__}), ELEMENTSOF(((const char *const[]){__VA_ARGS__}))

TEST(known_safe)
{
	ASSERT_TRUE(ward__command_known_safe(CMD("ls")));
	ASSERT_TRUE(ward__command_known_safe(CMD("/usr/bin/cat", "x")));
	ASSERT_TRUE(ward__command_known_safe(CMD("numfmt", "1000")));
	ASSERT_TRUE(ward__command_known_safe(CMD("base64", "x")));
	ASSERT_FALSE(ward__command_known_safe(CMD("base64", "-ob64.txt")));
	ASSERT_FALSE(ward__command_known_safe(CMD("base64", "--output=x")));
	ASSERT_TRUE(ward__command_known_safe(CMD("find", ".", "-name", "x")));
	ASSERT_FALSE(ward__command_known_safe(CMD("find", ".", "-fprintf", "f", "%p")));
	ASSERT_FALSE(ward__command_known_safe(CMD("find", ".", "-okdir", "x", ";")));
	ASSERT_TRUE(ward__command_known_safe(CMD("rg", "-n", "x")));
	ASSERT_FALSE(ward__command_known_safe(CMD("rg", "--pre=x", "y")));
	ASSERT_FALSE(ward__command_known_safe(CMD("rg", "--hostname-bin", "x")));
	ASSERT_FALSE(ward__command_known_safe(CMD("rg", "-z", "x")));
	ASSERT_TRUE(ward__command_known_safe(CMD("sed", "-n", "10p")));
	ASSERT_TRUE(ward__command_known_safe(CMD("sed", "-n", "1,5p", "f")));
	ASSERT_FALSE(ward__command_known_safe(CMD("sed", "-n", "1,5p", "f", "g")));
	ASSERT_FALSE(ward__command_known_safe(CMD("sed", "-n", "1,2,3p", "f")));
	ASSERT_FALSE(ward__command_known_safe(CMD("sed", "-n", ",5p", "f")));
	ASSERT_FALSE(ward__command_known_safe(CMD("sed", "-n", "xp", "f")));
	/* git is no longer safe (Codex #39524). */
	ASSERT_FALSE(ward__command_known_safe(CMD("git", "status")));
	ASSERT_FALSE(ward__command_known_safe(CMD("cargo", "check")));
}

TEST(dangerous)
{
	ASSERT_TRUE(ward__command_dangerous(CMD("rm", "-rf", "/")));
	ASSERT_TRUE(ward__command_dangerous(CMD("rm", "/x", "-f")));
	ASSERT_TRUE(ward__command_dangerous(CMD("/bin/rm", "--force", "x")));
	ASSERT_TRUE(ward__command_dangerous(CMD("rm", "-r", "-f", "x")));
	ASSERT_FALSE(ward__command_dangerous(CMD("rm", "-r", "x")));
	ASSERT_FALSE(ward__command_dangerous(CMD("rm", "--", "-f")));
	ASSERT_FALSE(ward__command_dangerous(CMD("rm", "-", "x")));
	ASSERT_TRUE(ward__command_dangerous(CMD("sudo", "rm", "-rf", "x")));
	ASSERT_TRUE(ward__command_dangerous(CMD("sudo", "-u", "root", "-E", "rm", "-f", "x")));
	ASSERT_TRUE(ward__command_dangerous(CMD("env", "-i", "A=1", "rm", "-f", "x")));
	ASSERT_TRUE(ward__command_dangerous(CMD("env", "-u", "X", "sudo", "rm", "-f", "x")));
	ASSERT_FALSE(ward__command_dangerous(CMD("env", "A=1")));
	ASSERT_TRUE(ward__command_dangerous(CMD("bash", "-lc", "printf x | rm -rf /tmp/x")));
	ASSERT_TRUE(ward__command_dangerous(CMD("bash", "-lc", "echo \"$(rm -rf /tmp/x)\"")));
	ASSERT_TRUE(ward__command_dangerous(
		CMD("bash", "-lc", "for t in a b; do rm -r -f \"$t\"; done")));
	ASSERT_FALSE(ward__command_dangerous(CMD("bash", "-lc", "echo 'rm -rf /tmp/x'")));
	ASSERT_FALSE(ward__command_dangerous(CMD("bash", "-lc", "cmd=rm; $cmd -rf /tmp/x")));
}

TEST(banned_prefixes)
{
	const char *why = NULL;

	ASSERT_EQ(ward__prefix_banned(CMD("python3"), &why), -EPERM);
	ASSERT_TRUE(why != NULL);
	ASSERT_EQ(ward__prefix_banned(CMD("bash", "-lc"), &why), -EPERM);
	ASSERT_EQ(ward__prefix_banned(CMD("git"), &why), -EPERM);
	ASSERT_EQ(ward__prefix_banned(CMD("env"), &why), -EPERM);
	ASSERT_EQ(ward__prefix_banned(CMD("npm", "run"), &why), -EPERM);
	ASSERT_EQ(ward__prefix_banned(CMD("powershell.exe", "-EncodedCommand"), &why), -EPERM);
	ASSERT_EQ(ward__prefix_banned(CMD("rm"), &why), -EPERM);
	/* ward's additions: the program as a path, and a banned program followed only by options. */
	ASSERT_EQ(ward__prefix_banned(CMD("/usr/bin/python3", "-c"), &why), -EPERM);
	ASSERT_EQ(ward__prefix_banned(CMD("python3", "-u"), &why), -EPERM);
	ASSERT_EQ(ward__prefix_banned(CMD("bash", "-e", "-c"), &why), -EPERM);
	ASSERT_EQ(ward__prefix_banned(CMD("/usr/bin/env", "-i"), &why), -EPERM);
	/* Narrow prefixes are fine. */
	ASSERT_EQ(ward__prefix_banned(CMD("npm", "test"), &why), 0);
	ASSERT_EQ(ward__prefix_banned(CMD("git", "status"), &why), 0);
	ASSERT_EQ(ward__prefix_banned(CMD("python3", "-m", "pytest"), &why), 0);
	ASSERT_EQ(ward__prefix_banned(CMD("cargo", "build"), &why), 0);
	ASSERT_EQ(ward__prefix_banned(NULL, 0, &why), -EINVAL);
}

/* ------------------------------------------------------------------ evaluation */

TEST(approval_table)
{
	FILE *f = open_table("approval.table");
	char line[8192], path[PATH_MAX];
	struct ward__rules r;
	struct ward_error err = {0};
	unsigned rows = 0;

	snprintf(path, sizeof(path), "%s/approval.rules", data_dir());
	ward__rules_init(&r);
	if (ward__rules_load_file(&r, path, false, NULL, &err) < 0)
		tap_fail(__FILE__, __LINE__, "%s", err.message);
	while (fgets(line, sizeof(line), f)) {
		char *fl[6];
		struct ward__unmatched_ctx c = {0};
		struct ward__evaluation e = {0};
		json_error_t jerr;
		json_t *a;
		char **argv;
		size_t n;

		if (line[0] == '#' || line[0] == '\n')
			continue;
		ASSERT_EQ(fields(line, fl, 6), 6);
		ASSERT_OK(ward_approval_mode_from_string(fl[0], &c.mode));
		c.fs_restricted = strcmp(fl[1], "restricted") == 0;
		c.requests_override = fl[2][0] == '1';
		a = json_loads(fl[3], 0, &jerr);
		ASSERT_TRUE(a != NULL);
		argv = argv_from_json(a, &n);
		ASSERT_OK(
			ward__rules_evaluate(&r, (const char *const *)argv, n, "/w", "/h", &c, &e));
		if (strcmp(ward__decision_to_string(e.decision), fl[4]) != 0 ||
		    e.bypass_sandbox != (fl[5][0] == '1'))
			tap_fail(__FILE__, __LINE__,
				 "%s %s %s %s: got %s bypass %d, expected %s %s", fl[0], fl[1],
				 fl[2], fl[3], ward__decision_to_string(e.decision),
				 e.bypass_sandbox, fl[4], fl[5]);
		ward__evaluation_release(&e);
		for (size_t i = 0; i < n; i++)
			free(argv[i]);
		free(argv);
		json_decref(a);
		rows++;
	}
	fclose(f);
	ward__rules_release(&r);
	ASSERT_GE(rows, 50);
}

/* ------------------------------------------------------------------ wrappers */

/* A wrapper's reading as wrappers-read.table writes it. */
static void render_wrap(const struct ward__wrap *w, char *out, size_t size)
{
	static const char *const kinds[] = {"none", "transparent", "guarded", "also", "uncertain"};
	FILE *f = fmemopen(out, size, "w");

	ASSERT_TRUE(f != NULL);
	fprintf(f, "%s%s", kinds[w->kind], w->wants_command ? " wants" : "");
	for (size_t i = 0; i < w->n_cmds; i++) {
		const struct ward__wrap_cmd *c = &w->cmds[i];

		ASSERT_TRUE(c->argv[c->argc] == NULL);
		fputs(" |", f);
		for (size_t k = 0; k < c->argc; k++)
			fprintf(f, " %s", c->argv[k]);
		if (c->offset != SIZE_MAX)
			fprintf(f, "@%zu", c->offset);
		if (c->placeholder)
			fprintf(f, " {%s}", c->placeholder);
		fprintf(f, "%s%s%s", c->open_tail ? " +tail" : "", c->restrictive_only ? " ?" : "",
			c->guarded ? " !" : "");
	}
	if (w->candidates_from)
		fprintf(f, " | cands@%zu", w->candidates_from);
	fclose(f);
}

TEST(wrapper_reading)
{
	FILE *f = open_table("wrappers-read.table");
	char line[8192], got[4096];
	unsigned rows = 0;

	while (fgets(line, sizeof(line), f)) {
		char *fl[2], **argv;
		struct ward__wrap w;
		json_error_t jerr;
		json_t *a;
		size_t n;

		if (line[0] == '#' || line[0] == '\n')
			continue;
		ASSERT_EQ(fields(line, fl, 2), 2);
		a = json_loads(fl[0], 0, &jerr);
		ASSERT_TRUE(a != NULL);
		argv = argv_from_json(a, &n);
		ASSERT_OK(ward__wrapper_read((const char *const *)argv, n, NULL, false, &w));
		render_wrap(&w, got, sizeof(got));
		if (strcmp(got, fl[1]) != 0)
			tap_fail(__FILE__, __LINE__, "%s: got '%s', expected '%s'", fl[0], got,
				 fl[1]);
		ward__wrap_release(&w);
		strv_freep(&argv);
		json_decref(a);
		rows++;
	}
	fclose(f);
	ASSERT_GE(rows, 60);
}

/* argv with its NULL, and its length. */
#define ARGV(...) \
	((const char *const[]){__VA_ARGS__, NULL}), ELEMENTSOF(((const char *const[]){__VA_ARGS__}))

/* Words filled in later make a wrapper's reading inexact; its command from appended words too. */
TEST(wrapper_unknown_words)
{
	struct ward__wrap w;
	char got[512];

	ASSERT_OK(ward__wrapper_read(ARGV("env", "{}", "rm"), "{}", false, &w));
	render_wrap(&w, got, sizeof(got));
	ASSERT_STREQ(got, "uncertain | {} rm@1 ? | cands@1");
	ward__wrap_release(&w);
	ASSERT_OK(ward__wrapper_read(ARGV("nice", "rm", "{}"), "{}", false, &w));
	render_wrap(&w, got, sizeof(got));
	ASSERT_STREQ(got, "transparent | rm {}@1");
	ward__wrap_release(&w);
	ASSERT_OK(ward__wrapper_read(ARGV("sh", "-c", "rm {}", "x"), "{}", false, &w));
	ASSERT_EQ(w.kind, WARD__WRAP_UNCERTAIN);
	ward__wrap_release(&w);
	ASSERT_OK(ward__wrapper_read(ARGV("timeout"), NULL, true, &w));
	render_wrap(&w, got, sizeof(got));
	ASSERT_STREQ(got, "uncertain | cands@1");
	ward__wrap_release(&w);
	ASSERT_OK(ward__wrapper_read(ARGV("nice", "make"), NULL, true, &w));
	ASSERT_EQ(w.kind, WARD__WRAP_TRANSPARENT);
	ward__wrap_release(&w);
}

TEST(wrappers_table)
{
	FILE *f = open_table("wrappers.table");
	char line[8192], path[PATH_MAX];
	struct ward__rules r;
	struct ward_error err = {0};
	unsigned rows = 0;

	snprintf(path, sizeof(path), "%s/wrappers.rules", data_dir());
	ward__rules_init(&r);
	if (ward__rules_load_file(&r, path, false, NULL, &err) < 0)
		tap_fail(__FILE__, __LINE__, "%s", err.message);
	while (fgets(line, sizeof(line), f)) {
		struct ward__unmatched_ctx c = {.fs_restricted = true};
		struct ward__evaluation e = {0};
		char *fl[5], **argv;
		json_error_t jerr;
		json_t *a;
		size_t n;

		if (line[0] == '#' || line[0] == '\n')
			continue;
		ASSERT_EQ(fields(line, fl, 5), 5);
		ASSERT_OK(ward_approval_mode_from_string(fl[0], &c.mode));
		a = json_loads(fl[1], 0, &jerr);
		ASSERT_TRUE(a != NULL);
		argv = argv_from_json(a, &n);
		ASSERT_OK(
			ward__rules_evaluate(&r, (const char *const *)argv, n, "/w", "/h", &c, &e));
		if (strcmp(ward__decision_to_string(e.decision), fl[2]) != 0 ||
		    e.bypass_sandbox != (fl[3][0] == '1') || e.understood != (fl[4][0] == '1'))
			tap_fail(__FILE__, __LINE__,
				 "%s %s: got %s bypass %d exact %d, expected %s %s %s", fl[0],
				 fl[1], ward__decision_to_string(e.decision), e.bypass_sandbox,
				 e.understood, fl[2], fl[3], fl[4]);
		ward__evaluation_release(&e);
		strv_freep(&argv);
		json_decref(a);
		rows++;
	}
	fclose(f);
	ward__rules_release(&r);
	ASSERT_GE(rows, 200);
}

/* The chain that leads to a match, and a project's allow through a wrapper. */
TEST(wrapper_chain)
{
	struct ward__rules r;
	struct ward_error err = {0};
	struct ward__unmatched_ctx c = {.mode = WARD_APPROVAL_ON_REQUEST, .fs_restricted = true};
	struct ward__evaluation e = {0};
	const char *text = "prefix_rule(pattern=[\"rm\"], decision=\"forbidden\")\n"
			   "prefix_rule(pattern=[\"make\"])\n";
	char *json = NULL;

	ward__rules_init(&r);
	ASSERT_OK(ward__rules_parse(&r, "proj.rules", text, strlen(text), true, NULL, &err));
	ASSERT_OK(ward__rules_evaluate(&r, CMD("sudo", "env", "X=1", "nice", "rm", "f"), "/w", "/h",
				       &c, &e));
	ASSERT_EQ(e.decision, WARD__DECISION_FORBIDDEN);
	ASSERT_OK(ward__rules_effective_json(&e, c.mode, false, &json));
	ASSERT_CONTAINS(json, "\"command\":[\"rm\",\"f\"],\"chain\":[\"sudo\",\"env\",\"nice\"]");
	ASSERT_CONTAINS(json,
			"\"decision\":\"forbidden\",\"runsOutsideSandbox\":false,"
			"\"readExactly\":true,\"approvalMode\":\"on-request\"}");
	free(json);
	ward__evaluation_release(&e);
	/* A project's allow skips the question through a transparent wrapper, never the sandbox. */
	ASSERT_OK(ward__rules_evaluate(&r, CMD("nice", "make"), "/w", "/h", &c, &e));
	ASSERT_EQ(e.decision, WARD__DECISION_ALLOW);
	ASSERT_FALSE(e.bypass_sandbox);
	ward__evaluation_release(&e);
	ward__rules_release(&r);
}

/* A project's allow rule lets a command skip the question, never the sandbox. */
TEST(project_rules_never_bypass)
{
	struct ward__rules r;
	struct ward_error err = {0};
	struct ward__unmatched_ctx c = {.mode = WARD_APPROVAL_UNTRUSTED, .fs_restricted = true};
	struct ward__evaluation e = {0};
	const char *text = "prefix_rule(pattern=[\"curl\"])\n";

	ward__rules_init(&r);
	ASSERT_OK(ward__rules_parse(&r, "proj.rules", text, strlen(text), true, NULL, &err));
	ASSERT_OK(ward__rules_evaluate(&r, CMD("curl", "x"), "/w", "/h", &c, &e));
	ASSERT_EQ(e.decision, WARD__DECISION_ALLOW);
	ASSERT_FALSE(e.bypass_sandbox);
	ward__evaluation_release(&e);
	ASSERT_OK(ward__rules_parse(&r, "user.rules", text, strlen(text), false, NULL, &err));
	ASSERT_OK(ward__rules_evaluate(&r, CMD("curl", "x"), "/w", "/h", &c, &e));
	ASSERT_TRUE(e.bypass_sandbox);
	ward__evaluation_release(&e);
	ward__rules_release(&r);
}

TEST(approval_modes)
{
	enum ward_approval_mode m;

	ASSERT_OK(ward_approval_mode_from_string("on-failure", &m));
	ASSERT_EQ(m, WARD_APPROVAL_ON_REQUEST);
	ASSERT_OK(ward_approval_mode_from_string("untrusted", &m));
	ASSERT_EQ(m, WARD_APPROVAL_UNTRUSTED);
	ASSERT_STREQ(ward_approval_mode_to_string(WARD_APPROVAL_GRANULAR), "granular");
	ASSERT_EQ(ward_approval_mode_from_string("always", &m), -EINVAL);
	ASSERT_EQ(ward_approval_mode_from_string(NULL, &m), -EINVAL);
}

/* ------------------------------------------------------------------ files */

TEST(load_dir)
{
	char dir[PATH_MAX], p[PATH_MAX + 32];
	struct ward__rules r;
	struct ward_error err = {0};

	test_dir(dir, sizeof(dir));
	snprintf(p, sizeof(p), "%s/b.rules", dir);
	write_file(p, "prefix_rule(pattern=[\"b\"])\n");
	snprintf(p, sizeof(p), "%s/a.rules", dir);
	write_file(p, "prefix_rule(pattern=[\"a\"])\n");
	snprintf(p, sizeof(p), "%s/.rules", dir);
	write_file(p, "broken(\n");
	snprintf(p, sizeof(p), "%s/c.rules.bak", dir);
	write_file(p, "broken(\n");
	snprintf(p, sizeof(p), "%s/d.rules", dir);
	ASSERT_EQ(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/e.rules", dir);
	ASSERT_EQ(symlink("/etc/passwd", p), 0);
	ward__rules_init(&r);
	ASSERT_OK(ward__rules_load_dir(&r, dir, true, NULL, &err));
	ASSERT_EQ(r.n_prefix, 2);
	ASSERT_STREQ(r.prefix[0].first, "a");
	ASSERT_STREQ(r.prefix[1].first, "b");
	ASSERT_TRUE(r.sources[0].project);
	snprintf(p, sizeof(p), "%s/missing", dir);
	ASSERT_OK(ward__rules_load_dir(&r, p, false, NULL, &err));
	snprintf(p, sizeof(p), "%s/a.rules", dir);
	ASSERT_EQ(ward__rules_load_dir(&r, p, false, NULL, &err), 0);
	/* An empty directory (ward makes its own when missing) holds no rules, and no error. */
	snprintf(p, sizeof(p), "%s/empty", dir);
	ASSERT_EQ(mkdir(p, 0700), 0);
	ASSERT_OK(ward__rules_load_dir(&r, p, false, NULL, &err));
	ASSERT_EQ(r.n_prefix, 2);
	ward__rules_release(&r);
}

TEST(project_dirs)
{
	char dir[PATH_MAX], p[PATH_MAX + 64];
	_cleanup_strv_free_ char **dirs = NULL;

	test_dir(dir, sizeof(dir));
	snprintf(p, sizeof(p), "%s/repo", dir);
	ASSERT_EQ(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/repo/.git", dir);
	ASSERT_EQ(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/.ward", dir);
	ASSERT_EQ(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/.ward/rules", dir); /* above the root: not the project's */
	ASSERT_EQ(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/repo/.ward", dir);
	ASSERT_EQ(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/repo/.ward/rules", dir);
	ASSERT_EQ(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/repo/a/b/.ward/rules", dir);
	ASSERT_EQ(mkdir(p, 0755) < 0 && errno == ENOENT, 1);
	snprintf(p, sizeof(p), "%s/repo/a", dir);
	ASSERT_EQ(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/repo/a/b", dir);
	ASSERT_EQ(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/repo/a/b/.ward", dir);
	ASSERT_EQ(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/repo/a/b/.ward/rules", dir);
	ASSERT_EQ(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/repo/a/b", dir);
	ASSERT_OK(ward__rules_project_dirs(p, &dirs));
	ASSERT_TRUE(dirs[0] && dirs[1] && !dirs[2]);
	snprintf(p, sizeof(p), "%s/repo/.ward/rules", dir);
	ASSERT_STREQ(dirs[0], p);
	snprintf(p, sizeof(p), "%s/repo/a/b/.ward/rules", dir);
	ASSERT_STREQ(dirs[1], p);
}

TEST(user_dirs)
{
	_cleanup_free_ char *a = NULL, *b = NULL, *c = NULL, *d = NULL;

	setenv("XDG_CONFIG_HOME", "/cfg", 1);
	ASSERT_OK(ward__rules_user_dir(&a));
	ASSERT_STREQ(a, "/cfg/ward/rules");
	setenv("XDG_CONFIG_HOME", "relative", 1);
	setenv("HOME", "/home/u", 1);
	ASSERT_OK(ward__rules_user_dir(&b));
	ASSERT_STREQ(b, "/home/u/.config/ward/rules");
	unsetenv("CODEX_HOME");
	ASSERT_OK(ward__rules_codex_dir(&c));
	ASSERT_STREQ(c, "/home/u/.codex/rules");
	setenv("CODEX_HOME", "/cx", 1);
	ASSERT_OK(ward__rules_codex_dir(&d));
	ASSERT_STREQ(d, "/cx/rules");
}

/* ------------------------------------------------------------------ adding rules */

static void load_path(struct ward__rules *r, const char *path)
{
	struct ward_error err = {0};

	ward__rules_init(r);
	if (ward__rules_load_file(r, path, false, NULL, &err) < 0)
		tap_fail(__FILE__, __LINE__, "%s", err.message);
}

TEST(amend_creates_and_dedupes)
{
	char dir[PATH_MAX], path[PATH_MAX + 32];
	const char *prefix[] = {"echo", "Hello, world!"};
	struct ward_error err = {0};
	_cleanup_free_ char *text = NULL, *text2 = NULL;

	test_dir(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/new/rules/default.rules", dir);
	ASSERT_EQ(ward__rules_append_allow(path, prefix, 2, &err), 1);
	text = read_all(path);
	ASSERT_STREQ(text,
		     "prefix_rule(pattern=[\"echo\", \"Hello, world!\"], decision=\"allow\")\n");
	/* The same rule again: nothing written. */
	ASSERT_EQ(ward__rules_append_allow(path, prefix, 2, &err), 0);
	text2 = read_all(path);
	ASSERT_STREQ(text2, text);
}

TEST(amend_adds_missing_newline)
{
	char dir[PATH_MAX], path[PATH_MAX + 32];
	const char *prefix[] = {"make", "test"};
	struct ward_error err = {0};
	_cleanup_free_ char *text = NULL;
	struct stat st;

	test_dir(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/default.rules", dir);
	write_file(path, "prefix_rule(pattern=[\"ls\"], decision=\"allow\")");
	ASSERT_EQ(chmod(path, 0600), 0);
	ASSERT_EQ(ward__rules_append_allow(path, prefix, 2, &err), 1);
	text = read_all(path);
	ASSERT_STREQ(text,
		     "prefix_rule(pattern=[\"ls\"], decision=\"allow\")\n"
		     "prefix_rule(pattern=[\"make\", \"test\"], decision=\"allow\")\n");
	/* The file keeps its mode; no temporary file is left behind. */
	ASSERT_EQ(stat(path, &st), 0);
	ASSERT_EQ(st.st_mode & 0777, 0600);
	{
		DIR *d = opendir(dir);
		struct dirent *de;
		unsigned n = 0;

		while ((de = readdir(d)))
			n += de->d_name[0] != '.' || strlen(de->d_name) > 2;
		closedir(d);
		ASSERT_EQ(n, 1);
	}
}

/* Odd tokens survive the round trip: the rule read back matches exactly those words. */
TEST(amend_escaping)
{
	char dir[PATH_MAX], path[PATH_MAX + 32];
	const char *prefix[] = {"say", "a \"quoted\" \\ word", "line\nbreak\ttab\x01", "ünï ✓", ""};
	struct ward_error err = {0};
	struct ward__rules r;
	struct ward__match_list l = {0};

	test_dir(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/x.rules", dir);
	ASSERT_EQ(ward__rules_append_allow(path, prefix, ELEMENTSOF(prefix), &err), 1);
	load_path(&r, path);
	ASSERT_OK(ward__rules_match(&r, prefix, ELEMENTSOF(prefix), NULL, &l));
	ASSERT_EQ(l.n, 1);
	ASSERT_EQ(l.v[0].n_prefix, ELEMENTSOF(prefix));
	ward__match_list_release(&l);
	ward__rules_release(&r);
}

TEST(amend_refuses)
{
	char dir[PATH_MAX], path[PATH_MAX + 32];
	const char *py[] = {"python3"}, *ok[] = {"make"};
	struct ward_error err = {0};
	_cleanup_free_ char *text = NULL;
	struct stat st;

	test_dir(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/default.rules", dir);
	ASSERT_EQ(ward__rules_append_allow(path, py, 1, &err), -EPERM);
	ASSERT_CONTAINS(err.message, "cannot add a rule for 'python3'");
	ASSERT_EQ(stat(path, &st), -1);
	ASSERT_EQ(ward__rules_append_allow(path, ok, 0, &err), -EINVAL);
	/* A file that does not load is not made worse: refused, left as it was. */
	write_file(path, "prefix_rule(pattern=[\"ls\"], decision=\"sometimes\")\n");
	ASSERT_EQ(ward__rules_append_allow(path, ok, 1, &err), -EINVAL);
	ASSERT_CONTAINS(err.message, "does not load");
	ASSERT_CONTAINS(err.message, "invalid decision");
	text = read_all(path);
	ASSERT_STREQ(text, "prefix_rule(pattern=[\"ls\"], decision=\"sometimes\")\n");
}

TEST(amend_through_symlink)
{
	char dir[PATH_MAX], real[PATH_MAX + 32], link[PATH_MAX + 32];
	const char *prefix[] = {"make"};
	struct ward_error err = {0};
	_cleanup_free_ char *text = NULL;
	struct stat st;

	test_dir(dir, sizeof(dir));
	snprintf(real, sizeof(real), "%s/real.rules", dir);
	snprintf(link, sizeof(link), "%s/default.rules", dir);
	write_file(real, "");
	ASSERT_EQ(symlink("real.rules", link), 0);
	ASSERT_EQ(ward__rules_append_allow(link, prefix, 1, &err), 1);
	ASSERT_EQ(lstat(link, &st), 0);
	ASSERT_TRUE(S_ISLNK(st.st_mode));
	text = read_all(real);
	ASSERT_STREQ(text, "prefix_rule(pattern=[\"make\"], decision=\"allow\")\n");
}

/* Many processes adding rules at once: every rule lands, the file always loads. */
TEST_TIMEOUT(amend_concurrent, 120)
{
	char dir[PATH_MAX], path[PATH_MAX + 32];
	struct ward__rules r;
	enum { WRITERS = 8, EACH = 12 };

	test_dir(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/default.rules", dir);
	for (int w = 0; w < WRITERS; w++) {
		pid_t pid = fork();

		ASSERT_GE(pid, 0);
		if (pid == 0) {
			for (int i = 0; i < EACH; i++) {
				char a[16], b[16];
				const char *prefix[] = {a, b};
				struct ward_error err = {0};

				snprintf(a, sizeof(a), "w%d", w);
				snprintf(b, sizeof(b), "r%d", i);
				if (ward__rules_append_allow(path, prefix, 2, &err) != 1)
					_exit(1);
			}
			_exit(0);
		}
	}
	for (int w = 0; w < WRITERS; w++) {
		int st;

		ASSERT_GE(wait(&st), 0);
		ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
	load_path(&r, path);
	ASSERT_EQ(r.n_prefix, WRITERS * EACH);
	ward__rules_release(&r);
}

int main(void)
{
	return tap_main_in_scratch(scratch);
}
