/* SPDX-License-Identifier: MIT */
/*
 * `ward policy check` and `ward policy allow`: the command rules from the
 * command line.
 *
 * check prints what `codex execpolicy check` prints for the same rules files
 * and command (docs/rules.md), so that the two can be compared and scripts
 * written for one work with the other. allow adds "always allow commands
 * starting with PREFIX" to ward's own rules file, as Codex does when a person
 * approves an amendment.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "basic/cleanup.h"
#include "basic/error.h"
#include "basic/util.h"
#include "cli/cli.h"
#include "rules/rules.h"

static const char check_help[] =
	"Usage: ward policy check [OPTIONS] [--] COMMAND [ARG...]\n"
	"\n"
	"Match COMMAND against command rules files and print the result as Codex's\n"
	"'codex execpolicy check' prints it:\n"
	"  {\"matchedRules\":[{\"prefixRuleMatch\":{\"matchedPrefix\":[...],\"decision\":...}}],\n"
	"   \"decision\":...}\n"
	"The command is matched as written (a shell script in 'bash -lc' is not split).\n"
	"\n"
	"With --effective: the decision ward's approvals enforce instead, with what\n"
	"only ward reads: the commands of scripts and of wrappers (env, sudo, nice,\n"
	"timeout, xargs, find -exec, ...), each match with the command it matched and\n"
	"the wrapper chain that leads to it, the commands no rule decided (the approval\n"
	"mode's fallback decides them), the strictest decision, and whether the command\n"
	"would run outside the sandbox (docs/rules.md).\n"
	"\n"
	"Options:\n"
	"  -r, --rules FILE              read this rules file (repeatable)\n"
	"      --codex-rules             also read Codex's $CODEX_HOME/rules/*.rules\n"
	"                                (default ~/.codex/rules)\n"
	"                                Without --rules and --codex-rules: ward's own rules\n"
	"                                ($XDG_CONFIG_HOME/ward/rules, default\n"
	"                                ~/.config/ward/rules) and the project's .ward/rules.\n"
	"  -C, --cd DIR                  the project directory for the default rules\n"
	"      --resolve-host-executables  match a program given as an absolute path by its\n"
	"                                basename, as host_executable() allows\n"
	"      --pretty                  pretty-print the JSON\n"
	"      --effective               print the decision ward enforces (see above)\n"
	"  -a, --ask-for-approval MODE   with --effective: the approval mode (untrusted,\n"
	"                                on-request (default), never, granular)\n"
	"  -h, --help                    show this help\n"
	"\n"
	"Exit status: 0 when the rules loaded (whatever the decision), 125 on errors.\n";

static const char allow_help[] =
	"Usage: ward policy allow [OPTIONS] [--] PREFIX...\n"
	"\n"
	"Always allow commands starting with PREFIX: appends\n"
	"  prefix_rule(pattern=[\"PREFIX\", ...], decision=\"allow\")\n"
	"to ward's rules file ($XDG_CONFIG_HOME/ward/rules/default.rules, default\n"
	"~/.config/ward/rules/default.rules). Such commands then run without a question\n"
	"and outside the sandbox when ward asks for approvals. Prefixes that would allow\n"
	"any code to run (interpreters, shells, git, env, sudo, npm run, ...) are refused.\n"
	"\n"
	"Options:\n"
	"      --file FILE   append to FILE instead\n"
	"  -h, --help        show this help\n";

enum {
	OPT_CODEX_RULES = 0x100,
	OPT_PRETTY,
	OPT_RESOLVE,
	OPT_FILE,
	OPT_EFFECTIVE,
};

/* Loads the sources `ward policy check` was asked for into r. Returns 0, or -1 after reporting. */
static int load_sources(struct ward__rules *r, char **files, size_t n_files, bool codex,
			const char *project_dir, const struct ward__match_opts *o)
{
	struct ward_error err = {0};
	int ret;

	if (codex) {
		_cleanup_free_ char *dir = NULL;

		ret = ward__rules_codex_dir(&dir);
		if (ret < 0) {
			cli_errorf("policy check: cannot find Codex's rules directory: %s",
				   strerror(-ret));
			return -1;
		}
		if (ward__rules_load_dir(r, dir, false, o, &err) < 0)
			goto fail;
	}
	if (!codex && n_files == 0) {
		_cleanup_free_ char *dir = NULL;
		_cleanup_strv_free_ char **proj = NULL;

		ret = ward__rules_user_dir(&dir);
		if (ret >= 0 && ward__rules_load_dir(r, dir, false, o, &err) < 0)
			goto fail;
		ret = ward__rules_project_dirs(project_dir, &proj);
		if (ret < 0) {
			cli_errorf("policy check: cannot look for project rules in '%s': %s",
				   project_dir, strerror(-ret));
			return -1;
		}
		for (char **d = proj; *d; d++)
			if (ward__rules_load_dir(r, *d, true, o, &err) < 0)
				goto fail;
	}
	for (size_t i = 0; i < n_files; i++)
		if (ward__rules_load_file(r, files[i], false, o, &err) < 0)
			goto fail;
	return 0;
fail:
	cli_report_error(&err);
	return -1;
}

/* Codex takes its command line as UTF-8 text (clap Strings); so does the comparison. */
static bool utf8_ok(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	while (*p) {
		size_t n;

		if (*p < 0x80) {
			p++;
			continue;
		}
		if (*p >= 0xC2 && *p <= 0xDF)
			n = 1;
		else if (*p >= 0xE0 && *p <= 0xEF)
			n = 2;
		else if (*p >= 0xF0 && *p <= 0xF4)
			n = 3;
		else
			return false;
		if ((*p == 0xE0 && p[1] < 0xA0) || (*p == 0xED && p[1] > 0x9F) ||
		    (*p == 0xF0 && p[1] < 0x90) || (*p == 0xF4 && p[1] > 0x8F))
			return false;
		p++;
		for (size_t i = 0; i < n; i++, p++)
			if ((*p & 0xC0) != 0x80)
				return false;
	}
	return true;
}

int cli_policy_check(int argc, char **argv)
{
	static const struct option opts[] = {
		{"rules", required_argument, NULL, 'r'},
		{"codex-rules", no_argument, NULL, OPT_CODEX_RULES},
		{"cd", required_argument, NULL, 'C'},
		{"pretty", no_argument, NULL, OPT_PRETTY},
		{"resolve-host-executables", no_argument, NULL, OPT_RESOLVE},
		{"effective", no_argument, NULL, OPT_EFFECTIVE},
		{"ask-for-approval", required_argument, NULL, 'a'},
		{"help", no_argument, NULL, 'h'},
		{0},
	};
	_cleanup_free_ char **files = calloc((size_t)argc + 1, sizeof(char *));
	_cleanup_free_ char *cwd = NULL, *home = NULL, *json = NULL;
	struct ward__match_opts o = {0};
	struct ward__rules r;
	const char *project = ".";
	size_t n_files = 0;
	bool codex = false, pretty = false, effective = false, mode_given = false;
	enum ward_approval_mode mode = WARD_APPROVAL_ON_REQUEST;
	int c, ret;

	if (!files) {
		cli_errorf("out of memory");
		return WARD_EXIT_FAILURE;
	}
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+:r:C:a:h", opts, NULL)) != -1) {
		switch (c) {
		case 'r':
			files[n_files++] = optarg;
			break;
		case OPT_CODEX_RULES:
			codex = true;
			break;
		case 'C':
			project = optarg;
			break;
		case OPT_PRETTY:
			pretty = true;
			break;
		case OPT_RESOLVE:
			o.resolve_host_executables = true;
			break;
		case OPT_EFFECTIVE:
			effective = true;
			break;
		case 'a':
			if (ward_approval_mode_from_string(optarg, &mode) < 0) {
				cli_errorf(
					"policy check: unknown approval mode '%s' (untrusted, on-request, never, granular)",
					optarg);
				return WARD_EXIT_FAILURE;
			}
			mode_given = true;
			break;
		case 'h':
			fputs(check_help, stdout);
			return 0;
		case ':':
			cli_errorf("policy check: option '%s' needs a value", argv[optind - 1]);
			return WARD_EXIT_FAILURE;
		default:
			cli_errorf(
				"policy check: unknown option '%s' (see 'ward policy check --help')",
				argv[optind - 1]);
			return WARD_EXIT_FAILURE;
		}
	}
	if (mode_given && !effective) {
		cli_errorf("policy check: --ask-for-approval needs --effective");
		return WARD_EXIT_FAILURE;
	}
	if (optind >= argc) {
		cli_errorf(
			"policy check: no command given (usage: ward policy check [OPTIONS] [--] COMMAND...)");
		return WARD_EXIT_FAILURE;
	}
	for (int i = optind; i < argc; i++)
		if (!utf8_ok(argv[i])) {
			cli_errorf("policy check: argument %d of the command is not valid UTF-8",
				   i - optind + 1);
			return WARD_EXIT_FAILURE;
		}
	cwd = getcwd(NULL, 0);
	(void)ward__home_dir(&home);
	o.cwd = cwd;
	o.home = home;
	ward__rules_init(&r);
	if (load_sources(&r, files, n_files, codex, project, &o) < 0) {
		ward__rules_release(&r);
		return WARD_EXIT_FAILURE;
	}
	if (effective) {
		/* As the approval runner sees it: a sandbox restricting writes, no escalation asked. */
		struct ward__unmatched_ctx uc = {.mode = mode, .fs_restricted = true};
		struct ward__evaluation e = {0};

		ret = ward__rules_evaluate(&r, (const char *const *)argv + optind,
					   (size_t)(argc - optind), cwd, home, &uc, &e);
		if (ret >= 0)
			ret = ward__rules_effective_json(&e, mode, pretty, &json);
		ward__evaluation_release(&e);
	} else {
		ret = ward__rules_check_json(&r, (const char *const *)argv + optind,
					     (size_t)(argc - optind), &o, pretty, &json);
	}
	ward__rules_release(&r);
	if (ret < 0) {
		cli_errorf("policy check: cannot format the result: %s", strerror(-ret));
		return WARD_EXIT_FAILURE;
	}
	if (puts(json) == EOF || fflush(stdout) == EOF) {
		cli_errorf("policy check: cannot write the result: %m");
		return WARD_EXIT_FAILURE;
	}
	return 0;
}

int cli_policy_allow(int argc, char **argv)
{
	static const struct option opts[] = {
		{"file", required_argument, NULL, OPT_FILE},
		{"help", no_argument, NULL, 'h'},
		{0},
	};
	_cleanup_free_ char *dir = NULL, *path = NULL, *line = NULL;
	struct ward_error err = {0};
	const char *file = NULL;
	int c, ret;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+:h", opts, NULL)) != -1) {
		switch (c) {
		case OPT_FILE:
			file = optarg;
			break;
		case 'h':
			fputs(allow_help, stdout);
			return 0;
		case ':':
			cli_errorf("policy allow: option '%s' needs a value", argv[optind - 1]);
			return WARD_EXIT_FAILURE;
		default:
			cli_errorf(
				"policy allow: unknown option '%s' (see 'ward policy allow --help')",
				argv[optind - 1]);
			return WARD_EXIT_FAILURE;
		}
	}
	if (optind >= argc) {
		cli_errorf(
			"policy allow: no prefix given (usage: ward policy allow [--] PREFIX...)");
		return WARD_EXIT_FAILURE;
	}
	for (int i = optind; i < argc; i++)
		if (!utf8_ok(argv[i])) {
			cli_errorf("policy allow: word %d of the prefix is not valid UTF-8",
				   i - optind + 1);
			return WARD_EXIT_FAILURE;
		}
	if (!file) {
		ret = ward__rules_user_dir(&dir);
		if (ret < 0) {
			cli_errorf(
				"policy allow: cannot find the user's configuration directory: %s (hint: set HOME or XDG_CONFIG_HOME, or use --file)",
				strerror(-ret));
			return WARD_EXIT_FAILURE;
		}
		path = ward__path_join(dir, "default.rules");
		if (!path) {
			cli_errorf("out of memory");
			return WARD_EXIT_FAILURE;
		}
		file = path;
	}
	ret = ward__rules_append_allow(file, (const char *const *)argv + optind,
				       (size_t)(argc - optind), &err);
	if (ret < 0) {
		cli_report_error(&err);
		return WARD_EXIT_FAILURE;
	}
	line = ward__shell_join((const char *const *)argv + optind, (size_t)(argc - optind));
	printf("%s '%s': %s\n", ret > 0 ? "added to" : "already in", file,
	       line ? line : argv[optind]);
	return 0;
}
