/* SPDX-License-Identifier: MIT */
#pragma once

#include "basic/loop.h"
#include "basic/macro.h"
#include "ward/ward.h"

/*
 * Login shell snapshots (snapshot.c), under the store (store.c): what a
 * login shell's startup files leave behind, taken once per shell, and a
 * login command run as a plain shell that reads it first.
 *
 * `SHELL -lc CMD` runs the person's profile in every command, in the
 * command's sandbox: its cost each time, and whatever it prints, including
 * its failures to write in a read-only home (pyenv's "cannot rehash"),
 * lands in every result. As Codex does, the login shell runs once instead,
 * and dumps its state: bash and zsh their functions, aliases, options and
 * exported variables (after ~/.bashrc or ~/.zshrc, which an agent's
 * commands would otherwise miss), POSIX sh its exported variables. Then
 * every login command runs as `SHELL -c CMD` after sourcing that dump.
 *
 * ward's way: the capture runs in a sandbox of its own under the store's
 * policy (a fresh one, never a prepared one, and never reused), with a
 * time limit and a size cap, and its result is checked by sourcing it in a
 * clean shell inside that sandbox first. The dump reaches each command
 * without a file on the host: through the command's stdin (a pipe that the
 * shell reads to its end and then replaces with /dev/null), or with a
 * terminal through a sealed memfd the command keeps at its number and
 * closes once read. ward's own variables (TERM, NO_COLOR, PAGER, LC_ALL,
 * PWD, --env-set...) are saved before the dump is read and restored after,
 * so they win over the profile's.
 */

struct ward__snapshot;

/* The kinds of shell with a snapshot; any other shell runs `-lc` as it is. */
enum ward__shell_kind {
	WARD__SHELL_OTHER = 0,
	WARD__SHELL_BASH, /* functions, aliases, set -o and shopt, exported variables */
	WARD__SHELL_ZSH, /* functions, aliases, options, fpath, exported variables */
	WARD__SHELL_POSIX, /* sh, dash: exported variables (all POSIX sh can list) */
};

/* The kind of a shell, from its name (a path's last component). */
WARD_INTERNAL enum ward__shell_kind ward__shell_kind(const char *shell);

/* How long the login shell may take (Codex's figure), and how much it may leave. */
#define WARD_SNAPSHOT_TIMEOUT_MS 10000
/* Less than a proc's stdin queue, which must hold it with ward's lines around it. */
#define WARD_SNAPSHOT_MAX (((size_t)1 << 20) - ((size_t)64 << 10))

enum ward__snapshot_state {
	WARD__SNAPSHOT_RUNNING = 0,
	WARD__SNAPSHOT_READY,
	WARD__SNAPSHOT_FAILED,
};

/* The capture is over (ready or failed); called from the loop, never from a snapshot call. */
typedef void (*ward__snapshot_done_fn)(struct ward__snapshot *sn, void *userdata);

struct ward__snapshot_spec {
	const char *shell; /* an absolute path, or a name looked up in PATH inside */
	const struct ward_policy *policy; /* the template (copied, resolved for the capture) */
	char *const *envp; /* the commands' environment (the capture runs with it) */
	ward__snapshot_done_fn done;
	void *userdata;
};

/*
 * Starts taking a snapshot of spec->shell's login state. -errno with err
 * filled when nothing could be started (an unsupported shell: -EOPNOTSUPP).
 */
WARD_INTERNAL int ward__snapshot_start(struct ward__loop *l, const struct ward__snapshot_spec *spec,
				       struct ward__snapshot **ret, struct ward_error *err);
/* Kills a capture still running; its done callback does not run. Accepts NULL. */
WARD_INTERNAL void ward__snapshot_free(struct ward__snapshot *sn);
/* Ends a capture still running: it fails ("stopped") and done runs from the loop. */
WARD_INTERNAL void ward__snapshot_stop(struct ward__snapshot *sn);

WARD_INTERNAL enum ward__snapshot_state ward__snapshot_state(const struct ward__snapshot *sn);
WARD_INTERNAL const char *ward__snapshot_shell(const struct ward__snapshot *sn);
/* Why it failed ("the login shell took longer than 10 s"...), or NULL. */
WARD_INTERNAL const char *ward__snapshot_failure(const struct ward__snapshot *sn);
/* Whether the failure was told to a reply already (it is told once); sets it. */
WARD_INTERNAL bool ward__snapshot_take_failure_note(struct ward__snapshot *sn);

/* A login command as it runs through a ready snapshot. */
struct ward__snapshot_run {
	char *argv[4]; /* SHELL -c ... (owned) */
	char **envp; /* the command's environment (owned) */
	char *input; /* without a terminal: the text for the command's stdin (owned) */
	size_t input_len;
	int fd; /* with a terminal: a sealed memfd to keep at its number, or -1 */
};

/*
 * How to run cmd with the snapshot instead of `SHELL -lc cmd`: envp is the
 * command's environment, names the variables ward sets (which win over the
 * snapshot's). -EOPNOTSUPP with *ret_why when it cannot (the snapshot is not
 * ready, the command would not fit one argument, bash in POSIX mode does
 * not read BASH_ENV...): the command then runs `-lc` as it is.
 */
WARD_INTERNAL int ward__snapshot_wrap(const struct ward__snapshot *sn, const char *cmd, bool tty,
				      char *const *envp, char *const *names,
				      struct ward__snapshot_run *ret, const char **ret_why);
WARD_INTERNAL void ward__snapshot_run_release(struct ward__snapshot_run *r);
