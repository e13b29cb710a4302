/* SPDX-License-Identifier: MIT */
/*
 * Passing one descriptor over a unix socket (SCM_RIGHTS): a pty's master from
 * the sandbox to ward, the seccomp listener from the command to init, an
 * opened file from the exec server's file helper. Only syscalls, so usable
 * between fork and exec.
 */
#include <string.h>
#include <sys/socket.h>

#include "sandbox/sandbox.h"

int ward__send_fd(int sock, int fd)
{
	return ward__send_fd_tag(sock, fd, 'L');
}

int ward__recv_fd(int sock)
{
	char tag;

	return ward__recv_fd_tag(sock, &tag);
}

int ward__send_fd_tag(int sock, int fd, char tag)
{
	char c = tag;
	struct iovec iov = {.iov_base = &c, .iov_len = 1};
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} u = {0};
	struct msghdr mh = {.msg_iov = &iov,
			    .msg_iovlen = 1,
			    .msg_control = u.buf,
			    .msg_controllen = sizeof(u.buf)};
	struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);

	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	return RET_NERRNO(sendmsg(sock, &mh, MSG_NOSIGNAL));
}

int ward__recv_fd_tag(int sock, char *ret_tag)
{
	char c = 0;
	struct iovec iov = {.iov_base = &c, .iov_len = 1};
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} u = {0};
	struct msghdr mh = {.msg_iov = &iov,
			    .msg_iovlen = 1,
			    .msg_control = u.buf,
			    .msg_controllen = sizeof(u.buf)};
	struct cmsghdr *cm;
	ssize_t n;
	int fd = -1;

	do
		n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n <= 0)
		return n < 0 ? -errno : -EPIPE;
	cm = CMSG_FIRSTHDR(&mh);
	if (!cm || cm->cmsg_type != SCM_RIGHTS || cm->cmsg_len != CMSG_LEN(sizeof(int)))
		return -EPROTO;
	memcpy(&fd, CMSG_DATA(cm), sizeof(int));
	*ret_tag = c;
	return fd;
}
