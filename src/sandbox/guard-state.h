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

struct ward__guard {
	int fd; /* the inotify instance of its own, or -1 with a shared one */
	struct ward__watches *hub; /* the shared instance, or NULL */
	bool fallback;
	bool tripped;
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
};

/* ------------------------------------------------------------ shared instance (guard-watch.c) */

/* Adds g's interest in the inode at path (mask); its watch descriptor, or -errno. */
WARD_INTERNAL int ward__watches_add(struct ward__watches *w, struct ward__guard *g,
				    const char *path, uint32_t mask);
/* Puts g on w (a guard being built). */
WARD_INTERNAL void ward__watches_join(struct ward__watches *w, struct ward__guard *g);
/* Drops every interest of g and takes it off its instance; nothing without one. */
WARD_INTERNAL void ward__watches_leave(struct ward__guard *g);
