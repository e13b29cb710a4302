/* SPDX-License-Identifier: MIT */
#pragma once

#include <jansson.h>

#include "basic/macro.h"
#include "ward/ward.h"

/*
 * The policy a request of `ward serve` runs under, shared by process/start
 * and the filesystem methods so that a file operation honours a `sandbox`
 * exactly as a command started with the same object would:
 *   - params.wardPolicy (ward's extension): ward's own policy JSON, or
 *     Codex's legacy SandboxPolicy, on top of the server's template;
 *   - params.sandbox: Codex's FileSystemSandboxContext ({permissions, cwd?,
 *     workspaceRoots?}); ":project_roots" are its cwd (or cwd below) and the
 *     workspace roots;
 *   - neither: the server's template, or danger-full-access (Codex's meaning
 *     of no sandbox) when the server allows unsandboxed requests.
 * The template is copied; a request's own policy gets its workspace at the
 * sandbox's cwd, else cwd (absolute); the server's template keeps its own
 * (cwd is then only where a command starts). A result that is
 * danger-full-access is refused (-EPERM) unless allow_unsandboxed. own_dir
 * (ward's own directory, the audit log's; or NULL) is kept read-only in a
 * workspace-write result. The policy returned is resolved; *ret_sandboxed
 * tells whether it sandboxes.
 */
WARD_INTERNAL int ward__xs_build_policy(const struct ward_policy *tmpl, bool allow_unsandboxed,
					const char *own_dir, json_t *params, const char *cwd,
					struct ward_policy **ret, bool *ret_sandboxed,
					struct ward_error *e);
