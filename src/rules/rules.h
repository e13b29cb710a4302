/* SPDX-License-Identifier: MIT */
/*
 * DESIGN: src/rules, "what a command's words say before it runs".
 *
 * Owns: Codex's execpolicy ".rules" language (lex.c tokens, syntax.c values
 * and calls, parse.c their meaning, the examples, merging into a set);
 * matching a command against a set (match.c); the JSON of `ward policy
 * check` and of `--effective` (check.c); the shell-word reader that splits
 * `bash -lc "a && b"` into plain commands and the literal scan of scripts it
 * refuses (shell.c); the wrapper reader that says what `env`, `sudo`,
 * `nice`, `xargs`, `find -exec`... run (wrappers.c); the known-safe and
 * dangerous command lists and the banned amendment prefixes (safety.c); the
 * decision for one command as the approval runner enforces it (evaluate.c);
 * where rules files live and reading them (load.c); appending a rule to a
 * file (amend.c).
 *
 * May call: src/basic only (and the C library). Nothing here knows about
 * sandboxes, processes, approvals or servers: src/approval calls in, with
 * argv and the approval mode, and gets decisions back. Within the folder
 * the calls go one way too (a <- b: b calls a): lex <- syntax <- parse <-
 * load, amend; shell <- safety, wrappers, parse; match <- parse, check,
 * evaluate; safety, wrappers <- evaluate <- check.
 *
 * Pure: everything but load.c and amend.c takes bytes or argv and returns
 * structures, no I/O, no globals; those are fuzzed (fuzz/fuzz-rules*.c).
 *
 * Hard caps: a rules file comes from the user, the project (which an agent
 * may have written) or another tool, and a command from the agent, so every
 * quantity in either is bounded (the limits below).
 */
#pragma once

#include <sys/types.h>

#include "basic/macro.h"
#include "ward/ward.h"

/* ------------------------------------------------------------ limits */

#define WARD_RULES_MAX_FILE ((size_t)1 << 20) /* bytes of one rules file */
#define WARD_RULES_MAX_TOTAL ((size_t)8 << 20) /* bytes of all the files one set loads */
#define WARD_RULES_MAX_FILES 256 /* files in one set */
#define WARD_RULES_MAX_PREFIX 16384 /* prefix rules in one set, after first-token expansion */
#define WARD_RULES_MAX_NETWORK 4096 /* network rules in one set */
#define WARD_RULES_MAX_HOSTS 1024 /* host_executable() names in one set */
#define WARD_RULES_MAX_HOST_PATHS 64 /* paths of one host_executable() */
#define WARD_RULES_MAX_TOKENS 256 /* elements of one pattern or one example */
#define WARD_RULES_MAX_ALTS 256 /* alternatives of one pattern element */
#define WARD_RULES_MAX_EXAMPLES 256 /* match plus not_match examples of one rule */
#define WARD_RULES_MAX_STRING ((size_t)64 << 10) /* bytes of one string literal */
#define WARD_RULES_MAX_NESTING 16 /* open brackets and parentheses at once */

/* The commands of one shell script the word reader accepts. */
#define WARD_SHELL_MAX_SCRIPT ((size_t)1 << 20)
#define WARD_SHELL_MAX_COMMANDS 1024
#define WARD_SHELL_MAX_WORDS 4096

/* ------------------------------------------------------------ the rules */

/* Ordered as Codex orders them: the strictest decision of the matches wins. */
enum ward__decision {
	WARD__DECISION_ALLOW = 0,
	WARD__DECISION_PROMPT = 1,
	WARD__DECISION_FORBIDDEN = 2,
};

WARD_INTERNAL const char *ward__decision_to_string(enum ward__decision d);

enum ward__network_protocol {
	WARD__NET_HTTP = 0,
	WARD__NET_HTTPS = 1,
	WARD__NET_SOCKS5_TCP = 2,
	WARD__NET_SOCKS5_UDP = 3,
};

/* One element of a pattern: a string, or one of several alternatives (n_alts >= 1). */
struct ward__pattern_token {
	char **alts;
	size_t n_alts;
};

/*
 * What one prefix_rule() call said, shared by the rules its first-token
 * alternatives expand into.
 */
struct ward__rule_group {
	struct ward__pattern_token *rest; /* the pattern after its first element */
	size_t n_rest;
	enum ward__decision decision;
	char *justification; /* NULL when none */
	unsigned source; /* index into ward__rules.sources */
	unsigned line, col; /* of the call */
};

struct ward__prefix_rule {
	char *first; /* the program, matched exactly */
	size_t group; /* index into ward__rules.groups */
};

struct ward__network_rule {
	char *host; /* normalised: lowercase, no port, no trailing dot */
	enum ward__network_protocol protocol;
	enum ward__decision decision; /* "deny" is FORBIDDEN */
	char *justification;
	unsigned source, line;
};

/* host_executable(): absolute paths allowed to stand for a bare program name. */
struct ward__host_executable {
	char *name;
	char **paths; /* absolute, normalised */
	size_t n_paths;
};

struct ward__rules_source {
	char *path; /* as given to the loader (the "file" of file:line:col) */
	/*
	 * The file came from a project's .ward/rules: whoever can write to the
	 * project (a cloned repository, an earlier command) wrote it. Its allow
	 * rules skip the question but never take a command out of the sandbox.
	 */
	bool project;
};

/*
 * A set of rules from any number of files, in load order (lowest precedence
 * first). Not thread-safe; matching does not modify it.
 */
struct ward__rules {
	struct ward__rule_group *groups;
	size_t n_groups, alloc_groups;
	struct ward__prefix_rule *prefix;
	size_t n_prefix, alloc_prefix;
	struct ward__network_rule *network;
	size_t n_network, alloc_network;
	struct ward__host_executable *hosts;
	size_t n_hosts, alloc_hosts;
	struct ward__rules_source *sources;
	size_t n_sources, alloc_sources;
	size_t total_bytes; /* bytes of the files loaded so far */
};

WARD_INTERNAL void ward__rules_init(struct ward__rules *r);
WARD_INTERNAL void ward__rules_release(struct ward__rules *r);

/*
 * How matching treats a program given as a path (Codex's
 * resolve_host_executables). cwd and home make relative paths and "~/"
 * absolute; NULL leaves such paths unresolved.
 */
struct ward__match_opts {
	bool resolve_host_executables;
	/*
	 * ward's approval runner: basename matches that prompt or forbid apply
	 * whatever host_executable() lists and however the path is written (a
	 * copy of rm under another path is still rm), while a basename match
	 * that allows counts only for a path host_executable() lists (a planted
	 * ./git must not inherit the trust given to git).
	 */
	bool restrictive;
	const char *cwd;
	const char *home;
	/*
	 * Words not known until the command runs (a wrapper's, rules/wrappers.c):
	 * an argument containing placeholder may become any text in its place,
	 * and with open_tail more arguments may follow. A rule that the known
	 * words do not contradict then matches as "possible" (see
	 * ward__rule_match): enough to prompt or forbid, never to allow.
	 */
	const char *placeholder;
	bool open_tail;
};

/*
 * Parses one rules file (the Starlark subset of docs/rules.md) and adds its
 * rules to r, then checks every match/not_match example of the file against
 * the rule that carries it, as Codex does when a file loads. origin names the
 * file in errors ("origin:line:col: reason"). All or nothing: on error r is
 * unchanged. opts resolve the program paths of the examples. project marks
 * the file as a project's (see ward__rules_source).
 * -EINVAL (bad input), -E2BIG (a cap), -ENOMEM.
 */
WARD_INTERNAL int ward__rules_parse(struct ward__rules *r, const char *origin, const char *text,
				    size_t len, bool project, const struct ward__match_opts *opts,
				    struct ward_error *err);

/* ------------------------------------------------------------ matching (match.c) */

struct ward__rule_match {
	const struct ward__prefix_rule *rule;
	const struct ward__rule_group *group;
	/* The matched prefix: rule->first, then argv[1 .. n_prefix) (a possible match may reach past argc). */
	size_t n_prefix;
	char *resolved_program; /* malloc()ed absolute path when matched by basename, else NULL */
	bool possible; /* matched only if the unknown words turn out to fit (ward__match_opts) */
};

struct ward__match_list {
	struct ward__rule_match *v;
	size_t n, alloc;
};

WARD_INTERNAL void ward__match_list_release(struct ward__match_list *l);

/*
 * Appends to out the rules matching argv, as Codex's
 * matches_for_command_with_options does: the rules whose program equals
 * argv[0] exactly; when none match and opts ask for it, the rules of the
 * basename of argv[0] as an absolute path, limited by host_executable().
 * With opts->restrictive, see ward__match_opts. -ENOMEM.
 */
WARD_INTERNAL int ward__rules_match(const struct ward__rules *r, const char *const *argv,
				    size_t argc, const struct ward__match_opts *opts,
				    struct ward__match_list *out);

/* The strictest decision in l; false when l is empty. */
WARD_INTERNAL bool ward__match_list_decision(const struct ward__match_list *l,
					     enum ward__decision *ret);

/*
 * Makes path absolute the way Codex's AbsolutePathBuf does: "~" and "~/..."
 * against home, relative paths against cwd, then "." , ".." and "//"
 * removed lexically. NULL when it cannot (relative without cwd, ENOMEM).
 */
WARD_INTERNAL char *ward__rules_absolute_path(const char *path, const char *cwd, const char *home);

/* The last component of path as Rust's Path::file_name sees it (malloc()ed), or NULL. */
WARD_INTERNAL char *ward__path_file_name(const char *path);

/* ------------------------------------------------------------ check output (check.c) */

/*
 * The JSON `codex execpolicy check` prints for argv:
 * {"matchedRules":[{"prefixRuleMatch":{"matchedPrefix":[...],"decision":...,
 * "resolvedProgram"?,"justification"?}}],"decision"?}, compact or pretty as
 * serde_json writes it. *ret_json is malloc()ed (no trailing newline).
 */
WARD_INTERNAL int ward__rules_check_json(const struct ward__rules *r, const char *const *argv,
					 size_t argc, const struct ward__match_opts *opts,
					 bool pretty, char **ret_json);

/*
 * The JSON of `ward policy check --effective` for an evaluation made in
 * mode (docs/rules.md): {"matchedRules":[{"prefixRuleMatch":{...,"command":
 * [...],"chain":[...],"candidate"?,"possible"?}}],"unmatchedCommands":
 * [{"command","chain","decision"}],"decision","runsOutsideSandbox",
 * "readExactly","unread"?,"approvalMode"}. *ret_json is malloc()ed.
 */
struct ward__evaluation;
WARD_INTERNAL int ward__rules_effective_json(const struct ward__evaluation *e,
					     enum ward_approval_mode mode, bool pretty,
					     char **ret_json);

/* Appends s as a JSON string the way serde_json escapes it. -ENOBUFS, -ENOMEM. */
struct ward__buf;
WARD_INTERNAL int ward__rules_json_string(struct ward__buf *b, const char *s);

/* ------------------------------------------------------------ shell words (shell.c) */

struct ward__cmd {
	char **argv; /* NULL-terminated */
	size_t argc;
};

struct ward__cmdv {
	struct ward__cmd *v;
	size_t n;
};

WARD_INTERNAL void ward__cmdv_release(struct ward__cmdv *c);

/*
 * When argv is exactly [shell, "-c" or "-lc", script] with shell one of the
 * exact names Codex accepts (bash, sh, zsh and their usual absolute paths),
 * returns the script; else NULL.
 */
WARD_INTERNAL const char *ward__shell_wrapper_script(const char *const *argv, size_t argc);

/*
 * The conservative shell-word reader. Splits script into plain commands when
 * it consists only of words (bare, single-quoted, double-quoted without
 * expansions) joined by &&, ||, ;, | and newlines. Returns 1 and fills *ret
 * when it understood every byte; 0 when the script holds anything else
 * (expansions, substitutions, redirections, heredocs, subshells, globs,
 * assignments, reserved words, backslashes, background jobs, comments) or is
 * empty; -ENOMEM. The caps (WARD_SHELL_MAX_*) make a longer script 0.
 */
WARD_INTERNAL int ward__shell_split(const char *script, struct ward__cmdv *ret);

/*
 * For a script the reader does not understand: the words that could be
 * commands, found by a quote-aware scan that splits at every operator,
 * parenthesis, brace, substitution and reserved word. Over-inclusive on
 * purpose: only used to find rules and dangerous commands that must still
 * apply (forbid, prompt), never to allow anything. Returns the count; -ENOMEM.
 */
WARD_INTERNAL int ward__shell_literal_commands(const char *script, struct ward__cmdv *ret);

/* ------------------------------------------------------------ wrappers (wrappers.c) */

/* Wrappers inside wrappers and scripts, from the command as given. */
#define WARD_WRAP_MAX_DEPTH 32
/*
 * Commands one evaluation reads: the command, each level of each wrapper,
 * each candidate. Past it (or past the depth), the words left are searched
 * flat for programs that prompt and forbidden rules name, as many again.
 */
#define WARD_WRAP_MAX_COMMANDS 1024
/* env -S strings one env splits (each split may hold another -S). */
#define WARD_WRAP_MAX_SPLITS 16

/* What a command is, as something that runs other commands. */
enum ward__wrap_kind {
	/* Not a wrapper, or a form of one that runs no command (command -v, sudo -l). */
	WARD__WRAP_NONE = 0,
	/*
	 * Runs its commands and has no effect of its own that matters to a
	 * rule (nice, timeout, setsid, a shell running a script ward reads):
	 * its commands decide in its place.
	 */
	WARD__WRAP_TRANSPARENT,
	/*
	 * Runs them as another user, with another environment, directory or
	 * name, or is not at a system path (it may not be the program its name
	 * says): decides as written, and its commands' allow rules and the
	 * known-safe list do not count for them.
	 */
	WARD__WRAP_GUARDED,
	/* A program of its own that also runs commands (find -exec): decides as written, and they do too. */
	WARD__WRAP_ALSO,
	/*
	 * What it runs cannot be read exactly (an option ward does not know, a
	 * script or an env -S string it cannot read, a program that is a file
	 * name filled in later): decides as written, never allowed by a rule
	 * short of one naming every word or by the known-safe list; its
	 * commands are candidates, only their prompt and forbidden rules apply.
	 */
	WARD__WRAP_UNCERTAIN,
};

/* One command a wrapper runs. */
struct ward__wrap_cmd {
	/* NULL-terminated; points into the wrapper's argv or into memory the ward__wrap owns. */
	const char *const *argv;
	size_t argc;
	size_t offset; /* argv == the wrapper's argv + offset; SIZE_MAX when it is not a slice */
	/* Words containing it are replaced when it runs (find's "{}", xargs -I's string), or NULL. */
	const char *placeholder;
	bool open_tail; /* words are appended when it runs (xargs, find -exec ... {} +) */
	bool at_end; /* argv ends with the wrapper's last word (words appended to the wrapper land here) */
	bool guarded; /* runs in a way its allow rules do not cover (find -execdir with a relative program) */
	bool restrictive_only; /* may be what runs (a candidate, an exec -a name) */
};

struct ward__wrap {
	enum ward__wrap_kind kind;
	const char
		*name; /* static: the wrapper as a chain names it ("env", "sudo", "bash", "find") */
	const char *why; /* static: why GUARDED or UNCERTAIN, else NULL */
	/*
	 * Words appended to this wrapper would be read by the wrapper itself,
	 * not passed to a command it runs: no command was given (`xargs nice`),
	 * or find, whose expression they extend.
	 */
	bool wants_command;
	struct ward__wrap_cmd *cmds;
	size_t n_cmds, alloc_cmds;
	/*
	 * UNCERTAIN: every word of argv from this index on starts a candidate
	 * (argv + i, to the end; only its prompt and forbidden rules apply);
	 * 0 when none. Left to the caller to walk, within its own caps.
	 */
	size_t candidates_from;
	void **owned; /* what cmds point into, beside the wrapper's argv */
	size_t n_owned, alloc_owned;
	struct ward__cmdv script; /* a script's commands (read, or found by the literal scan) */
};

/*
 * Reads argv (argv[argc] == NULL) as a wrapper: env, nice, ionice, nohup,
 * setsid, timeout, stdbuf, time, command, exec, xargs, taskset, chrt, flock,
 * sudo, doas, find's -exec family and the shells' -c, by the basename of
 * argv[0], with their options as the real programs parse them (GNU getopt:
 * stop at the first operand, clustered short options, attached and separate
 * values, unambiguous long-option prefixes). docs/rules.md has the table.
 * placeholder and open_tail say which of argv's words are not known yet
 * (ward__match_opts): a wrapper whose own words hold the placeholder, or
 * that would take its command from appended words, is UNCERTAIN. *ret is
 * filled in every case (WARD__WRAP_NONE for anything else) and owns what its
 * commands point to beyond argv, which must outlive it. -ENOMEM.
 */
WARD_INTERNAL int ward__wrapper_read(const char *const *argv, size_t argc, const char *placeholder,
				     bool open_tail, struct ward__wrap *ret);
WARD_INTERNAL void ward__wrap_release(struct ward__wrap *w);

/* ------------------------------------------------------------ safety lists (safety.c) */

/* Codex's is_known_safe_command for one plain command (read-only tools). */
WARD_INTERNAL bool ward__command_known_safe(const char *const *argv, size_t argc);

/*
 * Whether the program (by basename) is one of the tools safe with any
 * arguments (cat, ls, grep, ...): for a command some of whose words are
 * not known until it runs (find -exec ... {}, xargs).
 */
WARD_INTERNAL bool ward__command_safe_any_args(const char *argv0);

/*
 * Codex's dangerous-command detection: rm with a force option, also behind
 * sudo and env, and in the literal commands of a shell script.
 */
WARD_INTERNAL bool ward__command_dangerous(const char *const *argv, size_t argc);

/*
 * Whether a prefix may become an allow rule. Refused: the ~88 prefixes
 * Codex's BANNED_PREFIX_SUGGESTIONS lists (interpreters, shells, git, env,
 * npm run, ...), the same with the program given as a path, and a banned
 * program followed only by options (python3 -u). Returns 0 when allowed,
 * -EPERM with *ret_why (static) when refused, -EINVAL when empty.
 */
WARD_INTERNAL int ward__prefix_banned(const char *const *prefix, size_t n, const char **ret_why);

/* ------------------------------------------------------------ evaluation (evaluate.c) */

/* What the unmatched-command fallback needs (Codex's UnmatchedCommandContext). */
struct ward__unmatched_ctx {
	enum ward_approval_mode mode;
	bool fs_restricted; /* the sandbox restricts writes (not danger-full-access) */
	bool requests_override; /* require_escalated or with_additional_permissions */
};

/* Codex's render_decision_for_unmatched_command for one plain command. */
WARD_INTERNAL enum ward__decision ward__unmatched_decision(const char *const *argv, size_t argc,
							   const struct ward__unmatched_ctx *c);

/*
 * One command of an evaluation: the command as given, or one that a wrapper
 * or a script in it runs (rules/wrappers.c), or a candidate: a command that
 * may be what runs, where the reading is not exact.
 */
struct ward__eval_node {
	const char *const *argv; /* NULL-terminated, owned by the evaluation */
	size_t argc;
	size_t parent; /* index into nodes; SIZE_MAX for the command as given */
	size_t offset; /* argv == the parent's argv + offset; SIZE_MAX when it is not a slice */
	const char *via; /* static: the parent's wrapper name ("env", "bash"); NULL for the root */
	enum ward__wrap_kind kind; /* as a wrapper (UNCERTAIN also when its words make it so) */
	const char *why; /* static: why GUARDED or UNCERTAIN */
	const char *placeholder; /* see ward__match_opts */
	bool open_tail;
	/* Below a wrapper that changes who or how: its own allow rules and the known-safe list do not count. */
	bool guarded;
	bool restrictive_only; /* a candidate: only prompt and forbidden rules apply */
	bool decides; /* its decision counts: a rule's, or the fallback's when no rule counted */
	bool allowed; /* a counted allow rule covers it (its own, or a wrapper's naming it) */
	bool allowed_by_user; /* ... one not from a project's file */
	/* The longest prefix its own counted allow rules match (0: none), any file and not a project's. */
	size_t allow_reach, user_allow_reach;
};

/* One entry of an evaluation: a rule match, or the fallback's decision for a command. */
struct ward__eval_entry {
	size_t command; /* index into nodes: the command the match's words are from */
	bool heuristic; /* no rule counted for this command: the fallback decided */
	enum ward__decision decision;
	struct ward__rule_match match; /* when !heuristic */
};

struct ward__evaluation {
	struct ward__eval_node *nodes; /* nodes[0] is the command as given */
	size_t n_nodes, alloc_nodes;
	/*
	 * Every wrapper and script was read exactly. When not, unread is the
	 * first node that was not (its why says what), or the root when the
	 * caps (WARD_WRAP_MAX_*) stopped the reading.
	 */
	bool understood;
	size_t unread;
	bool overflow; /* the caps stopped the reading: the command is asked about */
	struct ward__eval_entry *entries;
	size_t n_entries, alloc_entries;
	enum ward__decision decision; /* the strictest of the entries */
	/*
	 * The decision is allow and every command that decides is covered by an
	 * allow rule from a file that is not a project's: the command may run
	 * outside the sandbox.
	 */
	bool bypass_sandbox;
	/* A rule (not the fallback) asked for the prompt. */
	bool prompt_is_rule;
	/* What the nodes point into. */
	struct ward__cmdv root;
	struct ward__wrap *wraps;
	size_t n_wraps, alloc_wraps;
};

/*
 * Evaluates argv for the approval runner. As Codex's
 * create_exec_approval_requirement_for_command: the plain commands of a
 * `bash -lc` script are matched (restrictive basename matching, relative
 * paths against cwd) and the unmatched ones get the fallback's decision. And
 * beyond Codex (docs/rules.md, "Wrappers"): wrappers are read, nested and in
 * scripts, and the decision is the strictest of the command as written and
 * every command its wrappers run:
 *   - a TRANSPARENT wrapper's own rules count, its commands decide for it;
 *   - a GUARDED or ALSO one decides as written, as do its commands, whose
 *     own allow rules and the known-safe list do not count below a guard;
 *   - an allow rule of a wrapper whose pattern reaches into the command it
 *     runs (["sudo", "apt", "update"]) counts for that command too;
 *   - an UNCERTAIN wrapper (or a script the reader refuses) decides as
 *     written, never counts as known safe, is allowed only by a rule naming
 *     every word of it, and its candidates add their prompt and forbidden
 *     rules;
 *   - words not known until the command runs (find's {}, xargs' input)
 *     match possibly: enough to prompt or forbid, never to allow;
 *   - past the caps (WARD_WRAP_MAX_*) the command is asked about, and the
 *     words read so far are searched flat for programs that prompt and
 *     forbidden rules name.
 * -ENOMEM.
 */
WARD_INTERNAL int ward__rules_evaluate(const struct ward__rules *r, const char *const *argv,
				       size_t argc, const char *cwd, const char *home,
				       const struct ward__unmatched_ctx *c,
				       struct ward__evaluation *ret);
WARD_INTERNAL void ward__evaluation_release(struct ward__evaluation *e);

/* Quotes argv for a person (POSIX shell quoting, one line). malloc()ed, NULL on ENOMEM. */
WARD_INTERNAL char *ward__shell_join(const char *const *argv, size_t argc);

/* ------------------------------------------------------------ files (load.c, amend.c) */

/*
 * Reads path (a regular file, at most WARD_RULES_MAX_FILE bytes, UTF-8) and
 * parses it into r. -ENOENT and other errnos with err naming the file.
 */
WARD_INTERNAL int ward__rules_load_file(struct ward__rules *r, const char *path, bool project,
					const struct ward__match_opts *opts,
					struct ward_error *err);
/*
 * Loads every "*.rules" regular file of dir (not following symlinks, as
 * Codex), sorted by name. A missing directory is not an error.
 */
WARD_INTERNAL int ward__rules_load_dir(struct ward__rules *r, const char *dir, bool project,
				       const struct ward__match_opts *opts, struct ward_error *err);

/* $XDG_CONFIG_HOME/ward/rules, else $HOME/.config/ward/rules (home from the password file when unset). */
WARD_INTERNAL int ward__rules_user_dir(char **ret_dir);
/* $CODEX_HOME/rules, else $HOME/.codex/rules. */
WARD_INTERNAL int ward__rules_codex_dir(char **ret_dir);

/*
 * The project rules directories for a working directory: "<d>/.ward/rules"
 * for d from the project root (the nearest ancestor holding .git, else cwd
 * itself) down to cwd, outermost first, those that exist. NULL-terminated
 * malloc()ed vector.
 */
WARD_INTERNAL int ward__rules_project_dirs(const char *cwd, char ***ret_dirs);

/*
 * Appends prefix_rule(pattern=[...], decision="allow") for prefix to the
 * rules file path, as Codex writes amendments: refused when the prefix is
 * banned (ward__prefix_banned); nothing written when the same line is
 * already there. The directory is created when missing. The new file is the
 * old one plus the line, parsed in full before it replaces the old one
 * (temporary file, fsync, rename, under a lock on the directory), so a
 * concurrent writer or a crash never leaves a broken or half-written file.
 * Returns 1 when the line was added, 0 when it was already there.
 */
WARD_INTERNAL int ward__rules_append_allow(const char *path, const char *const *prefix, size_t n,
					   struct ward_error *err);
/*
 * Appends network_rule(host="...", protocol="...", decision="allow") the
 * same way: an "always" answer to a network question. host is one host
 * (a wildcard is refused, as Codex refuses it), protocol Codex's name.
 */
WARD_INTERNAL int ward__rules_append_network(const char *path, const char *host,
					     const char *protocol, struct ward_error *err);

/*
 * What the network_rule lines say of a host and protocol (protocol < 0:
 * any protocol, for the DNS stub, which does not know it yet): forbidden
 * wins over prompt over allow (Codex's order), *ret_decision is set and 0
 * returned; -ENOENT when no rule names the host. An allow from a project's
 * rules (.ward/rules, written by whoever can write to the project) is not
 * an allow: it would let a cloned repository open the network for itself.
 * *ret_justification (optional) is the deciding rule's, or NULL.
 */
WARD_INTERNAL int ward__rules_network_decide(const struct ward__rules *r, const char *host,
					     int protocol, enum ward__decision *ret_decision,
					     const char **ret_justification);
