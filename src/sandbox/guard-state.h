/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The guard's state, shared by its parts: the snapshot and the targets
 * (guard.c), the events and the shared inotify instance (guard-watch.c), the
 * restoration (guard-restore.c). Not for use outside them.
 */
#include <sys/inotify.h>
#include <sys/stat.h>

#include "sandbox/sandbox.h"

/* What the command changed at a watched place: the kind of change, for the report. */
#define NAME_EVENTS (IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO)
#define DIR_EVENTS                                                                              \
	(NAME_EVENTS | IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_DELETE_SELF | IN_MOVE_SELF | \
	 IN_ONLYDIR)
#define FILE_EVENTS (IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_DELETE_SELF | IN_MOVE_SELF)

struct node {
	char *name; /* directory entry (for a target's root: the target's last component) */
	char *path; /* absolute, for reports */
	struct stat st; /* at the snapshot */
	char *data; /* regular file: its content (st.st_size bytes); symlink: its target */
	struct node *kids; /* directory: its entries, sorted by name */
	size_t n_kids;
	int wd; /* inotify watch on this inode, or -1 */
};

enum target_kind {
	T_MISSING, /* the name must not appear in parent */
	T_NAME, /* the name in parent must stay the directory it is (a pin) */
	T_SNAPSHOT, /* an existing protected path: kept, watched, restored */
};

struct target {
	enum target_kind kind;
	const char *reason; /* the protection's (static), or NULL for a pin the chain added */
	char *path;
	const char *name; /* inside path, or guard_name for T_MISSING */
	char *name_buf;
	int parent_fd; /* O_PATH|O_DIRECTORY: the parent directory itself, whatever its path becomes */
	bool parent_borrowed; /* parent_fd and parent_wd are an earlier target's (the same directory) */
	int parent_wd;
	int self_fd; /* T_NAME: O_PATH of the directory itself */
	struct stat self_st;
	struct node root; /* T_SNAPSHOT */
};

/*
 * A directory watched for autorun names appearing in it (guard-autorun.c).
 * The watch is the directory's inode's; its path is derived from the watch
 * of the directory it is in and its name there, which the renames the guard
 * sees change (guard-watch.c): reports, removals and the matcher's
 * --unprotect decisions use the path it has now, not the one it had.
 */
#define AUTORUN_NO_PARENT (-1) /* a start (or a directory above it not watched): path absolute */
#define AUTORUN_UNLINKED (-2) /* one of the scan's: its parent is found at the first rename */
struct autorun_watch {
	int wd;
	int parent; /* the wd of the watched directory it is in, or one of the two above */
	char *name; /* its name in parent (the guard's), or NULL */
	char *path;
	bool own; /* path is the guard's (a new directory's, or derived), else the policy's */
	bool astray; /* renamed to a directory not watched: where it is now, names do not matter */
	bool lost; /* it or a directory above it is astray: its events are not believed */
	unsigned gen; /* of the last derivation of path */
	bool unread; /* past the scan's bounds: what was in it at the start is unknown */
	struct ward__autorun_point at;
};

/* A directory that appeared where autorun names matter: to watch, then to look into. */
struct autorun_pending {
	char *path;
	int parent; /* the wd of the watched directory it appeared in; again: its own wd */
	struct ward__autorun_point at;
	bool again; /* watched already: only looked into again (events were lost) */
};

/* Protected names the command created, removed after the sandbox is dead. */
#define AUTORUN_MAX_CREATED 64
/* New directories waiting to be watched (as many as may be watched): more fails closed. */
#define AUTORUN_MAX_PENDING WARD_AUTORUN_MAX_WATCHES
/* Entries the guard reads in new directories during one run: more fails closed. */
#define AUTORUN_MAX_ENTRIES (1 << 20)

struct ward__guard {
	int fd; /* the inotify instance of its own, or -1 with a shared one */
	/* The resolved policy (a copy the sandbox owns, outliving the guard): the matcher's lists. */
	const struct ward_policy *policy;
	struct ward__watches *hub; /* the shared instance, or NULL */
	bool fallback;
	bool tripped;
	bool autorun_deferred; /* p->watches not watched yet: ward__guard_arm() */
	/* With a shared instance: what the dispatched events said, until ward__guard_read(). */
	const char *pend_access;
	char *pend_path;
	bool pend_lost; /* the shared queue overflowed */
	bool notify_pending;
	ward__guard_notify_fn notify;
	void *notify_userdata;
	struct ward__guard *hub_prev, *hub_next;
	struct target *t;
	size_t n, cap;
	size_t n_nodes;
	size_t bytes;
	int *lease_fds;
	char **lease_paths;
	size_t n_leases;
	const char *pend_reason; /* with pend_path */
	/* Autorun names (guard-autorun.c). */
	struct autorun_watch *aw; /* sorted by wd */
	size_t n_aw, cap_aw;
	struct autorun_pending *ap; /* a queue: new directories */
	size_t ap_head, n_ap;
	bool ar_lost; /* events were lost: every watched directory is looked into again */
	bool ar_full; /* a bound was reached: the next settle trips (fails closed) */
	char *ar_full_path;
	/* A watched directory's rename: IN_MOVED_FROM, IN_MOVED_TO, then its own IN_MOVE_SELF. */
	bool ar_from, ar_to, ar_linked;
	uint32_t ar_from_cookie, ar_to_cookie;
	int ar_to_wd;
	char *ar_to_name;
	unsigned ar_gen;
	char *created[AUTORUN_MAX_CREATED];
	size_t n_created;
	size_t ar_entries;
	/*
	 * What is left of the resolutions of links to directories the command
	 * makes where only the depth goes on (W/proj -> d/d/d/p), from
	 * AUTORUN_MAX_FOLLOWS (ward__guard_autorun_init): past them such links
	 * are not followed (where they lead lies deeper than the scan's levels
	 * anyway, docs/policy.md), so that a command flipping links cannot
	 * keep a shared server's loop busy.
	 */
	unsigned ar_follows;
};
#define AUTORUN_MAX_FOLLOWS 64

/* ------------------------------------------------------------ autorun watches (guard-autorun.c) */

/* Watches the scan's directories (p->watches) at the start; -errno with err. */
WARD_INTERNAL int ward__guard_autorun_init(struct ward__guard *g, struct ward_error *err);
WARD_INTERNAL void ward__guard_autorun_release(struct ward__guard *g);
/*
 * Once every process of the sandbox is dead: removes the protected names the
 * command created (recorded, and whatever a last look into the watched
 * directories finds that did not exist at the start), calling report for
 * each; names the first it could not remove in left.
 */
WARD_INTERNAL unsigned ward__guard_autorun_restore(struct ward__guard *g,
						   ward__guard_report_fn report, void *userdata,
						   char *left, size_t left_size);

/* ------------------------------------------------------------ autorun state (guard-watch.c) */

/* The watch of wd, or NULL. */
WARD_INTERNAL struct autorun_watch *ward__guard_autorun_find(struct ward__guard *g, int wd);
/*
 * Queues a new directory (copied) that appeared in the watched directory
 * parent; false when the queue is full (then the guard fails closed).
 */
WARD_INTERNAL bool ward__guard_autorun_queue(struct ward__guard *g, const char *dir,
					     const char *name, int parent,
					     const struct ward__autorun_point *at);
/*
 * A symlink at dir/name where names matter (ward__autorun_match_link): 1 when
 * it is a change (path and *ret_reason set, recorded as created), 2 when
 * where it leads was queued, 0 otherwise.
 */
WARD_INTERNAL int ward__guard_autorun_link(struct ward__guard *g, const char *dir, const char *name,
					   const struct ward__autorun_point *at, char *path,
					   size_t size, const char **ret_reason);
/* Derives every watch's path again, after one changed its parent or name. */
WARD_INTERNAL void ward__guard_autorun_paths(struct ward__guard *g);
/* Records a created protected path, to be removed once the sandbox is dead. */
WARD_INTERNAL void ward__guard_autorun_created(struct ward__guard *g, const char *path);

/* ------------------------------------------------------------ removing (guard-remove.c) */

/* Opens a directory by an absolute path without following any symlink on the way; -errno. */
WARD_INTERNAL int ward__open_dir_nofollow(const char *path);

/* ------------------------------------------------------------ shared instance (guard-watch.c) */

/* Adds g's interest in the inode at path (mask); its watch descriptor, or -errno. */
WARD_INTERNAL int ward__watches_add(struct ward__watches *w, struct ward__guard *g,
				    const char *path, uint32_t mask);
/* Puts g on w (a guard being built). */
WARD_INTERNAL void ward__watches_join(struct ward__watches *w, struct ward__guard *g);
/* Drops every interest of g and takes it off its instance; nothing without one. */
WARD_INTERNAL void ward__watches_leave(struct ward__guard *g);
