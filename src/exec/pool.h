/* SPDX-License-Identifier: MIT */
#pragma once

#include "basic/loop.h"
#include "basic/macro.h"
#include "policy/policy.h"
#include "sandbox/sandbox.h"

/*
 * Prepared sandboxes (pool.c), under the asynchronous procs (proc.h): a
 * proc started with a pool takes its sandbox from it.
 *
 * A pool of prepared sandboxes for one owner (a session of ward serve while
 * one connection holds it, the session store of ward mcp): for each policy
 * the owner starts processes with, the next sandbox is built ahead (its init
 * in fresh namespaces with the mount view, the network, the Landlock ruleset
 * and the seccomp filter ready), so that a start only hands it the command.
 * The rules that make a prepared sandbox as good as a cold one are in pool.c:
 * used once, only for a policy whose fingerprint at the start is the one it
 * was built for, never after the host's mounts changed, never shared between
 * owners, thrown away after WARD_POOL_IDLE_MS unused. Two are kept ready per
 * policy, so that back-to-back starts never wait for one. Nothing is
 * prepared where the host refused namespaces.
 */
struct ward__proc_pool;

#define WARD_POOL_IDLE_MS 5000
/* Sandboxes kept ready per policy (pool.c says why two). */
#define WARD_POOL_DEPTH 2

WARD_INTERNAL int ward__proc_pool_new(struct ward__loop *l, struct ward__proc_pool **ret);
/*
 * Kills the prepared sandboxes (the loop reaps them) and gives up the
 * owner's reference (procs started with the pool hold one each until they
 * are freed). Accepts NULL.
 */
WARD_INTERNAL void ward__proc_pool_free(struct ward__proc_pool *pool);
WARD_INTERNAL struct ward__proc_pool *ward__proc_pool_ref(struct ward__proc_pool *pool);
WARD_INTERNAL void ward__proc_pool_unref(struct ward__proc_pool *pool);
/* A proc started with the pool closed: the next sandbox may be built now. */
WARD_INTERNAL void ward__proc_pool_kick(struct ward__proc_pool *pool);
/* Throws every prepared sandbox away (the owner changes hands). Accepts NULL. */
WARD_INTERNAL void ward__proc_pool_flush(struct ward__proc_pool *pool);
/*
 * For ward__proc_start(): 1 and the sandbox in *ret when one prepared for p
 * (resolved), tty and observe_fs is ready; 0 otherwise. The pool's
 * sandboxes are made beneath cg_parent (a budget group, or NULL); another
 * one than before throws the prepared ones away. Either way the pool
 * prepares the next one for them, from the loop: at once after a cold start,
 * once the process closed (ward__proc_pool_kick) or a little while after its
 * start, whichever comes first.
 */
WARD_INTERNAL int ward__proc_pool_take(struct ward__proc_pool *pool, const struct ward_policy *p,
				       bool tty, bool observe_fs,
				       const struct ward__cgroup *cg_parent,
				       struct ward__sandbox *ret);
/* How many prepared sandboxes are ready (for tests and logs). */
WARD_INTERNAL size_t ward__proc_pool_ready(const struct ward__proc_pool *pool);
/*
 * Kills a sandbox that will not be used and releases it; the loop reaps its
 * init. For the pool's own sandboxes and for a proc's that failed to start.
 */
WARD_INTERNAL void ward__proc_abandon_sandbox(struct ward__loop *l, struct ward__sandbox *sb);
