/* SPDX-License-Identifier: MIT */
/*
 * The sandboxed side of the filesystem methods: `ward-serve __fs-op REQ SOCK`
 * runs one operation (fsimpl.c) as the command of a sandbox built exactly as
 * a command's. The server hands it the request in a memfd (REQ), reads the
 * answer on its stdout, and for fs/open receives the opened file over a unix
 * socket (SOCK, SCM_RIGHTS), so that fs/readBlock and fs/writeBlock are then
 * plain pread()/pwrite() in the server on a descriptor the sandbox opened.
 *
 * Both messages are a fixed header and bytes (paths are bytes, not text, so
 * they do not travel as JSON). Both sides check every length; the server
 * trusts nothing the helper says beyond what the helper could do anyway.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "basic/cleanup.h"
#include "basic/util.h"
#include "execserver/fshelper.h"
#include "execserver/fsimpl.h"
#include "execserver/fswire.h"
#include "sandbox/sandbox.h"

#define REQ_MAGIC 0x31534657u /* "WFS1" */
#define RES_MAGIC 0x31524657u /* "WFR1" */

enum {
	F_FOLLOW = 1 << 0,
	F_RECURSIVE = 1 << 1,
	F_FORCE = 1 << 2,
	F_REPLACE = 1 << 3,
	F_FOLLOW_DIRS = 1 << 4,
	F_PRUNE_HIDDEN = 1 << 5,
};

struct req_hdr {
	uint32_t magic;
	uint32_t op;
	uint32_t flags;
	uint32_t path_len;
	uint32_t path2_len;
	uint32_t pad;
	uint64_t max_depth, max_dirs, max_entries;
	uint64_t data_len;
};

struct res_hdr {
	uint32_t magic;
	int32_t code;
	uint32_t kind;
	uint32_t pad;
	uint64_t len;
};

int ward__xfs_req_encode(const struct ward__xfs_req *rq, int *ret_fd)
{
	struct req_hdr h = {
		.magic = REQ_MAGIC,
		.op = (uint32_t)rq->op,
		.flags = (rq->follow ? F_FOLLOW : 0) | (rq->recursive ? F_RECURSIVE : 0) |
			(rq->force ? F_FORCE : 0) | (rq->replace ? F_REPLACE : 0) |
			(rq->follow_dirs ? F_FOLLOW_DIRS : 0) |
			(rq->prune_hidden ? F_PRUNE_HIDDEN : 0),
		.path_len = rq->path ? (uint32_t)strlen(rq->path) : 0,
		.path2_len = rq->path2 ? (uint32_t)strlen(rq->path2) : 0,
		.max_depth = rq->max_depth,
		.max_dirs = rq->max_dirs,
		.max_entries = rq->max_entries,
		.data_len = rq->len,
	};
	_cleanup_close_ int fd = memfd_create("ward-fs-request", MFD_CLOEXEC);
	int r;

	if (fd < 0)
		return -errno;
	r = ward__write_all(fd, &h, sizeof(h));
	if (r >= 0 && h.path_len)
		r = ward__write_all(fd, rq->path, h.path_len);
	if (r >= 0 && h.path2_len)
		r = ward__write_all(fd, rq->path2, h.path2_len);
	if (r >= 0 && rq->len)
		r = ward__write_all(fd, rq->data, rq->len);
	if (r < 0)
		return r;
	*ret_fd = TAKE_FD(fd);
	return 0;
}

static int read_at(int fd, void *buf, size_t len, off_t off)
{
	uint8_t *p = buf;

	while (len > 0) {
		ssize_t n = pread(fd, p, len, off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EPROTO;
		p += n;
		len -= (size_t)n;
		off += n;
	}
	return 0;
}

static char *read_string(int fd, size_t len, off_t off, int *r)
{
	char *s = malloc(len + 1);

	if (!s) {
		*r = -ENOMEM;
		return NULL;
	}
	*r = read_at(fd, s, len, off);
	if (*r < 0 || memchr(s, '\0', len)) {
		*r = *r < 0 ? *r : -EPROTO;
		free(s);
		return NULL;
	}
	s[len] = '\0';
	return s;
}

static int req_decode(int fd, struct ward__xfs_req *rq)
{
	struct req_hdr h;
	off_t off = sizeof(h);
	int r;

	r = read_at(fd, &h, sizeof(h), 0);
	if (r < 0)
		return r;
	if (h.magic != REQ_MAGIC || h.op == 0 || h.op >= WARD_XFS_OP_MAX || h.path_len == 0 ||
	    h.path_len > WARD_XFS_HELPER_PATH_MAX || h.path2_len > WARD_XFS_HELPER_PATH_MAX ||
	    h.data_len > WARD_XFS_HELPER_DATA_MAX)
		return -EPROTO;
	*rq = (struct ward__xfs_req){
		.op = (enum ward__xfs_op)h.op,
		.follow = h.flags & F_FOLLOW,
		.recursive = h.flags & F_RECURSIVE,
		.force = h.flags & F_FORCE,
		.replace = h.flags & F_REPLACE,
		.follow_dirs = h.flags & F_FOLLOW_DIRS,
		.prune_hidden = h.flags & F_PRUNE_HIDDEN,
		.max_depth = h.max_depth,
		.max_dirs = h.max_dirs,
		.max_entries = h.max_entries,
	};
	rq->path = read_string(fd, h.path_len, off, &r);
	if (!rq->path)
		return r;
	off += h.path_len;
	if (h.path2_len) {
		rq->path2 = read_string(fd, h.path2_len, off, &r);
		if (!rq->path2)
			return r;
		off += h.path2_len;
	}
	rq->data = malloc(h.data_len ? h.data_len : 1);
	if (!rq->data)
		return -ENOMEM;
	rq->len = h.data_len;
	return h.data_len ? read_at(fd, rq->data, h.data_len, off) : 0;
}

int ward__xfs_res_decode(const uint8_t *buf, size_t len, struct ward__xfs_res *res)
{
	struct res_hdr h;
	const uint8_t *p = buf + sizeof(h);

	ward__xfs_res_release(res);
	if (len < sizeof(h))
		return -EPROTO;
	memcpy(&h, buf, sizeof(h));
	if (h.magic != RES_MAGIC || h.len != len - sizeof(h))
		return -EPROTO;
	if (h.code != 0) {
		/* Error codes are the few Codex uses; the message is text of bounded length. */
		if (h.kind != WARD_XFS_RES_MESSAGE || h.len > 65536 || memchr(p, '\0', h.len) ||
		    (h.code != WARD_XFS_NOT_FOUND && h.code != WARD_XFS_INVALID_REQUEST &&
		     h.code != WARD_XFS_INTERNAL))
			return -EPROTO;
		res->message = ward__xfs_lossy_utf8((const char *)p, h.len, NULL);
		if (!res->message)
			return -ENOMEM;
		res->code = h.code;
		return 0;
	}
	switch (h.kind) {
	case WARD_XFS_RES_JSON: {
		json_t *j = json_loadb((const char *)p, h.len, 0, NULL);

		if (!json_is_object(j)) {
			json_decref(j);
			return -EPROTO;
		}
		res->result = j;
		return 0;
	}
	case WARD_XFS_RES_DATA:
		if (h.len > WARD_XFS_READ_MAX)
			return -EPROTO;
		res->data = malloc(h.len ? h.len : 1);
		if (!res->data)
			return -ENOMEM;
		memcpy(res->data, p, h.len);
		res->len = h.len;
		return 0;
	case WARD_XFS_RES_FD:
		/* The descriptor itself comes over the socket. */
		return h.len == 0 ? 0 : -EPROTO;
	default:
		return -EPROTO;
	}
}

/* Writes the answer on stdout: header, then the message, the JSON or the bytes. */
static int res_write(int out, const struct ward__xfs_res *res)
{
	struct res_hdr h = {.magic = RES_MAGIC, .code = res->code};
	_cleanup_free_ char *text = NULL;
	const void *payload = NULL;
	int r;

	if (res->code != 0) {
		h.kind = WARD_XFS_RES_MESSAGE;
		payload = res->message ? res->message : "";
		h.len = strlen(payload);
	} else if (res->fd >= 0) {
		h.kind = WARD_XFS_RES_FD;
	} else if (res->result) {
		text = json_dumps(res->result, JSON_COMPACT);
		if (!text)
			return -ENOMEM;
		h.kind = WARD_XFS_RES_JSON;
		payload = text;
		h.len = strlen(text);
	} else {
		h.kind = WARD_XFS_RES_DATA;
		payload = res->data;
		h.len = res->len;
	}
	r = ward__write_all(out, &h, sizeof(h));
	if (r >= 0 && h.len)
		r = ward__write_all(out, payload, h.len);
	return r;
}

static int parse_fd(const char *s)
{
	uint64_t v;

	if (strcmp(s, "-1") == 0)
		return -1;
	if (ward__parse_u64(s, &v) < 0 || v < 3 || v > INT32_MAX)
		return -2;
	return (int)v;
}

int ward__xfs_helper_main(int argc, char **argv)
{
	struct ward__xfs_req rq = {0};
	struct ward__xfs_res res;
	int req_fd, sock, r;

	if (argc != 4 || (req_fd = parse_fd(argv[2])) < 0 || (sock = parse_fd(argv[3])) < -1) {
		fprintf(stderr, "ward-serve: __fs-op is ward's own helper, not a command\n");
		return 2;
	}
	r = req_decode(req_fd, &rq);
	close(req_fd);
	if (r < 0) {
		fprintf(stderr, "ward-serve: cannot read the filesystem request: %s\n",
			strerror(-r));
		_exit(2);
	}
	ward__xfs_res_init(&res);
	ward__xfs_run(&rq, &res);
	if (res.code == 0 && res.fd >= 0) {
		r = sock >= 0 ? ward__send_fd(sock, res.fd) : -EBADF;
		if (r < 0)
			ward__xfs_res_errno(&res, r);
	}
	r = res_write(STDOUT_FILENO, &res);
	/*
	 * _exit: nothing of this process matters once the answer is out (and a
	 * sanitizer build's leak check would need ptrace, which the sandbox's
	 * filter refuses).
	 */
	_exit(r < 0 ? 1 : 0);
}
