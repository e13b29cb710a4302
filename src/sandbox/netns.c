/* SPDX-License-Identifier: MIT */
/*
 * The sandbox's side of the network by domain, made by the clone's child in
 * the sandbox's own (empty) network namespace before it becomes init:
 *
 *   - the listening sockets of ward's proxy on the sandbox's loopback (HTTP
 *     on 127.0.0.1:3128, SOCKS5 on 127.0.0.1:1080 and its UDP relay on the
 *     same port over UDP, the DNS stub on
 *     127.0.0.1:53 over UDP and TCP), each handed to ward at once over the
 *     sandbox's net socket and closed here: nothing inside the sandbox holds
 *     them, every byte sent to them is read by ward, outside;
 *   - a "local" route for ward's address pool (198.18.0.0/16) on lo, so that
 *     a connection to an address the DNS stub gave out stays inside the
 *     namespace, where init (supervise-net.c) makes the pool listener ward
 *     accepts it on; an address with no listener is refused at once;
 *   - /etc/resolv.conf naming the stub: a file of the sandbox's own /dev
 *     tmpfs bound read-only over it (over its target when it is a symlink,
 *     as with systemd-resolved), so nothing is created on the host.
 *
 * Why listeners made here and passed out rather than a socket ward makes:
 * ward is not in the sandbox's network namespace, and entering it (setns)
 * would need a thread or a process of ward's own for each sandbox; the
 * child is there already and passing a descriptor is one sendmsg().
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <unistd.h>

#include "basic/cleanup.h"
#include "basic/error.h"
#include "sandbox/sandbox.h"

/* RTM_NEWROUTE: local 198.18.0.0/16 dev lo, in the local table. */
static int pool_route(struct ward_error *err)
{
	struct {
		struct nlmsghdr nh;
		struct rtmsg rt;
		char attrs[64];
	} req = {0};
	_cleanup_close_ int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
	uint32_t dst = htonl(WARD_NET_POOL_ADDR), oif = if_nametoindex("lo");
	struct rtattr *a;
	char ack[256];
	ssize_t n;

	if (fd < 0)
		return ward__error(err, -errno, "network", "cannot open a netlink socket: %m");
	req.nh.nlmsg_len = NLMSG_LENGTH(sizeof(struct rtmsg));
	req.nh.nlmsg_type = RTM_NEWROUTE;
	req.nh.nlmsg_flags = NLM_F_REQUEST | NLM_F_CREATE | NLM_F_EXCL | NLM_F_ACK;
	req.rt.rtm_family = AF_INET;
	req.rt.rtm_dst_len = WARD_NET_POOL_BITS;
	req.rt.rtm_table = RT_TABLE_LOCAL;
	req.rt.rtm_protocol = RTPROT_STATIC;
	req.rt.rtm_scope = RT_SCOPE_HOST;
	req.rt.rtm_type = RTN_LOCAL;
	a = (struct rtattr *)((char *)&req + NLMSG_ALIGN(req.nh.nlmsg_len));
	a->rta_type = RTA_DST;
	a->rta_len = RTA_LENGTH(sizeof(dst));
	memcpy(RTA_DATA(a), &dst, sizeof(dst));
	req.nh.nlmsg_len = NLMSG_ALIGN(req.nh.nlmsg_len) + RTA_ALIGN(a->rta_len);
	a = (struct rtattr *)((char *)&req + req.nh.nlmsg_len);
	a->rta_type = RTA_OIF;
	a->rta_len = RTA_LENGTH(sizeof(oif));
	memcpy(RTA_DATA(a), &oif, sizeof(oif));
	req.nh.nlmsg_len += RTA_ALIGN(a->rta_len);
	if (sendto(fd, &req, req.nh.nlmsg_len, 0, (struct sockaddr *)&kernel, sizeof(kernel)) < 0)
		return ward__error(err, -errno, "network", "cannot add the pool's route: %m");
	n = recv(fd, ack, sizeof(ack), 0);
	if (n < (ssize_t)NLMSG_LENGTH(sizeof(struct nlmsgerr)))
		return ward__error(err, n < 0 ? -errno : -EIO, "network",
				   "cannot add the pool's route: no answer from the kernel");
	{
		const struct nlmsghdr *h = (const struct nlmsghdr *)ack;
		const struct nlmsgerr *e = NLMSG_DATA(h);

		if (h->nlmsg_type == NLMSG_ERROR && e->error < 0)
			return ward__error(err, e->error, "network",
					   "cannot add the pool's route: %m");
	}
	return 0;
}

static int listener(int type, uint16_t port, struct ward_error *err)
{
	struct sockaddr_in sin = {.sin_family = AF_INET,
				  .sin_port = htons(port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	int one = 1, fd = socket(AF_INET, type | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return ward__error(err, -errno, "network", "cannot create the proxy's socket: %m");
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0 ||
	    (type == SOCK_STREAM && listen(fd, SOMAXCONN) < 0)) {
		int r = -errno;

		close(fd);
		return ward__error(err, r, "network", "cannot listen on 127.0.0.1:%u: %m", port);
	}
	return fd;
}

int ward__netns_setup(int net_fd, struct ward_error *err)
{
	static const struct {
		char tag;
		int type;
		uint16_t port;
	} ls[] = {
		{WARD_NETFD_HTTP, SOCK_STREAM, WARD_NET_HTTP_PORT},
		{WARD_NETFD_SOCKS5, SOCK_STREAM, WARD_NET_SOCKS5_PORT},
		{WARD_NETFD_SOCKS5_UDP, SOCK_DGRAM, WARD_NET_SOCKS5_PORT},
		{WARD_NETFD_DNS_UDP, SOCK_DGRAM, 53},
		{WARD_NETFD_DNS_TCP, SOCK_STREAM, 53},
	};
	int r = pool_route(err);

	if (r < 0)
		return r;
	for (size_t i = 0; i < ELEMENTSOF(ls); i++) {
		int fd = listener(ls[i].type, ls[i].port, err);

		if (fd < 0)
			return fd;
		r = ward__send_fd_tag(net_fd, fd, ls[i].tag);
		close(fd);
		if (r < 0)
			return ward__error(err, r, "network",
					   "cannot hand the proxy's socket to ward: %m");
	}
	return 0;
}

int ward__netns_resolv_conf(struct ward_error *err)
{
	static const char conf[] = "# ward: names are answered by the sandbox's DNS stub\n"
				   "nameserver 127.0.0.1\n"
				   "options ndots:1\n";
	static const char tmp[] = "/dev/.ward-resolv.conf";
	char target[PATH_MAX];
	int fd, r = 0;

	/*
	 * A symlink (systemd-resolved's /etc/resolv.conf) is followed to the file
	 * the resolver will open; a missing or dangling one has nothing to mount
	 * over, and nothing may be created on the host: the stub then serves only
	 * programs that name it themselves, and the proxy variables still work.
	 */
	if (!realpath("/etc/resolv.conf", target))
		return 0;
	/*
	 * The file comes from the sandbox's own /dev tmpfs, as deny-read's
	 * covers do (mounts.c): a memfd cannot be the source of a bind mount
	 * (its mount is not in this namespace), and nothing may be created on
	 * the host. It is unlinked from /dev once mounted.
	 */
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0444);
	if (fd < 0)
		return ward__error(err, -errno, "network", "cannot create '%s': %m", tmp);
	if (write(fd, conf, sizeof(conf) - 1) != (ssize_t)(sizeof(conf) - 1))
		r = ward__error(err, -EIO, "network", "cannot write '%s'", tmp);
	close(fd);
	if (r >= 0 && mount(tmp, target, NULL, MS_BIND, NULL) < 0)
		r = ward__error(err, -errno, "network", "cannot mount over '%s': %m", target);
	if (r >= 0 &&
	    mount(NULL, target, NULL,
		  MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
		r = ward__error(err, -errno, "network", "cannot make '%s' read-only: %m", target);
	unlink(tmp);
	return r;
}
