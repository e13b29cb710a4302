/* SPDX-License-Identifier: MIT */
/*
 * libward: run commands of AI coding agents inside an operating-system sandbox.
 *
 * Plain C11, no GNU extensions. Every fallible function returns int: >= 0 on
 * success, -errno on failure. Functions taking a `struct ward_error *` fill it
 * (when not NULL) with the failing stage and a one-line message; the error
 * structure is caller-owned and never allocates, so it is usable after fork()
 * and under memory pressure. Out-parameters named ret_* are written only on
 * success. Destructors accept NULL.
 *
 * The library never prints and never exits.
 */
#ifndef WARD_WARD_H
#define WARD_WARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__) && __GNUC__ >= 4
#define WARD_PUBLIC __attribute__((visibility("default")))
#else
#define WARD_PUBLIC
#endif

/* ------------------------------------------------------------------ errors */

#define WARD_ERROR_MESSAGE_MAX 512

/*
 * What failed. code is -errno (0 when nothing failed); stage names the setup
 * stage ("policy", "userns", "mount", "landlock", "seccomp", "exec", ...);
 * message is one lowercase line without a final period; hint, when not empty,
 * says what the user can do about it.
 */
struct ward_error {
	int code;
	char stage[32];
	char message[WARD_ERROR_MESSAGE_MAX];
	char hint[256];
};

/* Returns the library version string ("0.1.0"). Static storage. */
WARD_PUBLIC const char *ward_version(void);

/* ------------------------------------------------------------------ policy */

enum ward_sandbox_mode {
	WARD_MODE_READ_ONLY = 0,
	WARD_MODE_WORKSPACE_WRITE = 1,
	WARD_MODE_DANGER_FULL_ACCESS = 2,
};

/*
 * A sandbox policy. Build it with the setters (or ward_policy_load_json),
 * then ward_policy_resolve() it against the filesystem before use. A policy is
 * not thread-safe; use one per thread or lock around it.
 */
struct ward_policy;

/* Allocates an empty workspace-write policy with network off. Caller owns *ret_policy. */
WARD_PUBLIC int ward_policy_new(struct ward_policy **ret_policy);
/* Frees a policy. Accepts NULL. */
WARD_PUBLIC void ward_policy_free(struct ward_policy *policy);
/*
 * Copies what was set on src (mode, cwd, paths, network, options) into a new
 * policy, unresolved: set what differs (a cwd), then ward_policy_resolve() it.
 * Caller owns *ret_policy.
 */
WARD_PUBLIC int ward_policy_copy(const struct ward_policy *src, struct ward_policy **ret_policy);

WARD_PUBLIC int ward_policy_set_mode(struct ward_policy *policy, enum ward_sandbox_mode mode);
/* Parses "read-only", "workspace-write", "danger-full-access". -EINVAL otherwise. */
WARD_PUBLIC int ward_policy_mode_from_string(const char *s, enum ward_sandbox_mode *ret_mode);
WARD_PUBLIC const char *ward_policy_mode_to_string(enum ward_sandbox_mode mode);

/* The working directory of the command; a writable root in workspace-write mode.
 * Relative paths are taken against the caller's cwd. The string is copied. */
WARD_PUBLIC int ward_policy_set_cwd(struct ward_policy *policy, const char *path);
/* Adds a writable root (workspace-write only). Copied. */
WARD_PUBLIC int ward_policy_add_writable(struct ward_policy *policy, const char *path);
/* Adds a path kept read-only even inside a writable root. Copied. */
WARD_PUBLIC int ward_policy_add_protect(struct ward_policy *policy, const char *path);
/*
 * Lifts the default protections at path and beneath it (an autorun name such
 * as .vscode, a PATH directory, git's hooks): the command may write there.
 * Paths given to ward_policy_add_protect() stay protected. Copied.
 */
WARD_PUBLIC int ward_policy_add_unprotect(struct ward_policy *policy, const char *path);
/* Adds a file or directory made unreadable and unlistable inside. Copied. */
WARD_PUBLIC int ward_policy_add_deny_read(struct ward_policy *policy, const char *path);
/* Adds a host unix socket path reachable while the network is off. Copied. */
WARD_PUBLIC int ward_policy_add_unix_socket(struct ward_policy *policy, const char *path);
WARD_PUBLIC int ward_policy_set_network(struct ward_policy *policy, bool enabled);
/*
 * The network by domain: the command keeps its empty network namespace and
 * reaches only the hosts these allow, through ward's proxy (docs/policy.md).
 * A pattern is "example.com", "*.example.com" (subdomains), "**.example.com"
 * (the domain and its subdomains) or "*" (allow only), optionally ":PORT".
 * -EINVAL with err saying what is wrong with a malformed pattern or range.
 */
WARD_PUBLIC int ward_policy_add_allow_domain(struct ward_policy *policy, const char *pattern,
					     struct ward_error *err);
WARD_PUBLIC int ward_policy_add_deny_domain(struct ward_policy *policy, const char *pattern,
					    struct ward_error *err);
/* A non-public address range the proxy may connect to anyway ("10.0.0.0/8", "fd00::1"). */
WARD_PUBLIC int ward_policy_add_allow_address(struct ward_policy *policy, const char *cidr,
					      struct ward_error *err);
/* The DNS server the proxy resolves with ("IP" or "IP:PORT"); NULL: the host's resolv.conf. */
WARD_PUBLIC int ward_policy_set_dns_server(struct ward_policy *policy, const char *server,
					   struct ward_error *err);
WARD_PUBLIC int ward_policy_set_exclude_slash_tmp(struct ward_policy *policy, bool exclude);
WARD_PUBLIC int ward_policy_set_exclude_tmpdir_env_var(struct ward_policy *policy, bool exclude);
/* Fail with -EPERM instead of falling back when namespaces are unavailable. */
WARD_PUBLIC int ward_policy_set_require_isolation(struct ward_policy *policy, bool require);
/*
 * Sets one resource limit of the sandbox (docs/policy.md, "limits"), from its
 * text as the command line takes it: "memory" ("2G": memory and as much swap,
 * all processes together), "pids" ("512": processes and threads at once),
 * "cpu" ("1.5": CPUs of bandwidth), or "rlimit-as", "rlimit-core",
 * "rlimit-cpu", "rlimit-fsize", "rlimit-nofile" (per process). value NULL
 * removes it. A value that makes no sense (0, "12XB", more CPUs than the host
 * has) is refused with -EINVAL or -ERANGE and err says why; nothing changes.
 */
WARD_PUBLIC int ward_policy_set_limit(struct ward_policy *policy, const char *name,
				      const char *value, struct ward_error *err);
/* Fail with -EPERM instead of running when a limit asked for cannot be enforced on this host. */
WARD_PUBLIC int ward_policy_set_require_limits(struct ward_policy *policy, bool require);

/*
 * Merges a JSON policy (ward's own form or Codex's legacy SandboxPolicy, see
 * docs/policy.md) into policy. origin names the source in error messages (a
 * file name, or "<string>"). On error nothing in policy is changed and err
 * names the field and the reason.
 */
WARD_PUBLIC int ward_policy_load_json(struct ward_policy *policy, const char *json, size_t len,
				      const char *origin, struct ward_error *err);
/* Reads and merges a JSON policy file. */
WARD_PUBLIC int ward_policy_load_file(struct ward_policy *policy, const char *path,
				      struct ward_error *err);

/*
 * Resolves the policy against the filesystem and the environment ($TMPDIR):
 * canonical writable roots, protected paths (including the real git
 * directories of linked worktrees), deny-read paths. Must be called after the
 * last setter and before the policy is used to run anything; calling it again
 * re-resolves.
 */
WARD_PUBLIC int ward_policy_resolve(struct ward_policy *policy, struct ward_error *err);

/*
 * Describes the resolved policy and the enforcement this host gives as a JSON
 * object (see docs/policy.md). *ret_json is malloc()ed; the caller frees it.
 */
WARD_PUBLIC int ward_policy_describe_json(const struct ward_policy *policy, char **ret_json);

/* ------------------------------------------------------------------ runs */

enum ward_env_inherit {
	WARD_ENV_INHERIT_ALL = 0,
	WARD_ENV_INHERIT_CORE = 1,
	WARD_ENV_INHERIT_NONE = 2,
};

/* Options for one captured run. Initialise with ward_run_options_init(). */
struct ward_run_options;

/* Allocates run options with the defaults (see docs/ward.1). */
WARD_PUBLIC int ward_run_options_new(struct ward_run_options **ret_opts);
WARD_PUBLIC void ward_run_options_free(struct ward_run_options *opts);
/* argv is copied; argv[0] is looked up in PATH inside the sandbox. */
WARD_PUBLIC int ward_run_options_set_argv(struct ward_run_options *opts, const char *const *argv);
/* 0 means no timeout. */
WARD_PUBLIC int ward_run_options_set_timeout_ms(struct ward_run_options *opts, uint64_t timeout_ms);
/* Caps for stdout, stderr and the aggregated output, each. Default 1 MiB. Minimum 64. */
WARD_PUBLIC int ward_run_options_set_max_output(struct ward_run_options *opts, size_t bytes);
/* Bytes fed to stdin (copied; at most 64 MiB). Without it stdin is /dev/null. */
WARD_PUBLIC int ward_run_options_set_stdin(struct ward_run_options *opts, const void *data,
					   size_t len);
/* The command reads fd directly as its stdin (ward duplicates it for the command and
 * never closes or reads the caller's fd; -1 goes back to /dev/null). Replaces set_stdin
 * bytes, and set_stdin replaces it. */
WARD_PUBLIC int ward_run_options_set_stdin_fd(struct ward_run_options *opts, int fd);
/* Environment policy. */
WARD_PUBLIC int ward_run_options_set_env_inherit(struct ward_run_options *opts,
						 enum ward_env_inherit inherit);
WARD_PUBLIC int ward_run_options_env_set(struct ward_run_options *opts, const char *name,
					 const char *value);
/* Glob patterns (fnmatch, case-insensitive) of variables to drop / to keep only. */
WARD_PUBLIC int ward_run_options_env_exclude(struct ward_run_options *opts, const char *pattern);
WARD_PUBLIC int ward_run_options_env_include_only(struct ward_run_options *opts,
						  const char *pattern);
/* Drop the default excludes (*KEY*, *SECRET*, *TOKEN*) from the inherited set. Default: off. */
WARD_PUBLIC int ward_run_options_set_env_default_excludes(struct ward_run_options *opts,
							  bool enabled);

enum ward_stream {
	WARD_STREAM_STDOUT = 1,
	WARD_STREAM_STDERR = 2,
};

/* Streaming callback: called in the order the bytes arrive. Return 0 to go on,
 * non-zero to cancel the run. */
typedef int (*ward_output_fn)(void *userdata, enum ward_stream stream, const void *data,
			      size_t len);
WARD_PUBLIC int ward_run_options_set_output_callback(struct ward_run_options *opts,
						     ward_output_fn fn, void *userdata);

/* ward_result_to_json() adds "stdout_base64", "stderr_base64" and "output_base64" with the
 * exact bytes (the text fields replace invalid UTF-8 with U+FFFD). Default: off. */
WARD_PUBLIC int ward_run_options_set_json_base64(struct ward_run_options *opts, bool enabled);

/* A run's result. */
struct ward_result;

/* A cancellation handle, shareable with another thread or a signal handler. */
struct ward_cancel;
WARD_PUBLIC int ward_cancel_new(struct ward_cancel **ret_cancel);
WARD_PUBLIC void ward_cancel_free(struct ward_cancel *cancel);
/* Async-signal-safe and thread-safe: terminates the sandbox of the run using it. */
WARD_PUBLIC void ward_cancel_trigger(struct ward_cancel *cancel);

/*
 * Runs one command in the sandbox described by policy (resolved), capturing
 * output. Returns -errno when the sandbox could not be set up (err says why);
 * otherwise 0 and *ret_result (caller frees) says what happened to the command,
 * including exit code 127/126 when it could not be executed. cancel may be NULL.
 */
WARD_PUBLIC int ward_run(const struct ward_policy *policy, const struct ward_run_options *opts,
			 struct ward_cancel *cancel, struct ward_result **ret_result,
			 struct ward_error *err);
WARD_PUBLIC void ward_result_free(struct ward_result *result);

/* Exit code as ward run reports it: the command's own, 128+N for signal N, 124 on timeout. */
WARD_PUBLIC int ward_result_exit_code(const struct ward_result *result);
/* The signal the command died of, or 0. */
WARD_PUBLIC int ward_result_signal(const struct ward_result *result);
WARD_PUBLIC bool ward_result_timed_out(const struct ward_result *result);
WARD_PUBLIC bool ward_result_cancelled(const struct ward_result *result);
WARD_PUBLIC uint64_t ward_result_duration_ms(const struct ward_result *result);
/* Captured bytes (head and tail kept, a marker in between when bytes were
 * dropped). which: WARD_STREAM_STDOUT, WARD_STREAM_STDERR, or 0 for the
 * aggregated output. The pointer stays valid until ward_result_free(). */
WARD_PUBLIC const void *ward_result_output(const struct ward_result *result, int which,
					   size_t *ret_len);
/* Bytes dropped from the middle of the same stream. */
WARD_PUBLIC uint64_t ward_result_omitted(const struct ward_result *result, int which);
/* Whether the sandbox refused anything during the run; -ENODATA when the host
 * gives no exact signal (denials "unavailable"). */
WARD_PUBLIC int ward_result_sandbox_denied(const struct ward_result *result, bool *ret_denied);
/* The whole result as the JSON object of `ward run --json` (docs/json.md). malloc()ed. */
WARD_PUBLIC int ward_result_to_json(const struct ward_result *result, char **ret_json);

/* ------------------------------------------------------------------ approvals */

/*
 * When a person is asked before a command runs (Codex's AskForApproval).
 *   on-request: the default. Commands run in the sandbox without a question
 *     unless a rule says prompt, the command looks dangerous, or the caller
 *     asks to leave the sandbox; a sandbox denial is returned as it is.
 *   untrusted: only known-safe read-only commands and rule-allowed commands
 *     run without a question; a denied sandboxed run may be retried outside
 *     the sandbox after a second question.
 *   never: nobody is asked. What would need a question is refused;
 *     everything else runs in the sandbox.
 *   granular: as on-request, with each class of question switched on or off
 *     (struct ward_approval_granular); a class switched off is refused.
 * "on-failure" is accepted as a deprecated alias of on-request, as in Codex.
 */
enum ward_approval_mode {
	WARD_APPROVAL_ON_REQUEST = 0,
	WARD_APPROVAL_UNTRUSTED = 1,
	WARD_APPROVAL_NEVER = 2,
	WARD_APPROVAL_GRANULAR = 3,
};

/* Parses "untrusted", "on-request", "on-failure", "never", "granular". -EINVAL otherwise. */
WARD_PUBLIC int ward_approval_mode_from_string(const char *s, enum ward_approval_mode *ret_mode);
/* The kebab-case name. Static storage. */
WARD_PUBLIC const char *ward_approval_mode_to_string(enum ward_approval_mode mode);

/* Granular mode: which classes of question may be asked (false: refused without asking). */
struct ward_approval_granular {
	bool sandbox_approval; /* questions from the mode and the heuristics, and retries outside */
	bool rules; /* questions a prompt rule asks for */
	bool skill_approval; /* (kept for Codex compatibility; ward runs no skills) */
	bool request_permissions;
	bool mcp_elicitations;
};

/* A person's answer (Codex's ReviewDecision). */
enum ward_review_decision {
	WARD_REVIEW_APPROVED = 0, /* run it, this once */
	WARD_REVIEW_APPROVED_FOR_SESSION = 1, /* and do not ask again for the same command here */
	WARD_REVIEW_APPROVED_EXECPOLICY_AMENDMENT = 2, /* and always allow the proposed prefix */
	WARD_REVIEW_DENIED = 3, /* do not run it */
	WARD_REVIEW_ABORT = 4, /* do not run it, and stop */
};
/* The snake_case name ("approved_for_session"). Static storage. */
WARD_PUBLIC const char *ward_review_decision_to_string(enum ward_review_decision d);
WARD_PUBLIC int ward_review_decision_from_string(const char *s, enum ward_review_decision *ret);

/* What a call asks of the sandbox (Codex's sandbox_permissions). */
enum ward_sandbox_permissions {
	WARD_SANDBOX_PERMISSIONS_USE_DEFAULT = 0,
	/* Run outside the sandbox (after approval; never when the policy denies reads). */
	WARD_SANDBOX_PERMISSIONS_REQUIRE_ESCALATED = 1,
	/* Run in the sandbox widened by the request's writable paths and network, after approval. */
	WARD_SANDBOX_PERMISSIONS_WITH_ADDITIONAL_PERMISSIONS = 2,
};
/* Parses "use_default", "require_escalated", "with_additional_permissions" (or with '-'). */
WARD_PUBLIC int ward_sandbox_permissions_from_string(const char *s,
						     enum ward_sandbox_permissions *ret);

/* What happened to a command. */
enum ward_approval_status {
	WARD_APPROVAL_RAN_SANDBOXED = 0,
	WARD_APPROVAL_RAN_UNSANDBOXED = 1,
	WARD_APPROVAL_REJECTED = 2, /* forbidden by a rule or the mode, or an invalid request */
	WARD_APPROVAL_DENIED = 3, /* the person said no (or nobody could be asked) */
	WARD_APPROVAL_ABORTED = 4, /* the person aborted */
};
WARD_PUBLIC const char *ward_approval_status_to_string(enum ward_approval_status status);

/* One thing the sandbox refused during a run, as shown to the person. */
struct ward_denial_info {
	const char *access; /* "write", "create", "read", "connect", "syscall", ... */
	const char *syscall;
	int error; /* the errno the command got */
	const char *target; /* path, address or syscall arguments */
	/* Which protection refused it and why ("autorun: editor tasks", "git hooks",
	 * "outside the writable roots", ...), or NULL. */
	const char *reason;
};

/* A question for a person. Everything in it stays valid during the callback only. */
struct ward_approval_question {
	const char *const *argv; /* the command, NULL-terminated */
	const char *cwd;
	const char *reason; /* why ward asks; never NULL */
	const char *justification; /* the caller's own words for the person, or NULL */
	bool unsandboxed; /* approving runs the command outside the sandbox */
	bool retry; /* the sandboxed run was denied: run it again outside the sandbox? */
	const struct ward_denial_info *denials; /* of the denied run (retry) */
	size_t n_denials;
	size_t denials_dropped; /* more denials than were recorded */
	/* The prefix WARD_REVIEW_APPROVED_EXECPOLICY_AMENDMENT would always allow, or NULL. */
	const char *const *proposed_prefix_rule;
	unsigned decisions; /* bit (1u << decision) for each decision that may be answered */
	/*
	 * A question about the network (the network by domain: a host no
	 * pattern or rule decides, while the connection waits) names what is
	 * reached ("https://api.example.com:443"; argv is then
	 * ["network-access", that]) and the rule an "always" answer writes;
	 * both NULL for a command.
	 */
	const char *network_target;
	const char *proposed_network_rule;
	/*
	 * The sandboxed run was refused a change to these protected paths
	 * (NULL-terminated; reason says what each is and what would run it):
	 * approving runs the command again in the sandbox with them writable
	 * (--unprotect), this once. NULL for every other question.
	 */
	const char *const *unprotect;
};

/*
 * Asks the person. Store the answer in *ret_decision (one of q->decisions)
 * and return 0; a negative return stops the run with that error.
 */
typedef int (*ward_approval_fn)(void *userdata, const struct ward_approval_question *q,
				enum ward_review_decision *ret_decision);

/*
 * An approver: the command rules, the approval mode, the answers given "for
 * this session" (in memory, at most 1024, scoped to their directory) and the
 * audit log. Not thread-safe; one per session.
 */
struct ward_approver;

/* Mode on-request, no rules, amendments to ward's rules file, the default audit log. */
WARD_PUBLIC int ward_approver_new(struct ward_approver **ret_approver);
WARD_PUBLIC void ward_approver_free(struct ward_approver *approver);
WARD_PUBLIC int ward_approver_set_mode(struct ward_approver *approver,
				       enum ward_approval_mode mode);
/* The classes granular mode lets ask (default: all). Copied. */
WARD_PUBLIC int ward_approver_set_granular(struct ward_approver *approver,
					   const struct ward_approval_granular *granular);
/*
 * Loads ward's own rules ($XDG_CONFIG_HOME/ward/rules, default
 * ~/.config/ward/rules) and the project's .ward/rules for the working
 * directory cwd (docs/rules.md). A file that does not load fails the call
 * (err says file:line:col) and adds nothing.
 */
WARD_PUBLIC int ward_approver_load_default_rules(struct ward_approver *approver, const char *cwd,
						 struct ward_error *err);
/* Loads Codex's rules: every "*.rules" file in $CODEX_HOME/rules (default ~/.codex/rules). */
WARD_PUBLIC int ward_approver_load_codex_rules(struct ward_approver *approver,
					       struct ward_error *err);
/* Loads one rules file. */
WARD_PUBLIC int ward_approver_load_rules_file(struct ward_approver *approver, const char *path,
					      struct ward_error *err);
/* Loads rules from memory; origin names them in errors. */
WARD_PUBLIC int ward_approver_load_rules_string(struct ward_approver *approver, const char *text,
						size_t len, const char *origin,
						struct ward_error *err);
/* Where approved prefix rules are appended (copied); NULL keeps them in memory only. */
WARD_PUBLIC int ward_approver_set_amendment_file(struct ward_approver *approver, const char *path);
/* The audit log (copied); NULL: none. Default $XDG_STATE_HOME/ward/audit.jsonl. */
WARD_PUBLIC int ward_approver_set_audit_log(struct ward_approver *approver, const char *path);
/*
 * Adds the approver's own files that exist (rules directories, the
 * amendment file's and the audit log's directories) to policy's protected
 * paths, so that a command sandboxed under policy cannot rewrite the rules
 * that decide what runs outside the sandbox. Call before ward_policy_resolve().
 */
WARD_PUBLIC int ward_approver_protect(const struct ward_approver *approver,
				      struct ward_policy *policy);

/* The per-call fields of a command (Codex's exec_command arguments). */
struct ward_approval_request;

WARD_PUBLIC int ward_approval_request_new(struct ward_approval_request **ret_request);
WARD_PUBLIC void ward_approval_request_free(struct ward_approval_request *request);
WARD_PUBLIC int ward_approval_request_set_sandbox_permissions(
	struct ward_approval_request *request, enum ward_sandbox_permissions permissions);
/* Words for the person; only with an escalation (refused otherwise, as in Codex). Copied. */
WARD_PUBLIC int ward_approval_request_set_justification(struct ward_approval_request *request,
							const char *justification);
/* A prefix to always allow if the person agrees; only with require_escalated. Copied. */
WARD_PUBLIC int ward_approval_request_set_prefix_rule(struct ward_approval_request *request,
						      const char *const *prefix);
/* with_additional_permissions: a writable root for this command (repeatable). Copied. */
WARD_PUBLIC int ward_approval_request_add_writable(struct ward_approval_request *request,
						   const char *path);
/* with_additional_permissions: the network for this command. */
WARD_PUBLIC int ward_approval_request_set_network(struct ward_approval_request *request,
						  bool enabled);
/* The command runs on a terminal (part of the session cache key, as in Codex). */
WARD_PUBLIC int ward_approval_request_set_tty(struct ward_approval_request *request, bool tty);

/*
 * Runs opts' command under policy (resolved) as the approver decides: refused
 * by a rule or the mode, asked through ask (with userdata), run in the
 * sandbox, and, when the sandboxed run was denied and the mode allows it,
 * asked again and run outside the sandbox. request may be NULL.
 *
 * Returns 0 when it was decided: *ret_status says what happened. When the
 * command ran (WARD_APPROVAL_RAN_*), *ret_result (caller frees) is the last
 * run's; when it did not (rejected, denied, aborted), *ret_result is NULL and
 * err holds the reason (code -EPERM, stage "approval"), one line to show the
 * person or hand to the model. -errno: the sandbox could not be set up (as
 * ward_run()), or ask failed (its return), with err filled.
 */
WARD_PUBLIC int ward_run_with_approval(struct ward_approver *approver,
				       const struct ward_policy *policy,
				       const struct ward_run_options *opts,
				       const struct ward_approval_request *request,
				       ward_approval_fn ask, void *userdata,
				       struct ward_cancel *cancel, struct ward_result **ret_result,
				       enum ward_approval_status *ret_status,
				       struct ward_error *err);

#ifdef __cplusplus
}
#endif

#endif
