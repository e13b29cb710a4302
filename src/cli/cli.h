/* SPDX-License-Identifier: MIT */
/*
 * DESIGN: src/cli owns the `ward` command line: one file per verb (run.c,
 * with run-plain.c, run-json.c and approve.c beneath it; policy.c and
 * policy-rules.c; doctor.c; audit.c; mcp.c; serve.c and serve-main.c, the
 * ward-serve program), the options the verbs share (options.c), questions
 * on the terminal (ask.c) and main.c. It alone prints errors and chooses
 * exit statuses.
 *
 * It is the top floor: it may call any folder (src/server, src/session,
 * src/approval, src/rules, src/exec, src/sandbox, src/policy, src/basic, and
 * libward's API), and no folder calls it (the one-way rule of DESIGN.md).
 * Within it a verb's file calls the files beneath it, never the reverse.
 */
#pragma once

#include <getopt.h>

#include "basic/macro.h"
#include "net/proxy.h"
#include "ward/ward.h"

#define WARD_EXIT_TIMEOUT 124
#define WARD_EXIT_FAILURE 125
#define WARD_EXIT_CANNOT_EXEC 126
#define WARD_EXIT_NOT_FOUND 127
/* The command was not run: refused by a rule or the approval mode, denied or aborted by the
 * person, or nobody could be asked (docs/ward.1, EXIT STATUS). */
#define WARD_EXIT_REJECTED 123

/* What `ward run` was asked to do, after option parsing (options.c). */
struct cli_run_args {
	struct ward_policy *policy; /* not yet resolved */
	struct ward_run_options *opts; /* argv, timeout, caps, stdin, environment policy */
	char **argv; /* the command, points into main()'s argv */
	bool json; /* --json: captured run, one JSON object on stdout */
	bool json_base64; /* --json-base64: add base64 forms of the outputs */
	bool max_output_set; /* --max-output was given (needs --json) */
	bool have_timeout;
	uint64_t timeout_ms;
	bool stdin_inherit; /* --stdin - : the command reads ward's own stdin */
	const char *stdin_path; /* --stdin FILE */
	bool help;
	bool version;
	/* --memory/--pids/--cpu none: no limit, not even a server's default. */
	bool limit_none[3];
	int keep_fds[64];
	size_t n_keep_fds;
	/* Approvals (approve.c): on with --ask-for-approval or any of its companions. */
	bool approvals;
	enum ward_approval_mode approval_mode;
	bool have_granular;
	struct ward_approval_granular granular;
	const char *rules_files[64];
	size_t n_rules_files;
	bool codex_rules;
	struct ward_approval_request *approval_req; /* created by the first per-call option */
	const char *prefix_rule[65]; /* --prefix-rule words, NULL-terminated */
	size_t n_prefix_rule;
	/*
	 * While the approval runner runs the command: its approver, which the
	 * network by domain asks (netask.c); NULL otherwise.
	 */
	struct ward_approver *approver;
	/* Review and undo (run-changes.c): --hold[=ask|apply|discard], --record, --keep-ignored. */
	int hold; /* CLI_HOLD_* */
	bool record;
	bool keep_ignored;
	/* While a held or recorded run runs: its layers, for the sandbox (run-plain.c, run-json.c). */
	const struct ward__layer *layers;
	size_t n_layers;
};

enum {
	CLI_HOLD_NONE = 0,
	CLI_HOLD_ASK = 1, /* a person decides on the terminal; without one the changes stay held */
	CLI_HOLD_APPLY = 2,
	CLI_HOLD_DISCARD = 3,
	CLI_HOLD_KEEP = 4, /* held, decided later (ward changes apply|discard) */
};

/*
 * The network by domain under approvals (netask.c): the proxy's hooks that
 * decide from the approver's rules and session answers, ask on the terminal
 * while the connection waits, and write every host to the audit log. The
 * context lives as long as the run.
 */
struct cli_netask {
	struct ward_approver *approver;
};
void cli_netask_hooks(struct cli_netask *c, struct ward_net_hooks *ret);

/* What a plain run reports for the approval runner (run-plain.c). */
struct cli_run_report {
	int exit_code;
	bool timed_out;
	bool denied; /* the sandbox reported refusals */
	struct ward__denial *denials; /* copies; free with cli_run_report_release() */
	size_t n_denials;
	size_t denials_dropped;
};

/* Prints "ward: <message>" and, when set, "hint: <hint>" to stderr. */
void cli_report_error(const struct ward_error *err);
/* Prints "ward: <formatted>" to stderr. */
void cli_errorf(const char *fmt, ...) _printf_(1, 2);

/*
 * Parses the options shared by `ward run` and `ward policy show` into a policy.
 * Returns the index of the first non-option argument, or -1 after printing an
 * error (exit 125). allow_run_options accepts the run-only options.
 */
int cli_parse_run_args(int argc, char **argv, bool allow_run_options, struct cli_run_args *a);
void cli_run_args_release(struct cli_run_args *a);

/*
 * A server verb's own options (`ward mcp`, `ward serve`), parsed together
 * with the policy and environment options of `ward run`. Their values must
 * be CLI_EXTRA_OPTION_BASE or above; handle() returns -1 after printing an
 * error.
 */
#define CLI_EXTRA_OPTION_BASE 0x400
struct cli_extra_options {
	const struct option *options; /* terminated by a zeroed entry; at most 31 */
	int (*handle)(int c, const char *arg, void *userdata);
	void *userdata;
	bool approvals; /* takes the approval options (-a, --granular, --rules, --codex-rules) */
};
/*
 * After parsing: prints the help or the version when asked and returns 0 (the
 * caller exits with it), else -1 (go on).
 */
int cli_help_or_version(const struct cli_run_args *a, const char *help);
/* Raises the soft limit of open files to the hard one (a server holds many). */
void cli_raise_nofile(void);
/*
 * A server's audit log (ward serve, ward mcp) from --audit-log's value opt:
 * NULL for the default ($XDG_STATE_HOME/ward/audit.jsonl; where none can be
 * had or made, one stderr line and no log), "none", or an absolute path
 * (whose directory cannot be made: an error). *ret_path (NULL: no log) and
 * *ret_dir (its directory, made 0700, to keep read-only in sandboxes) are
 * malloc()ed. -1 after reporting an error.
 */
int cli_audit_log_setup(const char *verb, const char *opt, char **ret_path, char **ret_dir);
/*
 * Keeps the autorun scan's cache in files of ward's own directory
 * ($XDG_RUNTIME_DIR/ward, else ~/.cache/ward; see src/policy/scan-cache.c),
 * for the verbs that resolve policies. Silent: without it the cache stays in
 * memory.
 */
void cli_scan_cache_setup(void);
/* Checks an --audit-log value (an absolute path or "none"); -1 after reporting. */
int cli_audit_log_option(const char *verb, const char *arg);
/* Parses a server verb's arguments: no command, no run-only options but the environment ones. */
int cli_parse_server_args(int argc, char **argv, const char *verb,
			  const struct cli_extra_options *extra, struct cli_run_args *a);

/*
 * The limits of the servers (server-limits.c): a budget (a server's total, a
 * connection's) from --total-memory and the like ("none": no total), the
 * defaults every command and budget gets unless given, and the start-up:
 * ward's cgroup subtree acquired, the server's budget group made, a warning
 * (or with --require-limits, -1 after an error) for what the host cannot
 * enforce.
 */
struct cli_budget {
	uint64_t memory, pids; /* 0: no total */
	bool memory_given, pids_given;
};
struct ward__cgroup;
int cli_budget_option(struct cli_budget *b, const char *verb, const char *opt, const char *arg);
void cli_budget_defaults(struct cli_budget *b, bool connection);
void cli_server_limit_defaults(struct cli_run_args *a);
int cli_server_limits_start(struct cli_run_args *a, const char *verb,
			    const struct cli_budget *total, struct ward__cgroup *ret_group);

int cli_run(int argc, char **argv);
/*
 * The plain (stdio straight through) run of a->argv (run-plain.c) under policy (resolved
 * here when it is not); with rep, the sandbox's denials are observed and
 * reported. Returns ward's exit status for the run.
 */
struct ward__denial;
struct ward__sandbox;
int cli_run_plain(struct cli_run_args *a, struct ward_policy *policy, struct cli_run_report *rep);
void cli_run_report_fill(struct cli_run_report *rep, const struct ward__sandbox *sb, int code,
			 bool timed_out);
void cli_run_report_release(struct cli_run_report *rep);
/* A captured run under policy: 0 and *ret_result, or ward's exit status after reporting. */
int cli_run_capture(struct cli_run_args *a, struct ward_policy *policy,
		    struct ward_result **ret_result);
/*
 * Once per process: a warning on stderr when the resolved policy's autorun
 * scan stopped at a bound (deeper names not all protected): ward never gives
 * less silently.
 */
void cli_warn_policy(const struct ward_policy *policy);
/* Prints res as JSON, with extra_json ("key":value,...) added as members; returns its exit code. */
int cli_print_result(struct ward_result *res, const char *extra_json);
/*
 * Sets up an approver from a's approval options (mode, granular, Codex's and
 * ward's rules, --rules files), protecting its files in a->policy, which it
 * resolves. -1 after printing an error.
 */
int cli_approver_prepare(struct cli_run_args *a, struct ward_approver *ap, const char *verb);
/* `ward run` through the approval runner (approve.c). */
int cli_run_approved(struct cli_run_args *a);
/* Handles one approval option (options.c): 0, or -1 after an error. */
int cli_approval_option(struct cli_run_args *a, const char *verb, const char *name,
			const char *arg);
/* `ward audit` (audit.c). */
int cli_audit(int argc, char **argv);
int cli_policy(int argc, char **argv);
/* `ward policy check` and `ward policy allow` (policy-rules.c). */
int cli_policy_check(int argc, char **argv);
int cli_policy_allow(int argc, char **argv);
int cli_doctor(int argc, char **argv);
int cli_mcp(int argc, char **argv);
int cli_serve(int argc, char **argv);
/* The --json branch of `ward run` (run-json.c): returns ward's exit status. */
int cli_run_json(struct cli_run_args *a);
/* `ward run --hold` and `--record` (run-changes.c): returns ward's exit status. */
int cli_run_changes(struct cli_run_args *a);
/* `ward changes` and `ward undo` (changes.c). */
int cli_changes(int argc, char **argv);
int cli_undo(int argc, char **argv);
