/* SPDX-License-Identifier: MIT */
#pragma once

#include <jansson.h>

#include "basic/loop.h"
#include "basic/macro.h"
#include "ward/ward.h"

/*
 * The filesystem methods of `ward serve` (Codex's exec-server fs methods): readFile,
 * writeFile, createDirectory, getMetadata, canonicalize, readDirectory,
 * remove, copy, open/readBlock/writeBlock/close, walk. Each takes an optional
 * `sandbox` (the same object as process/start's): with one, the operation
 * runs inside a sandbox built exactly as a command's, so it can neither
 * write outside the writable roots nor read a denied path, whatever
 * symlinks, `..`, hard links or FIFOs it meets. Errors are answered with
 * Codex's codes: -32004 not found, -32600 invalid input or permission,
 * -32603 anything else, the message as Codex words it ("<strerror> (os error
 * N)"). docs/protocol.md lists every method with its limits.
 */

/* Per-connection state: the open file handles (at most 128, ids of at most 32 bytes). */
struct ward__xfs;

/*
 * The server's: operations still running whose connection went. They finish
 * on their own (answering nobody); the server ends those left when it ends.
 */
struct ward__xfs_orphans {
	struct run *head;
	size_t n; /* each still holds a sandbox: the server counts them as connections */
};

struct ward__xfs_context {
	const struct ward_policy *policy; /* the server's template (for the sandbox's defaults) */
	const char *cwd; /* the server's working directory */
	bool allow_unsandboxed; /* a request without sandbox runs unsandboxed (else in the template) */
	struct ward__xfs_orphans *orphans; /* the server's, outliving every connection */
	const char *own_dir; /* ward's own directory, kept read-only in sandboxes (or NULL) */
};

/*
 * The answer to one request: result (owned by the callee) on success, or
 * NULL with a JSON-RPC error code and message. Called exactly once per
 * ward__xfs_handle(), possibly later from the loop; never from within
 * ward__xfs_handle() itself when the operation runs in a sandbox.
 */
typedef void (*ward__xfs_reply_fn)(void *reply_ctx, json_t *result, int code, const char *message);

WARD_INTERNAL int ward__xfs_new(struct ward__xfs **ret);
/* Closes the handles; operations still running answer through their callbacks. Accepts NULL. */
WARD_INTERNAL void ward__xfs_free(struct ward__xfs *fs);
/* Kills the orphaned operations and frees them (each answers nobody). */
WARD_INTERNAL void ward__xfs_orphans_release(struct ward__xfs_orphans *o);
/* True for the filesystem methods ward serves ("fs/readFile", ...). */
WARD_INTERNAL bool ward__xfs_is_method(const char *method);
/* Handles one request (method is one of ward__xfs_is_method()). */
WARD_INTERNAL void ward__xfs_handle(struct ward__loop *l, struct ward__xfs *fs,
				    const struct ward__xfs_context *ctx, const char *method,
				    json_t *params, ward__xfs_reply_fn reply, void *reply_ctx);
