/* SPDX-License-Identifier: MIT */
/*
 * The filesystem methods of `ward serve` (see fsops.h and docs/protocol.md,
 * "Filesystem methods").
 *
 * Where an operation runs:
 *   - With a sandbox (a request's `sandbox` or `wardPolicy`, or the server's
 *     own policy when it does not allow unsandboxed requests): in a helper
 *     process (`ward-serve __fs-op`, fshelper.c) started as the command of a
 *     sandbox built by the same code, from the same policy, as process/start
 *     would build for that request. What the operation can reach is then
 *     decided by the kernel (mount view, Landlock, seccomp) at the moment of
 *     each system call, so a symlink swapped between a check and a use, a
 *     `..`, a hard link or a path through /proc reach exactly what a command
 *     in that sandbox reaches, no more. An opened file (fs/open) comes back
 *     over a unix socket; reads and writes of its blocks are then pread() and
 *     pwrite() here, on the descriptor the sandbox opened.
 *   - Without one (the server runs with --allow-unsandboxed and the request
 *     asks for no sandbox): here, in the event loop, with the same code
 *     (fsimpl.c, which never opens a FIFO, a device or a socket and so never
 *     blocks), except a recursive copy or removal of a directory, which can
 *     take long and runs in an unsandboxed helper so that other connections
 *     are not held up.
 *
 * Requests of one connection are answered in order, one at a time, as Codex
 * answers them by default: a write followed by a read sees the write, a
 * block read queued behind fs/open finds its handle. At most
 * XFS_MAX_QUEUED requests (XFS_QUEUED_BYTES of data) wait; more are refused.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/buf.h"
#include "basic/cleanup.h"
#include "basic/error.h"
#include "basic/uri.h"
#include "exec/proc.h"
#include "execserver/fsargs.h"
#include "execserver/fshelper.h"
#include "execserver/fsimpl.h"
#include "execserver/fsops.h"
#include "execserver/fsreq.h"
#include "execserver/fswire.h"
#include "execserver/xpolicy.h"
#include "policy/policy.h"
#include "rpc/args.h"
#include "sandbox/sandbox.h"

/* Codex's limits on file handles and blocks. */
#define XFS_MAX_HANDLES 128u
#define XFS_HANDLE_ID_MAX 32u
#define XFS_BLOCK_MAX 1048576u
/* ward's: requests waiting per connection, and the data they may hold. */
#define XFS_MAX_QUEUED 64u
#define XFS_QUEUED_BYTES ((size_t)64 << 20)
/* A helper that does not finish (a hung network filesystem) is killed after this. */
#define XFS_HELPER_TIMEOUT_MS 300000u
/* The helper's answer (fs/readDirectory's is the largest) and the stderr kept for errors. */
#define XFS_HELPER_OUT_MAX (WARD_XFS_READDIR_BYTES + ((size_t)1 << 20))
#define XFS_HELPER_ERR_MAX 4096u

struct handle {
	char id[XFS_HANDLE_ID_MAX + 1];
	size_t id_len;
	int fd;
};

struct pending {
	struct pending *next;
	enum ward__xfs_method m;
	struct ward__xfs_args a;
	bool parsed; /* a.code/a.message hold the error otherwise */
	json_t *params; /* held while it waits: the args point into it */
	size_t bytes;
	char handle[XFS_HANDLE_ID_MAX + 1]; /* the handle id, once params went */
	ward__xfs_reply_fn reply;
	void *reply_ctx;
};

struct run {
	struct ward__xfs *fs; /* NULL once the connection is gone: the operation still finishes */
	struct ward__xfs_orphans *orphans; /* where it waits for its end once fs is gone */
	struct run *orphan_prev, *orphan_next;
	struct pending *p;
	struct ward__proc *proc;
	struct ward_policy *policy;
	struct ward__buf out, err;
	bool overflow;
	int sock; /* fs/open: where the opened file arrives */
};

struct ward__xfs {
	struct ward__loop *loop;
	struct ward__xfs_orphans *orphans;
	const char *own_dir;
	const struct ward_policy *tmpl;
	char *cwd;
	bool allow_unsandboxed;
	struct handle handles[XFS_MAX_HANDLES];
	size_t n_handles;
	struct pending *head, *tail;
	size_t n_queued, queued_bytes;
	struct run *running;
	unsigned depth;
	bool dead;
	bool pumping;
};

static void fs_destroy(struct ward__xfs *fs);

static void fs_enter(struct ward__xfs *fs)
{
	fs->depth++;
}

static void fs_leave(struct ward__xfs *fs)
{
	if (--fs->depth == 0 && fs->dead)
		fs_destroy(fs);
}

/* ------------------------------------------------------------ replies */

static void pending_free(struct pending *p)
{
	ward__xfs_args_release(&p->a);
	json_decref(p->params);
	free(p);
}

static void reply_error(struct pending *p, int code, const char *fmt, ...) _printf_(3, 4);
static void reply_error(struct pending *p, int code, const char *fmt, ...)
{
	char msg[WARD_XFS_MSG_MAX + 512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	p->reply(p->reply_ctx, NULL, code, msg);
}

static void reply_result(struct pending *p, json_t *result)
{
	if (!result) {
		reply_error(p, WARD_XFS_INTERNAL, "%s", ward__xfs_strerror(ENOMEM));
		return;
	}
	p->reply(p->reply_ctx, result, 0, NULL);
}

static void reply_errno(struct pending *p, int errnum)
{
	char m[128];

	errnum = errnum < 0 ? -errnum : errnum;
	ward__xfs_errno_message(errnum, m, sizeof(m));
	reply_error(p, ward__xfs_errno_code(errnum), "%s", m);
}

static json_t *b64_string(const uint8_t *data, size_t len)
{
	_cleanup_free_ char *s = malloc(4 * ((len + 2) / 3) + 1);
	size_t n;

	if (!s)
		return NULL;
	n = ward__xfs_b64_encode(data, len, s);
	return json_stringn(s, n);
}

/* ------------------------------------------------------------ handles */

static struct handle *find_handle(struct ward__xfs *fs, const char *id, size_t len)
{
	for (size_t i = 0; i < fs->n_handles; i++)
		if (fs->handles[i].id_len == len && memcmp(fs->handles[i].id, id, len) == 0)
			return &fs->handles[i];
	return NULL;
}

static void drop_handle(struct ward__xfs *fs, struct handle *h)
{
	close(h->fd);
	*h = fs->handles[--fs->n_handles];
}

/* Codex checks a handle id's length first, on every method that names one. */
static bool handle_id_ok(struct pending *p)
{
	if (p->a.handle_len <= XFS_HANDLE_ID_MAX)
		return true;
	reply_error(p, WARD_XFS_INVALID_REQUEST, "file handle ID must not exceed %u bytes",
		    XFS_HANDLE_ID_MAX);
	return false;
}

static void do_read_block(struct ward__xfs *fs, struct pending *p)
{
	const struct ward__xfs_args *a = &p->a;
	_cleanup_free_ uint8_t *buf = NULL;
	struct handle *h;
	size_t got = 0;

	if (!handle_id_ok(p))
		return;
	if (a->len < 1 || a->len > XFS_BLOCK_MAX) {
		reply_error(p, WARD_XFS_INVALID_REQUEST,
			    "file read block length must be between 1 and %u", XFS_BLOCK_MAX);
		return;
	}
	h = find_handle(fs, a->handle, a->handle_len);
	if (!h) {
		reply_error(p, WARD_XFS_NOT_FOUND, "unknown file handle `%.*s`", (int)a->handle_len,
			    a->handle);
		return;
	}
	/* A failed read closes the handle (as Codex); an offset past off_t is EINVAL from pread. */
	if (a->offset > (uint64_t)INT64_MAX) {
		drop_handle(fs, h);
		reply_errno(p, EINVAL);
		return;
	}
	buf = malloc(a->len);
	if (!buf) {
		reply_errno(p, ENOMEM);
		return;
	}
	while (got < a->len) {
		ssize_t n = pread(h->fd, buf + got, a->len - got, (off_t)(a->offset + got));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int e = errno;

			drop_handle(fs, h);
			reply_errno(p, e);
			return;
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	/* eof: fewer bytes than asked for (Codex's definition). */
	reply_result(p,
		     json_pack("{s:o, s:b}", "chunk", b64_string(buf, got), "eof", got < a->len));
}

static void do_write_block(struct ward__xfs *fs, struct pending *p)
{
	const struct ward__xfs_args *a = &p->a;
	struct handle *h;
	size_t done = 0;

	if (!handle_id_ok(p))
		return;
	if (a->bytes_len < 1 || a->bytes_len > XFS_BLOCK_MAX) {
		reply_error(p, WARD_XFS_INVALID_REQUEST,
			    "file write block length must be between 1 and %u", XFS_BLOCK_MAX);
		return;
	}
	if (a->offset > (uint64_t)INT64_MAX - a->bytes_len) {
		reply_error(p, WARD_XFS_INVALID_REQUEST,
			    "file write range exceeds the signed 64-bit file offset limit");
		return;
	}
	h = find_handle(fs, a->handle, a->handle_len);
	if (!h) {
		reply_error(p, WARD_XFS_NOT_FOUND, "unknown file handle `%.*s`", (int)a->handle_len,
			    a->handle);
		return;
	}
	while (done < a->bytes_len) {
		ssize_t n = pwrite(h->fd, a->bytes + done, a->bytes_len - done,
				   (off_t)(a->offset + done));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			/* The handle stays (as Codex): a full disk may have room again later. */
			reply_errno(p, n < 0 ? errno : EIO);
			return;
		}
		done += (size_t)n;
	}
	reply_result(p, json_object());
}

static void do_close(struct ward__xfs *fs, struct pending *p)
{
	struct handle *h;

	if (!handle_id_ok(p))
		return;
	/* Closing what is not open is not an error (as Codex). */
	h = find_handle(fs, p->a.handle, p->a.handle_len);
	if (h)
		drop_handle(fs, h);
	reply_result(p, json_object());
}

/* Refusals of fs/open that do not depend on the file. */
static bool open_allowed(struct ward__xfs *fs, struct pending *p)
{
	if (!handle_id_ok(p))
		return false;
	if (find_handle(fs, p->a.handle, p->a.handle_len)) {
		reply_error(p, WARD_XFS_INVALID_REQUEST, "file handle `%.*s` already exists",
			    (int)p->a.handle_len, p->a.handle);
		return false;
	}
	if (fs->n_handles >= XFS_MAX_HANDLES) {
		reply_error(p, WARD_XFS_INVALID_REQUEST,
			    "at most %u file handles may be open per connection", XFS_MAX_HANDLES);
		return false;
	}
	return true;
}

/* ------------------------------------------------------------ answers */

/* Answers an operation from its outcome; fs NULL when the connection is gone. */
static void finish(struct ward__xfs *fs, struct pending *p, struct ward__xfs_res *res)
{
	if (res->code != 0) {
		reply_error(p, res->code, "%s", res->message ? res->message : "failed");
		return;
	}
	if (p->m == WARD_XFS_M_READ_FILE) {
		reply_result(p,
			     json_pack("{s:o}", "dataBase64",
				       b64_string(res->data ? res->data : (const uint8_t *)"",
						  res->len)));
	} else if (p->m == WARD_XFS_M_OPEN) {
		struct stat st;
		int acc = res->fd >= 0 ? fcntl(res->fd, F_GETFL) & O_ACCMODE : -1;

		/*
		 * The helper is ward's own code, but the descriptor is checked all
		 * the same: a regular file, opened for exactly the access asked.
		 */
		if (res->fd < 0 || fstat(res->fd, &st) < 0 || !S_ISREG(st.st_mode) ||
		    acc != (p->a.replace ? O_WRONLY : O_RDONLY)) {
			reply_error(p, WARD_XFS_INTERNAL,
				    "the filesystem helper did not open a regular file");
			return;
		}
		if (!fs) {
			reply_error(p, WARD_XFS_INTERNAL, "the connection closed");
			return;
		}
		if (!open_allowed(fs, p))
			return;
		memcpy(fs->handles[fs->n_handles].id, p->a.handle, p->a.handle_len);
		fs->handles[fs->n_handles].id_len = p->a.handle_len;
		fs->handles[fs->n_handles].fd = res->fd;
		fs->n_handles++;
		res->fd = -1;
		reply_result(p, json_pack("{s:s%}", "handleId", p->a.handle, p->a.handle_len));
	} else {
		reply_result(p, json_incref(res->result));
	}
}

/* ------------------------------------------------------------ the helper */

static int self_exe(void)
{
	static int fd = -1;

	/*
	 * ward-serve itself, opened once: the helper is executed through this
	 * descriptor (/proc/self/fd/N inside the sandbox), so it runs even when
	 * the sandbox hides ward's directory or the binary was replaced since.
	 */
	if (fd < 0)
		fd = open("/proc/self/exe", O_PATH | O_CLOEXEC);
	return fd;
}

static char *const *helper_env(void)
{
	static char *env[8];
	static bool done;
	static const char *const pass[] = {"ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS"};

	if (!done) {
		size_t n = 0;

		/* Nothing of the server's environment reaches the helper but sanitizer settings. */
		env[n++] = (char *)"PATH=/usr/local/bin:/usr/bin:/bin";
		env[n++] = (char *)"LC_ALL=C";
		for (size_t i = 0; i < ELEMENTSOF(pass); i++) {
			const char *v = getenv(pass[i]);
			char *kv;

			if (v && asprintf(&kv, "%s=%s", pass[i], v) >= 0)
				env[n++] = kv;
		}
		env[n] = NULL;
		done = true;
	}
	return env;
}

static const char deny_unenforceable[] =
	"this host refuses user namespaces, so ward cannot hide the sandbox's deny-read paths "
	"from the operation: refused (run 'ward doctor' for why)";

static void run_free(struct run *run)
{
	ward__proc_free(run->proc);
	ward_policy_free(run->policy);
	ward__buf_release(&run->out);
	ward__buf_release(&run->err);
	if (run->sock >= 0)
		close(run->sock);
	free(run);
}

static void pump(struct ward__xfs *fs);

static void orphan_unlink(struct run *run)
{
	if (!run->orphans)
		return;
	if (run->orphan_prev)
		run->orphan_prev->orphan_next = run->orphan_next;
	else
		run->orphans->head = run->orphan_next;
	if (run->orphan_next)
		run->orphan_next->orphan_prev = run->orphan_prev;
	run->orphans->n--;
	run->orphans = NULL;
	run->orphan_prev = run->orphan_next = NULL;
}

/* Its connection went: the operation finishes on its own, the server ends it at the latest. */
static void orphan_adopt(struct ward__xfs_orphans *o, struct run *run)
{
	run->fs = NULL;
	if (!o)
		return;
	run->orphans = o;
	run->orphan_prev = NULL;
	run->orphan_next = o->head;
	if (o->head)
		o->head->orphan_prev = run;
	o->head = run;
	o->n++;
}

void ward__xfs_orphans_release(struct ward__xfs_orphans *o)
{
	while (o && o->head) {
		struct run *run = o->head;

		orphan_unlink(run);
		/* Answers nobody, but lets whoever asked free what it kept for the answer. */
		reply_error(run->p, WARD_XFS_INTERNAL, "the server is shutting down");
		pending_free(run->p);
		run_free(run);
	}
}

static void on_run_output(struct ward__proc *pr, enum ward__proc_stream stream, const uint8_t *data,
			  size_t len, void *userdata)
{
	struct run *run = userdata;

	if (stream == WARD__PROC_STDERR) {
		ward__buf_append(&run->err, data, MIN(len, ward__buf_room(&run->err)));
		return;
	}
	if (run->overflow)
		return;
	if (ward__buf_append(&run->out, data, len) < 0) {
		run->overflow = true;
		ward__proc_terminate(pr);
	}
}

/* Receives the opened file without waiting: the helper has exited, it is there or not at all. */
static int recv_file(int sock)
{
	char c;
	struct iovec iov = {.iov_base = &c, .iov_len = 1};
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int) * 4)];
	} u = {0};
	struct msghdr mh = {.msg_iov = &iov,
			    .msg_iovlen = 1,
			    .msg_control = u.buf,
			    .msg_controllen = sizeof(u.buf)};
	int fd = -1;
	ssize_t n;

	do
		n = recvmsg(sock, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n <= 0)
		return -EPROTO;
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		for (size_t i = 0; i < (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++) {
			int got;

			memcpy(&got, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
			/* One descriptor is expected; any other is closed, never kept. */
			if (fd < 0)
				fd = got;
			else
				close(got);
		}
	}
	return fd >= 0 ? fd : -EPROTO;
}

static void run_outcome(struct run *run, struct ward__xfs_res *res)
{
	const struct ward__sandbox *sb = ward__proc_sandbox(run->proc);
	const struct ward_error *pe = ward__proc_error(run->proc);
	int code = ward__proc_exit_code(run->proc);

	if (!sb->isolated && run->policy->n_deny > 0 &&
	    run->policy->mode != WARD_MODE_DANGER_FULL_ACCESS) {
		ward__xfs_res_fail(res, WARD_XFS_INVALID_REQUEST, "%s", deny_unenforceable);
		return;
	}
	if (sb->guard_tripped) {
		/*
		 * The operation created a protected path that did not exist (a
		 * .git/hooks, a .codex): the sandbox's guard removed it and stopped
		 * the sandbox, as it does for a command.
		 */
		ward__xfs_res_fail(res, WARD_XFS_INVALID_REQUEST,
				   "the operation created a protected path, which the sandbox "
				   "removed%s%s",
				   sb->guard_left[0] ? ": " : "", sb->guard_left);
		return;
	}
	if (run->overflow) {
		ward__xfs_res_fail(res, WARD_XFS_INTERNAL,
				   "the answer of the filesystem operation exceeds %zu bytes",
				   XFS_HELPER_OUT_MAX);
		return;
	}
	if (ward__proc_timed_out(run->proc)) {
		ward__xfs_res_fail(res, WARD_XFS_INTERNAL,
				   "the filesystem operation did not finish within %u s",
				   XFS_HELPER_TIMEOUT_MS / 1000);
		return;
	}
	if (code != 0) {
		const char *e = run->err.data ? (const char *)run->err.data : "";

		if (pe && pe->message[0])
			ward__xfs_res_fail(res, WARD_XFS_INTERNAL,
					   "cannot run the filesystem operation in its sandbox: %s",
					   pe->message);
		else
			ward__xfs_res_fail(res, WARD_XFS_INTERNAL,
					   "the filesystem helper failed (exit code %d)%s%.*s",
					   code, e[0] ? ": " : "", (int)strcspn(e, "\n"), e);
		return;
	}
	if (ward__xfs_res_decode(run->out.data, run->out.len, res) < 0) {
		ward__xfs_res_fail(res, WARD_XFS_INTERNAL,
				   "the filesystem helper gave no answer it could be trusted for");
		return;
	}
	if (res->code == 0 && run->p->m == WARD_XFS_M_OPEN && !res->result && !res->data) {
		int fd = recv_file(run->sock);

		if (fd < 0)
			ward__xfs_res_fail(res, WARD_XFS_INTERNAL,
					   "the filesystem helper did not pass the opened file");
		else
			res->fd = fd;
	}
}

static void on_run_closed(struct ward__proc *pr, void *userdata)
{
	struct run *run = userdata;
	struct ward__xfs *fs = run->fs;
	struct ward__xfs_res res;

	ward__xfs_res_init(&res);
	run_outcome(run, &res);
	orphan_unlink(run);
	if (fs)
		fs_enter(fs);
	finish(fs, run->p, &res);
	ward__xfs_res_release(&res);
	pending_free(run->p);
	if (fs)
		fs->running = NULL;
	run_free(run);
	if (fs) {
		pump(fs);
		fs_leave(fs);
	}
}

static const struct ward__proc_ops run_ops = {
	.output = on_run_output,
	.closed = on_run_closed,
};

/* Starts the helper for the request under policy (taken). */
static int start_helper(struct ward__xfs *fs, struct pending *p, const struct ward__xfs_req *rq,
			struct ward_policy *policy, struct ward_error *e)
{
	struct run *run = calloc(1, sizeof(*run));
	char req_arg[16], sock_arg[16], exe_path[40];
	char *argv[] = {(char *)"ward-serve", (char *)"__fs-op", req_arg, sock_arg, NULL};
	int keep[3], sv[2] = {-1, -1}, req_fd = -1, exe = self_exe();
	struct ward__proc_spec spec = {0};
	size_t n_keep = 0;
	int r;

	if (!run) {
		ward_policy_free(policy);
		return ward__error(e, -ENOMEM, "fs", "out of memory");
	}
	run->fs = fs;
	run->p = p;
	run->policy = policy;
	run->sock = -1;
	ward__buf_init(&run->out, XFS_HELPER_OUT_MAX);
	ward__buf_init(&run->err, XFS_HELPER_ERR_MAX);
	if (exe < 0) {
		r = ward__error(e, -errno, "fs", "cannot open ward's own program: %m");
		goto fail;
	}
	r = ward__xfs_req_encode(rq, &req_fd);
	if (r < 0) {
		ward__error(e, r, "fs", "cannot hand the request to the helper: %m");
		goto fail;
	}
	if (rq->op == WARD_XFS_OPEN &&
	    socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
		r = ward__error(e, -errno, "fs", "cannot create a socket pair: %m");
		goto fail;
	}
	run->sock = sv[0];
	snprintf(req_arg, sizeof(req_arg), "%d", req_fd);
	snprintf(sock_arg, sizeof(sock_arg), "%d", sv[1]);
	snprintf(exe_path, sizeof(exe_path), "/proc/self/fd/%d", exe);
	keep[n_keep++] = req_fd;
	keep[n_keep++] = exe;
	if (sv[1] >= 0)
		keep[n_keep++] = sv[1];
	spec.policy = policy;
	spec.argv = argv;
	spec.exec_path = exe_path;
	spec.envp = helper_env();
	spec.timeout_ms = XFS_HELPER_TIMEOUT_MS;
	spec.no_observe_fs = true;
	spec.keep_fds = keep;
	spec.n_keep_fds = n_keep;
	r = ward__proc_start(fs->loop, &spec, &run_ops, run, &run->proc, e);
	close(req_fd);
	req_fd = -1;
	if (sv[1] >= 0)
		close(sv[1]);
	sv[1] = -1;
	if (r < 0)
		goto fail;
	fs->running = run;
	return 0;
fail:
	if (req_fd >= 0)
		close(req_fd);
	if (sv[1] >= 0)
		close(sv[1]);
	run->p = NULL;
	run_free(run);
	return r;
}

/* ------------------------------------------------------------ operations */

static const enum ward__xfs_op op_of[] = {
	[WARD_XFS_M_READ_FILE] = WARD_XFS_READ_FILE,
	[WARD_XFS_M_WRITE_FILE] = WARD_XFS_WRITE_FILE,
	[WARD_XFS_M_CREATE_DIRECTORY] = WARD_XFS_CREATE_DIRECTORY,
	[WARD_XFS_M_GET_METADATA] = WARD_XFS_GET_METADATA,
	[WARD_XFS_M_CANONICALIZE] = WARD_XFS_CANONICALIZE,
	[WARD_XFS_M_READ_DIRECTORY] = WARD_XFS_READ_DIRECTORY,
	[WARD_XFS_M_REMOVE] = WARD_XFS_REMOVE,
	[WARD_XFS_M_COPY] = WARD_XFS_COPY,
	[WARD_XFS_M_OPEN] = WARD_XFS_OPEN,
	[WARD_XFS_M_WALK] = WARD_XFS_WALK,
};

/* Checks Codex makes before it touches the filesystem. */
static bool op_checks(struct ward__xfs *fs, struct pending *p, struct ward__xfs_req *rq)
{
	struct ward__xfs_args *a = &p->a;
	char msg[160];

	if (p->m == WARD_XFS_M_WRITE_FILE) {
		rq->data = malloc(a->data_len / 4 * 3 + 3);
		if (!rq->data) {
			reply_errno(p, ENOMEM);
			return false;
		}
		if (ward__xfs_b64_decode(a->data, a->data_len, rq->data, &rq->len, msg,
					 sizeof(msg)) < 0) {
			reply_error(p, WARD_XFS_INVALID_REQUEST,
				    "fs/writeFile requires valid base64 dataBase64: %s", msg);
			return false;
		}
	} else if (p->m == WARD_XFS_M_OPEN) {
		if (!open_allowed(fs, p))
			return false;
	} else if (p->m == WARD_XFS_M_WALK) {
		if (a->max_dirs == 0 || a->max_entries == 0) {
			reply_error(p, WARD_XFS_INVALID_REQUEST,
				    "filesystem walk limits must be greater than zero");
			return false;
		}
		if (a->max_depth > WARD_XFS_WALK_MAX_DEPTH ||
		    a->max_dirs > WARD_XFS_WALK_MAX_DIRS ||
		    a->max_entries > WARD_XFS_WALK_MAX_ENTRIES) {
			reply_error(p, WARD_XFS_INVALID_REQUEST,
				    "filesystem walk limits exceed maximums: depth=%u, "
				    "directories=%u, entries=%u",
				    WARD_XFS_WALK_MAX_DEPTH, WARD_XFS_WALK_MAX_DIRS,
				    WARD_XFS_WALK_MAX_ENTRIES);
			return false;
		}
	}
	if (a->bad_host) {
		reply_error(p, WARD_XFS_INVALID_REQUEST, "%s", a->bad_host_message);
		return false;
	}
	return true;
}

/* A recursive copy or removal of a directory: long, so never in the event loop. */
static bool long_operation(const struct ward__xfs_req *rq)
{
	struct stat st;

	if (!rq->recursive || (rq->op != WARD_XFS_COPY && rq->op != WARD_XFS_REMOVE))
		return false;
	return lstat(rq->path, &st) == 0 && S_ISDIR(st.st_mode);
}

/*
 * An operation handed to its helper may run for minutes, and on after its
 * connection went: the request it came in (up to a whole message, members
 * ward ignores included) is dropped, only what its answer needs stays.
 */
static void keep_only_what_answers(struct pending *p)
{
	if (p->a.handle && p->a.handle_len <= XFS_HANDLE_ID_MAX) {
		memcpy(p->handle, p->a.handle, p->a.handle_len);
		p->handle[p->a.handle_len] = '\0';
		p->a.handle = p->handle;
	} else {
		p->a.handle = NULL;
		p->a.handle_len = 0;
	}
	p->a.data = NULL;
	p->a.data_len = 0;
	p->a.sandbox = NULL;
	json_decref(p->params);
	p->params = NULL;
}

static void do_operation(struct ward__xfs *fs, struct pending *p)
{
	struct ward__xfs_args *a = &p->a;
	struct ward__xfs_req rq = {0};
	struct ward_policy *policy = NULL;
	struct ward_error e = {0};
	_cleanup_free_ char *sandbox_cwd = NULL;
	const char *cwd = fs->cwd;
	bool sandboxed = false;
	int r;

	if (!op_checks(fs, p, &rq))
		goto out;
	/* The sandbox's own cwd (its :project_roots) is the policy's; else the server's. */
	if (a->sandbox) {
		const char *s = json_string_value(json_object_get(a->sandbox, "cwd"));

		if (s && ward__path_or_file_uri(s, &sandbox_cwd) >= 0)
			cwd = sandbox_cwd;
	}
	r = ward__xs_build_policy(fs->tmpl, fs->allow_unsandboxed, fs->own_dir, p->params, cwd,
				  &policy, &sandboxed, &e);
	if (r < 0) {
		reply_error(p,
			    r == -EPERM		   ? WARD_XFS_INVALID_REQUEST
				    : r == -ENOMEM ? WARD_XFS_INTERNAL
						   : WARD_XFS_INVALID_PARAMS,
			    "%s", e.message[0] ? e.message : "invalid sandbox");
		goto out;
	}
	rq.op = op_of[p->m];
	rq.path = TAKE_PTR(a->path);
	rq.path2 = TAKE_PTR(a->path2);
	rq.follow = a->follow;
	rq.recursive = a->recursive;
	rq.force = a->force;
	rq.replace = a->replace;
	rq.follow_dirs = a->follow_dirs;
	rq.prune_hidden = a->prune_hidden;
	rq.max_depth = a->max_depth;
	rq.max_dirs = a->max_dirs;
	rq.max_entries = a->max_entries;
	/*
	 * Where the host refuses user namespaces, ward's sandbox is Landlock and
	 * seccomp only, and nothing can hide a deny-read path: a command there
	 * runs with a warning on its stderr, but an answer has no place for one.
	 * Refused rather than silently letting the operation see what the
	 * sandbox denies (and checked again on the sandbox the helper got).
	 */
	if (sandboxed && policy->n_deny > 0 && !ward__features_get()->userns) {
		reply_error(p, WARD_XFS_INVALID_REQUEST, "%s", deny_unenforceable);
		goto out;
	}
	if (sandboxed || long_operation(&rq)) {
		r = start_helper(fs, p, &rq, TAKE_PTR(policy), &e);
		if (r >= 0) {
			ward__xfs_req_release(&rq);
			keep_only_what_answers(p);
			return; /* answered when the helper is done */
		}
		reply_error(p, WARD_XFS_INTERNAL, "cannot run the filesystem operation: %s",
			    e.message);
	} else {
		struct ward__xfs_res res;

		ward__xfs_res_init(&res);
		ward__xfs_run(&rq, &res);
		finish(fs, p, &res);
		ward__xfs_res_release(&res);
	}
out:
	ward__xfs_req_release(&rq);
	ward_policy_free(policy);
	pending_free(p);
}

static void execute(struct ward__xfs *fs, struct pending *p)
{
	if (!p->parsed) {
		reply_error(p, p->a.code, "%s", p->a.message);
		pending_free(p);
		return;
	}
	if (p->m == WARD_XFS_M_READ_BLOCK) {
		do_read_block(fs, p);
	} else if (p->m == WARD_XFS_M_WRITE_BLOCK) {
		do_write_block(fs, p);
	} else if (p->m == WARD_XFS_M_CLOSE) {
		do_close(fs, p);
	} else if (p->m == WARD_XFS_M_NONE) {
		reply_error(p, WARD_XFS_INTERNAL, "unknown filesystem method");
	} else {
		do_operation(fs, p);
		return;
	}
	pending_free(p);
}

/* Runs what waits, in order, until a helper runs or nothing is left. */
static void pump(struct ward__xfs *fs)
{
	if (fs->pumping)
		return;
	fs->pumping = true;
	while (!fs->running && fs->head && !fs->dead) {
		struct pending *p = fs->head;

		fs->head = p->next;
		if (!fs->head)
			fs->tail = NULL;
		fs->n_queued--;
		fs->queued_bytes -= p->bytes;
		p->next = NULL;
		execute(fs, p);
	}
	fs->pumping = false;
}

/* ------------------------------------------------------------ interface */

int ward__xfs_new(struct ward__xfs **ret)
{
	*ret = calloc(1, sizeof(**ret));
	return *ret ? 0 : -ENOMEM;
}

static void fs_destroy(struct ward__xfs *fs)
{
	while (fs->n_handles > 0)
		drop_handle(fs, &fs->handles[fs->n_handles - 1]);
	/* What waits is answered (nobody listens any more); what runs finishes on its own. */
	while (fs->head) {
		struct pending *p = fs->head;

		fs->head = p->next;
		reply_error(p, WARD_XFS_INTERNAL, "the connection closed");
		pending_free(p);
	}
	if (fs->running)
		orphan_adopt(fs->orphans, fs->running);
	free(fs->cwd);
	free(fs);
}

void ward__xfs_free(struct ward__xfs *fs)
{
	if (!fs || fs->dead)
		return;
	fs->dead = true;
	if (fs->depth == 0)
		fs_destroy(fs);
}

bool ward__xfs_is_method(const char *method)
{
	return ward__xfs_method_from_name(method) != WARD_XFS_M_NONE;
}

void ward__xfs_handle(struct ward__loop *l, struct ward__xfs *fs,
		      const struct ward__xfs_context *ctx, const char *method, json_t *params,
		      ward__xfs_reply_fn reply, void *reply_ctx)
{
	struct pending *p = calloc(1, sizeof(*p));

	if (!p) {
		reply(reply_ctx, NULL, WARD_XFS_INTERNAL, ward__xfs_strerror(ENOMEM));
		return;
	}
	fs_enter(fs);
	if (!fs->loop) {
		fs->loop = l;
		fs->tmpl = ctx->policy;
		fs->allow_unsandboxed = ctx->allow_unsandboxed;
		fs->orphans = ctx->orphans;
		fs->own_dir = ctx->own_dir;
		fs->cwd = strdup(ctx->cwd ? ctx->cwd : "/");
	}
	p->reply = reply;
	p->reply_ctx = reply_ctx;
	p->m = ward__xfs_method_from_name(method);
	p->params = json_incref(params);
	p->parsed = ward__xfs_args_parse(p->m, params, &p->a) == 0;
	/*
	 * What the request holds while it waits: the whole params object (its
	 * arguments point into it), members ward ignores included, and what was
	 * decoded from it. A huge unknown member is charged like data.
	 */
	p->bytes = ward__json_weight(params, XFS_QUEUED_BYTES) + p->a.data_len + p->a.bytes_len +
		sizeof(*p);
	/* An empty queue takes one request whatever it weighs (--max-message may pass 64 MiB). */
	if (!fs->cwd || fs->n_queued >= XFS_MAX_QUEUED ||
	    (fs->n_queued > 0 && fs->queued_bytes + p->bytes > XFS_QUEUED_BYTES)) {
		reply_error(p, WARD_XFS_INTERNAL,
			    "too many filesystem requests wait on this connection (at most %u, "
			    "%zu bytes): wait for their answers",
			    XFS_MAX_QUEUED, XFS_QUEUED_BYTES);
		pending_free(p);
		fs_leave(fs);
		return;
	}
	if (fs->tail)
		fs->tail->next = p;
	else
		fs->head = p;
	fs->tail = p;
	fs->n_queued++;
	fs->queued_bytes += p->bytes;
	pump(fs);
	fs_leave(fs);
}
