/* SPDX-License-Identifier: MIT */
/*
 * The seccomp supervisor's network calls (see supervise.c): connect()
 * emulated on a duplicate of the command's socket, host pathname unix
 * sockets refused unless allow-listed or bound inside, blocking connects
 * parked until they complete; sendto() destinations the sandbox's network
 * cannot reach, reported.
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <linux/unix_diag.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <unistd.h>

#include "basic/cleanup.h"
#include "basic/util.h"
#include "sandbox/supervise-notify.h"

#define TCP_LISTEN_STATE 10 /* TCP_LISTEN in the kernel's sock states, used by unix_diag too */
#define TICK_NS (20ULL * 1000 * 1000)

/* ------------------------------------------------------------------ connect: unix sockets */

static bool allow_listed(const struct ward_policy *p, const struct stat *st)
{
	for (size_t i = 0; i < p->n_sockets; i++)
		if (p->sockets[i].dev == st->st_dev && p->sockets[i].ino == st->st_ino)
			return true;
	return false;
}

/*
 * unix_diag reports udiag_vfs_dev as the kernel's internal dev_t (major in
 * the top 12 bits, minor in the low 20), not the new_encode_dev() form that
 * stat() returns in st_dev: compare major and minor.
 */
static bool kdev_matches(uint32_t kdev, dev_t st_dev)
{
	return (kdev >> 20) == major(st_dev) && (kdev & 0xfffff) == minor(st_dev);
}

/*
 * True when a listening unix socket of our network namespace is bound to the
 * inode st. Our namespace is the sandbox's private one, so such a socket was
 * bound by a process inside: the host's sockets live in the host's namespace
 * and never show here, whatever path they are reached through.
 *
 * udiag_vfs_ino is 32 bits wide; an inode number that does not fit cannot be
 * matched exactly and is refused (it must be allow-listed instead).
 */
static bool bound_inside(struct ward__supervisor_priv *pv, const struct stat *st)
{
	struct {
		struct nlmsghdr nlh;
		struct unix_diag_req req;
	} msg = {
		.nlh = {.nlmsg_len = sizeof(msg),
			.nlmsg_type = SOCK_DIAG_BY_FAMILY,
			.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP,
			.nlmsg_seq = 1},
		.req = {.sdiag_family = AF_UNIX,
			.udiag_states = 1U << TCP_LISTEN_STATE,
			.udiag_show = UDIAG_SHOW_VFS},
	};
	struct sockaddr_nl nl = {.nl_family = AF_NETLINK};
	_cleanup_close_ int fd = -1;

	if (st->st_ino > UINT32_MAX)
		return false;
	fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
	if (fd < 0)
		return false;
	if (sendto(fd, &msg, sizeof(msg), 0, (struct sockaddr *)&nl, sizeof(nl)) < 0)
		return false;
	/* Bounded: 64 Ki reads of up to 32 KiB, far beyond any sandbox's socket count. */
	for (unsigned rounds = 0; rounds < 65536; rounds++) {
		ssize_t n = recv(fd, pv->nlbuf, sizeof(pv->nlbuf), 0);
		size_t off = 0;

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return false;
		while (off + sizeof(struct nlmsghdr) <= (size_t)n) {
			struct nlmsghdr *h = (struct nlmsghdr *)(pv->nlbuf + off);
			struct unix_diag_msg *m;
			struct rtattr *a;
			int alen;

			if (h->nlmsg_len < sizeof(*h) || h->nlmsg_len > (size_t)n - off)
				break;
			off += NLMSG_ALIGN(h->nlmsg_len);
			if (h->nlmsg_type == NLMSG_DONE || h->nlmsg_type == NLMSG_ERROR)
				return false;
			if (h->nlmsg_type != SOCK_DIAG_BY_FAMILY ||
			    h->nlmsg_len < NLMSG_LENGTH(sizeof(*m)))
				continue;
			m = NLMSG_DATA(h);
			a = (struct rtattr *)(m + 1);
			alen = (int)(h->nlmsg_len - NLMSG_LENGTH(sizeof(*m)));
			for (; RTA_OK(a, alen); a = RTA_NEXT(a, alen)) {
				struct unix_diag_vfs v;

				if (a->rta_type != UNIX_DIAG_VFS || RTA_PAYLOAD(a) < sizeof(v))
					continue;
				memcpy(&v, RTA_DATA(a), sizeof(v));
				if (v.udiag_vfs_ino == (uint32_t)st->st_ino &&
				    kdev_matches(v.udiag_vfs_dev, st->st_dev))
					return true;
			}
		}
	}
	return false;
}

/* ------------------------------------------------------------------ connect: emulation */

static void conn_close(struct conn *c)
{
	if (c->sock >= 0)
		close(c->sock);
	if (c->opath >= 0)
		close(c->opath);
	c->sock = c->opath = -1;
}

static void conn_finish(struct ward__supervisor *s, struct conn *c, int r)
{
	ward__notif_respond(s->priv, c->id, r, 0);
	/* Loopback refusals are the command's own business; the rest could not leave the sandbox. */
	if (c->report && r < 0 && r != -EINPROGRESS)
		ward__supervisor_report_denial(s, "connect", SYS_connect, -r, c->pid, c->target);
	conn_close(c);
}

/*
 * connect() on our duplicate, never blocking: O_NONBLOCK lives in the open
 * file description the command shares, so it is set only around the call.
 */
static int connect_nonblocking(struct conn *c, bool *ret_blocking)
{
	int fl = fcntl(c->sock, F_GETFL);
	int r;

	if (fl < 0)
		return -errno;
	*ret_blocking = !(fl & O_NONBLOCK);
	if (*ret_blocking && fcntl(c->sock, F_SETFL, fl | O_NONBLOCK) < 0)
		return -errno;
	r = connect(c->sock, (struct sockaddr *)&c->addr, c->len) < 0 ? -errno : 0;
	if (*ret_blocking)
		(void)fcntl(c->sock, F_SETFL, fl);
	return r;
}

static void timer_update(struct ward__supervisor_priv *pv)
{
	struct itimerspec its = {0};
	bool want = pv->n_pending > 0;

	if (want == pv->timer_armed)
		return;
	if (want) {
		its.it_value.tv_nsec = (long)TICK_NS;
		its.it_interval.tv_nsec = (long)TICK_NS;
	}
	if (timerfd_settime(pv->timer_fd, 0, &its, NULL) == 0)
		pv->timer_armed = want;
}

static void pending_drop(struct ward__supervisor_priv *pv, unsigned i)
{
	struct pending *e = &pv->pending[i];

	/* Remove before closing: the command still holds the file, so close alone would not. */
	if (!e->retry)
		(void)epoll_ctl(pv->epoll_fd, EPOLL_CTL_DEL, e->c.sock, NULL);
	conn_close(&e->c);
	e->used = false;
	pv->n_pending--;
	timer_update(pv);
}

static bool pending_add(struct ward__supervisor_priv *pv, struct conn *c, bool retry)
{
	struct timeval tv = {0};
	socklen_t tvlen = sizeof(tv);

	for (unsigned i = 0; i < MAX_PENDING; i++) {
		struct pending *e = &pv->pending[i];

		if (e->used)
			continue;
		if (!retry) {
			struct epoll_event ev = {.events = EPOLLOUT, .data.u64 = TAG_PENDING + i};

			if (epoll_ctl(pv->epoll_fd, EPOLL_CTL_ADD, c->sock, &ev) < 0)
				return false;
		}
		e->used = true;
		e->retry = retry;
		e->deadline_ns = 0;
		/* A blocking connect gives up after SO_SNDTIMEO, as the kernel's would. */
		if (getsockopt(c->sock, SOL_SOCKET, SO_SNDTIMEO, &tv, &tvlen) == 0 &&
		    (tv.tv_sec > 0 || tv.tv_usec > 0))
			e->deadline_ns = ward__now_ns() + (uint64_t)tv.tv_sec * 1000000000ULL +
				(uint64_t)tv.tv_usec * 1000ULL;
		e->c = *c;
		c->sock = c->opath = -1;
		pv->n_pending++;
		timer_update(pv);
		return true;
	}
	return false;
}

/*
 * Performs the connect. A blocking socket whose connect cannot complete at
 * once (TCP handshake in progress, or a unix listener with a full backlog)
 * is parked in the pending table and answered when it completes, so one
 * slow connect never stalls the supervisor (nor init's signal handling).
 * When the table is full the command gets EAGAIN.
 */
static void conn_perform(struct ward__supervisor *s, struct conn *c)
{
	bool blocking = false;
	int r = connect_nonblocking(c, &blocking);

	if (blocking &&
	    (r == -EINPROGRESS || r == -EALREADY || (r == -EAGAIN && c->domain == AF_UNIX))) {
		if (pending_add(s->priv, c, r == -EAGAIN))
			return;
		r = -EAGAIN;
	}
	conn_finish(s, c, r);
}

static void printable(char *dst, size_t size, const char *src, size_t n)
{
	size_t o = 0;

	for (size_t i = 0; i < n && o + 1 < size; i++)
		dst[o++] = (src[i] >= 0x20 && src[i] < 0x7f) ? src[i] : '?';
	dst[o] = '\0';
}

static void connect_unix(struct ward__supervisor *s, struct conn *c)
{
	struct ward__supervisor_priv *pv = s->priv;
	const struct sockaddr_un *sun = (const struct sockaddr_un *)&c->addr;
	size_t off = offsetof(struct sockaddr_un, sun_path);
	size_t n;
	_cleanup_close_ int base = -1;
	struct stat st;
	struct sockaddr_un via = {.sun_family = AF_UNIX};

	/* Unnamed, oversized or malformed: the kernel refuses it (EINVAL), nothing to reach. */
	if (c->len <= off || c->len > sizeof(struct sockaddr_un) || sun->sun_family != AF_UNIX) {
		conn_finish(s, c, -EINVAL);
		return;
	}
	n = c->len - off;
	if (sun->sun_path[0] == '\0') {
		/*
		 * Abstract addresses are per network namespace: in our private one
		 * only the sandbox's own are there. Without it the host's would be.
		 */
		c->target[0] = '@';
		printable(c->target + 1, sizeof(c->target) - 1, sun->sun_path + 1, n - 1);
		if (!s->netns) {
			ward__notif_respond(pv, c->id, -EACCES, 0);
			ward__supervisor_report_denial(s, "connect", SYS_connect, EACCES, c->pid,
						       c->target);
			conn_close(c);
			return;
		}
		conn_perform(s, c);
		return;
	}

	/* The kernel reads sun_path up to the first NUL within the given length. */
	memcpy(pv->tmp, sun->sun_path, n);
	pv->tmp[n] = '\0';
	if (pv->tmp[0] != '/') {
		/* Relative to the command's working directory, as the kernel resolves it. */
		base = ward__notif_target_dir(c->pid, AT_FDCWD);
		if (!ward__notif_id_valid(pv, c->id)) {
			conn_close(c);
			return;
		}
		if (base < 0) {
			conn_finish(s, c, base);
			return;
		}
	}
	/* Followed like connect(2) follows symlinks; from now on this inode is the one we talk about. */
	c->opath = openat(base >= 0 ? base : AT_FDCWD, pv->tmp, O_PATH | O_CLOEXEC);
	if (c->opath < 0) {
		conn_finish(s, c, -errno);
		return;
	}
	if (fstat(c->opath, &st) < 0) {
		conn_finish(s, c, -errno);
		return;
	}
	if (ward__notif_fd_path(c->opath, c->target, sizeof(c->target)) < 0)
		ward__supervisor_copy_str(c->target, sizeof(c->target), pv->tmp);
	if (!S_ISSOCK(st.st_mode)) {
		conn_finish(s, c, -ECONNREFUSED);
		return;
	}
	/*
	 * The host's sockets (docker, D-Bus, ssh-agent) must stay out of reach:
	 * a read-only mount does not stop connect(2). Allowed: the policy's
	 * allow-list, and sockets bound inside the sandbox, which can be told
	 * apart only in a private network namespace.
	 */
	if (!allow_listed(s->policy, &st) && !(s->netns && bound_inside(pv, &st))) {
		ward__notif_respond(pv, c->id, -EACCES, 0);
		ward__supervisor_report_denial(s, "connect", SYS_connect, EACCES, c->pid,
					       c->target);
		conn_close(c);
		return;
	}
	snprintf(via.sun_path, sizeof(via.sun_path), "/proc/self/fd/%d", c->opath);
	memset(&c->addr, 0, sizeof(c->addr));
	memcpy(&c->addr, &via, sizeof(via));
	c->len = (socklen_t)(off + strlen(via.sun_path) + 1);
	conn_perform(s, c);
}

static bool inet_loopback(const struct sockaddr_storage *ss, socklen_t len)
{
	if (ss->ss_family == AF_INET && len >= sizeof(struct sockaddr_in)) {
		uint32_t a = ntohl(((const struct sockaddr_in *)ss)->sin_addr.s_addr);

		/* 0.0.0.0 connects to the local host. */
		return (a >> 24) == 127 || a == 0;
	}
	if (ss->ss_family == AF_INET6 && len >= sizeof(struct sockaddr_in6)) {
		const struct in6_addr *a = &((const struct sockaddr_in6 *)ss)->sin6_addr;

		if (IN6_IS_ADDR_LOOPBACK(a) || IN6_IS_ADDR_UNSPECIFIED(a))
			return true;
		return IN6_IS_ADDR_V4MAPPED(a) &&
			(a->s6_addr[12] == 127 ||
			 (a->s6_addr[12] | a->s6_addr[13] | a->s6_addr[14] | a->s6_addr[15]) == 0);
	}
	/* AF_UNSPEC dissolves an association; malformed addresses are refused by the kernel. */
	return true;
}

static void inet_target(const struct sockaddr_storage *ss, socklen_t len, char *buf, size_t size)
{
	char a[INET6_ADDRSTRLEN] = "?";

	if (ss->ss_family == AF_INET && len >= sizeof(struct sockaddr_in)) {
		const struct sockaddr_in *sin = (const struct sockaddr_in *)ss;

		inet_ntop(AF_INET, &sin->sin_addr, a, sizeof(a));
		snprintf(buf, size, "%s:%u", a, ntohs(sin->sin_port));
	} else if (ss->ss_family == AF_INET6 && len >= sizeof(struct sockaddr_in6)) {
		const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)ss;

		inet_ntop(AF_INET6, &sin6->sin6_addr, a, sizeof(a));
		snprintf(buf, size, "[%s]:%u", a, ntohs(sin6->sin6_port));
	} else {
		snprintf(buf, size, "family %u", (unsigned)ss->ss_family);
	}
}

/* The IPv4 address of a pool destination (v4-mapped too, for dual-stack sockets), or 0. */
static uint32_t pool_dest(const struct sockaddr_storage *ss, socklen_t len, uint16_t *ret_port)
{
	uint32_t a = 0;

	if (ss->ss_family == AF_INET && len >= sizeof(struct sockaddr_in)) {
		const struct sockaddr_in *sin = (const struct sockaddr_in *)ss;

		a = ntohl(sin->sin_addr.s_addr);
		*ret_port = ntohs(sin->sin_port);
	} else if (ss->ss_family == AF_INET6 && len >= sizeof(struct sockaddr_in6)) {
		const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)ss;

		if (!IN6_IS_ADDR_V4MAPPED(&sin6->sin6_addr))
			return 0;
		memcpy(&a, sin6->sin6_addr.s6_addr + 12, 4);
		a = ntohl(a);
		*ret_port = ntohs(sin6->sin6_port);
	}
	if ((a >> (32 - WARD_NET_POOL_BITS)) != (WARD_NET_POOL_ADDR >> (32 - WARD_NET_POOL_BITS)) ||
	    *ret_port == 0)
		return 0;
	return a;
}

/*
 * A TCP connect to an address of ward's pool: the listener ward accepts it
 * on is made now, in the sandbox's network namespace, and handed to ward
 * before the connect is performed, so the connect lands on it (the pool's
 * local route keeps it inside). ward tells names apart by the accepted
 * socket's local address, so what the command asked for is all ward needs.
 * Returns whether a listener is there.
 */
static bool pool_listener(struct ward__supervisor *s, const struct conn *c)
{
	struct ward__supervisor_priv *pv = s->priv;
	struct sockaddr_in sin = {.sin_family = AF_INET};
	uint16_t port = 0;
	uint32_t a = pool_dest(&c->addr, c->len, &port);
	int type = 0, one = 1, fd, r;
	socklen_t tl = sizeof(type);

	if (!a || getsockopt(c->sock, SOL_SOCKET, SO_TYPE, &type, &tl) < 0 || type != SOCK_STREAM)
		return false;
	for (unsigned i = 0; i < pv->n_pool; i++)
		if (pv->pool[i].addr == a && pv->pool[i].port == port)
			return true;
	if (pv->n_pool >= WARD_NET_MAX_POOL_LISTENERS)
		return false;
	sin.sin_addr.s_addr = htonl(a);
	sin.sin_port = htons(port);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return false;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0 || listen(fd, SOMAXCONN) < 0) {
		close(fd);
		return false;
	}
	r = ward__send_fd_tag(s->net_fd, fd, WARD_NETFD_POOL);
	close(fd);
	if (r < 0)
		return false;
	pv->pool[pv->n_pool].addr = a;
	pv->pool[pv->n_pool].port = port;
	pv->n_pool++;
	return true;
}

void ward__supervisor_connect(struct ward__supervisor *s, const struct seccomp_notif *req)
{
	struct ward__supervisor_priv *pv = s->priv;
	struct conn c = {.id = req->id, .pid = (int32_t)req->pid, .sock = -1, .opath = -1};
	int fd = (int)req->data.args[0];
	int len = (int)req->data.args[2];
	socklen_t dlen = sizeof(c.domain);
	struct stat st;
	int r;

	/* The address is copied once (the kernel's own cap); we never let the kernel read it again. */
	if (len < 0 || (size_t)len > sizeof(c.addr)) {
		ward__notif_respond(pv, c.id, -EINVAL, 0);
		return;
	}
	c.len = (socklen_t)len;
	r = ward__notif_read_mem(c.pid, req->data.args[1], &c.addr, c.len);
	if (!ward__notif_id_valid(pv, c.id))
		return;
	if (r < 0) {
		ward__notif_respond(pv, c.id, -EFAULT, 0);
		return;
	}
	r = ward__notif_target_fd(pv, c.id, c.pid, fd);
	if (r == -ESRCH)
		return;
	if (r < 0) {
		ward__notif_respond(pv, c.id, r, 0);
		return;
	}
	c.sock = r;
	if (fstat(c.sock, &st) < 0 || !S_ISSOCK(st.st_mode)) {
		conn_finish(s, &c, -ENOTSOCK);
		return;
	}
	if (getsockopt(c.sock, SOL_SOCKET, SO_DOMAIN, &c.domain, &dlen) < 0) {
		conn_finish(s, &c, -errno);
		return;
	}
	switch (c.domain) {
	case AF_UNIX:
		connect_unix(s, &c);
		return;
	case AF_INET:
	case AF_INET6:
		/*
		 * With the network off in a private namespace only loopback
		 * exists; anything else fails there (ENETUNREACH), and that
		 * failure is the sandbox's doing, so it is reported.
		 */
		inet_target(&c.addr, c.len, c.target, sizeof(c.target));
		c.report = s->netns && !inet_loopback(&c.addr, c.len);
		/* The network by domain: ward's proxy is behind a pool address, and decides there. */
		if (s->net_fd >= 0 && pool_listener(s, &c))
			c.report = false;
		conn_perform(s, &c);
		return;
	default:
		/* Other families (netlink, ...) have no host objects to reach by address. */
		conn_perform(s, &c);
		return;
	}
}

/* A pending blocking connect became writable (or failed). */
void ward__supervisor_pending_complete(struct ward__supervisor *s, unsigned i)
{
	struct ward__supervisor_priv *pv = s->priv;
	struct pending *e = &pv->pending[i];
	int err = 0;
	socklen_t elen = sizeof(err);

	if (i >= MAX_PENDING || !e->used || e->retry)
		return;
	if (getsockopt(e->c.sock, SOL_SOCKET, SO_ERROR, &err, &elen) < 0)
		err = errno;
	ward__notif_respond(pv, e->c.id, err ? -err : 0, 0);
	if (e->c.report && err)
		ward__supervisor_report_denial(s, "connect", SYS_connect, err, e->c.pid,
					       e->c.target);
	pending_drop(pv, i);
}

void ward__supervisor_pending_tick(struct ward__supervisor *s)
{
	struct ward__supervisor_priv *pv = s->priv;
	uint64_t now = ward__now_ns();

	for (unsigned i = 0; i < MAX_PENDING; i++) {
		struct pending *e = &pv->pending[i];

		if (!e->used)
			continue;
		/* The command was killed: drop our reference to its socket. */
		if (!ward__notif_id_valid(pv, e->c.id)) {
			pending_drop(pv, i);
			continue;
		}
		if (e->retry) {
			bool blocking;
			int r = connect_nonblocking(&e->c, &blocking);

			if (r != -EAGAIN) {
				ward__notif_respond(pv, e->c.id, r, 0);
				pending_drop(pv, i);
				continue;
			}
		}
		if (e->deadline_ns && now >= e->deadline_ns) {
			/* What a blocking connect returns when SO_SNDTIMEO runs out. */
			ward__notif_respond(pv, e->c.id, e->retry ? -EAGAIN : -EINPROGRESS, 0);
			pending_drop(pv, i);
		}
	}
}

void ward__supervisor_pending_abort(struct ward__supervisor_priv *pv)
{
	for (unsigned i = 0; i < MAX_PENDING; i++)
		if (pv->pending[i].used) {
			/* The command is still waiting: tell it the connect did not happen. */
			ward__notif_respond(pv, pv->pending[i].c.id, -ECONNABORTED, 0);
			pending_drop(pv, i);
		}
}

/* ------------------------------------------------------------------ sendto */

/*
 * sendto() with an address, in a private network namespace with the network
 * off: a destination outside loopback is unreachable there (ENETUNREACH), the
 * sandbox's doing, so it is reported. The kernel decides (CONTINUE).
 */
void ward__supervisor_sendto(struct ward__supervisor *s, const struct seccomp_notif *req)
{
	struct ward__supervisor_priv *pv = s->priv;
	struct sockaddr_storage ss;
	int64_t len = (int64_t)req->data.args[5];
	char target[INET6_ADDRSTRLEN + 16];

	memset(&ss, 0, sizeof(ss));
	if (s->netns && len > 0 && (size_t)len <= sizeof(ss) &&
	    ward__notif_read_mem((pid_t)req->pid, req->data.args[4], &ss, (size_t)len) == 0 &&
	    ward__notif_id_valid(pv, req->id) &&
	    (ss.ss_family == AF_INET || ss.ss_family == AF_INET6) &&
	    !inet_loopback(&ss, (socklen_t)len)) {
		inet_target(&ss, (socklen_t)len, target, sizeof(target));
		ward__supervisor_report_denial(s, "sendto", req->data.nr, ENETUNREACH,
					       (int32_t)req->pid, target);
	}
	ward__notif_respond(pv, req->id, 0, SECCOMP_USER_NOTIF_FLAG_CONTINUE);
}
