/* SPDX-License-Identifier: MIT */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

static const char policy_help[] =
	"Usage: ward policy show [OPTIONS]\n"
	"       ward policy check [OPTIONS] [--] COMMAND [ARG...]\n"
	"       ward policy allow [OPTIONS] [--] PREFIX...\n"
	"\n"
	"check: match COMMAND against command rules files, printing what\n"
	"'codex execpolicy check' prints (see 'ward policy check --help').\n"
	"allow: always allow commands starting with PREFIX (see 'ward policy allow --help').\n"
	"\n"
	"show: print the policy that 'ward run' would apply with the same options, resolved\n"
	"against the filesystem (canonical roots, protected and denied paths), and the\n"
	"enforcement layers this host gives, as one JSON object.\n"
	"\n"
	"Options: the policy options of 'ward run' (-s, -C, -w, --protect, --unprotect,\n"
	"--deny-read, --network, --allow-unix-socket, --policy, --exclude-slash-tmp,\n"
	"--exclude-tmpdir-env-var, --require-isolation); -h, --help.\n";

int cli_policy(int argc, char **argv)
{
	struct cli_run_args a;
	struct ward_error err = {0};
	char *json = NULL;
	int r;

	if (argc >= 2 && strcmp(argv[1], "check") == 0)
		return cli_policy_check(argc - 1, argv + 1);
	if (argc >= 2 && strcmp(argv[1], "allow") == 0)
		return cli_policy_allow(argc - 1, argv + 1);
	if (argc < 2 ||
	    (strcmp(argv[1], "show") != 0 && strcmp(argv[1], "--help") != 0 &&
	     strcmp(argv[1], "-h") != 0)) {
		if (argc < 2)
			cli_errorf(
				"policy: missing subcommand (usage: ward policy show|check|allow ...)");
		else
			cli_errorf(
				"policy: unknown subcommand '%s' (usage: ward policy show|check|allow ...)",
				argv[1]);
		return WARD_EXIT_FAILURE;
	}
	if (strcmp(argv[1], "show") != 0) {
		fputs(policy_help, stdout);
		return 0;
	}
	r = cli_parse_run_args(argc - 1, argv + 1, false, &a);
	if (r < 0)
		goto fail;
	if (a.help) {
		fputs(policy_help, stdout);
		cli_run_args_release(&a);
		return 0;
	}
	if (a.argv) {
		cli_errorf("policy show: unexpected argument '%s'", a.argv[0]);
		goto fail;
	}
	r = ward_policy_resolve(a.policy, &err);
	if (r < 0) {
		cli_report_error(&err);
		goto fail;
	}
	r = ward_policy_describe_json(a.policy, &json);
	if (r < 0) {
		cli_errorf("policy show: cannot describe the policy: %s", strerror(-r));
		goto fail;
	}
	puts(json);
	free(json);
	cli_run_args_release(&a);
	return 0;
fail:
	cli_run_args_release(&a);
	return WARD_EXIT_FAILURE;
}
