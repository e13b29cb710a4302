/* SPDX-License-Identifier: MIT */
/*
 * `ward serve`: the exec server (src/execserver) on stdio, on
 * WebSocket listeners (TCP on loopback) and on unix sockets, with a bearer
 * token by default. Takes the policy and environment options of `ward run`,
 * applied to processes whose request names no sandbox of its own.
 */
#include <fcntl.h>
#include <getopt.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "basic/cleanup.h"
#include "basic/loop.h"
#include "basic/util.h"
#include "changes/changes.h"
#include "cli/cli.h"
#include "execserver/execserver.h"
#include "sandbox/limits.h"
#include "sandbox/sandbox.h"
#include "transport/transport.h"

static const char serve_help[] =
	"Usage: ward serve [OPTIONS]\n"
	"\n"
	"Serve Codex's exec-server protocol (docs/protocol.md): clients start processes,\n"
	"read their output, write to them, signal them, and use the filesystem, each\n"
	"process in a sandbox of its own. Clients written for 'codex exec-server' work\n"
	"unchanged.\n"
	"\n"
	"Listening (repeatable; default ws://127.0.0.1:0):\n"
	"      --listen stdio           one client on stdin/stdout (JSON per line); ward exits\n"
	"                               when it closes\n"
	"      --listen ws://IP:PORT    WebSocket on TCP (port 0 picks one); the bound URL is\n"
	"                               printed on stdout\n"
	"      --listen unix:PATH       WebSocket on a unix socket (created 0600)\n"
	"      --listen systemd         WebSocket on the sockets systemd passed (socket\n"
	"                               activation: LISTEN_FDS); the default when they\n"
	"                               were passed and no --listen is given\n"
	"      --token-file FILE        bearer token clients must send (Authorization: Bearer);\n"
	"                               created 0600 with a random token when absent (default\n"
	"                               $XDG_RUNTIME_DIR/ward/serve.token)\n"
	"      --no-auth                no token (loopback and unix sockets only)\n"
	"      --allow-remote           allow a non-loopback ws:// address (with a token)\n"
	"\n"
	"Processes:\n"
	"      --allow-unsandboxed      run processes without a sandbox when a request names\n"
	"                               none, or asks for none (Codex's meaning); without it\n"
	"                               every process gets the policy below or its own\n"
	"      --max-connections N      clients at once, and sessions waiting to be resumed\n"
	"                               (default 64)\n"
	"      --max-processes N        processes per session (default 4096)\n"
	"      --max-message BYTES      largest message from a client (default 16M)\n"
	"      --retain-output BYTES    output kept per process for process/read (default 1M)\n"
	"      --retain-total BYTES     output kept across all processes; the least recent\n"
	"                               goes first (default 256M)\n"
	"      --session-ttl SECONDS    how long a session without a connection waits to be\n"
	"                               resumed before its processes are killed (default 30)\n"
	"      --exited-ttl SECONDS     how long an exited process stays readable (default 30)\n"
	"      --audit-log FILE|none    where every started process is recorded with the\n"
	"                               client's thread and tool call ('ward audit'; default\n"
	"                               $XDG_STATE_HOME/ward/audit.jsonl)\n"
	"\n"
	"Review and undo (docs/changes.md; the ward/changes/* methods, docs/protocol.md):\n"
	"      --record on|off          on (default): every sandboxed process's changes go\n"
	"                               through a layer, are applied when it ends and kept for\n"
	"                               undo (the host sees them at its end, not while it\n"
	"                               runs); off: none\n"
	"      --hold                   hold every process's changes until ward/changes/apply\n"
	"                               (process/start's \"hold\" does it for one process)\n"
	"      --keep-ignored           also keep what changes replace in ignored or\n"
	"                               generated trees (node_modules, build, ...)\n"
	"Limits (docs/ward-serve.1, LIMITS; NONE lifts one; a request's 'limits' overrides\n"
	"the per-process ones):\n"
	"      --memory SIZE|none       each process's memory with swap (default: half of the\n"
	"                               host's); killed whole beyond it\n"
	"      --pids N|none            each process's processes at once (default 4096)\n"
	"      --cpu N                  each process's CPUs of bandwidth (default none)\n"
	"      --rlimit NAME=VALUE      a per-process rlimit (as, core, cpu, fsize, nofile)\n"
	"      --connection-memory SIZE|none  a connection's processes together (default:\n"
	"                               half of the host's)\n"
	"      --connection-pids N|none a connection's processes at once (default 8192)\n"
	"      --total-memory SIZE|none the server's processes together (default: 3/4)\n"
	"      --total-pids N|none      the server's processes at once (default 16384)\n"
	"      --require-limits         refuse to start where a limit cannot be enforced\n"
	"\n"
	"Policy of processes whose request has no sandbox (as for 'ward run'):\n"
	"  -s, --sandbox MODE, -C DIR, -w PATH, --protect PATH, --unprotect PATH,\n"
	"      --deny-read PATH, --network off|on, --allow-domain PATTERN,\n"
	"      --deny-domain PATTERN, --allow-address CIDR, --dns-server IP[:PORT],\n"
	"      --allow-unix-socket PATH, --policy FILE,\n"
	"      --exclude-slash-tmp, --exclude-tmpdir-env-var, --require-isolation\n"
	"Environment of processes started with envPolicy:\n"
	"      --env-inherit, --env-set, --env-exclude, --env-include-only,\n"
	"      --env-default-excludes\n"
	"  -h, --help                   show this help\n"
	"      --version                show the version and the commit\n";

enum {
	OPT_LISTEN = CLI_EXTRA_OPTION_BASE,
	OPT_TOKEN_FILE,
	OPT_NO_AUTH,
	OPT_ALLOW_REMOTE,
	OPT_ALLOW_UNSANDBOXED,
	OPT_MAX_CONNECTIONS,
	OPT_MAX_PROCESSES,
	OPT_MAX_MESSAGE,
	OPT_RETAIN_OUTPUT,
	OPT_RETAIN_TOTAL,
	OPT_SESSION_TTL,
	OPT_EXITED_TTL,
	OPT_AUDIT_LOG,
	OPT_RECORD,
	OPT_HOLD,
	OPT_KEEP_IGNORED,
	OPT_TOTAL_MEMORY,
	OPT_TOTAL_PIDS,
	OPT_CONNECTION_MEMORY,
	OPT_CONNECTION_PIDS,
};

static const struct option serve_options[] = {
	{"listen", required_argument, NULL, OPT_LISTEN},
	{"token-file", required_argument, NULL, OPT_TOKEN_FILE},
	{"no-auth", no_argument, NULL, OPT_NO_AUTH},
	{"allow-remote", no_argument, NULL, OPT_ALLOW_REMOTE},
	{"allow-unsandboxed", no_argument, NULL, OPT_ALLOW_UNSANDBOXED},
	{"max-connections", required_argument, NULL, OPT_MAX_CONNECTIONS},
	{"max-processes", required_argument, NULL, OPT_MAX_PROCESSES},
	{"max-message", required_argument, NULL, OPT_MAX_MESSAGE},
	{"retain-output", required_argument, NULL, OPT_RETAIN_OUTPUT},
	{"retain-total", required_argument, NULL, OPT_RETAIN_TOTAL},
	{"session-ttl", required_argument, NULL, OPT_SESSION_TTL},
	{"exited-ttl", required_argument, NULL, OPT_EXITED_TTL},
	{"audit-log", required_argument, NULL, OPT_AUDIT_LOG},
	{"record", required_argument, NULL, OPT_RECORD},
	{"hold", no_argument, NULL, OPT_HOLD},
	{"keep-ignored", no_argument, NULL, OPT_KEEP_IGNORED},
	{"total-memory", required_argument, NULL, OPT_TOTAL_MEMORY},
	{"total-pids", required_argument, NULL, OPT_TOTAL_PIDS},
	{"connection-memory", required_argument, NULL, OPT_CONNECTION_MEMORY},
	{"connection-pids", required_argument, NULL, OPT_CONNECTION_PIDS},
	{0},
};

#define MAX_LISTENERS 8

struct serve_args {
	const char *listen[MAX_LISTENERS];
	size_t n_listen;
	const char *token_file;
	bool no_auth;
	bool allow_remote;
	bool allow_unsandboxed;
	uint64_t max_connections, max_processes, max_message, retain_output, retain_total;
	uint64_t session_ttl_ms, exited_ttl_ms;
	const char *audit_log; /* NULL: the default; "none": no log */
	bool no_record, hold, keep_ignored;
	struct cli_budget total, connection;
};

static int number(const char *opt, const char *arg, uint64_t lo, uint64_t hi, bool size,
		  uint64_t *ret)
{
	uint64_t n;

	if ((size ? ward__parse_size(arg, &n) : ward__parse_u64(arg, &n)) < 0 || n < lo || n > hi) {
		cli_errorf("serve: %s '%s': expected a %s from %llu to %llu", opt, arg,
			   size ? "byte count" : "number", (unsigned long long)lo,
			   (unsigned long long)hi);
		return -1;
	}
	*ret = n;
	return 0;
}

static int handle_option(int c, const char *arg, void *userdata)
{
	struct serve_args *a = userdata;

	switch (c) {
	case OPT_LISTEN:
		if (a->n_listen >= MAX_LISTENERS) {
			cli_errorf("serve: --listen: at most %d listeners", MAX_LISTENERS);
			return -1;
		}
		a->listen[a->n_listen++] = arg;
		return 0;
	case OPT_TOKEN_FILE:
		a->token_file = arg;
		return 0;
	case OPT_NO_AUTH:
		a->no_auth = true;
		return 0;
	case OPT_ALLOW_REMOTE:
		a->allow_remote = true;
		return 0;
	case OPT_ALLOW_UNSANDBOXED:
		a->allow_unsandboxed = true;
		return 0;
	case OPT_MAX_CONNECTIONS:
		return number("--max-connections", arg, 1, 100000, false, &a->max_connections);
	case OPT_MAX_PROCESSES:
		return number("--max-processes", arg, 1, 1000000, false, &a->max_processes);
	case OPT_MAX_MESSAGE:
		return number("--max-message", arg, 4096, (uint64_t)1 << 30, true, &a->max_message);
	case OPT_RETAIN_OUTPUT:
		return number("--retain-output", arg, 4096, (uint64_t)1 << 30, true,
			      &a->retain_output);
	case OPT_RETAIN_TOTAL:
		return number("--retain-total", arg, 4096, (uint64_t)1 << 40, true,
			      &a->retain_total);
	case OPT_AUDIT_LOG:
		a->audit_log = arg;
		return cli_audit_log_option("serve", arg);
	case OPT_RECORD:
		if (strcmp(arg, "on") != 0 && strcmp(arg, "off") != 0) {
			cli_errorf("serve: --record '%s': expected on or off", arg);
			return -1;
		}
		a->no_record = strcmp(arg, "off") == 0;
		return 0;
	case OPT_HOLD:
		a->hold = true;
		return 0;
	case OPT_KEEP_IGNORED:
		a->keep_ignored = true;
		return 0;
	case OPT_TOTAL_MEMORY:
		return cli_budget_option(&a->total, "serve", "--total-memory", arg);
	case OPT_TOTAL_PIDS:
		return cli_budget_option(&a->total, "serve", "--total-pids", arg);
	case OPT_CONNECTION_MEMORY:
		return cli_budget_option(&a->connection, "serve", "--connection-memory", arg);
	case OPT_CONNECTION_PIDS:
		return cli_budget_option(&a->connection, "serve", "--connection-pids", arg);
	case OPT_SESSION_TTL:
	case OPT_EXITED_TTL: {
		uint64_t ms;

		if (ward__parse_seconds_ms(arg, &ms) < 0 || ms == 0 || ms > 86400000) {
			cli_errorf("serve: %s '%s': expected seconds, from 0.001 to 86400",
				   c == OPT_SESSION_TTL ? "--session-ttl" : "--exited-ttl", arg);
			return -1;
		}
		if (c == OPT_SESSION_TTL)
			a->session_ttl_ms = ms;
		else
			a->exited_ttl_ms = ms;
		return 0;
	}
	default:
		return -1;
	}
}

/*
 * The default token file: per user, in a directory only the user can enter.
 * Without XDG_RUNTIME_DIR (a container, su, CI, ssh without a login session)
 * it lives under ~/.local/state, which a new account does not have yet: the
 * missing directories are made (0700), as the audit log's are.
 */
static char *default_token_file(void)
{
	const char *rt = getenv("XDG_RUNTIME_DIR"), *home = getenv("HOME");
	_cleanup_free_ char *dir = NULL;
	char *path = NULL;
	int r;

	if (rt && rt[0] == '/') {
		if (asprintf(&dir, "%s/ward", rt) < 0)
			return NULL;
	} else if (home && home[0] == '/') {
		if (asprintf(&dir, "%s/.local/state/ward", home) < 0)
			return NULL;
	} else {
		cli_errorf("serve: no place for the token file (neither XDG_RUNTIME_DIR nor HOME "
			   "is set): give --token-file FILE (or --no-auth)");
		return NULL;
	}
	r = ward__mkdir_parents(dir, 0700);
	if (r < 0) {
		cli_errorf("serve: cannot create the token file's directory '%s': %s (hint: give "
			   "--token-file FILE)",
			   dir, strerror(-r));
		return NULL;
	}
	if (asprintf(&path, "%s/serve.token", dir) < 0)
		cli_errorf("serve: out of memory");
	return path;
}

/*
 * Reads the token, or creates the file (0600, a random 256-bit token) when it
 * does not exist. A file others can read is refused: the token is the only
 * thing between them and running commands as this user.
 */
static char *load_token(const char *path)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	char buf[4200];
	struct stat st;
	struct statvfs sv;
	bool secret, linked = false;
	ssize_t n;

	/* A mounted secret is reached through symlinks (Kubernetes' ..data): followed for it only. */
	if (fd < 0 && errno == ELOOP) {
		fd = open(path, O_RDONLY | O_CLOEXEC);
		linked = true;
	}
	if (fd < 0 && errno == ENOENT) {
		uint8_t rnd[32];
		char tok[sizeof(rnd) * 2 + 2];

		if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd)) {
			cli_errorf("serve: cannot make a token: %s", strerror(errno));
			return NULL;
		}
		for (size_t i = 0; i < sizeof(rnd); i++)
			snprintf(tok + 2 * i, 3, "%02x", rnd[i]);
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd < 0 || ward__write_all(fd, tok, strlen(tok)) < 0 ||
		    ward__write_all(fd, "\n", 1) < 0) {
			cli_errorf("serve: cannot create the token file '%s': %s", path,
				   strerror(errno));
			return NULL;
		}
		fprintf(stderr, "ward serve: created the token file %s\n", path);
		return strdup(tok);
	}
	if (fd < 0) {
		cli_errorf("serve: cannot open the token file '%s': %s", path, strerror(errno));
		return NULL;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		cli_errorf("serve: the token file '%s' is not a regular file", path);
		return NULL;
	}
	/*
	 * A mounted secret (Kubernetes, podman): root's, on a read-only mount,
	 * readable by the owner and the pod's group only. Nobody but root can
	 * change it, and nobody outside the group read it: accepted as well.
	 */
	secret = st.st_uid == 0 && st.st_uid != geteuid() && fstatvfs(fd, &sv) == 0 &&
		(sv.f_flag & ST_RDONLY) && !(st.st_mode & 007);
	if (linked && !secret) {
		cli_errorf(
			"serve: the token file '%s' is a symlink (only a mounted secret's may be)",
			path);
		return NULL;
	} else if (secret) {
		/* Root's, read-only, nobody else's: checked above. */
	} else if (st.st_mode & 077) {
		cli_errorf(
			"serve: the token file '%s' can be read by others (mode %04o): chmod 600 it",
			path, (unsigned)(st.st_mode & 07777));
		return NULL;
	} else if (st.st_uid != geteuid()) {
		cli_errorf("serve: the token file '%s' belongs to another user (a mounted secret "
			   "must be root's, on a read-only mount, with no access for others)",
			   path);
		return NULL;
	}
	n = ward__read_full(fd, buf, sizeof(buf) - 1);
	if (n < 0) {
		cli_errorf("serve: cannot read the token file '%s': %s", path, strerror((int)-n));
		return NULL;
	}
	buf[n] = '\0';
	buf[strcspn(buf, "\r\n")] = '\0';
	if (strlen(buf) < 16 || strlen(buf) > 4096 ||
	    strspn(buf, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~+/=") !=
		    strlen(buf)) {
		cli_errorf("serve: the token in '%s' must be 16 to 4096 characters of "
			   "[A-Za-z0-9-._~+/=] on its first line",
			   path);
		return NULL;
	}
	return strdup(buf);
}

/*
 * The sockets systemd passed (socket activation, sd_listen_fds(3)): LISTEN_FDS
 * descriptors from 3 on, when LISTEN_PID is this process (ward execs
 * ward-serve, so the pid is the one systemd started). The variables are
 * removed from the environment, so that no command inherits them. Returns
 * how many, 0 when none were passed, -1 on an error (reported).
 */
#define SD_LISTEN_FDS_START 3
static int systemd_fds(void)
{
	const char *pid = getenv("LISTEN_PID"), *fds = getenv("LISTEN_FDS");
	uint64_t p, n;
	int r = 0;

	if (!pid || !fds)
		return 0;
	if (ward__parse_u64(pid, &p) < 0 || ward__parse_u64(fds, &n) < 0) {
		cli_errorf("serve: LISTEN_PID '%s' or LISTEN_FDS '%s' is not a number", pid, fds);
		r = -1;
	} else if (p == (uint64_t)getpid()) {
		if (n > MAX_LISTENERS) {
			cli_errorf("serve: systemd passed %llu sockets; at most %d are served",
				   (unsigned long long)n, MAX_LISTENERS);
			r = -1;
		} else {
			r = (int)n;
		}
	}
	unsetenv("LISTEN_PID");
	unsetenv("LISTEN_FDS");
	unsetenv("LISTEN_FDNAMES");
	return r;
}

/*
 * What every sandbox of this server gets on this host, said once at start:
 * a fleet reads it in its logs (ward doctor says the same in full).
 */
static void report_isolation(const struct ward_policy *p)
{
	const struct ward__features *f = ward__features_get();
	char missing[1024];

	if (p->mode == WARD_MODE_DANGER_FULL_ACCESS)
		return;
	if ((f->userns && !f->proc_masked) || f->rootns)
		fprintf(stderr,
			"ward serve: sandboxes here: full isolation (namespaces%s, Landlock ABI %d, "
			"seccomp)\n",
			f->userns ? "" : " without a user namespace", f->landlock_abi);
	else if (f->userns && f->landlock_abi >= 1)
		fprintf(stderr,
			"ward serve: sandboxes here: namespaces, Landlock ABI %d and seccomp, without %s\n",
			f->landlock_abi, WARD_HOST_PROC_LOST);
	else if (f->userns)
		fprintf(stderr, "ward serve: sandboxes here: none, %s (see 'ward doctor')\n",
			WARD_HOST_PROC_REFUSED);
	else if (f->landlock_abi >= 1) {
		ward__features_missing_guarantees(f, p, missing, sizeof(missing));
		fprintf(stderr,
			"ward serve: sandboxes here: Landlock ABI %d and seccomp only (user namespaces "
			"refused: %s), without: %s\n",
			f->landlock_abi, f->userns_why, missing);
	} else
		fprintf(stderr,
			"ward serve: sandboxes here: none: without user namespaces and "
			"Landlock every sandboxed process fails (see 'ward doctor')\n");
}

static void on_stop(struct ward__loop *l, const struct signalfd_siginfo *si, void *userdata)
{
	ward__loop_quit(l, 0);
}

/* With --listen stdio, the end of the client is the end of the server. */
static const struct ward__conn_handler *inner;

static void stdio_closed(struct ward__conn *c, void *conn_userdata);
static struct ward__conn_handler stdio_handler;
static struct ward__loop *stdio_loop;

static void stdio_closed(struct ward__conn *c, void *conn_userdata)
{
	inner->closed(c, conn_userdata);
	ward__loop_quit(stdio_loop, 0);
}

int cli_serve(int argc, char **argv)
{
	struct serve_args s = {0};
	struct cli_extra_options extra = {serve_options, handle_option, &s};
	struct cli_run_args a;
	struct ward__xserver_config xc = {0};
	struct ward__changes_cfg changes = {0};
	struct ward__transport_limits lim;
	struct ward__listener *listeners[MAX_LISTENERS] = {0};
	struct ward__xserver *srv = NULL;
	struct ward__conn *stdio_conn = NULL;
	struct ward__loop *loop = NULL;
	struct ward_error err = {0};
	_cleanup_free_ char *token = NULL, *token_path = NULL, *audit_path = NULL,
			    *audit_dir = NULL;
	bool need_token = false, has_stdio = false, remote = false, have_total = false,
	     has_systemd = false;
	struct ward__cgroup total;
	int n_systemd, r, code = WARD_EXIT_FAILURE;

	if (cli_parse_server_args(argc, argv, "serve", &extra, &a) < 0)
		goto out;
	if (cli_help_or_version(&a, serve_help) == 0) {
		code = 0;
		goto out;
	}
	n_systemd = systemd_fds();
	if (n_systemd < 0)
		goto out;
	if (s.n_listen == 0)
		s.listen[s.n_listen++] = n_systemd > 0 ? "systemd" : "ws://127.0.0.1:0";
	for (size_t i = 0; i < s.n_listen; i++) {
		if (strcmp(s.listen[i], "systemd") == 0) {
			if (has_systemd) {
				cli_errorf("serve: --listen systemd can be given once");
				goto out;
			}
			if (n_systemd == 0) {
				cli_errorf(
					"serve: --listen systemd: no sockets were passed (LISTEN_FDS "
					"and LISTEN_PID unset or not this process's; start ward "
					"through its .socket unit)");
				goto out;
			}
			if (s.n_listen - 1 + (size_t)n_systemd > MAX_LISTENERS) {
				cli_errorf("serve: at most %d listeners", MAX_LISTENERS);
				goto out;
			}
			has_systemd = true;
			need_token = true;
		} else if (strcmp(s.listen[i], "stdio") == 0 ||
			   strcmp(s.listen[i], "stdio://") == 0) {
			if (has_stdio) {
				cli_errorf("serve: --listen stdio can be given once");
				goto out;
			}
			has_stdio = true;
		} else if (strncmp(s.listen[i], "ws://", 5) != 0 &&
			   strncmp(s.listen[i], "unix:", 5) != 0) {
			/* Before any file is made: a bad option changes nothing. */
			cli_errorf("--listen '%s': expected stdio, ws://IP:PORT or unix:PATH",
				   s.listen[i]);
			goto out;
		} else {
			need_token = true;
			if (strncmp(s.listen[i], "ws://", 5) == 0 &&
			    !strstr(s.listen[i], "://127.") && !strstr(s.listen[i], "://[::1]") &&
			    !strstr(s.listen[i], "://localhost:"))
				remote = true;
		}
	}
	if (remote && s.no_auth) {
		cli_errorf("serve: --no-auth with a non-loopback address would let anyone on the "
			   "network run commands as you; refused");
		goto out;
	}
	if (s.no_auth && s.token_file) {
		cli_errorf("serve: --no-auth and --token-file contradict each other");
		goto out;
	}
	if (need_token && !s.no_auth) {
		token_path = s.token_file ? strdup(s.token_file) : default_token_file();
		if (!token_path) {
			if (s.token_file)
				cli_errorf("serve: out of memory");
			goto out;
		}
		token = load_token(token_path);
		if (!token)
			goto out;
	}
	if (cli_audit_log_setup("serve", s.audit_log, &audit_path, &audit_dir) < 0)
		goto out;
	r = ward_policy_resolve(a.policy, &err);
	if (r < 0) {
		cli_report_error(&err);
		goto out;
	}
	/* Every process limited by default, within its connection's total and the server's. */
	cli_server_limit_defaults(&a);
	cli_budget_defaults(&s.total, false);
	cli_budget_defaults(&s.connection, true);
	if (cli_server_limits_start(&a, "serve", &s.total, &total) < 0)
		goto out;
	have_total = true;
	signal(SIGPIPE, SIG_IGN);
	ward__sigpipe_ignored();
	/* Thousands of processes, each a few descriptors: the hard limit, not 1024. */
	cli_raise_nofile();
	/*
	 * A stream's chunks and frames are a few hundred KiB each, allocated and
	 * freed hundreds of times a second: from the heap and kept there, not
	 * mapped and unmapped (fresh pages, faulted in, each time). What the
	 * heap keeps beyond its use is bounded by the trim threshold.
	 */
	mallopt(M_MMAP_THRESHOLD, 4 << 20);
	mallopt(M_TRIM_THRESHOLD, 16 << 20);
	if (ward__loop_new(&loop) < 0) {
		cli_errorf("serve: cannot create the event loop");
		goto out;
	}
	xc.policy = a.policy;
	xc.env = a.opts;
	xc.allow_unsandboxed = s.allow_unsandboxed;
	xc.max_connections = (size_t)s.max_connections;
	xc.max_processes = (size_t)s.max_processes;
	xc.retain_bytes = (size_t)s.retain_output;
	xc.retain_total = (size_t)s.retain_total;
	xc.detached_ttl_ms = (unsigned)s.session_ttl_ms;
	xc.exited_ttl_ms = (unsigned)s.exited_ttl_ms;
	xc.audit_path = audit_path;
	xc.own_dir = audit_dir;
	lim.max_message = s.max_message ? (size_t)s.max_message : (size_t)16 << 20;
	/* The JSON reader takes what the transports take: one limit, not two. */
	xc.max_message = lim.max_message;
	if (s.hold && s.no_record) {
		cli_errorf("serve: --hold needs the journal: it cannot go with --record off");
		goto out;
	}
	if (!s.no_record) {
		/* Without a place for the journal the server still serves, and says so once. */
		if (ward__changes_cfg_init(&changes, &err) < 0 ||
		    ward__layer_probe(changes.dir, &err) < 0) {
			if (s.hold) {
				cli_report_error(&err);
				goto out;
			}
			cli_errorf("serve: warning: changes are not recorded (undo is not "
				   "available): %s",
				   err.message);
			err = (struct ward_error){0};
		} else {
			changes.keep_ignored = s.keep_ignored;
			xc.changes = &changes;
			xc.hold = s.hold;
		}
	}
	xc.cg_total = &total;
	xc.connection_memory = s.connection.memory;
	xc.connection_pids = s.connection.pids;
	if (ward__xserver_new(loop, &xc, &srv, &err) < 0) {
		cli_report_error(&err);
		goto out;
	}
	/* A reply can be as large as a message; the queue holds a few of them. */
	lim.max_queue = MAX(lim.max_message * 4, (size_t)64 << 20);
	lim.high_water = (size_t)4 << 20;
	if (remote)
		fprintf(stderr,
			"ward serve: WARNING: listening beyond this machine: anyone who can reach "
			"the address and has the token can run commands as %s\n",
			getenv("USER") ? getenv("USER") : "this user");
	for (size_t i = 0, k = 0; i < s.n_listen; i++) {
		bool sd = strcmp(s.listen[i], "systemd") == 0;

		if (strcmp(s.listen[i], "stdio") == 0 || strcmp(s.listen[i], "stdio://") == 0)
			continue;
		/* One listener per --listen, or per socket systemd passed. */
		for (int j = 0; j < (sd ? n_systemd : 1); j++, k++) {
			struct ward__listener_config lc = {
				.url = s.listen[i],
				.adopt = sd,
				.fd = sd ? SD_LISTEN_FDS_START + j : -1,
				.token = token,
				.allow_remote = s.allow_remote,
				.limits = lim,
			};
			_cleanup_free_ char *url = NULL;

			if (ward__listener_new(loop, &lc, ward__xserver_handler(), srv,
					       &listeners[k], &url, &err) < 0) {
				cli_report_error(&err);
				goto out;
			}
			if (sd && strncmp(url, "ws://", 5) == 0 && !strstr(url, "://127.") &&
			    !strstr(url, "://[::1]"))
				fprintf(stderr,
					"ward serve: WARNING: listening beyond this machine (%s): "
					"anyone who can reach it and has the token can run commands "
					"as %s\n",
					url, getenv("USER") ? getenv("USER") : "this user");
			/* Clients (and scripts) learn the port from here, as with Codex's exec-server. */
			if (!has_stdio && !sd) {
				printf("%s\n", url);
				fflush(stdout);
			} else {
				fprintf(stderr, "ward serve: listening on %s\n", url);
			}
		}
	}
	if (token_path && !has_stdio)
		fprintf(stderr, "ward serve: clients authenticate with the token in %s\n",
			token_path);
	report_isolation(a.policy);
	if (has_stdio) {
		inner = ward__xserver_handler();
		stdio_handler = *inner;
		stdio_handler.closed = stdio_closed;
		stdio_loop = loop;
		if (ward__conn_stdio(loop, STDIN_FILENO, STDOUT_FILENO, &lim, &stdio_handler, srv,
				     &stdio_conn) < 0) {
			cli_errorf("serve: cannot serve stdio");
			goto out;
		}
	}
	ward__loop_set_signal(loop, SIGTERM, on_stop, NULL);
	ward__loop_set_signal(loop, SIGINT, on_stop, NULL);
	ward__loop_set_signal(loop, SIGHUP, on_stop, NULL);
	r = ward__loop_run(loop);
	code = r < 0 ? WARD_EXIT_FAILURE : 0;
out:
	for (size_t i = 0; i < MAX_LISTENERS; i++)
		ward__listener_free(listeners[i]);
	/* Every process dies here, every connection closes; then the inits are reaped. */
	ward__xserver_free(srv);
	if (loop) {
		for (int i = 0; i < 200 && ward__loop_reaping(loop) > 0; i++)
			ward__loop_iterate(loop, 25);
		ward__loop_free(loop);
	}
	ward__changes_cfg_release(&changes);
	if (have_total)
		ward__cgroup_bury(&total);
	cli_run_args_release(&a);
	return code;
}
