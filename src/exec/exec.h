/* SPDX-License-Identifier: MIT */
/*
 * DESIGN: src/exec owns running a command in a sandbox and handing its
 * results back: the captured run with its timeout and head+tail capped
 * output (exec.c, capture.c), the command's environment (env.c), the JSON
 * form of a result (result-json.c), the asynchronous process an event loop
 * drives (proc.c, proc.h) and its pool of prepared sandboxes (pool.c,
 * pool.h).
 *
 * It may call src/sandbox, src/net (the proxy of a sandbox whose network is
 * by domain: netproxy.c), src/policy and src/basic (and include/ward/ward.h
 * for the public types). src/session, src/approval, src/server and src/cli
 * call it; it calls none of them (the one-way rule of DESIGN.md). The owner
 * of a proc hears from it only through the callbacks it passed down (struct
 * ward__proc_ops).
 */
#pragma once

#include <jansson.h>
#include <sys/types.h>

#include "basic/buf.h"
#include "basic/macro.h"
#include "net/proxy.h"
#include "sandbox/sandbox.h"
#include "ward/ward.h"

/* ------------------------------------------------------------ limits */

/* Per-capture caps (stdout, stderr, aggregated, each). */
#define WARD_OUTPUT_CAP_DEFAULT ((size_t)1 << 20)
#define WARD_OUTPUT_CAP_MIN ((size_t)64)
/* Larger caps are refused: ward's memory must stay bounded whatever the options say. */
#define WARD_OUTPUT_CAP_MAX ((size_t)256 << 20)

/* Bytes fed to stdin from memory. */
#define WARD_STDIN_MAX ((size_t)64 << 20)

/* The command line handed to ward_run_options_set_argv(). */
#define WARD_ARGV_MAX_ARGS 65536
#define WARD_ARGV_MAX_BYTES ((size_t)2 << 20)

/* The environment of the command: variables and bytes (sum of "NAME=VALUE\0"). */
#define WARD_ENV_MAX_VARS 4096
#define WARD_ENV_MAX_BYTES ((size_t)1 << 20)
/* Patterns per list (exclude, include_only). */
#define WARD_ENV_MAX_PATTERNS 256

/* The fixed read size: every read() of the command's output goes through one buffer this large. */
#define WARD_READ_CHUNK ((size_t)64 << 10)

/* Exit codes of a run, as env(1) and timeout(1) use them (STYLE.md). */
#define WARD_EXIT_CODE_TIMEOUT 124
#define WARD_EXIT_CODE_SETUP 125
#define WARD_EXIT_CODE_CANNOT_EXEC 126
#define WARD_EXIT_CODE_NOT_FOUND 127

/* After the command ended, how long pipes still held open by a leftover process are drained. */
#define WARD_DRAIN_MS 100

/* ------------------------------------------------------------ run options */

struct ward_run_options {
	char **argv; /* NULL-terminated copy */
	uint64_t timeout_ms; /* 0: none */
	size_t max_output; /* per capture */

	uint8_t *stdin_data; /* owned; NULL with have_stdin_data and 0 bytes is an empty stdin */
	size_t stdin_len;
	bool have_stdin_data;
	int stdin_fd; /* -1, or a caller's fd the command reads directly (not owned) */

	enum ward_env_inherit env_inherit;
	bool env_default_excludes;
	char **env_exclude; /* glob patterns */
	size_t n_env_exclude;
	char **env_include_only;
	size_t n_env_include_only;
	char **env_set; /* "NAME=VALUE", a later one for the same NAME replaces the earlier */
	size_t n_env_set;

	ward_output_fn output_fn;
	void *output_userdata;

	bool json_base64;
	/*
	 * The caller exits right after the run (the CLI): the sandbox's init is
	 * left to die with it (parent-death signal) instead of being reaped, which
	 * would wait for the kernel to tear its namespaces and inotify watches down.
	 */
	bool caller_exits;
	/*
	 * Internal: the network by domain's hooks (rules, questions, the audit
	 * log) and whether questions may be asked; NULL: the patterns alone.
	 */
	const struct ward_net_hooks *net_hooks;
	bool net_ask;
	/*
	 * Internal: copy-on-write layers over the writable roots (src/changes):
	 * the run's changes stay off the host; init is reaped at the end (its
	 * end unmounts the layers), whatever caller_exits says.
	 */
	const struct ward__layer *layers;
	size_t n_layers;
};

/* Internal: see caller_exits. */
WARD_INTERNAL void ward__run_options_set_caller_exits(struct ward_run_options *opts, bool exits);

/* ------------------------------------------------------------ cancellation */

struct ward_cancel {
	int fd; /* eventfd, readable once triggered; the run that sees it consumes it */
};

/* ------------------------------------------------------------ results */

/* Index into ward_result.out: the aggregated output, then the two streams. */
enum {
	WARD__OUT_AGGREGATED = 0,
	WARD__OUT_STDOUT = 1,
	WARD__OUT_STDERR = 2,
	WARD__OUT_N = 3,
};

struct ward__output {
	uint8_t *data; /* head, marker, tail; NUL-terminated, never NULL in a finished result */
	size_t len;
	uint64_t omitted;
};

struct ward_result {
	int exit_code;
	int signal; /* 0: none */
	bool timed_out;
	bool cancelled;
	uint64_t duration_ms;
	struct ward__output out[WARD__OUT_N];

	/* Set when the command could not be executed (126/127): the reason. */
	bool have_error;
	struct ward_error error;

	bool denials_exact; /* the host let ward observe denials */
	bool guard_tripped; /* a missing protected path was created (and removed) */
	char guard_left[PATH_MAX + 64]; /* "path: reason" when that entry could not be removed */
	struct ward__denial *denials;
	size_t n_denials;
	size_t denials_dropped;

	/* The sandbox that ran the command. */
	bool isolated;
	int landlock_abi;
	bool seccomp;
	bool network;
	bool network_by_domain; /* through ward's proxy (docs/policy.md) */
	char fallback_missing[512]; /* empty unless running without namespaces */
	struct ward__limits_report limits; /* the limits, how enforced, what was used and hit */

	bool json_base64; /* from the options: add base64 forms to the JSON */
};

/* ------------------------------------------------------------ capture (capture.c) */

/*
 * Head+tail capture of one stream, memory bounded by its cap C whatever is
 * written: the first C/2 bytes are kept as they come, the last C - C/2 bytes
 * in a ring, and everything in between is only counted. When finished, the
 * marker "\n... N bytes omitted ...\n" goes between head and tail if anything
 * was dropped; the marker does not count toward the cap, so a finished
 * capture holds at most C + WARD_CAPTURE_MARKER_MAX bytes.
 *
 * Storage is one ward__buf of max C + WARD_CAPTURE_MARKER_MAX bytes: the head
 * occupies [0, head_cap), the tail region [head_cap, head_cap + tail_cap). The
 * tail region fills linearly, then wraps: ring_pos is the offset of its oldest
 * byte once it is full.
 */
#define WARD_CAPTURE_MARKER_MAX 64

struct ward__capture {
	struct ward__buf buf;
	size_t cap;
	size_t head_cap;
	size_t tail_cap;
	size_t ring_pos;
	uint64_t total; /* bytes appended */
};

/* cap must be within [WARD_OUTPUT_CAP_MIN, WARD_OUTPUT_CAP_MAX]. Allocates nothing yet. */
WARD_INTERNAL int ward__capture_init(struct ward__capture *c, size_t cap);
/* Takes n more bytes. Fails only with -ENOMEM (the capture is unchanged then). */
WARD_INTERNAL int ward__capture_append(struct ward__capture *c, const void *p, size_t n);
/* Bytes dropped from the middle so far. */
WARD_INTERNAL uint64_t ward__capture_omitted(const struct ward__capture *c);
/*
 * Materialises head, marker and tail into a malloc()ed NUL-terminated buffer
 * (in place: no second copy of the output exists at any time) and resets the
 * capture. -ENOMEM leaves the capture as it was.
 */
WARD_INTERNAL int ward__capture_finish(struct ward__capture *c, uint8_t **ret, size_t *ret_len,
				       uint64_t *ret_omitted);
WARD_INTERNAL void ward__capture_release(struct ward__capture *c);
/* Writes the marker for omitted bytes into out (at least WARD_CAPTURE_MARKER_MAX bytes); returns its length. */
WARD_INTERNAL size_t ward__capture_marker(uint64_t omitted, char *out);

/* ------------------------------------------------------------ environment (env.c) */

/*
 * Builds the command's environment from the run options' environment policy
 * (o NULL: the defaults, inherit all) and the policy's network setting (p NULL:
 * treated as network off). Steps, in order:
 *   1. inherit all | core | none from the caller's environ (the first of
 *      duplicate names wins, as getenv() does; entries without '=' are dropped);
 *   2. when enabled, the default excludes *KEY*, *SECRET*, *TOKEN*;
 *   3. the exclude patterns;
 *   4. the include_only patterns (when any: variables matching none are dropped);
 *   5. the set entries, which replace or add;
 *   6. WARD_SANDBOX=1, and with the network off WARD_SANDBOX_NETWORK_DISABLED=1
 *      and CODEX_SANDBOX_NETWORK_DISABLED=1; with the network by domain the
 *      proxy variables of every common tool, pointing at the sandbox's proxy.
 * Patterns are fnmatch(3) globs on the name, case-insensitive.
 * -E2BIG beyond WARD_ENV_MAX_VARS variables or WARD_ENV_MAX_BYTES bytes.
 * *ret_envp is a NULL-terminated malloc()ed vector of malloc()ed strings
 * (free with strv_freep / _cleanup_strv_free_).
 */
WARD_INTERNAL int ward__exec_env_build(const struct ward_run_options *o,
				       const struct ward_policy *p, char ***ret_envp);
/*
 * With the network by domain, sets the proxy variables (those step 6 of
 * ward__exec_env_build() adds) in an environment the caller built itself
 * (ward serve's explicit env), replacing *envp. Does nothing otherwise.
 */
WARD_INTERNAL int ward__exec_env_add_net(const struct ward_policy *p, char ***envp);
/* The names inherited with inherit=core, NULL-terminated. */
WARD_INTERNAL extern const char *const ward__env_core_names[];

/* ------------------------------------------------------------ JSON (result-json.c) */

/*
 * Appends s as a JSON string (with the quotes) to b. Valid UTF-8 is kept;
 * each maximal invalid subsequence (Unicode's "best practice" for U+FFFD
 * substitution) becomes U+FFFD. Control characters, '"' and '\\' are escaped.
 */
WARD_INTERNAL int ward__json_append_string(struct ward__buf *b, const void *s, size_t len);
/*
 * A sandbox's limits and use of resources in the JSON of every front end
 * (docs/json.md): "limits" (per asked resource, how it is enforced:
 * "cgroup-v2", "cgroup-v1", "rlimit" or "none"), "usage" (CPU time, peaks;
 * null when nothing was measured) and "limit" (the one hit, or null), added
 * to o. The three pieces alone as well.
 */
WARD_INTERNAL void ward__limits_json_add(json_t *o, const struct ward__limits_report *rep);
WARD_INTERNAL json_t *ward__limits_enforcement_json(const struct ward__limits_report *rep);
WARD_INTERNAL json_t *ward__usage_json(const struct ward__limits_report *rep);
WARD_INTERNAL json_t *ward__limit_hit_json(const struct ward__limits_report *rep);
/* Appends the standard base64 (RFC 4648, padded) of data, with quotes, to b. */
WARD_INTERNAL int ward__json_append_base64(struct ward__buf *b, const void *data, size_t len);
/*
 * A JSON string of arbitrary bytes: as they are when valid UTF-8, else each
 * invalid sequence replaced with U+FFFD. NULL on ENOMEM.
 */
WARD_INTERNAL json_t *ward__json_string_lossy(const void *s, size_t len);
