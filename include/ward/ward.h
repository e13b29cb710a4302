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
/* Adds a file or directory made unreadable and unlistable inside. Copied. */
WARD_PUBLIC int ward_policy_add_deny_read(struct ward_policy *policy, const char *path);
/* Adds a host unix socket path reachable while the network is off. Copied. */
WARD_PUBLIC int ward_policy_add_unix_socket(struct ward_policy *policy, const char *path);
WARD_PUBLIC int ward_policy_set_network(struct ward_policy *policy, bool enabled);
WARD_PUBLIC int ward_policy_set_exclude_slash_tmp(struct ward_policy *policy, bool exclude);
WARD_PUBLIC int ward_policy_set_exclude_tmpdir_env_var(struct ward_policy *policy, bool exclude);
/* Fail with -EPERM instead of falling back when namespaces are unavailable. */
WARD_PUBLIC int ward_policy_set_require_isolation(struct ward_policy *policy, bool require);

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

#ifdef __cplusplus
}
#endif

#endif
