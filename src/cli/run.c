/* SPDX-License-Identifier: MIT */
/*
 * `ward run`: its help, and which run it makes of the parsed options
 * (options.c): the plain run (run-plain.c), the captured one (--json,
 * run-json.c), or either of them through the approval runner (approve.c).
 */
#include <string.h>

#include "cli/cli.h"

static const char run_help[] =
	"Usage: ward run [OPTIONS] [--] COMMAND [ARG...]\n"
	"\n"
	"Run COMMAND in a sandbox. Options after COMMAND belong to the command.\n"
	"\n"
	"Policy:\n"
	"  -s, --sandbox MODE           read-only, workspace-write (default), danger-full-access\n"
	"  -C, --cd DIR                 working directory (a writable root in workspace-write)\n"
	"  -w, --writable PATH          add a writable root (repeatable)\n"
	"      --protect PATH           keep PATH read-only inside writable roots (repeatable)\n"
	"      --unprotect PATH         lift the default protection of PATH (.vscode, a PATH\n"
	"                               directory, ...) and beneath it (repeatable)\n"
	"      --deny-read PATH         make a file or directory unreadable inside (repeatable)\n"
	"      --network off|on         network access (default off; loopback works inside)\n"
	"      --allow-domain PATTERN   the network by domain: only the hosts PATTERN allows\n"
	"                               (example.com, *.example.com, **.example.com, *, [:PORT];\n"
	"                               repeatable), through ward's proxy outside the sandbox\n"
	"      --deny-domain PATTERN    refuse these hosts whatever allows them (repeatable)\n"
	"      --allow-address CIDR     let the proxy reach this non-public range (repeatable)\n"
	"      --dns-server IP[:PORT]   the DNS server the proxy resolves names with\n"
	"      --allow-unix-socket PATH let the command connect to this host unix socket\n"
	"      --policy FILE            read the policy from JSON (ward's or Codex's form)\n"
	"      --exclude-slash-tmp      do not make /tmp writable\n"
	"      --exclude-tmpdir-env-var do not make $TMPDIR writable\n"
	"      --require-isolation      fail (125) instead of running without namespaces\n"
	"\n"
	"Limits (none unless asked; docs/ward.1, LIMITS):\n"
	"      --memory SIZE            memory, swap included, of all its processes together\n"
	"                               (512M, 2G, 1.5G); killed whole beyond it (exit 137)\n"
	"      --pids N                 processes and threads at once; forks beyond refused\n"
	"      --cpu N                  CPUs of bandwidth (0.5, 1.5; at most the host's)\n"
	"      --rlimit NAME=VALUE      a per-process rlimit: as, core, cpu (seconds), fsize,\n"
	"                               nofile (repeatable)\n"
	"      --require-limits         fail (125) when a limit cannot be enforced here\n"
	"                               (otherwise a warning says which is not)\n"
	"\n"
	"Run:\n"
	"      --keep-fd N              keep file descriptor N open in the command\n"
	"      --timeout SECONDS        kill everything in the sandbox after SECONDS (exit 124)\n"
	"      --json                   capture the run, print one JSON object (docs/json.md)\n"
	"      --json-base64            --json, plus base64 forms of the outputs\n"
	"      --max-output BYTES       with --json, cap each output (64..256M, default 1M;\n"
	"                               head and tail kept)\n"
	"      --stdin FILE|-           command's stdin: FILE, or ward's own stdin (with --json\n"
	"                               the default is /dev/null)\n"
	"      --env-inherit all|core|none   environment passed in (default all)\n"
	"      --env-set NAME=VALUE     set a variable (repeatable)\n"
	"      --env-exclude PATTERN    drop variables matching PATTERN (alias --env-unset)\n"
	"      --env-include-only PATTERN  keep only variables matching PATTERN (repeatable)\n"
	"      --env-default-excludes   also drop *KEY*, *SECRET*, *TOKEN*\n"
	"\n"
	"Review and undo (docs/changes.md):\n"
	"      --hold[=ask|apply|discard|keep]\n"
	"                               keep the command's changes off the writable roots\n"
	"                               until decided: on a terminal ask (apply, discard,\n"
	"                               view the diff); apply, discard or keep them held\n"
	"                               ('ward changes apply|discard RUN') without asking\n"
	"      --record                 apply the changes when the command ends and keep\n"
	"                               what they replaced, for 'ward undo'\n"
	"      --keep-ignored           also keep what changes replace in ignored or\n"
	"                               generated trees (node_modules, build, ...)\n"
	"  -h, --help                   show this help\n"
	"      --version                show the version and the commit\n"
	"\n"
	"Approvals (any of these turns them on; docs/rules.md):\n"
	"  -a, --ask-for-approval MODE  untrusted, on-request (default), never, granular\n"
	"      --granular CLASS,...     granular: the questions that may be asked\n"
	"                               (sandbox_approval, rules; the others refused)\n"
	"      --rules FILE             also read this rules file (repeatable); ward's own\n"
	"                               rules and the project's .ward/rules are always read\n"
	"      --codex-rules            also read Codex's $CODEX_HOME/rules\n"
	"      --sandbox-permissions P  use-default, require-escalated (run outside the\n"
	"                               sandbox after approval), with-additional-permissions\n"
	"      --justification TEXT     shown in the question (only with an escalation)\n"
	"      --prefix-rule WORD       a word of the prefix to offer to always allow\n"
	"                               (repeatable; only with require-escalated)\n"
	"      --additional-writable PATH, --additional-network\n"
	"                               what with-additional-permissions asks for\n"
	"\n"
	"Exit status: the command's own; 128+N if it died of signal N (137: killed, also at\n"
	"the memory limit; --json says which limit); 124 timed out;\n"
	"125 ward failed; 126 command not executable; 127 command not found;\n"
	"123 not run (refused by a rule or the approval mode, denied or aborted).\n";

int cli_run(int argc, char **argv)
{
	struct cli_run_args a;
	int code, r;

	r = cli_parse_run_args(argc, argv, true, &a);
	if (r < 0) {
		cli_run_args_release(&a);
		return WARD_EXIT_FAILURE;
	}
	if (cli_help_or_version(&a, run_help) == 0) {
		cli_run_args_release(&a);
		return 0;
	}
	if (!a.argv) {
		cli_errorf(
			"run: no command given (usage: ward run [OPTIONS] [--] COMMAND [ARG...])");
		cli_run_args_release(&a);
		return WARD_EXIT_FAILURE;
	}
	r = ward_run_options_set_argv(a.opts, (const char *const *)a.argv);
	if (r < 0) {
		cli_errorf("run: %s", strerror(-r));
		cli_run_args_release(&a);
		return WARD_EXIT_FAILURE;
	}
	if (a.hold || a.record)
		code = cli_run_changes(&a);
	else if (a.approvals)
		code = cli_run_approved(&a);
	else
		code = a.json ? cli_run_json(&a) : cli_run_plain(&a, a.policy, NULL);
	cli_run_args_release(&a);
	return code;
}
