/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * DESIGN: src/changes owns review and undo: what a run changed in the
 * writable roots, held for review or taken back afterwards. The
 * copy-on-write layer a run writes into (layer.c makes its directories; the
 * mount itself is the sandbox's, src/sandbox/mounts.c), the reading of that
 * layer into a list of changes (scan.c), the journal that keeps the list and
 * the files it replaced (journal.c, its text form in record.c), apply
 * (apply.c), undo (undo.c), the diff (diff.c) and the forms a person or a
 * client reads (render.c). The path-safe file operations they share are
 * fsops.c, the checksum sha256.c.
 *
 * One-way rule: it calls src/policy and src/basic, and uses the layer type
 * of src/sandbox. src/session, src/mcp, src/execserver and src/cli call it.
 * Inside the folder: fsops.c, sha256.c and record.c are the floor; journal.c
 * is on them; scan.c, apply.c, undo.c and diff.c on journal.c; layer.c on
 * scan.c and apply.c; render.c on journal.c. No two files call each other.
 *
 * The mechanisms, and why (each file says more):
 *
 *   hold     An overlayfs mount over each writable root, whose upper
 *            directory is ward's. The kernel copies a file up before its
 *            first change and turns deletions into whiteouts, so the layer
 *            holds exactly what the command changed, whatever it does and
 *            however it races: nothing passes the layer. The host sees
 *            nothing until the changes are applied.
 *
 *   record   The same layer, applied when the run ends, with conflicts left
 *            to the host. Chosen over the alternatives for keeping the
 *            before-image of a file before its first change reaches the
 *            host: seccomp user notification on every open for writing
 *            resolves paths again after ward looked (a racing command gets
 *            changes past the record) unless ward performs the opens
 *            itself, with its init's rights, in the sandbox; fanotify's
 *            permission events need CAP_SYS_ADMIN in the host's user
 *            namespace; copying the workspace up front costs its size.
 *            The price, said plainly in docs/changes.md: the host (and any
 *            other process or sandbox) sees a recorded run's changes when
 *            the run ends, not while it runs.
 *
 *   apply    Per entry one rename(2) between the layer's upper directory
 *            and the host (RENAME_EXCHANGE for a replaced entry,
 *            RENAME_NOREPLACE for a new one): atomic for every reader,
 *            nothing copied when the layer is on the root's filesystem (a
 *            copy staged beside the target when it is not), and the
 *            replaced entry lands in the upper directory, which thereby
 *            becomes the run's before-images. Every path on the host is
 *            opened beneath the root's descriptor with openat2's
 *            RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_XDEV, and
 *            every change of the host is made relative to a directory
 *            descriptor: a symlink or a swapped directory planted anywhere
 *            on the way fails the step instead of being followed.
 *
 *   journal  One directory per run in ward's state directory (masked in
 *            every sandbox's mount view, src/policy/resolve.c): a text
 *            record with a SHA-256 checksum, written whole to a temporary
 *            file and renamed, and the layer. Bounded per file, per run and
 *            in total; what exceeds a bound is listed as "cannot be undone".
 *
 *   diff     git diff --no-index over a view of hard links (or copies), or
 *            diff -ruN without git: a real diff implementation, not ours.
 */

#include <jansson.h>
#include <stdio.h>
#include <sys/types.h>

#include "basic/macro.h"
#include "policy/policy.h"
#include "sandbox/sandbox.h"
#include "ward/ward.h"

/* ------------------------------------------------------------ bounds */

#define WARD_CHANGES_MAX_FILE_DEFAULT ((uint64_t)64 << 20) /* bytes of one kept before-image */
#define WARD_CHANGES_MAX_RUN_DEFAULT ((uint64_t)512 << 20) /* bytes kept for one run */
#define WARD_CHANGES_MAX_TOTAL_DEFAULT ((uint64_t)2 << 30) /* bytes kept in the whole journal */
#define WARD_CHANGES_MAX_RUNS_DEFAULT 100 /* runs in the journal */
#define WARD_CHANGES_MAX_ENTRIES 200000 /* changes listed for one run */
#define WARD_CHANGES_MAX_MEMBERS 20000 /* files listed inside new or deleted trees, per run */
#define WARD_CHANGES_MAX_RECORD ((size_t)256 << 20) /* bytes of one run's record */
#define WARD_CHANGES_MAX_DEPTH 256 /* directory levels a walk goes down */

/* ------------------------------------------------------------ configuration */

struct ward__changes_cfg {
	char *dir; /* the state directory: $WARD_CHANGES_DIR, $XDG_STATE_HOME/ward/changes, ... */
	uint64_t max_file;
	uint64_t max_run;
	uint64_t max_total;
	unsigned max_runs;
	/* Keep the before-images of ignored or generated trees (node_modules, build, ...) too. */
	bool keep_ignored;
};

/*
 * The configuration from the environment: the directory ($WARD_CHANGES_DIR,
 * else $XDG_STATE_HOME/ward/changes, else ~/.local/state/ward/changes) and
 * the bounds ($WARD_CHANGES_MAX_FILE, _MAX_RUN, _MAX_TOTAL as sizes,
 * _MAX_RUNS). Does not create the directory. -ENOENT without a home.
 */
WARD_INTERNAL int ward__changes_cfg_init(struct ward__changes_cfg *cfg, struct ward_error *err);
WARD_INTERNAL void ward__changes_cfg_release(struct ward__changes_cfg *cfg);
/* The journal's directory as the policy hides it (malloc()ed), or NULL when there is none. */
WARD_INTERNAL char *ward__changes_dir_default(void);

/* ------------------------------------------------------------ the model */

enum ward__change_kind {
	WARD_CHANGE_ADD = 1, /* the path did not exist on the host */
	WARD_CHANGE_REPLACE = 2, /* it existed and differs (content, mode, type, times, links) */
	WARD_CHANGE_DELETE = 3, /* it existed and was removed */
	WARD_CHANGE_DIRMODE = 4, /* an existing directory's mode changed */
	WARD_CHANGE_MEMBER = 5, /* a file inside an added or deleted tree: listed, never applied */
};

/* What differs, and what the entry is. */
enum {
	WARD_CF_CONTENT = 1 << 0,
	WARD_CF_MODE = 1 << 1,
	WARD_CF_TYPE = 1 << 2,
	WARD_CF_TIMES = 1 << 3,
	WARD_CF_LINKS = 1 << 4, /* a file with several names in the layer (ln) */
	WARD_CF_BINARY = 1 << 5, /* the new (or deleted) content is binary (a NUL in its head) */
	WARD_CF_TREE = 1 << 6, /* a whole directory tree added or deleted in one step */
	WARD_CF_IGNORED = 1 << 7, /* in an ignored or generated tree: kept by name and size only */
	WARD_CF_MEMBER_OF_DEL = 1 << 8, /* a MEMBER of a deleted tree (else of an added one) */
};

enum ward__change_state {
	WARD_CS_PENDING = 1, /* held: not on the host */
	WARD_CS_APPLIED = 2,
	WARD_CS_CONFLICT = 3, /* not applied: the host changed it during the run */
	WARD_CS_REFUSED = 4, /* never applied: a protected path */
	WARD_CS_DISCARDED = 5,
	WARD_CS_UNDONE = 6,
	WARD_CS_KEPT_HOST = 7, /* undo left it: the host changed it since the apply */
};

/* Why a before-image was not kept (an applied entry that undo cannot restore). */
enum ward__unkept {
	WARD_UNKEPT_NONE = 0,
	WARD_UNKEPT_FILE_BOUND = 1,
	WARD_UNKEPT_RUN_BOUND = 2,
	WARD_UNKEPT_IGNORED = 3,
	WARD_UNKEPT_PRUNED = 4, /* the journal's total bound dropped it later */
};

/* File types as the record writes them. */
enum {
	WARD_FT_NONE = 0,
	WARD_FT_REG = 'f',
	WARD_FT_DIR = 'd',
	WARD_FT_LNK = 'l',
	WARD_FT_FIFO = 'p',
	WARD_FT_SOCK = 's',
	WARD_FT_OTHER = 'o',
};

struct ward__change {
	char *path; /* relative to its root, no leading '/', never "." or ".." components */
	unsigned root;
	enum ward__change_kind kind;
	enum ward__change_state state;
	unsigned flags;
	/* The host's entry before (old) and the run's (new); files and bytes of a tree. */
	char old_type, new_type;
	uint32_t old_mode, new_mode;
	uint64_t old_size, new_size;
	uint64_t old_files, new_files;
	int64_t new_mtime_ns;
	/* A pairing for the reader: this ADD is the DELETE at index from, renamed (-1: none). */
	int64_t renamed_from;
	char *refused; /* the protection's reason, for WARD_CS_REFUSED (owned), or NULL */
	enum ward__unkept unkept;
	char sum[65]; /* SHA-256 of a kept regular before-image, "" when none was taken */
	/*
	 * Identities for the steps: the layer's new entry (its inode moves to
	 * the host with it), the host's old entry, and what stood on the host
	 * right after the apply (for undo's check), with a tree's largest ctime.
	 */
	uint64_t new_ino, old_ino;
	uint64_t after_ino, after_size;
	int64_t after_ctime_ns;
};

enum ward__run_mode {
	WARD_RUN_HOLD = 1,
	WARD_RUN_RECORD = 2,
};

enum ward__run_state {
	WARD_RS_RUNNING = 1, /* the command runs (or ward died while it ran) */
	WARD_RS_HELD = 2,
	WARD_RS_APPLYING = 3, /* ward was stopped during an apply: a rerun finishes it */
	WARD_RS_APPLIED = 4,
	WARD_RS_DISCARDED = 5,
	WARD_RS_UNDOING = 6, /* ward was stopped during an undo: a rerun finishes it */
	WARD_RS_UNDONE = 7,
};

struct ward__changes_root {
	char *path; /* canonical */
	uint64_t dev, ino; /* the root directory's identity at the run's start */
	bool layered; /* it has a layer (layer/<index>/upper) */
	char **submounts; /* mount points beneath it (not layered: read-only in the run) */
	size_t n_submounts;
};

struct ward__changes_run {
	struct ward__changes_cfg *cfg; /* borrowed */
	uint64_t id;
	char *dir; /* <cfg->dir>/runs/<id> */
	enum ward__run_mode mode;
	enum ward__run_state state;
	bool commit_pending; /* applied, but the layer still holds what the apply leaves there */
	int64_t started_ns; /* CLOCK_REALTIME_COARSE at the start: the conflicts' line */
	int64_t ended_ns;
	int exit_code;
	char *cwd;
	char *command; /* the command line, for a person */
	struct ward__changes_root *roots;
	size_t n_roots;
	struct ward__change *v;
	size_t n;
	size_t members_dropped; /* tree members not listed (WARD_CHANGES_MAX_MEMBERS) */
	char **notes; /* what the run hit: "a directory rename failed (EXDEV)", bounds, ... */
	size_t n_notes;
	/* The layers given to the sandbox (while it runs). */
	struct ward__layer *layers;
	size_t n_layers;
	char **layer_paths; /* upper, work pairs */
	int lock_fd; /* the run's lock while this process works on it, else -1 */
};

/* ------------------------------------------------------------ journal (journal.c) */

/*
 * A new run in the journal (state RUNNING, id 0), its lock held, in a
 * directory of its own that the listing does not show yet; the journal's
 * directory is made (0700) when missing. argv (may be NULL) and cwd are for
 * the listing.
 */
WARD_INTERNAL int ward__journal_create(struct ward__changes_cfg *cfg, enum ward__run_mode mode,
				       const char *cwd, char *const *argv,
				       struct ward__changes_run **ret, struct ward_error *err);
/* Gives a run its number (the next one) and its place among the journal's runs. */
WARD_INTERNAL int ward__journal_number(struct ward__changes_run *run, struct ward_error *err);
/*
 * Opens a run of the journal by id ("17", or NULL/"last" for the latest),
 * reads and checks its record. lock: take the run's lock (-EBUSY when another
 * ward holds it). A damaged or incomplete record is -EBADMSG with a one-line
 * error naming it; an unknown run -ENOENT.
 */
WARD_INTERNAL int ward__journal_open(struct ward__changes_cfg *cfg, const char *id, bool lock,
				     struct ward__changes_run **ret, struct ward_error *err);
/* Writes the run's record (a temporary file, fsync, rename, fsync of the directory). */
WARD_INTERNAL int ward__journal_save(struct ward__changes_run *run, struct ward_error *err);
/* The ids of the runs in the journal, newest first. */
WARD_INTERNAL int ward__journal_list(struct ward__changes_cfg *cfg, uint64_t **ret_ids,
				     size_t *ret_n, struct ward_error *err);
/*
 * Enforces the bounds across runs: the least recent runs go first (their
 * layers and records removed) until at most max_runs remain and the kept
 * bytes fit max_total. Runs held and not decided, and runs locked by
 * another ward, are never dropped. keep: a run never dropped (the current).
 */
WARD_INTERNAL int ward__journal_prune(struct ward__changes_cfg *cfg, uint64_t keep,
				      struct ward_error *err);
/* Removes the run's directory (its layer and record). */
WARD_INTERNAL int ward__journal_remove(struct ward__changes_run *run);
/* Bytes the run keeps on disk (its layer: held changes or before-images). */
WARD_INTERNAL uint64_t ward__journal_run_bytes(const struct ward__changes_run *run);
WARD_INTERNAL void ward__changes_run_free(struct ward__changes_run *run);
WARD_INTERNAL int ward__changes_run_note(struct ward__changes_run *run, const char *fmt, ...)
	_printf_(2, 3);
/* The directory of root i's layer: "<run dir>/layer/<i>/upper" (malloc()ed). */
WARD_INTERNAL char *ward__journal_upper(const struct ward__changes_run *run, unsigned root);
/* Adds an entry (copied path); -E2BIG past WARD_CHANGES_MAX_ENTRIES. */
WARD_INTERNAL int ward__changes_run_add(struct ward__changes_run *run,
					const struct ward__change *c);

/* ------------------------------------------------------------ layers (layer.c) */

/*
 * Starts a run with a layer over the policy's writable roots (p resolved):
 * makes the run in the journal and an upper and a work directory per
 * layered root, and finds the mounts beneath each root. The layers for the
 * sandbox are then in run->layers.
 */
WARD_INTERNAL int ward__changes_begin(struct ward__changes_cfg *cfg, const struct ward_policy *p,
				      enum ward__run_mode mode, char *const *argv,
				      struct ward__changes_run **ret, struct ward_error *err);
/*
 * The sandbox is gone (its init reaped: the overlay is unmounted): reads the
 * layers into the run's changes (scan.c) with p's protections, and saves
 * it HELD. A recorded run is then applied (conflicts left to the host) and
 * the journal pruned. A run that changed nothing leaves the journal: its id
 * becomes 0.
 */
WARD_INTERNAL int ward__changes_end(struct ward__changes_run *run, const struct ward_policy *p,
				    int exit_code, struct ward_error *err);
/* Discards a held run: its layer removed, the record kept (DISCARDED). */
WARD_INTERNAL int ward__changes_discard(struct ward__changes_run *run, struct ward_error *err);

/* ------------------------------------------------------------ scan (scan.c) */

/*
 * Reads root i's upper directory against the host into run's changes: the
 * kinds, types, modes, sizes, binary or text, trees, renames; protected
 * paths refused (p's protections); ignored trees flagged. The host's roots
 * are read through descriptors, never following a symlink out.
 */
WARD_INTERNAL int ward__changes_scan(struct ward__changes_run *run, const struct ward_policy *p,
				     struct ward_error *err);
/* Whether a directory name is an ignored or generated tree (node_modules, build, ...). */
WARD_INTERNAL bool ward__changes_ignored_name(const char *name);

/* ------------------------------------------------------------ apply (apply.c) */

enum ward__side {
	WARD_SIDE_NONE = 0, /* conflicts stop the apply: nothing is applied */
	WARD_SIDE_RUN = 1, /* the run's version wins; the host's is kept for undo */
	WARD_SIDE_HOST = 2, /* the host's version stays; the run's is not applied */
};

struct ward__apply_report {
	size_t applied;
	size_t conflicts; /* entries the host changed during the run */
	size_t refused;
	size_t unkept; /* applied entries whose before-image was not kept */
	char first_conflict[PATH_MAX]; /* "root/path" of the first conflict */
};

/*
 * Applies a held run (or finishes an apply ward was stopped in). Conflicts
 * with side NONE: -EBUSY, nothing applied, the report lists them (with the
 * entries' state CONFLICT in memory only). Any failure rolls back what was
 * done: the host is as before, and err says what failed.
 */
WARD_INTERNAL int ward__changes_apply(struct ward__changes_run *run, enum ward__side side,
				      struct ward__apply_report *rep, struct ward_error *err);
/*
 * Takes back the part of an apply ward was stopped in (state APPLYING):
 * the run is held again, the host as before the apply. Does nothing for
 * another state.
 */
WARD_INTERNAL int ward__changes_apply_rollback(struct ward__changes_run *run,
					       struct ward_error *err);

/* ------------------------------------------------------------ undo (undo.c) */

struct ward__undo_report {
	size_t undone;
	size_t conflicts; /* entries changed again since the apply */
	size_t unkept; /* entries whose before-image was not kept: cannot be undone */
	char first_conflict[PATH_MAX];
	char first_unkept[PATH_MAX];
};

/*
 * Takes back an applied run: every entry to its bytes and mode before the
 * run, added ones removed, deleted ones restored. An entry changed since
 * is a conflict: -EBUSY, nothing undone, unless force (the before-image
 * wins) or skip (the entry is left as the host has it). Entries that cannot
 * be undone (not kept) make it -ENODATA unless skip. Any failure rolls back.
 */
WARD_INTERNAL int ward__changes_undo(struct ward__changes_run *run, bool force, bool skip,
				     struct ward__undo_report *rep, struct ward_error *err);

/* ------------------------------------------------------------ diff (diff.c) */

/*
 * Shows the run's changes as a unified diff written by git diff --no-index
 * (diff -ruN without git) to out_fd; with a terminal on out_fd git pages it
 * (pager) and colours it. max_bytes > 0 caps what is copied into the view
 * per file (a larger file shows as changed, not its lines).
 */
WARD_INTERNAL int ward__changes_diff(struct ward__changes_run *run, int out_fd, bool pager,
				     bool color, struct ward_error *err);
/* The same, captured into a malloc()ed string of at most max bytes (a marker when cut). */
WARD_INTERNAL int ward__changes_diff_text(struct ward__changes_run *run, size_t max, char **ret,
					  struct ward_error *err);

/* ------------------------------------------------------------ forms (render.c) */

/*
 * The run as JSON: id, mode, state, command, counts, notes and at most
 * max_entries changes (SIZE_MAX: all; 0: no "changes" member), with
 * "changes_not_listed" counting the rest (docs/json.md).
 */
WARD_INTERNAL json_t *ward__changes_to_json(const struct ward__changes_run *run,
					    size_t max_entries);
/* The person's summary: one line per change (at most max_lines, then a count). */
WARD_INTERNAL void ward__changes_print(const struct ward__changes_run *run, FILE *f,
				       size_t max_lines);
/* One line for a list of runs. */
WARD_INTERNAL void ward__changes_print_line(const struct ward__changes_run *run, FILE *f);
/* Names of the enums, for records and JSON. */
WARD_INTERNAL const char *ward__run_state_name(enum ward__run_state s);
WARD_INTERNAL const char *ward__change_state_name(enum ward__change_state s);
WARD_INTERNAL const char *ward__unkept_reason(enum ward__unkept u);
/* The word for a change as a person reads it: added, modified, mode, touched, deleted, renamed... */
WARD_INTERNAL const char *ward__change_word(const struct ward__changes_run *run,
					    const struct ward__change *c);
