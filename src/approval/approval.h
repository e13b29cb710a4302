/* SPDX-License-Identifier: MIT */
/*
 * DESIGN: src/approval owns the approvals: the step machine that decides
 * from the rules and the approval mode, asks, runs and may retry outside
 * the sandbox (approval.c), libward's approver and request objects and the
 * blocking driver (approver.c), the "for this session" answers (cache.c) and
 * the audit log (audit.c).
 *
 * It may call src/exec, src/rules, src/policy and src/basic (and
 * include/ward/ward.h). src/server and src/cli call it; it calls none of
 * them (the one-way rule of DESIGN.md): a person is asked only by the front
 * end, which the step machine hands an ASK action, or through the callback
 * passed down to ward_run_with_approval().
 */
#pragma once

#include "basic/macro.h"
#include "exec/exec.h"
#include "net/proxy.h"
#include "policy/policy.h"
#include "rules/rules.h"
#include "ward/ward.h"

/*
 * The approval runner: Codex's ToolOrchestrator (core/src/tools/orchestrator.rs)
 * for ward. Before a command runs it decides from the rules and the approval
 * mode (rules/evaluate.c), asks a person when it must (remembering "for this
 * session" answers), picks the sandbox, and when a sandboxed run was denied it
 * may ask whether to run again without the sandbox.
 *
 * The core is a step machine with no waiting inside, for an event loop
 * (`ward mcp`, where asking is an MCP elicitation and running an asynchronous
 * sandboxed process):
 *
 *   ward__approval_begin()  -> ASK | RUN | REJECT
 *   ward__approval_answer() -> ASK | RUN | REJECT        (after ASK)
 *   ward__approval_ran()    -> ASK | DONE                (after RUN)
 *
 * The front end performs the action and calls back; ASK's question and RUN's
 * policy belong to the step and stay valid until the next call on it or
 * ward__approval_step_free(). The step functions never wait for a person or a
 * process; they do small synchronous filesystem work: resolving the policy of
 * a widened or unsandboxed run, appending the audit line, persisting an
 * approved rule. ward_run_with_approval() (approver.c) drives the same machine
 * with a synchronous callback and ward_run().
 *
 * Differences from Codex, on purpose (docs/approvals.md): a retry outside the
 * sandbox is always asked about, even after the command itself was approved
 * (approving a sandboxed run is not approving an unsandboxed one), unless a
 * "for this session" answer given to an unsandboxed question covers it; a
 * denial means the sandbox's exact report, never a guess from the output; a
 * banned prefix_rule is refused rather than silently dropped.
 */

/* "Approved for this session" answers held at once; the oldest goes first. */
#define WARD_APPROVAL_CACHE_MAX 1024
/* A cache key longer than this (a huge command) is not cached: it is asked each time. */
#define WARD_APPROVAL_KEY_MAX ((size_t)64 << 10)
/* Per-call additional writable paths. */
#define WARD_APPROVAL_MAX_WRITABLE 64
/* Words of a proposed prefix rule. */
#define WARD_APPROVAL_MAX_PREFIX 64

/* The reason Codex gives for the retry question (orchestrator.rs). */
#define WARD_APPROVAL_RETRY_REASON "command failed; retry without sandbox?"

struct ward__cache_entry {
	char *key;
	size_t len;
	bool unsandboxed; /* the answer was given to a question about running outside the sandbox */
};

struct ward_approver {
	struct ward__rules rules;
	enum ward_approval_mode mode;
	struct ward_approval_granular granular;
	char *home; /* for "~/" in rules and commands, or NULL */
	char *amend_path; /* where approved rules go; NULL: not persisted */
	char *audit_path; /* NULL: no audit log */
	char *rules_dir; /* ward's user rules directory (to protect), or NULL */
	char *codex_dir; /* Codex's, when read */
	/* The session cache: a ring, oldest at cache_head. */
	struct ward__cache_entry cache[WARD_APPROVAL_CACHE_MAX];
	size_t cache_head, cache_n;
	char audit_error[WARD_ERROR_MESSAGE_MAX]; /* the last failure to write the log, once */
};

struct ward_approval_request {
	enum ward_sandbox_permissions sandbox_permissions;
	char *justification;
	char **prefix_rule; /* NULL-terminated, or NULL */
	size_t n_prefix_rule;
	char **writable; /* additional writable roots (with_additional_permissions) */
	size_t n_writable;
	bool network; /* additional: network on */
	bool tty;
	/* The command's directory when it is not the policy's cwd (`ward mcp`'s workdir): the
	 * question shows it, the session cache and the audit log are keyed by it. */
	char *cwd;
};
/* Sets req's command directory (absolute; copied). */
WARD_INTERNAL int ward__approval_request_set_cwd(struct ward_approval_request *req,
						 const char *cwd);

/* ------------------------------------------------------------ the step machine (approval.c) */

enum ward__approval_action_kind {
	WARD__APPROVAL_ASK = 1,
	WARD__APPROVAL_RUN = 2,
	WARD__APPROVAL_REJECT = 3,
	WARD__APPROVAL_DONE = 4,
};

struct ward__approval_action {
	enum ward__approval_action_kind kind;
	/* ASK: what to ask; answer with one of question->decisions. */
	const struct ward_approval_question *question;
	/* RUN: the resolved policy to run under (the caller's, or the step's own for a
	 * widened or unsandboxed run), and whether it is a sandbox. */
	const struct ward_policy *policy;
	bool sandboxed;
	/* REJECT and DONE: the outcome; REJECT's reason is one line for the person and the model. */
	enum ward_approval_status status;
	const char *reason;
	/* Any kind: something the front end should tell the person (an approved rule could not be
	 * saved, the audit log cannot be written, a retry outside the sandbox was not offered). */
	const char *notice;
};

/* What happened to a run, for ward__approval_ran(). */
struct ward__approval_outcome {
	int exit_code;
	bool timed_out;
	bool cancelled;
	/* The sandbox reported refusals exactly (ward_result_sandbox_denied() == 0 and true). */
	bool denied;
	const struct ward__denial *denials;
	size_t n_denials;
	size_t denials_dropped;
};

struct ward__approval_step;

/*
 * Starts the approval of argv (NULL-terminated, copied) under policy
 * (resolved; it must outlive the step) with the per-call fields of req (NULL:
 * the defaults). On success *ret_step is the caller's (free it with
 * ward__approval_step_free()) and *ret_action says what to do first.
 * -EINVAL (empty argv, unresolved policy), -ENOMEM, or an error resolving a
 * widened policy, with err filled.
 */
WARD_INTERNAL int ward__approval_begin(struct ward_approver *a, const struct ward_policy *policy,
				       const char *const *argv,
				       const struct ward_approval_request *req,
				       struct ward__approval_step **ret_step,
				       struct ward__approval_action *ret_action,
				       struct ward_error *err);
/* The person's answer to the last ASK. -EINVAL when not asking or the decision was not offered. */
WARD_INTERNAL int ward__approval_answer(struct ward__approval_step *s,
					enum ward_review_decision decision,
					struct ward__approval_action *ret_action,
					struct ward_error *err);
/*
 * Nobody could answer the last ASK (no terminal, a client without
 * elicitation): the command is denied with why ("nobody could be asked: ..."),
 * logged as such rather than as a person's answer. -EINVAL when not asking.
 */
WARD_INTERNAL int ward__approval_no_answer(struct ward__approval_step *s, const char *why,
					   struct ward__approval_action *ret_action,
					   struct ward_error *err);
/* What the last RUN did. -EINVAL when not running. */
WARD_INTERNAL int ward__approval_ran(struct ward__approval_step *s,
				     const struct ward__approval_outcome *o,
				     struct ward__approval_action *ret_action,
				     struct ward_error *err);
/* ward__approval_ran() from a ward_run() result (denied only when exact, see ward_result_sandbox_denied()). */
WARD_INTERNAL int ward__approval_ran_result(struct ward__approval_step *s,
					    const struct ward_result *res,
					    struct ward__approval_action *ret_action,
					    struct ward_error *err);
/* Accepts NULL. */
WARD_INTERNAL void ward__approval_step_free(struct ward__approval_step *s);

/* ------------------------------------------------------------ the session cache (cache.c) */

/*
 * The cache key, as Codex keys unified exec approvals: the command
 * canonicalised (a shell script of one plain command is that command, another
 * script is ["__codex_shell_script__", flag, script]), the working directory
 * (so an answer is scoped to its directory), tty, sandbox_permissions and the
 * additional permissions. Length-prefixed fields in a malloc()ed buffer;
 * -E2BIG past WARD_APPROVAL_KEY_MAX.
 */
WARD_INTERNAL int ward__approval_key(const char *const *argv, size_t argc, const char *cwd,
				     const struct ward_approval_request *req, char **ret_key,
				     size_t *ret_len);
/* Whether key was approved for the session (for an unsandboxed question: by such an answer). */
WARD_INTERNAL bool ward__cache_lookup(const struct ward_approver *a, const char *key, size_t len,
				      bool unsandboxed);
/* Remembers key (copied); the oldest entry goes when the cache is full. -ENOMEM. */
WARD_INTERNAL int ward__cache_store(struct ward_approver *a, const char *key, size_t len,
				    bool unsandboxed);
WARD_INTERNAL void ward__cache_release(struct ward_approver *a);

/* ------------------------------------------------------------ the audit log (audit.c) */

/* Bytes of the log before it is rotated to "<path>.1" (one older file is kept). */
#define WARD_AUDIT_MAX ((size_t)1 << 20)
/* One record; longer commands and reasons are cut (and the record says so). */
#define WARD_AUDIT_RECORD_MAX ((size_t)16 << 10)

struct ward__audit_record {
	const char *event; /* "decision", "answer", "run"; "start" (a server started a command) */
	const char *const *argv;
	size_t argc;
	const char *cwd;
	const char *mode; /* the approval mode, or NULL */
	const char *decision; /* or NULL */
	const char *source; /* "rules", "mode", "request", "cache", "person"; or NULL */
	const char *sandbox; /* the sandbox mode ("workspace-write"...), or NULL */
	/* Who asked: the client's name, its process id, and its thread and tool call. NULL: none. */
	const char *client, *process, *thread, *tool_call;
	bool sandboxed;
	bool have_exit_code;
	bool no_exit_code; /* the record has no exit_code member at all (a start) */
	int exit_code;
	const char *reason; /* or NULL */
	/* A network record ("network" event, or a network question's answer): what was reached. */
	const struct ward_net_event *net;
};

/*
 * Appends one JSON line to the log at path: one write(2) of the whole line
 * with O_APPEND under a shared lock, so lines of concurrent ward processes
 * never interleave; when the log passes WARD_AUDIT_MAX the writer that sees it
 * takes the lock exclusively and renames it to "<path>.1", so no writer is
 * writing to a file being rotated and no line is lost. The directory is
 * created (0700) when missing. -errno.
 */
WARD_INTERNAL int ward__audit_append(const char *path, const struct ward__audit_record *rec);
/* The record as it is written (without the newline), for tests. malloc()ed. */
WARD_INTERNAL int ward__audit_format(const struct ward__audit_record *rec, char **ret_line);
/* $XDG_STATE_HOME/ward/audit.jsonl, else $HOME/.local/state/ward/audit.jsonl. */
WARD_INTERNAL int ward__audit_default_path(char **ret_path);

/* ------------------------------------------------------------ the network (network.c) */

/*
 * The approver's side of the network by domain: what the proxy's decide
 * hook answers for a host no pattern decides (the network_rule lines, then
 * the answers given for this session), whether a person may be asked at
 * all (not in mode never), the question to ask, and what an answer does
 * (once, for the session, or always: a network_rule line in the user's
 * rules file). Every allowed and refused host goes to the audit log.
 */
WARD_INTERNAL enum ward_net_decision ward__approval_net_decide(struct ward_approver *a,
							       const struct ward_net_target *t,
							       const char **ret_by);
WARD_INTERNAL bool ward__approval_net_may_ask(const struct ward_approver *a);

/* A network question and the strings it points to. */
struct ward__net_question {
	struct ward_approval_question q;
	const char *argv[3];
	char target[WARD_NET_HOST_MAX + 32];
	char reason[WARD_NET_HOST_MAX + 64];
	char rule[WARD_NET_HOST_MAX + 96];
};
WARD_INTERNAL void ward__approval_net_question(const struct ward_approver *a,
					       const struct ward_net_target *t,
					       struct ward__net_question *ret);
/*
 * What an answer means: allow or not, and does its part (remembers a
 * session answer, writes the rule of an "always" one, logs). *ret_notice
 * (may be NULL) names what went wrong writing the rule, for the person.
 */
WARD_INTERNAL bool ward__approval_net_answered(struct ward_approver *a,
					       const struct ward_net_target *t,
					       enum ward_review_decision d,
					       const char **ret_notice);
/* The audit log's line for a proxy event (ward_net_hooks.event). */
WARD_INTERNAL void ward__approval_net_audit(struct ward_approver *a,
					    const struct ward_net_event *ev);

/* ------------------------------------------------------------ lifting protections (unprotect.c) */

/* Protected paths one question offers to lift, and questions about them per command. */
#define WARD_APPROVAL_MAX_LIFT 8
#define WARD_APPROVAL_MAX_LIFT_ROUNDS 3

/* The paths of one question, each with its reason (static), and the question's words. */
struct ward__lift {
	char *paths[WARD_APPROVAL_MAX_LIFT];
	const char *reasons[WARD_APPROVAL_MAX_LIFT];
	size_t n;
	char *text;
};
WARD_INTERNAL void ward__lift_release(struct ward__lift *l);
/*
 * The default protections the n denials of a run under p ran into (writes,
 * creations, removals, renames of protected paths), at most
 * WARD_APPROVAL_MAX_LIFT, none of those in the n_already earlier lifts, into
 * ret (released first) with the question's text. Returns how many, or
 * -ENOMEM.
 */
WARD_INTERNAL int ward__lift_find(const struct ward_policy *p, const struct ward__denial *d,
				  size_t n, const struct ward__lift *already, size_t n_already,
				  struct ward__lift *ret);
/* base (unresolved settings copied) with every path of the lifts unprotected, resolved. */
WARD_INTERNAL int ward__lift_policy(const struct ward_policy *base, const struct ward__lift *lifts,
				    size_t n_lifts, struct ward_policy **ret,
				    struct ward_error *err);

/* ------------------------------------------------------------ policies (approval.c) */

/* A copy of src (the settings, not the resolution). */
WARD_INTERNAL int ward__policy_copy(const struct ward_policy *src, struct ward_policy **ret);
