/* SPDX-License-Identifier: MIT */
/*
 * src/net: the host patterns, the address ranges, the SOCKS5 and DNS codecs
 * and the HTTP body framing (pure, byte-exact), then the proxy engine on a
 * real event loop with real sockets on loopback: an upstream and a DNS
 * server the test runs, clients in forked processes speaking HTTP, CONNECT,
 * SOCKS5 and DNS, and the attacks (rebinding to the metadata address, a
 * request smuggled in a body, garbage, a slow client, more connections than
 * the cap). Works unprivileged; needs no network but loopback.
 */
#include <arpa/inet.h>
#include <stdbool.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tap.h"

#include "basic/buf.h"
#include "basic/loop.h"
#include "basic/util.h"
#include "net/net-internal.h"
#include "net/net.h"
#include "net/proxy.h"
#include "rpc/http.h"

/* ------------------------------------------------------------ host names and patterns */

static const char *norm(const char *in)
{
	static char out[WARD_NET_HOST_MAX + 1];

	if (ward__net_host_normalize(in, strlen(in), false, out) < 0)
		return "(refused)";
	return out;
}

TEST(host_normalize)
{
	ASSERT_STREQ(norm("Example.COM."), "example.com");
	ASSERT_STREQ(norm("a_b.example"), "a_b.example");
	ASSERT_STREQ(norm("[::FFFF:1.2.3.4]"), "::ffff:1.2.3.4");
	ASSERT_STREQ(norm("2001:DB8::1"), "2001:db8::1");
	ASSERT_STREQ(norm("1.2.3.4"), "1.2.3.4");
	/* IDNs in their ASCII form (RFC 3492's own examples and common names). */
	ASSERT_STREQ(norm("bücher.example"), "xn--bcher-kva.example");
	ASSERT_STREQ(norm("münchen.de"), "xn--mnchen-3ya.de");
	ASSERT_STREQ(norm("例え.テスト"), "xn--r8jz45g.xn--zckzah");
	/* Not hosts. */
	ASSERT_STREQ(norm(""), "(refused)");
	ASSERT_STREQ(norm("."), "(refused)");
	ASSERT_STREQ(norm("a..b"), "(refused)");
	ASSERT_STREQ(norm("a.b.."), "(refused)");
	ASSERT_STREQ(norm("a b"), "(refused)");
	ASSERT_STREQ(norm("a/b"), "(refused)");
	ASSERT_STREQ(norm("a*b"), "(refused)");
	ASSERT_STREQ(norm("[::1"), "(refused)");
	ASSERT_STREQ(norm("fe80::1%eth0"), "(refused)");
	/* Numbers resolvers would read as addresses in another notation. */
	ASSERT_STREQ(norm("2130706433"), "(refused)");
	ASSERT_STREQ(norm("0x7f.1"), "(refused)");
	ASSERT_STREQ(norm("127.1"), "(refused)");
	ASSERT_STREQ(norm("010.0.0.1"), "(refused)");
	ASSERT_STREQ(norm("1.2.3.256"), "(refused)");
	ASSERT_STREQ(norm("123.example"), "123.example");
	{
		char label[70], big[300];

		memset(label, 'a', 64);
		label[64] = '\0';
		ASSERT_STREQ(norm(label), "(refused)");
		label[63] = '\0';
		ASSERT_STREQ(norm(label), label);
		memset(big, 'a', sizeof(big));
		for (size_t i = 50; i < sizeof(big); i += 50)
			big[i] = '.';
		big[254] = '\0';
		ASSERT_STREQ(norm(big), "(refused)");
		big[253] = '\0';
		ASSERT_STREQ(norm(big), big);
	}
}

static struct ward__net_pattern pat(const char *text, bool deny)
{
	struct ward__net_pattern p;
	const char *why;

	if (ward__net_pattern_parse(text, deny, &p, &why) < 0)
		abort();
	return p;
}

static bool matches(const char *pattern, const char *host, uint16_t port)
{
	struct ward__net_pattern p = pat(pattern, false);

	return ward__net_pattern_match(&p, norm(host), port);
}

TEST(patterns)
{
	const char *why;
	struct ward__net_pattern p;
	char buf[300];

	ASSERT_TRUE(matches("example.com", "example.com", 443));
	ASSERT_TRUE(matches("example.com", "EXAMPLE.com.", 80));
	ASSERT_FALSE(matches("example.com", "www.example.com", 443));
	ASSERT_FALSE(matches("example.com", "example.com.evil", 443));
	ASSERT_FALSE(matches("example.com", "notexample.com", 443));

	ASSERT_TRUE(matches("*.example.com", "www.example.com", 443));
	ASSERT_TRUE(matches("*.example.com", "a.b.example.com", 443));
	ASSERT_FALSE(matches("*.example.com", "example.com", 443));
	ASSERT_FALSE(matches("*.example.com", "wwwexample.com", 443));

	ASSERT_TRUE(matches("**.example.com", "example.com", 443));
	ASSERT_TRUE(matches("**.example.com", "a.b.example.com", 443));
	ASSERT_FALSE(matches("**.example.com", "badexample.com", 443));

	ASSERT_TRUE(matches("*", "anything.example", 1));
	ASSERT_TRUE(matches("*", "1.2.3.4", 1));

	ASSERT_TRUE(matches("example.com:443", "example.com", 443));
	ASSERT_FALSE(matches("example.com:443", "example.com", 80));
	ASSERT_TRUE(matches("*.example.com:8443", "x.example.com", 8443));

	ASSERT_TRUE(matches("region*.cdn.example", "region1.cdn.example", 443));
	ASSERT_FALSE(matches("region*.cdn.example", "region1.x.cdn.example", 443));
	ASSERT_FALSE(matches("region*.cdn.example", "other.cdn.example", 443));

	ASSERT_TRUE(matches("bücher.example", "xn--bcher-kva.example", 443));
	ASSERT_TRUE(matches("[2001:db8::1]:443", "[2001:DB8::1]", 443));
	ASSERT_TRUE(matches("2001:db8::1", "2001:db8::1", 8));
	ASSERT_FALSE(matches("*.example.com", "[::1]", 443));

	/* Refused, each with a reason. */
	ASSERT_EQ(ward__net_pattern_parse("*", true, &p, &why), -EINVAL);
	ASSERT_CONTAINS(why, "allow lists only");
	ASSERT_EQ(ward__net_pattern_parse("*.*", false, &p, &why), -EINVAL);
	ASSERT_EQ(ward__net_pattern_parse("a.**.b", false, &p, &why), -EINVAL);
	ASSERT_EQ(ward__net_pattern_parse("example.com:0", false, &p, &why), -EINVAL);
	ASSERT_CONTAINS(why, "port");
	ASSERT_EQ(ward__net_pattern_parse("example.com:65536", false, &p, &why), -EINVAL);
	ASSERT_EQ(ward__net_pattern_parse("example.com:x", false, &p, &why), -EINVAL);
	ASSERT_EQ(ward__net_pattern_parse("http://example.com", false, &p, &why), -EINVAL);
	ASSERT_EQ(ward__net_pattern_parse("example.com/path", false, &p, &why), -EINVAL);
	ASSERT_EQ(ward__net_pattern_parse("", false, &p, &why), -EINVAL);
	ASSERT_EQ(ward__net_pattern_parse("[::1", false, &p, &why), -EINVAL);

	p = pat("**.Example.COM.:443", false);
	ward__net_pattern_format(&p, buf, sizeof(buf));
	ASSERT_STREQ(buf, "**.example.com:443");
	p = pat("[::1]:80", false);
	ward__net_pattern_format(&p, buf, sizeof(buf));
	ASSERT_STREQ(buf, "[::1]:80");
}

TEST(patterns_decide)
{
	struct ward__net_pattern allow[] = {pat("**.github.com", false), pat("*", false)};
	struct ward__net_pattern deny[] = {pat("evil.github.com", true)};

	ASSERT_EQ(ward__net_patterns_decide(allow, 1, deny, 1, "api.github.com", 443),
		  WARD_NET_ALLOW);
	/* Deny wins over any allow, even "*". */
	ASSERT_EQ(ward__net_patterns_decide(allow, 2, deny, 1, "evil.github.com", 443),
		  WARD_NET_DENY);
	ASSERT_EQ(ward__net_patterns_decide(allow, 1, deny, 1, "example.com", 443),
		  WARD_NET_UNDECIDED);
	ASSERT_EQ(ward__net_patterns_decide(NULL, 0, NULL, 0, "example.com", 443),
		  WARD_NET_UNDECIDED);
}

/* ------------------------------------------------------------ addresses */

static bool public(const char *text)
{
	struct ward__net_addr a;

	if (!ward__net_addr_parse(text, &a))
		abort();
	return ward__net_addr_public(&a, NULL);
}

TEST(addresses)
{
	struct ward__net_cidr c;
	struct ward__net_addr a;
	char buf[64];

	ASSERT_TRUE(public("93.184.216.34"));
	ASSERT_TRUE(public("8.8.8.8"));
	ASSERT_TRUE(public("2606:2800:220:1::1"));
	ASSERT_FALSE(public("127.0.0.1"));
	ASSERT_FALSE(public("0.0.0.0"));
	ASSERT_FALSE(public("10.1.2.3"));
	ASSERT_FALSE(public("172.31.255.255"));
	ASSERT_TRUE(public("172.32.0.1"));
	ASSERT_FALSE(public("192.168.1.1"));
	ASSERT_FALSE(public("169.254.169.254"));
	ASSERT_FALSE(public("100.64.0.1"));
	ASSERT_FALSE(public("198.18.0.1"));
	ASSERT_FALSE(public("224.0.0.1"));
	ASSERT_FALSE(public("255.255.255.255"));
	ASSERT_FALSE(public("::1"));
	ASSERT_FALSE(public("::"));
	ASSERT_FALSE(public("fd00::1"));
	ASSERT_FALSE(public("fe80::1"));
	ASSERT_FALSE(public("ff02::1"));
	ASSERT_FALSE(public("::ffff:93.184.216.34"));
	ASSERT_FALSE(public("::ffff:127.0.0.1"));
	ASSERT_FALSE(public("::127.0.0.1"));
	ASSERT_FALSE(public("64:ff9b::a9fe:a9fe"));
	ASSERT_TRUE(public("64:ff9b::808:808"));
	ASSERT_FALSE(public("2002:7f00:1::1"));
	ASSERT_FALSE(public("2001:db8::1"));

	ASSERT_OK(ward__net_cidr_parse("10.0.0.0/8", &c));
	ASSERT_TRUE(ward__net_addr_parse("10.9.8.7", &a));
	ASSERT_TRUE(ward__net_cidr_contains(&c, &a));
	ASSERT_TRUE(ward__net_addr_parse("11.0.0.1", &a));
	ASSERT_FALSE(ward__net_cidr_contains(&c, &a));
	ASSERT_OK(ward__net_cidr_parse("[fd00::]/8", &c));
	ward__net_cidr_format(&c, buf, sizeof(buf));
	ASSERT_STREQ(buf, "fd00::/8");
	ASSERT_OK(ward__net_cidr_parse("169.254.169.254", &c));
	ASSERT_EQ(c.prefix, 32u);
	ASSERT_EQ(ward__net_cidr_parse("10.1.2.3/8", &c), -EINVAL);
	ASSERT_EQ(ward__net_cidr_parse("10.0.0.0/33", &c), -EINVAL);
	ASSERT_EQ(ward__net_cidr_parse("10.0.0.0/", &c), -EINVAL);
	ASSERT_EQ(ward__net_cidr_parse("example.com/8", &c), -EINVAL);
	ASSERT_EQ(ward__net_cidr_parse("::/129", &c), -EINVAL);
}

static int local(const char *text)
{
	struct ward__net_addr a;

	if (!ward__net_addr_parse(text, &a))
		abort();
	return ward__net_addr_is_local(&a);
}

TEST(local_addresses)
{
	struct ifaddrs *ifa = NULL;

	/* The kernel's routing decides: loopback is local, a documentation address is not. */
	ASSERT_EQ(local("127.0.0.1"), 1);
	ASSERT_EQ(local("127.1.2.3"), 1);
	ASSERT_EQ(local("192.0.2.1"), 0);
	/* Every address of this machine's own interfaces is, whatever its range. */
	ASSERT_OK(getifaddrs(&ifa));
	for (struct ifaddrs *i = ifa; i; i = i->ifa_next) {
		struct ward__net_addr a;

		if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET)
			continue;
		ASSERT_OK(ward__net_addr_from_sockaddr(i->ifa_addr, sizeof(struct sockaddr_in), &a,
						       NULL));
		ASSERT_EQ(ward__net_addr_is_local(&a), 1);
	}
	freeifaddrs(ifa);
}

/* ------------------------------------------------------------ SOCKS5 */

TEST(socks5_codec)
{
	static const uint8_t greeting[] = {5, 2, 0, 2};
	static const uint8_t req[] = {5,   1,	0,   3,	  11,  'e', 'x',  'a',	'm', 'p',
				      'l', 'e', '.', 'c', 'o', 'm', 0x01, 0xbb, 'X'};
	struct ward__socks5 s = {0};
	uint8_t out[22];
	size_t used, out_len;

	/* A byte at a time: the same outcome. */
	for (size_t i = 0; i < sizeof(greeting); i++) {
		enum ward__socks5_state st =
			ward__socks5_feed(&s, greeting + i, 1, &used, out, &out_len);

		ASSERT_EQ(used, 1u);
		ASSERT_EQ(st,
			  i + 1 < sizeof(greeting) ? WARD_SOCKS5_GREETING : WARD_SOCKS5_REQUEST);
	}
	ASSERT_EQ(out_len, 2u);
	ASSERT_EQ(out[0], 5);
	ASSERT_EQ(out[1], 0);
	ASSERT_EQ(ward__socks5_feed(&s, req, sizeof(req), &used, out, &out_len), WARD_SOCKS5_DONE);
	ASSERT_EQ(used, sizeof(req) - 1); /* 'X' is the first byte of the tunnel */
	ASSERT_STREQ(s.host, "example.com");
	ASSERT_EQ(s.port, 443);
	ASSERT_EQ(s.cmd, WARD_SOCKS5_CMD_CONNECT);

	/* Only username/password offered: no acceptable method. */
	s = (struct ward__socks5){0};
	ASSERT_EQ(ward__socks5_feed(&s, (const uint8_t[]){5, 1, 2}, 3, &used, out, &out_len),
		  WARD_SOCKS5_FAILED);
	ASSERT_EQ(out_len, 2u);
	ASSERT_EQ(out[1], 0xff);
	/* SOCKS4 or garbage: nothing to answer. */
	s = (struct ward__socks5){0};
	ASSERT_EQ(ward__socks5_feed(&s, "GET / HTTP/1.1\r\n", 16, &used, out, &out_len),
		  WARD_SOCKS5_FAILED);
	ASSERT_EQ(s.reply, 0xff);
	/* BIND and an unknown address type. */
	s = (struct ward__socks5){.state = WARD_SOCKS5_REQUEST};
	ASSERT_EQ(ward__socks5_feed(&s, (const uint8_t[]){5, 2, 0, 1, 1, 2, 3, 4, 0, 80}, 10, &used,
				    out, &out_len),
		  WARD_SOCKS5_FAILED);
	ASSERT_EQ(s.reply, WARD_SOCKS5_CMD_UNSUPPORTED);
	s = (struct ward__socks5){.state = WARD_SOCKS5_REQUEST};
	ASSERT_EQ(ward__socks5_feed(&s, (const uint8_t[]){5, 1, 0, 9}, 4, &used, out, &out_len),
		  WARD_SOCKS5_FAILED);
	ASSERT_EQ(s.reply, WARD_SOCKS5_ATYP_UNSUPPORTED);
	/* An address literal. */
	s = (struct ward__socks5){.state = WARD_SOCKS5_REQUEST};
	ASSERT_EQ(ward__socks5_feed(&s, (const uint8_t[]){5, 1, 0, 1, 169, 254, 169, 254, 0, 80},
				    10, &used, out, &out_len),
		  WARD_SOCKS5_DONE);
	ASSERT_STREQ(s.host, "169.254.169.254");
	ASSERT_EQ(ward__socks5_reply(WARD_SOCKS5_NOT_ALLOWED, NULL, 0, out), 10u);
	ASSERT_EQ(out[1], 2);
}

/* ------------------------------------------------------------ DNS */

static size_t make_query(uint8_t *q, uint16_t id, const char *name, uint16_t type)
{
	size_t o = 12;

	memset(q, 0, 12);
	q[0] = (uint8_t)(id >> 8), q[1] = (uint8_t)id;
	q[2] = 0x01; /* RD */
	q[5] = 1;
	for (const char *s = name; *s;) {
		size_t n = strcspn(s, ".");

		q[o++] = (uint8_t)n;
		memcpy(q + o, s, n);
		o += n;
		s += n;
		if (*s == '.')
			s++;
	}
	q[o++] = 0;
	q[o++] = (uint8_t)(type >> 8), q[o++] = (uint8_t)type;
	q[o++] = 0, q[o++] = 1;
	return o;
}

TEST(dns_codec)
{
	uint8_t q[512], a[WARD_DNS_MAX_MESSAGE];
	struct ward__dns_query dq;
	struct ward__net_addr addr;
	bool id_valid;
	size_t n = make_query(q, 0x1234, "WWW.Example.com", WARD_DNS_TYPE_A), m;

	ASSERT_EQ(ward__dns_parse_query(q, n, &dq, &id_valid), 0);
	ASSERT_STREQ(dq.name, "www.example.com");
	ASSERT_EQ(dq.qtype, WARD_DNS_TYPE_A);
	ASSERT_TRUE(ward__net_addr_parse("198.18.0.1", &addr));
	m = ward__dns_build_answer(&dq, WARD_DNS_RCODE_NOERROR, &addr, 60, a, sizeof(a));
	ASSERT_EQ(m, n + 16);
	ASSERT_EQ(a[0], 0x12);
	ASSERT_EQ(a[2] & 0x80, 0x80); /* a response */
	ASSERT_EQ(a[3] & 0x0f, 0);
	ASSERT_EQ(a[7], 1); /* one answer */
	ASSERT_TRUE(memcmp(a + 12, q + 12, n - 12) == 0); /* the question, case and all */
	ASSERT_TRUE(memcmp(a + m - 4, addr.bytes, 4) == 0);
	/* REFUSED carries the question and no answer. */
	m = ward__dns_build_answer(&dq, WARD_DNS_RCODE_REFUSED, &addr, 60, a, sizeof(a));
	ASSERT_EQ(m, n);
	ASSERT_EQ(a[3] & 0x0f, WARD_DNS_RCODE_REFUSED);
	ASSERT_EQ(a[7], 0);
	/* Compression in a question, two questions, a response: refused or ignored. */
	n = make_query(q, 1, "a.b", WARD_DNS_TYPE_A);
	q[12] = 0xc0;
	ASSERT_EQ(ward__dns_parse_query(q, n, &dq, &id_valid), WARD_DNS_RCODE_FORMERR);
	n = make_query(q, 1, "a.b", WARD_DNS_TYPE_A);
	q[5] = 2;
	ASSERT_EQ(ward__dns_parse_query(q, n, &dq, &id_valid), WARD_DNS_RCODE_FORMERR);
	n = make_query(q, 1, "a.b", WARD_DNS_TYPE_A);
	q[2] |= 0x80;
	ASSERT_EQ(ward__dns_parse_query(q, n, &dq, &id_valid), -EINVAL);
	ASSERT_EQ(ward__dns_parse_query(q, 5, &dq, &id_valid), -EINVAL);
	/* A truncated question. */
	n = make_query(q, 1, "a.b", WARD_DNS_TYPE_A);
	ASSERT_EQ(ward__dns_parse_query(q, n - 2, &dq, &id_valid), WARD_DNS_RCODE_FORMERR);
	ASSERT_TRUE(id_valid);
}

/* ------------------------------------------------------------ HTTP forwarding */

static int parse_proxy_head(struct ward__http_parser *p, const char *head)
{
	struct ward__http_limits lim = {
		.max_head = 16384, .max_line = 8192, .max_fields = 64, .proxy = true};
	size_t used;

	if (ward__http_parser_init(p, &lim) < 0)
		abort();
	return ward__http_feed(p, head, strlen(head), &used);
}

TEST(httpfwd)
{
	struct ward__http_parser p;
	struct ward__body body;
	struct ward__buf out;
	char host[WARD_NET_HOST_MAX + 1];
	const char *why;
	uint16_t port;
	bool connect;

	ASSERT_EQ(parse_proxy_head(&p, "CONNECT Example.com:443 HTTP/1.1\r\nHost: x\r\n\r\n"),
		  WARD_HTTP_DONE);
	ASSERT_EQ(ward__httpfwd_target(&p.request, &connect, host, &port, &body, &why), 0);
	ASSERT_TRUE(connect);
	ASSERT_STREQ(host, "example.com");
	ASSERT_EQ(port, 443);
	ward__http_parser_release(&p);

	ASSERT_EQ(parse_proxy_head(&p, "CONNECT [::1]:22 HTTP/1.1\r\nHost: x\r\n\r\n"),
		  WARD_HTTP_DONE);
	ASSERT_EQ(ward__httpfwd_target(&p.request, &connect, host, &port, &body, &why), 0);
	ASSERT_STREQ(host, "::1");
	ward__http_parser_release(&p);

	/* Origin-form and CONNECT without a port are not proxy requests. */
	ASSERT_EQ(parse_proxy_head(&p, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"), WARD_HTTP_ERROR);
	ward__http_parser_release(&p);
	ASSERT_EQ(parse_proxy_head(&p, "CONNECT example.com HTTP/1.1\r\nHost: x\r\n\r\n"),
		  WARD_HTTP_DONE);
	ASSERT_EQ(ward__httpfwd_target(&p.request, &connect, host, &port, &body, &why), 400);
	ward__http_parser_release(&p);
	ASSERT_EQ(parse_proxy_head(&p, "GET https://example.com/ HTTP/1.1\r\nHost: x\r\n\r\n"),
		  WARD_HTTP_DONE);
	ASSERT_EQ(ward__httpfwd_target(&p.request, &connect, host, &port, &body, &why), 400);
	ward__http_parser_release(&p);
	ASSERT_EQ(parse_proxy_head(&p, "GET http://user@example.com/ HTTP/1.1\r\nHost: x\r\n\r\n"),
		  WARD_HTTP_DONE);
	ASSERT_EQ(ward__httpfwd_target(&p.request, &connect, host, &port, &body, &why), 400);
	ward__http_parser_release(&p);
	/* Two framings: refused by the parser (request smuggling). */
	ASSERT_EQ(parse_proxy_head(&p,
				   "POST http://a.example/ HTTP/1.1\r\nHost: a.example\r\n"
				   "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n"),
		  WARD_HTTP_ERROR);
	ward__http_parser_release(&p);
	ASSERT_EQ(parse_proxy_head(&p,
				   "POST http://a.example/ HTTP/1.1\r\nHost: a.example\r\n"
				   "Transfer-Encoding: gzip, chunked\r\n\r\n"),
		  WARD_HTTP_DONE);
	ASSERT_EQ(ward__httpfwd_target(&p.request, &connect, host, &port, &body, &why), 501);
	ward__http_parser_release(&p);

	/* The head sent upstream: origin-form, the URL's Host, no hop-by-hop fields. */
	ASSERT_EQ(parse_proxy_head(&p,
				   "POST http://A.example:8080/p?q=1 HTTP/1.1\r\n"
				   "Host: evil.example\r\nProxy-Authorization: x\r\n"
				   "Connection: keep-alive, X-Secret\r\nX-Secret: 1\r\n"
				   "Content-Length: 3\r\nAccept: */*\r\n\r\n"),
		  WARD_HTTP_DONE);
	ASSERT_EQ(ward__httpfwd_target(&p.request, &connect, host, &port, &body, &why), 0);
	ASSERT_FALSE(connect);
	ASSERT_STREQ(host, "a.example");
	ASSERT_EQ(port, 8080);
	ASSERT_EQ(body.kind, WARD_BODY_LENGTH);
	ward__buf_init(&out, 65536);
	ASSERT_OK(ward__httpfwd_head(&p.request, &out));
	ASSERT_STREQ((char *)out.data,
		     "POST /p?q=1 HTTP/1.1\r\nHost: A.example:8080\r\n"
		     "Content-Length: 3\r\nAccept: */*\r\nConnection: close\r\n\r\n");
	ward__buf_release(&out);
	ward__http_parser_release(&p);

	ward__buf_init(&out, 4096);
	ASSERT_OK(ward__httpfwd_error(&out, 403, "blocked-by-allowlist", "no"));
	ASSERT_CONTAINS((char *)out.data, "HTTP/1.1 403 Forbidden\r\n");
	ASSERT_CONTAINS((char *)out.data, "X-Proxy-Error: blocked-by-allowlist\r\n");
	ward__buf_release(&out);
}

TEST(body_framing)
{
	static const char chunked[] = "5;ext=1\r\nhello\r\n0\r\nTrailer: x\r\n\r\nGET http://evil/";
	struct ward__body b = {.kind = WARD_BODY_CHUNKED};
	size_t body_len = strlen(chunked) - strlen("GET http://evil/");

	ASSERT_EQ(ward__body_feed(&b, chunked, strlen(chunked)), (ssize_t)body_len);
	ASSERT_TRUE(b.done);
	/* A byte at a time: the same end. */
	b = (struct ward__body){.kind = WARD_BODY_CHUNKED};
	for (size_t i = 0; i < body_len; i++) {
		ASSERT_FALSE(b.done);
		ASSERT_EQ(ward__body_feed(&b, chunked + i, 1), 1);
	}
	ASSERT_TRUE(b.done);
	ASSERT_EQ(ward__body_feed(&b, "x", 1), 0);

	b = (struct ward__body){.kind = WARD_BODY_LENGTH, .left = 5};
	ASSERT_EQ(ward__body_feed(&b, "helloGET", 8), 5);
	ASSERT_TRUE(b.done);

	/* Malformed chunked bodies. */
	b = (struct ward__body){.kind = WARD_BODY_CHUNKED};
	ASSERT_EQ(ward__body_feed(&b, "x\r\n", 3), -EINVAL);
	b = (struct ward__body){.kind = WARD_BODY_CHUNKED};
	ASSERT_EQ(ward__body_feed(&b, "5\nhello", 7), -EINVAL);
	b = (struct ward__body){.kind = WARD_BODY_CHUNKED};
	ASSERT_EQ(ward__body_feed(&b, "2\r\nhello", 8), -EINVAL);
	b = (struct ward__body){.kind = WARD_BODY_CHUNKED};
	ASSERT_EQ(ward__body_feed(&b, "fffffffffffffffff\r\n", 19), -EINVAL);
}

/* ------------------------------------------------------------ the engine */

/* What the proxy reported, for assertions. */
struct recorded {
	char target[300];
	bool allowed;
	char reason[32];
	char by[32];
	uint64_t out, in;
};

static struct recorded recs[64];
static unsigned n_events, n_asks;
static uint64_t last_question;
static struct ward_net_proxy *the_proxy;
static bool answer_allow;

static void on_event(void *ud, const struct ward_net_event *ev)
{
	struct recorded *r;

	if (n_events >= ELEMENTSOF(recs))
		return;
	r = &recs[n_events++];
	snprintf(r->target, sizeof(r->target), "%s:%u", ev->target->host, ev->target->port);
	r->allowed = ev->allowed;
	snprintf(r->reason, sizeof(r->reason), "%s", ward__net_reason_name(ev->reason));
	snprintf(r->by, sizeof(r->by), "%s", ev->decided_by ? ev->decided_by : "");
	r->out = ev->bytes_out;
	r->in = ev->bytes_in;
}

static void answer_later(struct ward__loop *l, void *ud)
{
	ward__net_proxy_answer(the_proxy, last_question, answer_allow, "person");
}

static int on_ask(void *ud, struct ward_net_proxy *px, uint64_t id, const struct ward_net_target *t)
{
	struct ward__loop *l = ud;
	uint64_t timer;

	n_asks++;
	last_question = id;
	/* A person takes a moment: the connections wait meanwhile. */
	return ward__loop_add_timer(l, ward__loop_now_ns(l) + 200000000ull, answer_later, NULL,
				    &timer);
}

static int listen_on(int type, uint16_t *ret_port)
{
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t sl = sizeof(sin);
	int fd = socket(AF_INET, type | SOCK_CLOEXEC, 0);

	if (fd < 0 || bind(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0 ||
	    (type == SOCK_STREAM && listen(fd, 4096) < 0) ||
	    getsockname(fd, (struct sockaddr *)&sin, &sl) < 0)
		abort();
	*ret_port = ntohs(sin.sin_port);
	return fd;
}

static int dial(uint16_t port)
{
	struct sockaddr_in sin = {.sin_family = AF_INET,
				  .sin_port = htons(port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	struct timeval tv = {.tv_sec = 5};
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0 || connect(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return fd;
}

/* Reads until EOF (or the buffer is full); returns the length. */
static size_t read_all(int fd, char *buf, size_t size)
{
	size_t n = 0;

	while (n + 1 < size) {
		ssize_t r = read(fd, buf + n, size - 1 - n);

		if (r <= 0)
			break;
		n += (size_t)r;
	}
	buf[n] = '\0';
	return n;
}

static bool write_str(int fd, const char *s)
{
	return write(fd, s, strlen(s)) == (ssize_t)strlen(s);
}

/*
 * The test's little world: a DNS server answering allowed.test and
 * other.test with 127.0.0.1, meta.test with 169.254.169.254; an upstream
 * that records what it received; the proxy with its listeners.
 */
struct world {
	struct ward__loop *loop;
	struct ward_net_proxy *px;
	uint16_t http_port, socks_port, dns_port, stub_port, up_port;
	int dns_fd, up_fd;
	uint64_t dns_io, up_io;
	char received[8192]; /* what the upstream's last connection received */
	size_t received_len;
	int up_conn;
	uint64_t up_conn_io;
	bool up_echo;
};

static void on_dns(struct ward__loop *l, int fd, uint32_t events, void *ud)
{
	uint8_t q[1500], a[1500];
	struct sockaddr_storage from;
	socklen_t fl = sizeof(from);
	ssize_t n = recvfrom(fd, q, sizeof(q), MSG_DONTWAIT, (struct sockaddr *)&from, &fl);
	struct ward__dns_query dq;
	struct ward__net_addr addr;
	const char *ip = NULL;
	bool id_valid;
	size_t m;

	if (n <= 0 || ward__dns_parse_query(q, (size_t)n, &dq, &id_valid) != 0)
		return;
	if (strcmp(dq.name, "allowed.test") == 0 || strcmp(dq.name, "other.test") == 0 ||
	    strcmp(dq.name, "asked.test") == 0 || strcmp(dq.name, "denied.test") == 0)
		ip = "127.0.0.1";
	else if (strcmp(dq.name, "meta.test") == 0)
		ip = "169.254.169.254";
	if (ip && dq.qtype == WARD_DNS_TYPE_A) {
		ward__net_addr_parse(ip, &addr);
		m = ward__dns_build_answer(&dq, 0, &addr, 1, a, sizeof(a));
	} else {
		m = ward__dns_build_answer(&dq, ip ? 0 : WARD_DNS_RCODE_NXDOMAIN, NULL, 0, a,
					   sizeof(a));
	}
	sendto(fd, a, m, 0, (struct sockaddr *)&from, fl);
}

static void on_up_conn(struct ward__loop *l, int fd, uint32_t events, void *ud)
{
	struct world *w = ud;
	char buf[4096];
	ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);

	if (n > 0) {
		size_t room = sizeof(w->received) - 1 - w->received_len;

		memcpy(w->received + w->received_len, buf, MIN((size_t)n, room));
		w->received_len += MIN((size_t)n, room);
		w->received[w->received_len] = '\0';
		if (w->up_echo) {
			if (write(fd, buf, (size_t)n) < 0)
				abort();
		} else if (strstr(w->received, "\r\n\r\n")) {
			/* An HTTP answer once a head arrived; the connection stays open. */
			static const char resp[] =
				"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";

			if (!strstr(w->received, "answered") &&
			    write(fd, resp, sizeof(resp) - 1) < 0)
				abort();
			w->received_len += 0;
		}
		return;
	}
	if (n < 0 && errno == EAGAIN)
		return;
	ward__loop_del_io(l, w->up_conn_io);
	w->up_conn_io = 0;
	close(fd);
	w->up_conn = -1;
}

static void on_up_accept(struct ward__loop *l, int fd, uint32_t events, void *ud)
{
	struct world *w = ud;
	int c = accept4(fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

	if (c < 0)
		return;
	if (w->up_conn >= 0) {
		ward__loop_del_io(l, w->up_conn_io);
		close(w->up_conn);
	}
	w->up_conn = c;
	w->received_len = 0;
	w->received[0] = '\0';
	ward__loop_add_io(l, c, EPOLLIN, on_up_conn, w, &w->up_conn_io);
}

static void world_init(struct world *w, const char *const *allow, size_t n_allow,
		       const char *const *deny, size_t n_deny, bool ask, unsigned max_conns)
{
	struct ward__net_pattern a[8], d[8];
	struct ward__net_cidr loopback;
	struct ward_net_settings s = {0};
	struct ward_net_hooks h = {.event = on_event};
	char server[32];
	int fd;

	memset(w, 0, sizeof(*w));
	w->up_conn = -1;
	n_events = n_asks = 0;
	if (ward__loop_new(&w->loop) < 0)
		abort();
	for (size_t i = 0; i < n_allow; i++)
		a[i] = pat(allow[i], false);
	for (size_t i = 0; i < n_deny; i++)
		d[i] = pat(deny[i], true);
	ward__net_cidr_parse("127.0.0.0/8", &loopback);
	w->dns_fd = listen_on(SOCK_DGRAM, &w->dns_port);
	ward__loop_add_io(w->loop, w->dns_fd, EPOLLIN, on_dns, w, &w->dns_io);
	w->up_fd = listen_on(SOCK_STREAM, &w->up_port);
	ward__fd_nonblock(w->up_fd, true);
	ward__loop_add_io(w->loop, w->up_fd, EPOLLIN, on_up_accept, w, &w->up_io);
	snprintf(server, sizeof(server), "127.0.0.1:%u", w->dns_port);
	s.allow = a;
	s.n_allow = n_allow;
	s.deny = d;
	s.n_deny = n_deny;
	s.allow_addresses = &loopback;
	s.n_allow_addresses = 1;
	s.dns_server = server;
	s.ask = ask;
	s.max_conns = max_conns;
	s.head_timeout_ms = 500;
	if (ask) {
		h.ask = on_ask;
		h.userdata = w->loop;
	}
	if (ward__net_proxy_new(w->loop, &s, &h, &w->px, NULL) < 0)
		abort();
	the_proxy = w->px;
	fd = listen_on(SOCK_STREAM, &w->http_port);
	if (ward__net_proxy_add_listener(w->px, WARD_NET_LISTEN_HTTP, fd) < 0)
		abort();
	fd = listen_on(SOCK_STREAM, &w->socks_port);
	if (ward__net_proxy_add_listener(w->px, WARD_NET_LISTEN_SOCKS5, fd) < 0)
		abort();
	fd = listen_on(SOCK_DGRAM, &w->stub_port);
	if (ward__net_proxy_add_listener(w->px, WARD_NET_LISTEN_DNS_UDP, fd) < 0)
		abort();
}

static void world_release(struct world *w)
{
	ward__net_proxy_free(w->px);
	ward__loop_del_io(w->loop, w->dns_io);
	ward__loop_del_io(w->loop, w->up_io);
	ward__loop_del_io(w->loop, w->up_conn_io);
	close(w->dns_fd);
	close(w->up_fd);
	if (w->up_conn >= 0)
		close(w->up_conn);
	ward__loop_free(w->loop);
}

/* Runs fn in a child (blocking sockets) while the loop serves; returns its exit status. */
static int run_client(struct world *w, int (*fn)(struct world *w))
{
	pid_t pid = fork();
	int st = -1;

	if (pid < 0)
		abort();
	if (pid == 0) {
		alarm(20);
		_exit(fn(w));
	}
	for (int i = 0; i < 400; i++) {
		if (waitpid(pid, &st, WNOHANG) == pid)
			break;
		ward__loop_iterate(w->loop, 50);
	}
	if (waitpid(pid, &st, WNOHANG) == 0) {
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
		return -1;
	}
	/* Let the proxy see the ends and report them. */
	for (int i = 0; i < 5; i++)
		ward__loop_iterate(w->loop, 20);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

#define CHECK(x)                                   \
	do {                                       \
		if (!(x))                          \
			return __LINE__ % 250 + 1; \
	} while (0)

static int client_connect_echo(struct world *w)
{
	char req[256], buf[1024];
	int fd = dial(w->http_port);
	ssize_t n;

	CHECK(fd >= 0);
	snprintf(req, sizeof(req), "CONNECT allowed.test:%u HTTP/1.1\r\nHost: x\r\n\r\nearly",
		 w->up_port);
	CHECK(write_str(fd, req));
	n = read(fd, buf, 39);
	CHECK(n == 39 && memcmp(buf, "HTTP/1.1 200 Connection established\r\n\r\n", 39) == 0);
	/* The bytes sent along with the head went through first. */
	n = read(fd, buf, 5);
	CHECK(n == 5 && memcmp(buf, "early", 5) == 0);
	CHECK(write_str(fd, "ping"));
	n = read(fd, buf, 4);
	CHECK(n == 4 && memcmp(buf, "ping", 4) == 0);
	close(fd);
	return 0;
}

TEST(proxy_connect_allowed)
{
	static const char *const allow[] = {"allowed.test"};
	struct world w;

	world_init(&w, allow, 1, NULL, 0, false, 0);
	w.up_echo = true;
	ASSERT_EQ(run_client(&w, client_connect_echo), 0);
	ASSERT_EQ(n_events, 1u);
	ASSERT_TRUE(recs[0].allowed);
	ASSERT_EQ(recs[0].out, 9u);
	ASSERT_EQ(recs[0].in, 9u + 39u);
	world_release(&w);
}

static int client_expect_403(struct world *w, const char *host, const char *proxy_error)
{
	char req[256], buf[2048];
	int fd = dial(w->http_port);

	CHECK(fd >= 0);
	snprintf(req, sizeof(req), "CONNECT %s:%u HTTP/1.1\r\nHost: x\r\n\r\n", host, w->up_port);
	CHECK(write_str(fd, req));
	read_all(fd, buf, sizeof(buf));
	CHECK(strncmp(buf, "HTTP/1.1 403 ", 13) == 0);
	CHECK(strstr(buf, proxy_error) != NULL);
	close(fd);
	return 0;
}

static int client_denied(struct world *w)
{
	return client_expect_403(w, "denied.test", "X-Proxy-Error: blocked-by-denylist");
}

static int client_not_allowed(struct world *w)
{
	return client_expect_403(w, "other.test", "X-Proxy-Error: blocked-by-allowlist");
}

static int client_metadata(struct world *w)
{
	return client_expect_403(w, "meta.test", "X-Proxy-Error: blocked-by-policy");
}

static int client_literal(struct world *w)
{
	/* An address literal is a host like any other: no pattern allows 127.0.0.1. */
	return client_expect_403(w, "127.0.0.1", "X-Proxy-Error: blocked-by-allowlist");
}

TEST(proxy_refusals)
{
	static const char *const allow[] = {"allowed.test", "meta.test", "*.test"};
	static const char *const deny[] = {"denied.test"};
	struct world w;

	world_init(&w, allow, 2, deny, 1, false, 0);
	ASSERT_EQ(run_client(&w, client_denied), 0);
	ASSERT_EQ(run_client(&w, client_not_allowed), 0);
	ASSERT_EQ(run_client(&w, client_metadata), 0);
	ASSERT_EQ(run_client(&w, client_literal), 0);
	ASSERT_EQ(n_events, 4u);
	ASSERT_STREQ(recs[0].reason, "denied");
	ASSERT_STREQ(recs[1].reason, "not-allowed");
	ASSERT_STREQ(recs[2].reason, "non-public-address");
	ASSERT_FALSE(recs[2].allowed);
	/* The upstream never saw a connection. */
	ASSERT_EQ(w.up_conn, -1);
	world_release(&w);

	/* "*" allows everything but what deny names. */
	world_init(&w, allow + 2, 1, deny, 1, false, 0);
	ASSERT_EQ(run_client(&w, client_denied), 0);
	world_release(&w);
}

static int client_plain_get(struct world *w)
{
	char req[512], buf[2048];
	int fd = dial(w->http_port);

	CHECK(fd >= 0);
	/*
	 * A request with a 5-byte body, and behind it a second request to a
	 * denied host: the body ends where Content-Length says, and nothing
	 * after it reaches any upstream.
	 */
	snprintf(req, sizeof(req),
		 "POST http://allowed.test:%u/x?y=1 HTTP/1.1\r\nHost: evil.test\r\n"
		 "Content-Length: 5\r\nConnection: keep-alive\r\n\r\nhello"
		 "GET http://denied.test:%u/ HTTP/1.1\r\nHost: denied.test\r\n\r\n",
		 w->up_port, w->up_port);
	CHECK(write_str(fd, req));
	read_all(fd, buf, sizeof(buf));
	CHECK(strncmp(buf, "HTTP/1.1 200 OK\r\n", 17) == 0);
	CHECK(strstr(buf, "\r\n\r\nhello") != NULL);
	close(fd);
	return 0;
}

TEST(proxy_plain_http_and_smuggling)
{
	static const char *const allow[] = {"allowed.test"};
	char want[256];
	struct world w;

	world_init(&w, allow, 1, NULL, 0, false, 0);
	ASSERT_EQ(run_client(&w, client_plain_get), 0);
	snprintf(want, sizeof(want),
		 "POST /x?y=1 HTTP/1.1\r\nHost: allowed.test:%u\r\nContent-Length: 5\r\n"
		 "Connection: close\r\n\r\nhello",
		 w.up_port);
	ASSERT_STREQ(w.received, want);
	ASSERT_EQ(n_events, 1u);
	ASSERT_TRUE(recs[0].allowed);
	world_release(&w);
}

static int client_socks(struct world *w)
{
	uint8_t buf[64];
	uint8_t req[64] = {5, 1, 0, 3, 12};
	int fd = dial(w->socks_port);
	size_t n;

	CHECK(fd >= 0);
	CHECK(write(fd, (const uint8_t[]){5, 1, 0}, 3) == 3);
	CHECK(read(fd, buf, 2) == 2 && buf[0] == 5 && buf[1] == 0);
	memcpy(req + 5, "allowed.test", 12);
	req[17] = (uint8_t)(w->up_port >> 8);
	req[18] = (uint8_t)w->up_port;
	CHECK(write(fd, req, 19) == 19);
	CHECK(read(fd, buf, 10) == 10 && buf[1] == 0);
	CHECK(write_str(fd, "socks"));
	n = (size_t)read(fd, buf, 5);
	CHECK(n == 5 && memcmp(buf, "socks", 5) == 0);
	close(fd);

	/* An address literal no pattern allows: "connection not allowed by ruleset". */
	fd = dial(w->socks_port);
	CHECK(write(fd, (const uint8_t[]){5, 1, 0}, 3) == 3);
	CHECK(read(fd, buf, 2) == 2);
	CHECK(write(fd,
		    (const uint8_t[]){5, 1, 0, 1, 127, 0, 0, 1, (uint8_t)(w->up_port >> 8),
				      (uint8_t)w->up_port},
		    10) == 10);
	CHECK(read(fd, buf, 10) == 10 && buf[1] == WARD_SOCKS5_NOT_ALLOWED);
	close(fd);
	return 0;
}

TEST(proxy_socks5)
{
	static const char *const allow[] = {"allowed.test"};
	struct world w;

	world_init(&w, allow, 1, NULL, 0, false, 0);
	w.up_echo = true;
	ASSERT_EQ(run_client(&w, client_socks), 0);
	ASSERT_EQ(n_events, 2u);
	ASSERT_TRUE(recs[0].allowed || recs[1].allowed);
	world_release(&w);
}

static int dns_ask(uint16_t port, const char *name, uint16_t type, uint8_t *ans, size_t *len)
{
	uint8_t q[512];
	size_t n = make_query(q, 7, name, type);
	struct sockaddr_in sin = {.sin_family = AF_INET,
				  .sin_port = htons(port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	struct timeval tv = {.tv_sec = 2};
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	ssize_t m;

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (sendto(fd, q, n, 0, (struct sockaddr *)&sin, sizeof(sin)) != (ssize_t)n)
		return -1;
	m = recv(fd, ans, 512, 0);
	close(fd);
	if (m < 12)
		return -1;
	*len = (size_t)m;
	return ans[3] & 0x0f;
}

static int client_dns(struct world *w)
{
	uint8_t a[512];
	size_t len;

	CHECK(dns_ask(w->stub_port, "allowed.test", WARD_DNS_TYPE_A, a, &len) == 0);
	CHECK(a[7] == 1 && memcmp(a + len - 4, (const uint8_t[]){198, 18, 0, 1}, 4) == 0);
	/* The same name keeps its address; another name gets the next one. */
	CHECK(dns_ask(w->stub_port, "ALLOWED.test.", WARD_DNS_TYPE_A, a, &len) == 0);
	CHECK(memcmp(a + len - 4, (const uint8_t[]){198, 18, 0, 1}, 4) == 0);
	CHECK(dns_ask(w->stub_port, "www.allowed.test", WARD_DNS_TYPE_A, a, &len) == 0);
	CHECK(memcmp(a + len - 4, (const uint8_t[]){198, 18, 0, 2}, 4) == 0);
	CHECK(dns_ask(w->stub_port, "allowed.test", WARD_DNS_TYPE_AAAA, a, &len) == 0);
	CHECK(a[7] == 0);
	CHECK(dns_ask(w->stub_port, "denied.test", WARD_DNS_TYPE_A, a, &len) ==
	      WARD_DNS_RCODE_REFUSED);
	CHECK(dns_ask(w->stub_port, "exfil-data-here.evil.test", WARD_DNS_TYPE_A, a, &len) ==
	      WARD_DNS_RCODE_REFUSED);
	return 0;
}

TEST(dns_stub)
{
	static const char *const allow[] = {"**.allowed.test:443"};
	struct world w;
	struct ward__net_addr a;

	world_init(&w, allow, 1, NULL, 0, false, 0);
	ASSERT_EQ(run_client(&w, client_dns), 0);
	ASSERT_TRUE(ward__net_addr_parse("198.18.0.2", &a));
	ASSERT_STREQ(ward__net_proxy_pool_name(w.px, &a), "www.allowed.test");
	ASSERT_TRUE(ward__net_addr_parse("198.18.0.3", &a));
	ASSERT_TRUE(ward__net_proxy_pool_name(w.px, &a) == NULL);
	/* The refused names are denials, once each. */
	ASSERT_EQ(n_events, 2u);
	ASSERT_STREQ(recs[0].target, "denied.test:0");
	world_release(&w);
}

static int client_two_asked(struct world *w)
{
	char req[256], buf[128];
	int a = dial(w->http_port), b = dial(w->http_port);

	CHECK(a >= 0 && b >= 0);
	snprintf(req, sizeof(req), "CONNECT asked.test:%u HTTP/1.1\r\nHost: x\r\n\r\n", w->up_port);
	CHECK(write_str(a, req));
	CHECK(write_str(b, req));
	CHECK(read(a, buf, 39) == 39 && strncmp(buf, "HTTP/1.1 200", 12) == 0);
	CHECK(read(b, buf, 39) == 39 && strncmp(buf, "HTTP/1.1 200", 12) == 0);
	close(a);
	close(b);
	return 0;
}

static int client_asked_no(struct world *w)
{
	return client_expect_403(w, "asked.test", "X-Proxy-Error: blocked-by-policy");
}

TEST(proxy_questions)
{
	struct world w;

	/* Two connections to the same host wait on one question, then both go on. */
	world_init(&w, NULL, 0, NULL, 0, true, 0);
	w.up_echo = true;
	answer_allow = true;
	ASSERT_EQ(run_client(&w, client_two_asked), 0);
	ASSERT_EQ(n_asks, 1u);
	ASSERT_EQ(n_events, 2u);
	ASSERT_STREQ(recs[0].by, "person");
	world_release(&w);

	world_init(&w, NULL, 0, NULL, 0, true, 0);
	answer_allow = false;
	ASSERT_EQ(run_client(&w, client_asked_no), 0);
	ASSERT_EQ(n_asks, 1u);
	ASSERT_STREQ(recs[0].reason, "asked-denied");
	world_release(&w);
}

static int client_garbage(struct world *w)
{
	char buf[2048];
	int fd = dial(w->http_port);

	CHECK(fd >= 0);
	CHECK(write(fd, "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n", 15) == 15);
	read_all(fd, buf, sizeof(buf));
	CHECK(strncmp(buf, "HTTP/1.1 400 ", 13) == 0);
	close(fd);
	/* A slow client (one byte, then nothing) is cut when the head's time is up. */
	fd = dial(w->http_port);
	CHECK(write(fd, "C", 1) == 1);
	read_all(fd, buf, sizeof(buf));
	CHECK(strncmp(buf, "HTTP/1.1 408 ", 13) == 0);
	close(fd);
	/* Garbage to SOCKS5: closed without a word. */
	fd = dial(w->socks_port);
	CHECK(write_str(fd, "GET / HTTP/1.1\r\n\r\n"));
	CHECK(read_all(fd, buf, sizeof(buf)) == 0);
	close(fd);
	return 0;
}

TEST(proxy_garbage_and_slow_clients)
{
	static const char *const allow[] = {"allowed.test"};
	struct world w;

	world_init(&w, allow, 1, NULL, 0, false, 0);
	ASSERT_EQ(run_client(&w, client_garbage), 0);
	ASSERT_EQ(n_events, 0u);
	world_release(&w);
}

static int client_many(struct world *w)
{
	int fds[64], ok = 0, refused = 0;
	char buf[16];

	for (int i = 0; i < 64; i++) {
		fds[i] = dial(w->http_port);
		CHECK(fds[i] >= 0);
	}
	/* The proxy holds 8; the others are reset at once (well before the head's timeout). */
	{
		struct pollfd p[64];

		usleep(100000);
		for (int i = 0; i < 64; i++)
			p[i] = (struct pollfd){.fd = fds[i], .events = POLLIN};
		CHECK(poll(p, 64, 100) >= 0);
		for (int i = 0; i < 64; i++) {
			if (!p[i].revents)
				ok++;
			else if (read(fds[i], buf, sizeof(buf)) < 0 && errno == ECONNRESET)
				refused++;
		}
	}
	CHECK(ok == 8);
	CHECK(refused == 56);
	for (int i = 0; i < 64; i++)
		close(fds[i]);
	return 0;
}

TEST(proxy_connection_cap)
{
	static const char *const allow[] = {"allowed.test"};
	struct world w;
	struct ward_net_stats st;

	world_init(&w, allow, 1, NULL, 0, false, 8);
	ASSERT_EQ(run_client(&w, client_many), 0);
	ward__net_proxy_stats(w.px, &st);
	ASSERT_EQ(st.refused_cap, 56u);
	world_release(&w);
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	return tap_main();
}
