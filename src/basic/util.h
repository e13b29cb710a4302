/* SPDX-License-Identifier: MIT */
#pragma once

#include <sys/types.h>

#include "basic/macro.h"

/* ---- paths */

/* True when path equals prefix or lies beneath it (component-wise; both absolute, normalised). */
WARD_INTERNAL bool ward__path_under(const char *path, const char *prefix);
/* Number of components of an absolute path ("/" is 0). */
WARD_INTERNAL size_t ward__path_depth(const char *path);
/* Returns a malloc()ed "a/b" (no doubled slash), or NULL on ENOMEM. */
WARD_INTERNAL char *ward__path_join(const char *a, const char *b);
/*
 * The directory and the last component of a canonical absolute path: the
 * directory into buf ("/" for a name in the root), *ret_name into path.
 * Returns buf, or NULL when path has no '/' or its directory does not fit.
 */
WARD_INTERNAL const char *ward__path_split(const char *path, char *buf, size_t size,
					   const char **ret_name);
/* Makes path absolute against the current directory and removes "." / ".." / "//"
 * lexically (no symlink resolution). malloc()ed, NULL with errno set on error. */
WARD_INTERNAL char *ward__path_absolute(const char *path);
/*
 * Opens the directory name in dfd for reading, not following a last-component
 * symlink. When its mode refuses ward's user (0300, 0100, 0) and it is that
 * user's own, its owner gets read and search first (a command of the same
 * user could have set the mode to hide what it holds), through an O_PATH
 * descriptor, never a path. The descriptor, or -errno (-EACCES: not ours).
 */
WARD_INTERNAL int ward__open_dir_readable(int dfd, const char *name);
/* mkdir -p: each missing component of dir made with mode. Returns 0 or -errno. */
WARD_INTERNAL int ward__mkdir_parents(const char *dir, mode_t mode);
/* The value of a hexadecimal digit, or -1. */
WARD_INTERNAL int ward__hexval(int c);

/* ---- fds */

WARD_INTERNAL int ward__fd_nonblock(int fd, bool nonblock);
WARD_INTERNAL int ward__fd_cloexec(int fd, bool cloexec);
/*
 * A close-on-exec pipe whose end fds[nonblock_end] alone is non-blocking
 * (ward's end; the command gets an ordinary blocking pipe). -errno, fds -1.
 */
WARD_INTERNAL int ward__pipe_one_nonblock(int fds[2], int nonblock_end);
/* write() all of buf, retrying on EINTR/short writes; -errno on failure. */
WARD_INTERNAL int ward__write_all(int fd, const void *buf, size_t len);
/* read() up to len bytes, retrying on EINTR until EOF or len; returns bytes or -errno. */
WARD_INTERNAL ssize_t ward__read_full(int fd, void *buf, size_t len);
/* Reads a whole file of at most max bytes into a malloc()ed NUL-terminated buffer. -EFBIG if larger. */
WARD_INTERNAL int ward__read_file(const char *path, size_t max, char **ret, size_t *ret_len);
/*
 * Like ward__read_file, but only a regular file (following symlinks): never
 * blocks on a FIFO or opens a device. For files a sandboxed command may have
 * planted (git metadata in a writable root). -EINVAL for anything else.
 */
WARD_INTERNAL int ward__read_regular_file(const char *path, size_t max, char **ret,
					  size_t *ret_len);
/*
 * Reads at most size-1 bytes of a small file (a /proc value) into buf,
 * NUL-terminated; the length or -errno. No malloc (safe after fork).
 */
WARD_INTERNAL ssize_t ward__read_small(const char *path, char *buf, size_t size);
/* A number from a small file (a /proc/sys value), dflt when it cannot be read. No malloc. */
WARD_INTERNAL long ward__read_proc_long(const char *path, long dflt);
/* The kernel's pid_max (pids are below it), 4194304 when it cannot be read. No malloc. */
WARD_INTERNAL long ward__read_pid_max(void);
/*
 * write(2) that never raises SIGPIPE in the process (a pipe cannot take
 * MSG_NOSIGNAL): EPIPE is returned as -1/errno like any error.
 */
WARD_INTERNAL ssize_t ward__write_nosigpipe(int fd, const void *p, size_t n);
/*
 * Tells ward__write_nosigpipe() that this process ignores SIGPIPE for good
 * (a server that set SIG_IGN at start): it can then write plainly.
 */
WARD_INTERNAL void ward__sigpipe_ignored(void);
/* Writes a string to a file (open O_WRONLY|O_CLOEXEC, no create). Async-signal-safe. */
WARD_INTERNAL int ward__write_file(const char *path, const char *s);

/* ---- numbers */

/* Parses a decimal unsigned integer with no sign, no trailing junk, no overflow. */
WARD_INTERNAL int ward__parse_u64(const char *s, uint64_t *ret);
/* Parses "1.5", "10" seconds into milliseconds (max 1e9 s). */
WARD_INTERNAL int ward__parse_seconds_ms(const char *s, uint64_t *ret_ms);
/* Parses a byte size: "1048576", "64k", "1M", "2G" (binary multiples). */
WARD_INTERNAL int ward__parse_size(const char *s, uint64_t *ret);

/* ---- time */

WARD_INTERNAL uint64_t ward__now_ms(void); /* CLOCK_MONOTONIC */
WARD_INTERNAL uint64_t ward__now_ns(void);

/* ---- the user */

/* The user's home directory ($HOME, else the password file). malloc()ed, -ENOENT. */
WARD_INTERNAL int ward__home_dir(char **ret_home);
/*
 * Where ward's journal of changes lives (src/changes): $WARD_CHANGES_DIR,
 * else $XDG_STATE_HOME/ward/changes, else ~/.local/state/ward/changes.
 * malloc()ed and absolute (not resolved), NULL without a home.
 */
WARD_INTERNAL char *ward__changes_dir_path(void);
