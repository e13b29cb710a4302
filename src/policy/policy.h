/* SPDX-License-Identifier: MIT */
/*
 * DESIGN: src/policy owns the policy model: what a sandbox may write, read
 * and reach, and why a path is protected (policy.c, policy-copy.c), its JSON
 * forms, ward's own and Codex's (policy-json.c, profile.c), and its
 * resolution against the host's real paths (resolve.c). It starts nothing
 * and confines nothing.
 *
 * It may call src/basic only (and include/ward/ward.h). Every folder above
 * reads it, src/sandbox first; it calls none of them (the one-way rule of
 * DESIGN.md).
 */
#pragma once

#include <jansson.h>
#include <stdint.h>
#include <sys/types.h>

#include "basic/macro.h"
#include "net/net.h"
#include "ward/ward.h"

/*
 * The policy model. struct ward_policy is opaque to library users; the sandbox
 * reads the resolved_* fields, which ward_policy_resolve() fills.
 *
 * Hard caps: every list an agent can grow is bounded so a hostile policy file
 * cannot exhaust memory or the kernel's mount table.
 */
#define WARD_POLICY_MAX_PATHS 256 /* per list: writable, protect, deny_read, unix sockets */
#define WARD_POLICY_MAX_FILE 1048576 /* bytes of a --policy file */
/* Resolved protected paths (git, autorun names, PATH, pins): more is an error naming the cap. */
#define WARD_POLICY_MAX_PROTECTED 4096

/* Why a path is protected, shown by `ward policy show` and in denial reports. */
enum ward__protect_kind {
	/* An existing file or directory bound read-only over itself. */
	WARD_PROTECT_READONLY = 1,
	/*
	 * An existing directory bound read-write over itself. It stays writable,
	 * but being a mount point it cannot be renamed, removed or replaced
	 * (EBUSY), which stops "mv .git .git.old && mkdir .git" from sidestepping
	 * the read-only binds beneath it.
	 */
	WARD_PROTECT_PIN = 2,
	/*
	 * A path that does not exist yet inside a writable root. Nothing is
	 * mounted (ward never creates mount points on the host); the parent watches
	 * `guard_dir` for `guard_name` being created (see sandbox/guard).
	 */
	WARD_PROTECT_MISSING = 3,
};

struct ward__protected {
	char *path; /* canonical absolute path (for MISSING: canonical parent + rest) */
	enum ward__protect_kind kind;
	bool is_dir;
	char *guard_dir; /* MISSING only: deepest existing ancestor (canonical) */
	char *guard_name; /* MISSING only: first missing component under guard_dir */
	const char *
		reason; /* static string: "git hooks", "git config", "agent config", "--protect", ... */
};

/*
 * Autorun names (autorun.c): the files and directories that tools run code
 * from later, outside the sandbox (shell startup files, editor tasks, agent
 * configuration, ...), protected in every directory down to
 * WARD_AUTORUN_DEPTH levels beneath each writable root, plus the autostart
 * and credential places of a home directory inside one. A point says which
 * names are protected in one directory: the entries of the table (autorun.c)
 * with k components already matched on the way (bit i of m[k], a set of table
 * indexes in WARD_AUTORUN_MASK_WORDS words), and, when depth >= 0,
 * the names protected everywhere (and with depth > 0, in new subdirectories
 * too, one level less).
 */
#define WARD_AUTORUN_DEPTH 2 /* levels beneath a writable root looked into */
#define WARD_AUTORUN_MAX_COMPONENTS 3 /* of one table entry (".config/systemd/user") */
#define WARD_AUTORUN_MASK_WORDS 2 /* 64-bit words of a set of table entries: 128 entries */
#define WARD_AUTORUN_MAX_DIRS 4096 /* directories the launch scan looks into, per policy */
#define WARD_AUTORUN_MAX_ENTRIES (1 << 18) /* directory entries it reads, per policy */
#define WARD_AUTORUN_SCAN_MS 100 /* and its time, per policy */
#define WARD_AUTORUN_MAX_WATCHES 8192 /* directories one guard watches: launch and new ones */
#define WARD_AUTORUN_MAX_UNREAD 3072 /* directories past the scan's bounds watched unread */

struct ward__autorun_point {
	uint64_t m[WARD_AUTORUN_MAX_COMPONENTS][WARD_AUTORUN_MASK_WORDS];
	int8_t depth;
	bool paths; /* on the way to a PATH directory that does not exist yet (p->path_missing) */
};

/*
 * A directory the guard watches for autorun names appearing in it; or, with
 * link set, a symlink the scan met where names continue beneath it
 * (~/.config -> dotfiles/config): path is the link (not canonical), target
 * the canonical directory it led to (watched as an entry of its own when it
 * lies in the writable roots), NULL when it led nowhere. The guard leaves
 * such a link alone while it still leads there.
 */
struct ward__autorun_watch {
	char *path; /* canonical, but for a link */
	char *target;
	bool link;
	struct ward__autorun_point at;
	/*
	 * Past the scan's bounds: watched but not read, so what is in it was
	 * not looked at (nothing in it is known to be the person's own).
	 */
	bool unread;
};

struct ward__deny {
	char *path; /* canonical absolute */
	bool is_dir;
};

struct ward__unix_socket {
	char *path; /* canonical absolute */
	dev_t dev;
	ino_t ino;
};

struct ward__strv {
	char **v;
	size_t n;
};

/*
 * Resource limits of one sandbox (limits.c; docs/policy.md "limits"). Each
 * is 0 when not asked for. How each one is enforced depends on the host
 * (src/sandbox/limits.h): a limit that cannot be is reported, never implied.
 */
enum ward__rlimit {
	WARD_RLIMIT_AS = 0, /* bytes of address space per process (RLIMIT_AS) */
	WARD_RLIMIT_CORE, /* bytes of a core dump (RLIMIT_CORE); 0 is a value here */
	WARD_RLIMIT_CPU, /* seconds of CPU time per process (RLIMIT_CPU) */
	WARD_RLIMIT_FSIZE, /* bytes of a file written (RLIMIT_FSIZE) */
	WARD_RLIMIT_NOFILE, /* open descriptors per process (RLIMIT_NOFILE) */
	WARD_RLIMIT_N,
};

/* Bounds of what a limit may say (anything outside is refused, never clamped). */
#define WARD_LIMIT_MEMORY_MIN ((uint64_t)1 << 20) /* below it not even init starts */
#define WARD_LIMIT_MEMORY_MAX ((uint64_t)1 << 60)
#define WARD_LIMIT_PIDS_MAX ((uint64_t)4194304) /* the kernel's PID_MAX_LIMIT */
#define WARD_LIMIT_CPU_MIN_MILLI 10 /* cpu.max's smallest quota over a 100 ms period: 1 ms */

struct ward__limits {
	uint64_t memory; /* bytes of memory, and as many of swap, for all processes together */
	uint64_t pids; /* processes and threads of the command at once (ward's init not counted) */
	uint32_t cpu_milli; /* thousandths of a CPU of bandwidth */
	bool rlimit_set[WARD_RLIMIT_N];
	uint64_t rlimit[WARD_RLIMIT_N];
	bool require; /* refuse to run when one of them cannot be enforced (--require-limits) */
};

struct ward_policy {
	enum ward_sandbox_mode mode;
	char *cwd; /* absolute (made absolute when set); NULL means the caller's cwd */
	struct ward__strv writable; /* as given, absolute */
	struct ward__strv protect;
	struct ward__strv unprotect; /* default protections lifted (--unprotect) */
	struct ward__strv deny_read;
	struct ward__strv unix_sockets;
	bool network;
	bool network_set; /* network was given explicitly (setter, --network, JSON) */
	/*
	 * The network by domain (--allow-domain, --deny-domain): with any
	 * pattern, the sandbox keeps its empty network namespace (network stays
	 * false) and reaches the network only through ward's proxy (src/net),
	 * which allows what the patterns (and the rules, and a person) allow.
	 */
	struct ward__net_pattern *allow_domains;
	size_t n_allow_domains;
	struct ward__net_pattern *deny_domains;
	size_t n_deny_domains;
	/* Non-public ranges the proxy may connect to anyway (--allow-address). */
	struct ward__net_cidr *allow_addresses;
	size_t n_allow_addresses;
	char *dns_server; /* the server the proxy resolves with (--dns-server), or NULL */
	bool exclude_slash_tmp;
	bool exclude_tmpdir_env_var;
	bool require_isolation;
	struct ward__limits limits;

	/* Filled by ward_policy_resolve(). */
	bool resolved;
	char *resolved_cwd; /* canonical */
	struct ward__strv roots; /* canonical existing directories, sorted so parents come first */
	struct ward__protected *protected; /* sorted so parents come first */
	size_t n_protected, cap_protected;
	struct ward__deny *deny;
	size_t n_deny;
	/*
	 * ward's journal of changes (src/changes), canonical: masked in every
	 * sandbox like a deny-read directory, so that no command reads a
	 * before-image or plants a record; kept apart from deny so that it does
	 * not make the supervisor observe every open. NULL: none to hide.
	 */
	char *journal;
	struct ward__unix_socket *sockets;
	size_t n_sockets;
	struct ward__strv
		notes; /* human-readable notes from resolution ("skipped missing root ...") */
	struct ward__strv unprotected; /* unprotect, canonical (missing tails kept) */
	char *home; /* canonical home directory when inside a writable root, else NULL */
	struct ward__strv
		path_missing; /* PATH directories inside writable roots that do not exist */
	struct ward__autorun_watch *watches; /* the directories the launch scan looked into */
	size_t n_watches;
	unsigned scan_depth; /* levels the scan completed beneath every root */
	bool scan_cut; /* a cap stopped the scan: some directories were watched unread */
	size_t scan_unread; /* those directories (watches with unread set) */
	unsigned scan_cached; /* directories whose listing came from the scan cache */
};

/* Whether the network is by domain: reached only through ward's proxy. */
static inline bool ward__policy_net_by_domain(const struct ward_policy *p)
{
	return p->n_allow_domains + p->n_deny_domains > 0;
}
/*
 * Adds a host pattern (deny: to the deny list) or an address range, as the
 * options and the JSON forms give them. -EINVAL with *why (static) for a
 * malformed one, -E2BIG past the caps; a pattern already there is not
 * added twice.
 */
WARD_INTERNAL int ward__policy_add_domain(struct ward_policy *p, const char *pattern, bool deny,
					  const char **why);
WARD_INTERNAL int ward__policy_add_address(struct ward_policy *p, const char *cidr,
					   const char **why);
/* Copies the network-by-domain settings of src into p (replacing p's). */
WARD_INTERNAL int ward__policy_copy_net(struct ward_policy *p, const struct ward_policy *src);
WARD_INTERNAL void ward__policy_release_net(struct ward_policy *p);

/* strv helpers: bounded by WARD_POLICY_MAX_PATHS. */
WARD_INTERNAL int ward__strv_push(struct ward__strv *v, const char *s);
/* Without the cap: for lists whose caller enforces a cap of its own. */
WARD_INTERNAL int ward__strv_push_unbounded(struct ward__strv *v, const char *s);
WARD_INTERNAL void ward__strv_release(struct ward__strv *v);
WARD_INTERNAL bool ward__strv_contains(const struct ward__strv *v, const char *s);

/*
 * The bytes a policy holds in memory, resolved state included, an estimate
 * never below the truth (each allocation charged its bytes and malloc's
 * overhead): a server that keeps a client's policy for every process it
 * runs charges this against its budget.
 */
WARD_INTERNAL size_t ward__policy_weight(const struct ward_policy *p);

/* Drops the resolved_* state (called by resolve and free). */
WARD_INTERNAL void ward__policy_clear_resolved(struct ward_policy *p);

/* True when path (canonical) is inside (or equal to) one of the resolved writable roots. */
WARD_INTERNAL bool ward__policy_path_writable(const struct ward_policy *p, const char *path);
/* Returns the protected entry covering path, or NULL. */
WARD_INTERNAL const struct ward__protected *ward__policy_protected_for(const struct ward_policy *p,
								       const char *path);
/*
 * True when a default protection at path (canonical) was lifted: path is an
 * --unprotect path or lies beneath one.
 */
WARD_INTERNAL bool ward__policy_unprotected(const struct ward_policy *p, const char *path);
/* Returns the deny entry covering path, or NULL. */
WARD_INTERNAL const struct ward__deny *ward__policy_deny_for(const struct ward_policy *p,
							     const char *path);

/*
 * Applies Codex's PermissionProfile (managed / disabled / external, see
 * docs/policy.md) to p, all or nothing. roots are the absolute directories
 * ":project_roots" stands for (the command's cwd first, then the workspace
 * roots). What ward cannot enforce exactly is refused (-EOPNOTSUPP), malformed
 * profiles -EINVAL, with err naming origin and the reason.
 */
WARD_INTERNAL int ward__policy_apply_profile(struct ward_policy *p, json_t *profile,
					     char *const *roots, size_t n_roots, const char *origin,
					     struct ward_error *err);

struct ward__buf;
/*
 * Appends to b a canonical form of the resolved policy: every field the
 * sandbox is built from (mode, network, cwd, roots, protected paths with
 * their kinds, deny-read paths, allowed sockets) and the identity (device,
 * inode, type) the paths it mounts have now. Two policies with the same
 * fingerprint give the same sandbox: a prepared sandbox is used only for a
 * process whose policy, resolved at its start, has the fingerprint the
 * sandbox was built for. -EINVAL when p is not resolved; -ENOBUFS past b's cap.
 */
WARD_INTERNAL int ward__policy_fingerprint(const struct ward_policy *p, struct ward__buf *b);

/* The resolved policy as a JSON object (ward policy show; the caller adds "enforcement"). */
WARD_INTERNAL json_t *ward__policy_to_json(const struct ward_policy *p);

/* ------------------------------------------------------------ autorun names (autorun.c) */

enum ward__autorun_kind {
	WARD_AUTORUN_NONE = 0, /* nothing to protect or to look into */
	WARD_AUTORUN_PROTECTED = 1, /* an autorun name: *ret_reason says which */
	WARD_AUTORUN_DESCEND = 2, /* a directory whose entries matter: *ret_child says which */
};

/*
 * What name, an entry of directory dir (canonical) where the names of at are
 * protected, is: protected, a directory to look into (is_dir), or nothing.
 * The launch scan and the guard (for what the command creates) both ask
 * this, so that the two agree. Lifted paths (--unprotect) are neither.
 */
WARD_INTERNAL enum ward__autorun_kind ward__autorun_match(const struct ward_policy *p,
							  const struct ward__autorun_point *at,
							  const char *dir, const char *name,
							  bool is_dir,
							  struct ward__autorun_point *ret_child,
							  const char **ret_reason);
/*
 * What a symlink at dir/name is to the guard (the command made it, or
 * changed where it leads), where the names of at are protected: where names
 * of the table continue beneath it (~/.config, ~/.config/systemd, ~/.cargo)
 * or on the way to a missing PATH directory, PROTECTED with the reason of
 * the name it leads to (the link would carry them past the watches); where
 * only the depth continues (W/proj -> d/d/d/p), DESCEND with ret_target
 * (PATH_MAX bytes) the canonical directory to look into with *ret_child's
 * names, when it lies in the writable roots. NONE otherwise, and for a link the
 * scan met at the start that still leads where it led. A name protected in
 * itself is the matcher's (is_dir false). follows (or NULL: no bound) is the
 * budget of resolutions of links where only the depth continues, one spent
 * each; at 0 such a link is NONE at once.
 */
WARD_INTERNAL enum ward__autorun_kind ward__autorun_match_link(
	const struct ward_policy *p, const struct ward__autorun_point *at, const char *dir,
	const char *name, unsigned *follows, struct ward__autorun_point *ret_child,
	char *ret_target, const char **ret_reason);
/* The point of a writable root (every name, depth levels beneath) and of a home directory. */
WARD_INTERNAL struct ward__autorun_point ward__autorun_root_point(unsigned depth);
WARD_INTERNAL struct ward__autorun_point ward__autorun_home_point(unsigned depth);
/* Whether any name is protected at a point (else it needs no watch). */
WARD_INTERNAL bool ward__autorun_point_empty(const struct ward__autorun_point *at);

/* What the launch scan found: called for each existing protected entry, and each missing name at a start. */
struct ward__autorun_sink {
	int (*found)(void *userdata, const char *path, const char *reason);
	int (*missing)(void *userdata, const char *dir, const char *name, const char *reason);
	/* A directory within the depth, not a start, with a .git of its own (may be NULL). */
	int (*repo)(void *userdata, const char *dir);
	/* The directory a symlink where names continue leads to, looked into with its point (may be NULL). */
	int (*followed)(void *userdata, const char *target);
	void *userdata;
};

/*
 * Looks into the n starts (canonical directories with their points),
 * breadth first, at most WARD_AUTORUN_MAX_DIRS directories, MAX_ENTRIES
 * entries and SCAN_MS milliseconds in all (p->n_watches and the caller's
 * *budget count across calls): reports what it finds to sink, and records
 * every directory it looked into in p->watches (a cap sets p->scan_cut and
 * lowers p->scan_depth, which the caller initialises). Past a bound, a
 * directory whose names alone matter (and the .config on the way to
 * .config/fish in it) is recorded unread, to be watched; one whose
 * subdirectories matter cannot be covered by a watch: -ERANGE, with its
 * path in budget->refused (the caller frees it). A start that lies beneath
 * another start is looked into once, as its own. -ENOMEM, or the sink's
 * error.
 */
struct ward__autorun_budget {
	uint64_t deadline_ms; /* CLOCK_MONOTONIC */
	size_t entries;
	size_t read; /* directories read, across calls */
	char *refused;
	bool too_many; /* refused: more than WARD_AUTORUN_MAX_UNREAD to watch unread */
};
WARD_INTERNAL int ward__autorun_scan(struct ward_policy *p, char *const *starts,
				     const struct ward__autorun_point *points, size_t n,
				     const struct ward__autorun_sink *sink,
				     struct ward__autorun_budget *budget);
/* Whether path (canonical) is a directory the scan looked into. */
WARD_INTERNAL bool ward__autorun_watched(const struct ward_policy *p, const char *path);

/*
 * The default protection that covers path (canonical): a protected entry at
 * or above it, or an autorun name the guard refuses where the command would
 * create path. *ret_lift (malloc()ed) is what --unprotect must name to lift
 * it, *ret_reason its reason. -ENOENT when nothing protects path, -EPERM when
 * only the caller's own --protect does.
 */
WARD_INTERNAL int ward__policy_protection_of(const struct ward_policy *p, const char *path,
					     char **ret_lift, const char **ret_reason);

/*
 * The reason a denial of access ("write", "create", "read", "connect", ...)
 * on target carries in reports: the protection's ("autorun: editor tasks",
 * "git hooks", "--protect"), or "outside the writable roots", "read-only
 * sandbox", "deny-read", "network off", "seccomp filter". Static; NULL when
 * there is none to give.
 */
WARD_INTERNAL const char *ward__policy_denial_reason(const struct ward_policy *p,
						     const char *access, const char *target);

/*
 * A copy of what the lookups above read of a resolved policy (mode,
 * network, roots, protected entries, deny-read paths, the autorun scan's
 * directories, --unprotect, missing PATH directories), for whoever must
 * answer after the policy itself is gone (a sandbox's reports). Resolved.
 */
WARD_INTERNAL int ward__policy_dup_resolved(const struct ward_policy *p,
					    struct ward_policy **ret_policy);

/* Why an existing protection matters, for a person: what would run the file ("an editor ..."). */
WARD_INTERNAL const char *ward__policy_reason_runner(const char *reason);

/* The reason of the PATH class ("autorun: on PATH"), static. */
WARD_INTERNAL extern const char ward__autorun_path_reason[];
/*
 * The reason of ward's own directories that resolution protects ("ward's
 * own": the scan cache's, scan-cache.c), never lifted by --unprotect. The
 * fallback's guard leaves it alone: see guard.c.
 */
WARD_INTERNAL extern const char ward__policy_reason_own[];

/* ------------------------------------------------------------ limits (limits.c) */

/*
 * Parsers of the values of --memory, --pids, --cpu and --rlimit (and of the
 * policy JSON's "limits"): -EINVAL for what is malformed, -ERANGE for a
 * value that makes no sense (0, more CPUs than the host has); err names the
 * option or field (label) and the value.
 */
WARD_INTERNAL int ward__limits_parse_memory(const char *s, const char *label, uint64_t *ret,
					    struct ward_error *err);
WARD_INTERNAL int ward__limits_parse_pids(const char *s, const char *label, uint64_t *ret,
					  struct ward_error *err);
WARD_INTERNAL int ward__limits_parse_cpu(const char *s, const char *label, uint32_t *ret_milli,
					 struct ward_error *err);
/* "NAME=VALUE" with NAME as, core, cpu, fsize or nofile (prlimit(1)'s names). */
WARD_INTERNAL int ward__limits_parse_rlimit(const char *s, const char *label,
					    struct ward__limits *l, struct ward_error *err);
/* The name of an rlimit ("as"...), and the RLIMIT_* resource it is. */
WARD_INTERNAL const char *ward__rlimit_name(enum ward__rlimit r);
WARD_INTERNAL int ward__rlimit_resource(enum ward__rlimit r);
/* Whether any limit at all is asked for; whether one needing a cgroup is. */
WARD_INTERNAL bool ward__limits_any(const struct ward__limits *l);
WARD_INTERNAL bool ward__limits_equal(const struct ward__limits *a, const struct ward__limits *b);
/* The online CPUs this process may run on (the bound of --cpu). */
WARD_INTERNAL unsigned ward__limits_host_cpus(void);
/* The policy JSON's "limits" object into l (fields as the options; strict). */
WARD_INTERNAL int ward__limits_from_json(json_t *v, struct ward__limits *l, const char *origin,
					 struct ward_error *err);
/* l as the JSON "limits" object of `ward policy show` (only what is set). */
WARD_INTERNAL json_t *ward__limits_to_json(const struct ward__limits *l);
/* Formats a byte count as the options take it ("2G", "1536M", "1000"), into buf. */
WARD_INTERNAL const char *ward__limits_format_size(uint64_t v, char *buf, size_t size);
