/* SPDX-License-Identifier: MIT */
/*
 * `ward mcp`: the MCP server on stdio (src/mcp). Takes the policy and
 * environment options of `ward run`, applied to every command it runs.
 */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "basic/cleanup.h"
#include "basic/util.h"
#include "changes/changes.h"
#include "cli/cli.h"
#include "mcp/mcp.h"
#include "sandbox/limits.h"
#include "sandbox/sandbox.h"
#include "session/session.h"

static const char mcp_help[] =
	"Usage: ward mcp [OPTIONS]\n"
	"\n"
	"Serve the Model Context Protocol on stdin/stdout (JSON-RPC 2.0, one message per\n"
	"line) with the tools exec_command, write_stdin, list_sessions, kill_session and\n"
	"the changes tools (review and undo, below).\n"
	"Every command runs in a sandbox of its own under the policy below; a command\n"
	"still running after its first yield becomes a session, polled and typed into\n"
	"with write_stdin. When stdin closes, calls in flight get 3 s to finish, then every\n"
	"session is killed and ward exits 0.\n"
	"\n"
	"Policy (as for 'ward run'):\n"
	"  -s, --sandbox MODE           read-only, workspace-write (default), danger-full-access\n"
	"  -C, --cd DIR                 the workspace, and the commands' default workdir (a\n"
	"                               call's workdir only moves where its command starts)\n"
	"  -w, --writable PATH          add a writable root (repeatable)\n"
	"      --protect PATH           keep PATH read-only inside writable roots (repeatable)\n"
	"      --unprotect PATH         lift the default protection of PATH (.vscode, a PATH\n"
	"                               directory, ...) and beneath it (repeatable)\n"
	"      --deny-read PATH         make a file or directory unreadable inside (repeatable)\n"
	"      --network off|on         network access (default off; loopback works inside)\n"
	"      --allow-domain PATTERN   the network by domain: only these hosts, through ward's\n"
	"                               proxy (repeatable; docs/policy.md)\n"
	"      --deny-domain PATTERN    refuse these hosts whatever allows them (repeatable)\n"
	"      --allow-address CIDR     a non-public range the proxy may reach (repeatable)\n"
	"      --dns-server IP[:PORT]   the DNS server the proxy resolves names with\n"
	"      --allow-unix-socket PATH let commands connect to this host unix socket\n"
	"      --policy FILE            read the policy from JSON (ward's or Codex's form)\n"
	"      --exclude-slash-tmp      do not make /tmp writable\n"
	"      --exclude-tmpdir-env-var do not make $TMPDIR writable\n"
	"      --require-isolation      refuse to run commands without namespaces\n"
	"\n"
	"Limits (docs/ward-mcp.1, LIMITS; NONE lifts one):\n"
	"      --memory SIZE|none       each command's memory with swap (default: half of the\n"
	"                               host's); killed whole beyond it\n"
	"      --pids N|none            each command's processes at once (default 4096)\n"
	"      --cpu N                  each command's CPUs of bandwidth (default none)\n"
	"      --rlimit NAME=VALUE      a per-process rlimit (as, core, cpu, fsize, nofile)\n"
	"      --total-memory SIZE|none all commands together (default: 3/4 of the host's)\n"
	"      --total-pids N|none      all commands' processes together (default 16384)\n"
	"      --require-limits         refuse to start where a limit cannot be enforced\n"
	"\n"
	"Environment of the commands (besides NO_COLOR=1, TERM=dumb on pipes, PAGER=cat,\n"
	"GIT_PAGER=cat, LANG/LC_ALL=C.UTF-8, which --env-set overrides):\n"
	"      --env-inherit all|core|none   environment passed in (default all)\n"
	"      --env-set NAME=VALUE     set a variable (repeatable)\n"
	"      --env-exclude PATTERN    drop variables matching PATTERN (alias --env-unset)\n"
	"      --env-include-only PATTERN  keep only variables matching PATTERN (repeatable)\n"
	"      --env-default-excludes   also drop *KEY*, *SECRET*, *TOKEN*\n"
	"\n"
	"Approvals (docs/approvals.md; off unless one of these is given):\n"
	"  -a, --ask-for-approval MODE  untrusted, on-request, never or granular: decide each\n"
	"                               command from the rules and the mode; questions go to\n"
	"                               the person through the client (MCP elicitation)\n"
	"      --granular CLASS,...     with -a granular: the questions allowed (sandbox_approval,\n"
	"                               rules, ...)\n"
	"      --rules FILE             command rules to use besides ward's own (repeatable)\n"
	"      --codex-rules            also use Codex's rules ($CODEX_HOME/rules)\n"
	"\n"
	"Sessions:\n"
	"      --max-sessions N         sessions kept at once (default 64, at most 50000);\n"
	"                               when full, the least recently used goes\n"
	"      --shell PATH             shell for the commands (default: $SHELL, /bin/bash)\n"
	"      --no-login               run 'SHELL -c CMD' instead of 'SHELL -lc CMD'\n"
	"      --login-snapshot on|off  on (default): the login shell (bash, zsh, sh) runs once,\n"
	"                               in a sandbox, and login commands run 'SHELL -c CMD'\n"
	"                               after reading what it left (functions, aliases,\n"
	"                               options, variables); off: 'SHELL -lc CMD', the profile\n"
	"                               in every command\n"
	"      --audit-log FILE|none    where every command started is recorded with the\n"
	"                               client's tool call ('ward audit'; default\n"
	"                               $XDG_STATE_HOME/ward/audit.jsonl)\n"
	"\n"
	"Review and undo (docs/changes.md; the tools changes_list, changes_show,\n"
	"changes_apply, changes_discard, changes_undo):\n"
	"      --record on|off          on (default): every sandboxed command's changes go\n"
	"                               through a layer, are applied when it ends and kept in\n"
	"                               the journal for changes_undo (the host sees them at\n"
	"                               the command's end, not while it runs); off: none\n"
	"      --hold                   hold every command's changes until changes_apply\n"
	"                               (exec_command's hold does it for one command)\n"
	"      --keep-ignored           also keep what changes replace in ignored or\n"
	"                               generated trees (node_modules, build, ...)\n"
	"  -h, --help                   show this help\n"
	"      --version                show the version and the commit\n";

enum {
	OPT_MAX_SESSIONS = CLI_EXTRA_OPTION_BASE,
	OPT_SHELL,
	OPT_NO_LOGIN,
	OPT_LOGIN_SNAPSHOT,
	OPT_AUDIT_LOG,
	OPT_RECORD,
	OPT_HOLD,
	OPT_KEEP_IGNORED,
	OPT_TOTAL_MEMORY,
	OPT_TOTAL_PIDS,
};

static const struct option mcp_options[] = {
	{"max-sessions", required_argument, NULL, OPT_MAX_SESSIONS},
	{"shell", required_argument, NULL, OPT_SHELL},
	{"no-login", no_argument, NULL, OPT_NO_LOGIN},
	{"login-snapshot", required_argument, NULL, OPT_LOGIN_SNAPSHOT},
	{"audit-log", required_argument, NULL, OPT_AUDIT_LOG},
	{"record", required_argument, NULL, OPT_RECORD},
	{"hold", no_argument, NULL, OPT_HOLD},
	{"keep-ignored", no_argument, NULL, OPT_KEEP_IGNORED},
	{"total-memory", required_argument, NULL, OPT_TOTAL_MEMORY},
	{"total-pids", required_argument, NULL, OPT_TOTAL_PIDS},
	{0},
};

struct mcp_args {
	size_t max_sessions;
	const char *shell;
	int login;
	bool no_login_snapshot;
	const char *audit_log;
	bool no_record, hold, keep_ignored;
	struct cli_budget total;
};

static int handle_option(int c, const char *arg, void *userdata)
{
	struct mcp_args *m = userdata;
	uint64_t n;

	switch (c) {
	case OPT_MAX_SESSIONS:
		if (ward__parse_u64(arg, &n) < 0 || n < 1 || n > WARD_SESSIONS_MAX) {
			cli_errorf("mcp: --max-sessions '%s': expected a number from 1 to %d", arg,
				   WARD_SESSIONS_MAX);
			return -1;
		}
		m->max_sessions = (size_t)n;
		return 0;
	case OPT_SHELL:
		if (arg[0] != '/' || access(arg, X_OK) < 0) {
			cli_errorf("mcp: --shell '%s': expected the absolute path of an executable",
				   arg);
			return -1;
		}
		m->shell = arg;
		return 0;
	case OPT_NO_LOGIN:
		m->login = 0;
		return 0;
	case OPT_LOGIN_SNAPSHOT:
		if (strcmp(arg, "on") != 0 && strcmp(arg, "off") != 0) {
			cli_errorf("mcp: --login-snapshot '%s': expected on or off", arg);
			return -1;
		}
		m->no_login_snapshot = strcmp(arg, "off") == 0;
		return 0;
	case OPT_AUDIT_LOG:
		m->audit_log = arg;
		return cli_audit_log_option("mcp", arg);
	case OPT_RECORD:
		if (strcmp(arg, "on") != 0 && strcmp(arg, "off") != 0) {
			cli_errorf("mcp: --record '%s': expected on or off", arg);
			return -1;
		}
		m->no_record = strcmp(arg, "off") == 0;
		return 0;
	case OPT_HOLD:
		m->hold = true;
		return 0;
	case OPT_KEEP_IGNORED:
		m->keep_ignored = true;
		return 0;
	case OPT_TOTAL_MEMORY:
		return cli_budget_option(&m->total, "mcp", "--total-memory", arg);
	case OPT_TOTAL_PIDS:
		return cli_budget_option(&m->total, "mcp", "--total-pids", arg);
	default:
		return -1;
	}
}

int cli_mcp(int argc, char **argv)
{
	struct mcp_args m = {.login = -1};
	struct cli_extra_options extra = {mcp_options, handle_option, &m, .approvals = true};
	struct ward_approver *ap = NULL;
	struct cli_run_args a;
	struct ward__mcp_config cfg = {0};
	struct ward__changes_cfg changes = {0};
	struct ward__cgroup group;
	struct ward_error err = {0};
	_cleanup_free_ char *audit_path = NULL, *audit_dir = NULL;
	int r;

	if (cli_parse_server_args(argc, argv, "mcp", &extra, &a) < 0) {
		cli_run_args_release(&a);
		return WARD_EXIT_FAILURE;
	}
	if (cli_help_or_version(&a, mcp_help) == 0) {
		cli_run_args_release(&a);
		return 0;
	}
	if (cli_audit_log_setup("mcp", m.audit_log, &audit_path, &audit_dir) < 0) {
		cli_run_args_release(&a);
		return WARD_EXIT_FAILURE;
	}
	/* The audit log's directory stays read-only in a sandbox whose roots hold it. */
	if (audit_dir && a.policy->mode == WARD_MODE_WORKSPACE_WRITE &&
	    ward_policy_add_protect(a.policy, audit_dir) < 0) {
		cli_errorf("out of memory");
		cli_run_args_release(&a);
		return WARD_EXIT_FAILURE;
	}
	if (a.approvals) {
		/* The approver protects its own files in the policy, which it resolves. */
		if (ward_approver_new(&ap) < 0) {
			cli_errorf("out of memory");
			cli_run_args_release(&a);
			return WARD_EXIT_FAILURE;
		}
		if (cli_approver_prepare(&a, ap, "mcp") < 0) {
			ward_approver_free(ap);
			cli_run_args_release(&a);
			return WARD_EXIT_FAILURE;
		}
	} else {
		/* Check the policy once up front: a bad one is a start-up error, not a tool error. */
		r = ward_policy_resolve(a.policy, &err);
		if (r < 0) {
			cli_report_error(&err);
			cli_run_args_release(&a);
			return WARD_EXIT_FAILURE;
		}
	}
	if (m.hold && m.no_record) {
		cli_errorf("mcp: --hold needs the journal: it cannot go with --record off");
		ward_approver_free(ap);
		cli_run_args_release(&a);
		return WARD_EXIT_FAILURE;
	}
	if (!m.no_record) {
		/* Without a place for the journal the server still serves, and says so once. */
		if (ward__changes_cfg_init(&changes, &err) < 0 ||
		    ward__layer_probe(changes.dir, &err) < 0) {
			if (m.hold) {
				cli_report_error(&err);
				ward_approver_free(ap);
				cli_run_args_release(&a);
				return WARD_EXIT_FAILURE;
			}
			cli_errorf("mcp: warning: changes are not recorded (undo is not "
				   "available): %s",
				   err.message);
			err = (struct ward_error){0};
		} else {
			changes.keep_ignored = m.keep_ignored;
			cfg.changes = &changes;
			cfg.hold = m.hold;
		}
	}
	/* Every command limited by default, all of them within the server's total (server-limits.c). */
	cli_server_limit_defaults(&a);
	cli_budget_defaults(&m.total, false);
	if (cli_server_limits_start(&a, "mcp", &m.total, &group) < 0) {
		ward__changes_cfg_release(&changes);
		ward_approver_free(ap);
		cli_run_args_release(&a);
		return WARD_EXIT_FAILURE;
	}
	/* A client that goes away must not kill ward before it has killed every session. */
	signal(SIGPIPE, SIG_IGN);
	ward__sigpipe_ignored();
	/* Each session holds a handful of descriptors (pipes or a pty, its sandbox's pidfd...). */
	cli_raise_nofile();
	cfg.policy = a.policy;
	cfg.env = a.opts;
	cfg.max_sessions = m.max_sessions;
	cfg.shell = m.shell;
	cfg.login = m.login;
	cfg.no_login_snapshot = m.no_login_snapshot;
	cfg.approver = ap;
	cfg.audit_path = audit_path;
	cfg.cg_parent = &group;
	r = ward__mcp_serve(&cfg, STDIN_FILENO, STDOUT_FILENO, &err);
	ward__cgroup_bury(&group);
	ward__changes_cfg_release(&changes);
	ward_approver_free(ap);
	cli_run_args_release(&a);
	if (r < 0) {
		cli_report_error(&err);
		return WARD_EXIT_FAILURE;
	}
	return 0;
}
