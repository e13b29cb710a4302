/* SPDX-License-Identifier: MIT */
/*
 * Whether an address belongs to the machine ward runs on.
 *
 * The ranges of addr.c say which addresses are not the public internet, but
 * a machine's own public address is public: a cloud VM's 203.0.113.7 on its
 * eth0 passes every range check, and a connection from ward to it never
 * leaves the machine. It reaches every service bound to 0.0.0.0 (a database,
 * a kubelet, docker's TCP socket) through the host's own stack, where the
 * firewall that keeps those services from the internet usually does not
 * look. So the proxy asks the kernel how it would route to the address, in
 * ward's own network namespace, and refuses it when the answer is "local"
 * (the local routing table: the machine's addresses, its loopback and any
 * range routed to lo) or "broadcast", unless an --allow-address range names
 * it (decide.c).
 *
 * One RTM_GETROUTE round trip to the kernel per check (a few microseconds,
 * no packet sent), made when a connection is about to be made: addresses
 * come and go (DHCP, a VPN), so nothing is cached.
 */
#include <arpa/inet.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <string.h>
#include <sys/socket.h>

#include "basic/cleanup.h"
#include "net/net-internal.h"

/*
 * Where netlink is refused (a service confined to AF_UNIX and AF_INET*, as
 * systemd's RestrictAddressFamilies= does): a UDP socket connected to the
 * address (no packet is sent) gets the source address the kernel would use,
 * which for an address of the machine's own is that address itself. Local
 * ranges routed with another preferred source are not seen this way, which
 * is why the routing question comes first.
 */
static int local_by_source(const struct ward__net_addr *a)
{
	struct sockaddr_storage to, from;
	socklen_t tl = ward__net_addr_to_sockaddr(a, 9, &to), fl = sizeof(from);
	struct ward__net_addr src;
	_cleanup_close_ int fd = socket(a->family, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&to, tl) < 0)
		return errno == ENETUNREACH || errno == EHOSTUNREACH ? 0 : -errno;
	if (getsockname(fd, (struct sockaddr *)&from, &fl) < 0 ||
	    ward__net_addr_from_sockaddr((struct sockaddr *)&from, fl, &src, NULL) < 0)
		return -EIO;
	return memcmp(src.bytes, a->bytes, a->family == AF_INET ? 4 : 16) == 0;
}

int ward__net_addr_is_local(const struct ward__net_addr *a)
{
	struct {
		struct nlmsghdr nh;
		struct rtmsg rt;
		char attrs[RTA_SPACE(16)];
	} req = {0};
	union {
		struct nlmsghdr nh;
		char buf[4096];
	} ans;
	struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
	size_t alen = a->family == AF_INET ? 4 : 16;
	_cleanup_close_ int fd = -1;
	struct rtattr *rta;
	ssize_t n;

	if (a->family != AF_INET && a->family != AF_INET6)
		return -EAFNOSUPPORT;
	req.nh.nlmsg_len = NLMSG_LENGTH(sizeof(struct rtmsg));
	req.nh.nlmsg_type = RTM_GETROUTE;
	req.nh.nlmsg_flags = NLM_F_REQUEST;
	req.nh.nlmsg_seq = 1;
	req.rt.rtm_family = (unsigned char)a->family;
	req.rt.rtm_dst_len = (unsigned char)(alen * 8);
	rta = (struct rtattr *)((char *)&req + NLMSG_ALIGN(req.nh.nlmsg_len));
	rta->rta_type = RTA_DST;
	rta->rta_len = (unsigned short)RTA_LENGTH(alen);
	memcpy(RTA_DATA(rta), a->bytes, alen);
	req.nh.nlmsg_len = NLMSG_ALIGN(req.nh.nlmsg_len) + RTA_ALIGN(rta->rta_len);

	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (fd < 0 && (errno == EAFNOSUPPORT || errno == EPERM || errno == EACCES))
		return local_by_source(a);
	if (fd < 0)
		return -errno;
	if (sendto(fd, &req, req.nh.nlmsg_len, 0, (struct sockaddr *)&kernel, sizeof(kernel)) < 0)
		return -errno;
	do
		n = recv(fd, &ans, sizeof(ans), 0);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	if ((size_t)n < NLMSG_LENGTH(sizeof(struct rtmsg)) || ans.nh.nlmsg_len > (size_t)n)
		return -EIO;
	if (ans.nh.nlmsg_type == NLMSG_ERROR) {
		const struct nlmsgerr *e = NLMSG_DATA(&ans.nh);

		/* No route at all (ENETUNREACH): not this machine, and the connect will fail. */
		return e->error == -ENETUNREACH || e->error == -EHOSTUNREACH ? 0
			: e->error < 0					     ? e->error
									     : -EIO;
	}
	if (ans.nh.nlmsg_type != RTM_NEWROUTE)
		return -EIO;
	{
		const struct rtmsg *rt = NLMSG_DATA(&ans.nh);

		return rt->rtm_type == RTN_LOCAL || rt->rtm_type == RTN_BROADCAST;
	}
}
