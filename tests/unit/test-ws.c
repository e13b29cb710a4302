/* SPDX-License-Identifier: MIT */
/*
 * The WebSocket server connection (src/transport/ws.c), driven the way an event
 * loop drives it, against a raw client written here (over a socketpair:
 * every byte the server answers is read and checked, frame by frame) and
 * against a real one, python3-websockets, over loopback TCP. Nothing here
 * depends on timing: deadlines are fired by passing the deadline itself as
 * the time.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tap.h"

/*
 * The connection is compiled into this test with sendmsg(2) wrapped, so
 * that a test can cut the server's writes after any number of bytes:
 * partial writes land at every place of a frame, deterministically.
 */
static size_t write_cap; /* 0: sendmsg as it is */
static ssize_t capped_sendmsg(int fd, const struct msghdr *mh, int flags);
#define sendmsg capped_sendmsg
#include "transport/ws.c"
#undef sendmsg

static ssize_t capped_sendmsg(int fd, const struct msghdr *mh, int flags)
{
	struct iovec iov[4];
	struct msghdr m = *mh;
	size_t left = write_cap;

	if (write_cap == 0 || mh->msg_iovlen > 4)
		return sendmsg(fd, mh, flags);
	m.msg_iov = iov;
	m.msg_iovlen = 0;
	for (size_t i = 0; i < mh->msg_iovlen && left > 0; i++) {
		iov[i] = mh->msg_iov[i];
		iov[i].iov_len = MIN(iov[i].iov_len, left);
		left -= iov[i].iov_len;
		m.msg_iovlen++;
	}
	return sendmsg(fd, &m, flags);
}

/* ------------------------------------------------------------------ the server side */

#define MAX_RECORDED 64

struct rec {
	int opens;
	size_t n;
	enum ward__ws_type type[MAX_RECORDED];
	size_t len[MAX_RECORDED];
	uint8_t *data[MAX_RECORDED];
	bool echo;
	bool pause_each;
	int authorize_status;
	int fail_with;
};

static int on_message(struct ward__ws *ws, enum ward__ws_type type, const uint8_t *data, size_t len,
		      void *userdata)
{
	struct rec *r = userdata;

	if (r->n < MAX_RECORDED) {
		r->type[r->n] = type;
		r->len[r->n] = len;
		r->data[r->n] = malloc(len + 1);
		if (!r->data[r->n])
			abort();
		memcpy(r->data[r->n], data, len);
		r->data[r->n][len] = '\0';
		r->n++;
	}
	if (r->echo && ward__ws_send(ws, type, data, len) < 0)
		abort();
	if (r->fail_with)
		return r->fail_with;
	return r->pause_each ? WARD_WS_PAUSE : 0;
}

static void on_open(struct ward__ws *ws, const struct ward__http_request *req, void *userdata)
{
	struct rec *r = userdata;

	(void)ws;
	(void)req;
	r->opens++;
}

static int authorize(struct ward__ws *ws, const struct ward__http_request *req, void *userdata)
{
	struct rec *r = userdata;

	(void)ws;
	(void)req;
	return r->authorize_status;
}

static const struct ward__ws_callbacks callbacks = {
	.authorize = authorize,
	.on_open = on_open,
	.on_message = on_message,
};

struct conn {
	struct ward__ws *ws;
	int cfd; /* the client's end */
	struct rec rec;
};

static void conn_new(struct conn *c, const struct ward__ws_config *cfg)
{
	int sv[2];

	memset(c, 0, sizeof(*c));
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		abort();
	if (fcntl(sv[0], F_SETFL, O_NONBLOCK) < 0)
		abort();
	ASSERT_OK(ward__ws_new(sv[0], cfg, &callbacks, &c->rec, &c->ws));
	c->cfd = sv[1];
}

static void conn_free(struct conn *c)
{
	ward__ws_free(c->ws);
	close(c->cfd);
	for (size_t i = 0; i < c->rec.n; i++)
		free(c->rec.data[i]);
}

/* What an owner does when its poller reports readiness: honour the interest, a few rounds. */
static void pump(struct ward__ws *ws)
{
	for (int i = 0; i < 4 && !ward__ws_finished(ws); i++) {
		if (ward__ws_want_read(ws))
			ward__ws_on_readable(ws);
		if (!ward__ws_finished(ws) && ward__ws_want_write(ws))
			ward__ws_on_writable(ws);
	}
}

/* ------------------------------------------------------------------ the raw client */

static void cwrite(struct conn *c, const void *data, size_t n)
{
	const uint8_t *p = data;

	while (n > 0) {
		ssize_t r = send(c->cfd, p, n, MSG_DONTWAIT | MSG_NOSIGNAL);

		if (r < 0) {
			if (errno != EAGAIN)
				tap_fail(__FILE__, __LINE__, "client write: %s", strerror(errno));
			if (ward__ws_finished(c->ws))
				tap_fail(__FILE__, __LINE__,
					 "server finished while the client writes");
			pump(c->ws);
			continue;
		}
		p += r;
		n -= (size_t)r;
	}
	pump(c->ws);
}

static void cwrite_str(struct conn *c, const char *s)
{
	cwrite(c, s, strlen(s));
}

/* Reads exactly n bytes, pumping the server while nothing is there; fewer at EOF. */
static size_t cread(struct conn *c, void *buf, size_t n)
{
	size_t got = 0;
	int idle = 0;

	while (got < n) {
		ssize_t r = recv(c->cfd, (uint8_t *)buf + got, n - got, MSG_DONTWAIT);

		if (r > 0) {
			got += (size_t)r;
			idle = 0;
			continue;
		}
		if (r == 0 || (errno != EAGAIN && errno != EWOULDBLOCK))
			break;
		if (++idle > 50)
			tap_fail(__FILE__, __LINE__,
				 "the server sent nothing more (%zu of %zu bytes)", got, n);
		pump(c->ws);
	}
	return got;
}

/* True when the client sees EOF (after pumping), false when data is still there. */
static bool ceof(struct conn *c)
{
	uint8_t b;

	return cread(c, &b, 1) == 0;
}

/* Reads an HTTP response head and body into buf (NUL-terminated); returns the status. */
static int cread_response(struct conn *c, char *buf, size_t size)
{
	size_t n = 0;
	const char *cl;
	int status = 0;

	while (n + 1 < size) {
		if (cread(c, buf + n, 1) != 1)
			tap_fail(__FILE__, __LINE__, "response cut short");
		n++;
		if (n >= 4 && memcmp(buf + n - 4, "\r\n\r\n", 4) == 0)
			break;
	}
	buf[n] = '\0';
	if (sscanf(buf, "HTTP/1.1 %d ", &status) != 1)
		tap_fail(__FILE__, __LINE__, "not an HTTP response: %s", buf);
	cl = strstr(buf, "Content-Length: ");
	if (cl) {
		size_t body = strtoul(cl + 16, NULL, 10);

		ASSERT_LE(n + body + 1, size);
		ASSERT_EQ(cread(c, buf + n, body), body);
		buf[n + body] = '\0';
	}
	return status;
}

#define KEY "dGhlIHNhbXBsZSBub25jZQ=="
#define UPGRADE_HEAD                                                  \
	"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n" \
	"Connection: Upgrade\r\nSec-WebSocket-Key: " KEY "\r\nSec-WebSocket-Version: 13\r\n"

static void upgrade(struct conn *c, const char *extra)
{
	char buf[1024];

	cwrite_str(c, UPGRADE_HEAD);
	cwrite_str(c, extra);
	cwrite_str(c, "\r\n");
	ASSERT_EQ(cread_response(c, buf, sizeof(buf)), 101);
	ASSERT_CONTAINS(buf, "\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n");
	ASSERT_EQ(c->rec.opens, 1);
	ASSERT_TRUE(ward__ws_is_open(c->ws));
}

/* Builds a client frame (masked unless told otherwise) into out; returns its length. */
static size_t frame(uint8_t *out, bool fin, uint8_t opcode, const void *payload, size_t len,
		    bool masked, uint8_t rsv)
{
	static const uint8_t key[4] = {0x37, 0xfa, 0x21, 0x3d};
	size_t h = 0;

	out[h++] = (uint8_t)((fin ? 0x80 : 0) | (rsv << 4) | opcode);
	if (len < 126) {
		out[h++] = (uint8_t)((masked ? 0x80 : 0) | len);
	} else if (len < 65536) {
		out[h++] = (uint8_t)((masked ? 0x80 : 0) | 126);
		out[h++] = (uint8_t)(len >> 8);
		out[h++] = (uint8_t)len;
	} else {
		out[h++] = (uint8_t)((masked ? 0x80 : 0) | 127);
		for (int i = 7; i >= 0; i--)
			out[h++] = (uint8_t)((uint64_t)len >> (8 * i));
	}
	if (masked) {
		memcpy(out + h, key, 4);
		h += 4;
	}
	for (size_t i = 0; i < len; i++)
		out[h + i] = ((const uint8_t *)payload)[i] ^ (masked ? key[i % 4] : 0);
	return h + len;
}

static void csend(struct conn *c, bool fin, uint8_t opcode, const void *payload, size_t len)
{
	uint8_t *buf = malloc(len + 14);

	if (!buf)
		abort();
	cwrite(c, buf, frame(buf, fin, opcode, payload, len, true, 0));
	free(buf);
}

struct frame_in {
	bool fin;
	uint8_t opcode;
	size_t len;
	uint8_t *data; /* NUL-terminated; free() it */
	uint16_t code; /* a close frame's code, 0 if none */
};

/* Reads one server frame; fails the test on EOF. */
static void cread_frame(struct conn *c, struct frame_in *f)
{
	uint8_t h[2], ext[8];
	uint64_t len;

	ASSERT_EQ(cread(c, h, 2), 2);
	ASSERT_EQ(h[1] & 0x80, 0); /* servers never mask */
	ASSERT_EQ(h[0] & 0x70, 0);
	f->fin = h[0] & 0x80;
	f->opcode = h[0] & 0x0f;
	len = h[1] & 0x7f;
	if (len == 126) {
		ASSERT_EQ(cread(c, ext, 2), 2);
		len = (uint64_t)ext[0] << 8 | ext[1];
	} else if (len == 127) {
		ASSERT_EQ(cread(c, ext, 8), 8);
		len = 0;
		for (int i = 0; i < 8; i++)
			len = len << 8 | ext[i];
	}
	ASSERT_LE(len, 64u << 20);
	f->len = (size_t)len;
	f->data = malloc(f->len + 1);
	if (!f->data)
		abort();
	ASSERT_EQ(cread(c, f->data, f->len), f->len);
	f->data[f->len] = '\0';
	f->code = f->opcode == 0x8 && f->len >= 2 ? (uint16_t)(f->data[0] << 8 | f->data[1]) : 0;
}

/* Expects a close frame with code (0: without a code); answers none. */
static void expect_close(struct conn *c, uint16_t code)
{
	struct frame_in f;

	cread_frame(c, &f);
	ASSERT_EQ(f.opcode, 0x8);
	ASSERT_EQ(f.code, code);
	free(f.data);
}

static struct ward__ws_config config(void)
{
	return (struct ward__ws_config){.token = "t0ken", .no_keepalive = true};
}

/* ------------------------------------------------------------------ handshake */

TEST(ws_upgrade_then_echo_text_and_binary)
{
	struct ward__ws_config cfg = config();
	struct conn c;
	struct frame_in f;
	static const uint8_t bin[] = {0, 1, 2, 0xff, 0xfe, '\n'};

	conn_new(&c, &cfg);
	c.rec.echo = true;
	ASSERT_TRUE(ward__ws_want_read(c.ws));
	ASSERT_NE(ward__ws_deadline(c.ws), 0);
	upgrade(&c, "Authorization: Bearer t0ken\r\n");

	csend(&c, true, 0x1, "{\"id\":1,\"method\":\"initialize\"}", 31);
	ASSERT_EQ(c.rec.n, 1);
	ASSERT_EQ(c.rec.type[0], WARD_WS_TEXT);
	ASSERT_STREQ((char *)c.rec.data[0], "{\"id\":1,\"method\":\"initialize\"}");
	cread_frame(&c, &f);
	ASSERT_TRUE(f.fin);
	ASSERT_EQ(f.opcode, 0x1);
	ASSERT_STREQ((char *)f.data, "{\"id\":1,\"method\":\"initialize\"}");
	free(f.data);

	csend(&c, true, 0x2, bin, sizeof(bin));
	ASSERT_EQ(c.rec.n, 2);
	ASSERT_EQ(c.rec.type[1], WARD_WS_BINARY);
	ASSERT_EQ(c.rec.len[1], sizeof(bin));
	ASSERT_TRUE(memcmp(c.rec.data[1], bin, sizeof(bin)) == 0);
	cread_frame(&c, &f);
	ASSERT_EQ(f.opcode, 0x2);
	ASSERT_TRUE(f.len == sizeof(bin) && memcmp(f.data, bin, sizeof(bin)) == 0);
	free(f.data);

	/* An empty message is a message. */
	csend(&c, true, 0x1, "", 0);
	ASSERT_EQ(c.rec.n, 3);
	ASSERT_EQ(c.rec.len[2], 0);
	cread_frame(&c, &f);
	ASSERT_EQ(f.len, 0);
	free(f.data);
	ASSERT_FALSE(ward__ws_finished(c.ws));
	conn_free(&c);
}

TEST(ws_frames_pipelined_behind_the_request)
{
	struct ward__ws_config cfg = config();
	struct conn c;
	uint8_t buf[2048];
	size_t n;
	char resp[1024];

	conn_new(&c, &cfg);
	n = (size_t)snprintf((char *)buf, sizeof(buf), "%sAuthorization: Bearer t0ken\r\n\r\n",
			     UPGRADE_HEAD);
	n += frame(buf + n, true, 0x1, "first", 5, true, 0);
	n += frame(buf + n, true, 0x1, "second", 6, true, 0);
	cwrite(&c, buf, n);
	ASSERT_EQ(cread_response(&c, resp, sizeof(resp)), 101);
	ASSERT_EQ(c.rec.n, 2);
	ASSERT_STREQ((char *)c.rec.data[0], "first");
	ASSERT_STREQ((char *)c.rec.data[1], "second");
	conn_free(&c);
}

/* Sends a request head and expects a refusal with status; the server then lingers to EOF. */
static void refused(const struct ward__ws_config *cfg, const char *head, int status,
		    const char *must_contain, int authorize_status)
{
	struct conn c;
	char buf[2048];
	struct ward__ws_info info;

	conn_new(&c, cfg);
	c.rec.authorize_status = authorize_status;
	cwrite_str(&c, head);
	if (cread_response(&c, buf, sizeof(buf)) != status)
		tap_fail(__FILE__, __LINE__, "for %s: expected %d, got %s", head, status, buf);
	ASSERT_CONTAINS(buf, "\r\nConnection: close\r\n");
	if (must_contain)
		ASSERT_CONTAINS(buf, must_contain);
	/* The server shut its side after the answer... */
	ASSERT_TRUE(ceof(&c));
	ASSERT_FALSE(ward__ws_want_write(c.ws));
	/* ...drops whatever still comes, and finishes when the client closes. */
	cwrite_str(&c, "ignored bytes");
	ASSERT_FALSE(ward__ws_finished(c.ws));
	shutdown(c.cfd, SHUT_WR);
	pump(c.ws);
	ASSERT_TRUE(ward__ws_finished(c.ws));
	ward__ws_get_info(c.ws, &info);
	ASSERT_EQ(info.http_status, status);
	ASSERT_EQ(c.rec.opens, 0);
	ASSERT_EQ(c.rec.n, 0);
	conn_free(&c);
}

TEST(ws_refusals_before_the_upgrade)
{
	struct ward__ws_config cfg = config(), open_cfg = {.no_keepalive = true};
	char buf[2048];

	/* A web page: refused whatever else the request says, valid token included. */
	refused(&cfg,
		UPGRADE_HEAD "Authorization: Bearer t0ken\r\nOrigin: http://evil.example\r\n\r\n",
		403, NULL, 0);
	refused(&open_cfg, UPGRADE_HEAD "Origin: null\r\n\r\n", 403, NULL, 0);
	refused(&cfg, "GET /readyz HTTP/1.1\r\nHost: x\r\nOrigin: http://x\r\n\r\n", 403, NULL, 0);

	/* Credentials: missing and wrong look the same. */
	refused(&cfg, UPGRADE_HEAD "\r\n", 401, "\r\nWWW-Authenticate: Bearer\r\n", 0);
	refused(&cfg, UPGRADE_HEAD "Authorization: Bearer t0keN\r\n\r\n", 401, NULL, 0);
	refused(&cfg, UPGRADE_HEAD "Authorization: Bearer t0ken0\r\n\r\n", 401, NULL, 0);
	refused(&cfg, UPGRADE_HEAD "Authorization: Basic dDBrZW4=\r\n\r\n", 401, NULL, 0);
	refused(&cfg, "GET /other HTTP/1.1\r\nHost: x\r\n\r\n", 401, NULL, 0);

	/* The readiness probe needs no credentials. */
	refused(&cfg, "GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n", 200, "\r\n\r\nok\n", 0);
	refused(&cfg, "GET /readyz HTTP/1.0\r\n\r\n", 200, NULL, 0);
	refused(&cfg, "POST /readyz HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n", 405,
		"\r\nAllow: GET\r\n", 0);

	/* With credentials: method, path, handshake. */
	snprintf(buf, sizeof(buf), "%s",
		 "POST / HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer t0ken\r\n\r\n");
	refused(&cfg, buf, 405, NULL, 0);
	refused(&cfg, "GET /x HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer t0ken\r\n\r\n", 404,
		NULL, 0);
	refused(&cfg, "GET / HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer t0ken\r\n\r\n", 426,
		"\r\nUpgrade: websocket\r\n", 0);
	refused(&open_cfg,
		"GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
		"Sec-WebSocket-Key: " KEY "\r\nSec-WebSocket-Version: 8\r\n\r\n",
		426, "\r\nSec-WebSocket-Version: 13\r\n", 0);
	refused(&open_cfg,
		"GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
		"Sec-WebSocket-Key: short\r\nSec-WebSocket-Version: 13\r\n\r\n",
		400, NULL, 0);
	refused(&open_cfg, "GET / HTTP/1.1\nHost: x\n\n", 400, NULL, 0);
	refused(&open_cfg, "GET / HTTP/2.0\r\n\r\n", 505, NULL, 0);

	/* The owner's own refusal (at capacity, say); a status it cannot give becomes 403. */
	refused(&open_cfg, UPGRADE_HEAD "\r\n", 503, "\r\nRetry-After: 1\r\n", 503);
	refused(&open_cfg, UPGRADE_HEAD "\r\n", 403, NULL, 200);
	refused(&open_cfg, UPGRADE_HEAD "\r\n", 403, NULL, 999);
}

TEST(ws_head_limits_and_slow_clients)
{
	struct ward__ws_config cfg = config();
	struct conn c;
	char buf[2048];
	struct ward__ws_info info;
	uint64_t deadline;

	/* A head past the limit is refused as soon as the limit is passed. */
	cfg.http = (struct ward__http_limits){.max_head = 512, .max_line = 256, .max_fields = 8};
	conn_new(&c, &cfg);
	cwrite_str(&c, "GET / HTTP/1.1\r\n");
	for (int i = 0; i < 3; i++)
		cwrite_str(
			&c,
			"X-Padding: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
			"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n");
	cwrite_str(
		&c,
		"X-Padding: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n");
	ASSERT_EQ(cread_response(&c, buf, sizeof(buf)), 431);
	conn_free(&c);

	/* Nothing, or a trickle: the handshake deadline does not move, and then it is over. */
	conn_new(&c, &cfg);
	deadline = ward__ws_deadline(c.ws);
	ASSERT_NE(deadline, 0);
	cwrite_str(&c, "GET / HT");
	ASSERT_EQ(ward__ws_deadline(c.ws), deadline);
	ward__ws_on_timer(c.ws, deadline - 1);
	ASSERT_FALSE(ward__ws_finished(c.ws));
	ward__ws_on_timer(c.ws, deadline);
	ASSERT_TRUE(ward__ws_finished(c.ws));
	ward__ws_get_info(c.ws, &info);
	ASSERT_EQ(info.error, -ETIMEDOUT);
	/* The owner closes the socket when it frees the connection. */
	ward__ws_free(c.ws);
	c.ws = NULL;
	ASSERT_EQ(recv(c.cfd, buf, 1, MSG_DONTWAIT), 0);
	conn_free(&c);

	/* A client that closes before its request is complete. */
	conn_new(&c, &cfg);
	cwrite_str(&c, "GET / HTTP/1.1\r\nHost");
	shutdown(c.cfd, SHUT_WR);
	pump(c.ws);
	ASSERT_TRUE(ward__ws_finished(c.ws));
	ward__ws_get_info(c.ws, &info);
	ASSERT_EQ(info.error, -ECONNRESET);
	conn_free(&c);

	/* A lingering refusal ends at its own deadline too. */
	conn_new(&c, &cfg);
	cwrite_str(&c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n");
	ASSERT_EQ(cread_response(&c, buf, sizeof(buf)), 401);
	ASSERT_FALSE(ward__ws_finished(c.ws));
	ward__ws_on_timer(c.ws, ward__ws_deadline(c.ws));
	ASSERT_TRUE(ward__ws_finished(c.ws));
	conn_free(&c);

	/* The owner may drop a connection still in its handshake. */
	conn_new(&c, &cfg);
	ASSERT_OK(ward__ws_close(c.ws, 1001, NULL));
	ASSERT_TRUE(ward__ws_finished(c.ws));
	conn_free(&c);
}

TEST(ws_config_checks)
{
	struct ward__ws *ws;
	char long_token[WARD_WS_MAX_TOKEN + 2];
	struct ward__ws_config cfg = {0};
	int sv[2];

	ASSERT_OK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv));
	memset(long_token, 'x', sizeof(long_token) - 1);
	long_token[sizeof(long_token) - 1] = '\0';
	cfg.token = long_token;
	ASSERT_EQ(ward__ws_new(sv[0], &cfg, &callbacks, NULL, &ws), -EINVAL);
	cfg.token = "";
	ASSERT_EQ(ward__ws_new(sv[0], &cfg, &callbacks, NULL, &ws), -EINVAL);
	cfg.token = NULL;
	cfg.max_message = ((size_t)1 << 30) + 1;
	ASSERT_EQ(ward__ws_new(sv[0], &cfg, &callbacks, NULL, &ws), -EINVAL);
	cfg.max_message = 0;
	cfg.http.max_head = 5;
	ASSERT_EQ(ward__ws_new(sv[0], &cfg, &callbacks, NULL, &ws), -EINVAL);
	ASSERT_EQ(ward__ws_new(-1, NULL, &callbacks, NULL, &ws), -EINVAL);
	ASSERT_EQ(ward__ws_new(sv[0], NULL, &(struct ward__ws_callbacks){0}, NULL, &ws), -EINVAL);
	/* On failure the socket is still the caller's. */
	ASSERT_OK(fcntl(sv[0], F_GETFD));
	ASSERT_OK(ward__ws_new(sv[0], NULL, &callbacks, NULL, &ws));
	ward__ws_free(ws);
	ASSERT_EQ(fcntl(sv[0], F_GETFD), -1);
	ward__ws_free(NULL);
	close(sv[1]);
}

/* ------------------------------------------------------------------ framing */

TEST(ws_fragments_and_pings)
{
	struct ward__ws_config cfg = config();
	struct conn c;
	struct frame_in f;

	conn_new(&c, &cfg);
	upgrade(&c, "Authorization: Bearer t0ken\r\n");
	/* Three fragments with a ping between: one message, one pong with the ping's payload. */
	csend(&c, false, 0x1, "{\"a\":", 5);
	csend(&c, true, 0x9, "are you there", 13);
	csend(&c, false, 0x0, "\"caf\xc3", 5);
	ASSERT_EQ(c.rec.n, 0);
	csend(&c, true, 0x0, "\xa9\"}", 3); /* the UTF-8 sequence spans two fragments */
	ASSERT_EQ(c.rec.n, 1);
	ASSERT_STREQ((char *)c.rec.data[0], "{\"a\":\"caf\xc3\xa9\"}");
	cread_frame(&c, &f);
	ASSERT_EQ(f.opcode, 0xa);
	ASSERT_STREQ((char *)f.data, "are you there");
	free(f.data);
	/* Unsolicited pongs are fine. */
	csend(&c, true, 0xa, "x", 1);
	ASSERT_TRUE(ward__ws_is_open(c.ws));
	conn_free(&c);
}

/* Sends raw client bytes after the upgrade and expects a close with code and the error. */
static void protocol_failure(const uint8_t *bytes, size_t n, uint16_t code, int error,
			     size_t max_message)
{
	struct ward__ws_config cfg = config();
	struct conn c;
	struct ward__ws_info info;

	cfg.max_message = max_message;
	cfg.max_fragments = 4;
	conn_new(&c, &cfg);
	upgrade(&c, "Authorization: Bearer t0ken\r\n");
	cwrite(&c, bytes, n);
	expect_close(&c, code);
	ASSERT_FALSE(ward__ws_is_open(c.ws));
	ASSERT_EQ(ward__ws_send(c.ws, WARD_WS_TEXT, "x", 1), -EPIPE);
	/* The server shut its side and only drains now; the client's close ends it. */
	ASSERT_TRUE(ceof(&c));
	ASSERT_FALSE(ward__ws_finished(c.ws));
	close(c.cfd);
	c.cfd = -1;
	pump(c.ws);
	ASSERT_TRUE(ward__ws_finished(c.ws));
	ward__ws_get_info(c.ws, &info);
	ASSERT_EQ(info.error, error);
	ASSERT_EQ(info.close_sent, code ? code : 1005);
	ASSERT_EQ(c.rec.n, 0);
	conn_free(&c);
}

TEST(ws_protocol_errors_close_with_the_right_code)
{
	uint8_t buf[4096];
	size_t n;

	/* An unmasked client frame (RFC 6455 section 5.1). */
	n = frame(buf, true, 0x1, "hi", 2, false, 0);
	protocol_failure(buf, n, 1002, -EPROTO, 0);
	/* A reserved bit: no extension was negotiated (permessage-deflate offers are ignored). */
	n = frame(buf, true, 0x1, "hi", 2, true, 4);
	protocol_failure(buf, n, 1002, -EPROTO, 0);
	/* Reserved opcodes. */
	n = frame(buf, true, 0x3, "hi", 2, true, 0);
	protocol_failure(buf, n, 1002, -EPROTO, 0);
	n = frame(buf, true, 0xb, "", 0, true, 0);
	protocol_failure(buf, n, 1002, -EPROTO, 0);
	/* A continuation with nothing to continue, a new message inside a fragmented one. */
	n = frame(buf, true, 0x0, "hi", 2, true, 0);
	protocol_failure(buf, n, 1002, -EPROTO, 0);
	n = frame(buf, false, 0x1, "a", 1, true, 0);
	n += frame(buf + n, true, 0x1, "b", 1, true, 0);
	protocol_failure(buf, n, 1002, -EPROTO, 0);
	/* Text that is not UTF-8, whole or across fragments; a close reason that is not. */
	n = frame(buf, true, 0x1, "a\xff", 2, true, 0);
	protocol_failure(buf, n, 1007, -EILSEQ, 0);
	n = frame(buf, false, 0x1, "\xc3", 1, true, 0);
	n += frame(buf + n, true, 0x0, "(", 1, true, 0);
	protocol_failure(buf, n, 1007, -EILSEQ, 0);
	n = frame(buf, true, 0x1, "\xed\xa0\x80", 3, true, 0);
	protocol_failure(buf, n, 1007, -EILSEQ, 0);
	/* A control frame too long or fragmented: the frame layer's close carries no code. */
	memset(buf + 200, 'p', 126);
	n = frame(buf, true, 0x9, buf + 200, 126, true, 0);
	protocol_failure(buf, n, 0, -EPROTO, 0);
	n = frame(buf, false, 0x9, "p", 1, true, 0);
	protocol_failure(buf, n, 0, -EPROTO, 0);
	/* A close code no endpoint may send. */
	n = frame(buf, true, 0x8, "\x03\xed", 2, true, 0); /* 1005 */
	protocol_failure(buf, n, 1002, -EPROTO, 0);
}

TEST(ws_message_size_and_fragment_limits)
{
	uint8_t *buf = malloc(1 << 20);
	size_t n;

	if (!buf)
		abort();
	memset(buf + 4096, 'm', 200);
	/* One byte over max_message, whole... */
	n = frame(buf, true, 0x2, buf + 4096, 101, true, 0);
	protocol_failure(buf, n, 1009, -EMSGSIZE, 100);
	/* ...or in fragments. */
	n = frame(buf, false, 0x2, buf + 4096, 60, true, 0);
	n += frame(buf + n, true, 0x0, buf + 4096, 41, true, 0);
	protocol_failure(buf, n, 1009, -EMSGSIZE, 100);
	/* A frame announcing 1 GiB is refused with its first byte, before anything is allocated. */
	n = 0;
	buf[n++] = 0x82;
	buf[n++] = 0x80 | 127;
	for (int i = 7; i >= 0; i--)
		buf[n++] = (uint8_t)(((uint64_t)1 << 30) >> (8 * i));
	memcpy(buf + n, "\x01\x02\x03\x04\x05", 5); /* the mask key and one byte */
	n += 5;
	protocol_failure(buf, n, 1009, -EMSGSIZE, 100);
	/* Five fragments where four are allowed, however small. */
	n = frame(buf, false, 0x2, "a", 1, true, 0);
	for (int i = 0; i < 3; i++)
		n += frame(buf + n, false, 0x0, "a", 1, true, 0);
	n += frame(buf + n, true, 0x0, "a", 1, true, 0);
	protocol_failure(buf, n, 1009, -EMSGSIZE, 100);
	free(buf);

	/* Exactly max_message, in exactly max_fragments frames, passes. */
	struct ward__ws_config cfg = config();
	struct conn c;
	char payload[100];
	uint8_t out[512];

	memset(payload, 'z', sizeof(payload));
	cfg.max_message = 100;
	cfg.max_fragments = 4;
	conn_new(&c, &cfg);
	upgrade(&c, "Authorization: Bearer t0ken\r\n");
	n = frame(out, false, 0x2, payload, 25, true, 0);
	n += frame(out + n, false, 0x0, payload, 25, true, 0);
	n += frame(out + n, false, 0x0, payload, 25, true, 0);
	n += frame(out + n, true, 0x0, payload, 25, true, 0);
	cwrite(&c, out, n);
	ASSERT_EQ(c.rec.n, 1);
	ASSERT_EQ(c.rec.len[0], 100);
	ASSERT_TRUE(ward__ws_is_open(c.ws));
	conn_free(&c);
}

TEST(ws_large_messages_both_ways)
{
	struct ward__ws_config cfg = config();
	struct conn c;
	struct frame_in f;
	size_t size = 3u << 20;
	uint8_t *big = malloc(size);

	if (!big)
		abort();
	for (size_t i = 0; i < size; i++)
		big[i] = (uint8_t)(i * 7 + (i >> 12));
	cfg.max_message = size;
	conn_new(&c, &cfg);
	c.rec.echo = true;
	upgrade(&c, "Authorization: Bearer t0ken\r\n");
	/* The client writes while the server reads and answers; the client reads the echo after. */
	csend(&c, true, 0x2, big, size);
	ASSERT_EQ(c.rec.n, 1);
	ASSERT_EQ(c.rec.len[0], size);
	ASSERT_TRUE(memcmp(c.rec.data[0], big, size) == 0);
	cread_frame(&c, &f);
	ASSERT_EQ(f.opcode, 0x2);
	ASSERT_EQ(f.len, size);
	ASSERT_TRUE(memcmp(f.data, big, size) == 0);
	free(f.data);
	ASSERT_EQ(ward__ws_queued_bytes(c.ws), 0);
	free(big);
	conn_free(&c);
}

/*
 * The server's writes cut after 1, 2, 3... bytes: frame headers of every
 * length form (7-bit, 16-bit and 64-bit lengths) split at every place, and
 * the client still reads every frame whole and in order.
 */
TEST(ws_short_writes_keep_frames_whole)
{
	static const size_t sizes[] = {0, 1, 5, 125, 126, 127, 300, 65535, 65536, 70000};
	static const size_t caps[] = {1, 2, 3, 4, 5, 7, 9, 11, 13, 4096};
	uint8_t *msg = malloc(70000);

	if (!msg)
		abort();
	for (size_t k = 0; k < ELEMENTSOF(caps); k++) {
		struct ward__ws_config cfg = config();
		struct conn c;
		size_t got = 0, n = ELEMENTSOF(sizes) * 2;

		conn_new(&c, &cfg);
		upgrade(&c, "Authorization: Bearer t0ken\r\n");
		write_cap = caps[k];
		for (size_t i = 0; i < n; i++) {
			size_t len = sizes[i % ELEMENTSOF(sizes)];

			for (size_t j = 0; j < len; j++)
				msg[j] = (uint8_t)(i + j);
			ASSERT_OK(ward__ws_send(c.ws, i % 2 ? WARD_WS_BINARY : WARD_WS_TEXT, msg,
						len));
		}
		/* A ping in the middle: its pong goes between two messages, never inside one. */
		csend(&c, true, 0x9, "mid", 3);
		while (got < n) {
			struct frame_in f;

			cread_frame(&c, &f);
			if (f.opcode == 0xa) {
				ASSERT_STREQ((char *)f.data, "mid");
				free(f.data);
				continue;
			}
			ASSERT_EQ(f.opcode, got % 2 ? 0x2 : 0x1);
			ASSERT_EQ(f.len, sizes[got % ELEMENTSOF(sizes)]);
			for (size_t j = 0; j < f.len; j++)
				if (f.data[j] != (uint8_t)(got + j))
					tap_fail(__FILE__, __LINE__,
						 "cap %zu, message %zu, byte %zu", caps[k], got, j);
			free(f.data);
			got++;
		}
		write_cap = 0;
		ASSERT_EQ(ward__ws_queued_bytes(c.ws), 0);
		ASSERT_TRUE(ward__ws_is_open(c.ws));
		conn_free(&c);
	}
	free(msg);
}

/* ------------------------------------------------------------------ close */

TEST(ws_close_from_the_client)
{
	struct ward__ws_config cfg = config();
	struct conn c;
	struct ward__ws_info info;

	conn_new(&c, &cfg);
	upgrade(&c, "Authorization: Bearer t0ken\r\n");
	csend(&c, true, 0x8,
	      "\x03\xe8"
	      "bye",
	      5);
	expect_close(&c, 1000);
	ASSERT_TRUE(ward__ws_finished(c.ws));
	ward__ws_get_info(c.ws, &info);
	ASSERT_EQ(info.error, 0);
	ASSERT_EQ(info.close_received, 1000);
	ASSERT_EQ(info.close_sent, 1000);
	conn_free(&c);

	/* A close without a code is answered without one. */
	conn_new(&c, &cfg);
	upgrade(&c, "Authorization: Bearer t0ken\r\n");
	csend(&c, true, 0x8, "", 0);
	expect_close(&c, 0);
	ASSERT_TRUE(ward__ws_finished(c.ws));
	conn_free(&c);
}

TEST(ws_close_from_the_server_after_what_is_queued)
{
	struct ward__ws_config cfg = config();
	struct conn c;
	struct frame_in f;
	struct ward__ws_info info;

	conn_new(&c, &cfg);
	upgrade(&c, "Authorization: Bearer t0ken\r\n");
	ASSERT_OK(ward__ws_send(c.ws, WARD_WS_TEXT, "a", 1));
	ASSERT_OK(ward__ws_send(c.ws, WARD_WS_BINARY, "bb", 2));
	ASSERT_EQ(ward__ws_close(c.ws, 1004, NULL), -EINVAL);
	ASSERT_EQ(ward__ws_close(c.ws, 1000, "bad\nreason"), -EINVAL);
	ASSERT_OK(ward__ws_close(c.ws, 1001, "going away"));
	ASSERT_FALSE(ward__ws_is_open(c.ws));
	ASSERT_EQ(ward__ws_send(c.ws, WARD_WS_TEXT, "late", 4), -EPIPE);
	cread_frame(&c, &f);
	ASSERT_STREQ((char *)f.data, "a");
	free(f.data);
	cread_frame(&c, &f);
	ASSERT_STREQ((char *)f.data, "bb");
	free(f.data);
	cread_frame(&c, &f);
	ASSERT_EQ(f.opcode, 0x8);
	ASSERT_EQ(f.code, 1001);
	ASSERT_STREQ((char *)f.data + 2, "going away");
	free(f.data);
	/* Messages after the close are dropped; the client's close completes it. */
	csend(&c, true, 0x1, "dropped", 7);
	ASSERT_EQ(c.rec.n, 0);
	ASSERT_FALSE(ward__ws_finished(c.ws));
	csend(&c, true, 0x8, "\x03\xe9", 2);
	ASSERT_TRUE(ward__ws_finished(c.ws));
	ward__ws_get_info(c.ws, &info);
	ASSERT_EQ(info.error, 0);
	ASSERT_EQ(info.close_sent, 1001);
	conn_free(&c);

	/* A client that never answers the close: over at the deadline. */
	conn_new(&c, &cfg);
	upgrade(&c, "Authorization: Bearer t0ken\r\n");
	ASSERT_OK(ward__ws_close(c.ws, 1000, NULL));
	pump(c.ws);
	expect_close(&c, 1000);
	ASSERT_FALSE(ward__ws_finished(c.ws));
	ward__ws_on_timer(c.ws, ward__ws_deadline(c.ws) - 1);
	ASSERT_FALSE(ward__ws_finished(c.ws));
	ward__ws_on_timer(c.ws, ward__ws_deadline(c.ws));
	ASSERT_TRUE(ward__ws_finished(c.ws));
	ward__ws_get_info(c.ws, &info);
	ASSERT_EQ(info.error, -ETIMEDOUT);
	conn_free(&c);
}

TEST(ws_client_vanishes)
{
	struct ward__ws_config cfg = config();
	struct conn c;
	struct ward__ws_info info;
	uint8_t buf[64];
	size_t n;

	/* Mid-frame. */
	conn_new(&c, &cfg);
	upgrade(&c, "Authorization: Bearer t0ken\r\n");
	n = frame(buf, true, 0x1, "0123456789", 10, true, 0);
	cwrite(&c, buf, n - 4);
	close(c.cfd);
	c.cfd = -1;
	pump(c.ws);
	ASSERT_TRUE(ward__ws_finished(c.ws));
	ward__ws_get_info(c.ws, &info);
	ASSERT_EQ(info.error, -ECONNRESET);
	ASSERT_EQ(c.rec.n, 0);
	conn_free(&c);

	/* With messages queued for it. */
	conn_new(&c, &cfg);
	upgrade(&c, "Authorization: Bearer t0ken\r\n");
	close(c.cfd);
	c.cfd = -1;
	ASSERT_OK(ward__ws_send(c.ws, WARD_WS_TEXT, "x", 1));
	ward__ws_on_writable(c.ws);
	ASSERT_TRUE(ward__ws_finished(c.ws));
	ward__ws_get_info(c.ws, &info);
	ASSERT_TRUE(info.error == -EPIPE || info.error == -ECONNRESET);
	conn_free(&c);

	/* Reported by the poller. */
	conn_new(&c, &cfg);
	upgrade(&c, "Authorization: Bearer t0ken\r\n");
	ward__ws_on_hangup(c.ws);
	ASSERT_TRUE(ward__ws_finished(c.ws));
	conn_free(&c);
}

/* ------------------------------------------------------------------ back-pressure */

TEST(ws_send_queue_is_capped)
{
	struct ward__ws_config cfg = config();
	struct conn c;
	char block[1400];

	memset(block, 'q', sizeof(block));
	/* Room for 1000 bytes of payload in two messages, each charged its own cost. */
	cfg.max_queue = 1000 + 2 * WARD_WS_MSG_COST;
	cfg.max_queue_msgs = 4;
	conn_new(&c, &cfg);
	ASSERT_EQ(ward__ws_send(c.ws, WARD_WS_TEXT, "x", 1), -EPIPE); /* not open yet */
	upgrade(&c, "Authorization: Bearer t0ken\r\n");
	/* Sending only queues: without on_writable nothing leaves. */
	ASSERT_OK(ward__ws_send(c.ws, WARD_WS_TEXT, block, 600));
	ASSERT_EQ(ward__ws_queued_bytes(c.ws), 600 + WARD_WS_MSG_COST);
	ASSERT_EQ(ward__ws_send(c.ws, WARD_WS_TEXT, block, 401), -ENOBUFS);
	ASSERT_OK(ward__ws_send(c.ws, WARD_WS_TEXT, block, 400));
	ASSERT_EQ(ward__ws_queued_bytes(c.ws), cfg.max_queue);
	/* An empty message is not free: its record is memory all the same. */
	ASSERT_EQ(ward__ws_send(c.ws, WARD_WS_TEXT, block, 0), -ENOBUFS);
	ASSERT_EQ(ward__ws_send(c.ws, WARD_WS_TEXT, block, 1), -ENOBUFS);
	ASSERT_EQ(ward__ws_send(c.ws, WARD_WS_TEXT, block, cfg.max_queue + 1), -EMSGSIZE);
	ASSERT_EQ(ward__ws_send(c.ws, (enum ward__ws_type)9, block, 1), -EINVAL);
	ASSERT_TRUE(ward__ws_want_write(c.ws));
	/*
	 * A full queue stops reading: called anyway, the connection writes
	 * what it can but leaves the client's ping unread, so no pong yet.
	 */
	ASSERT_FALSE(ward__ws_want_read(c.ws));
	{
		uint8_t ping[16];
		size_t n = frame(ping, true, 0x9, "p", 1, true, 0);

		ASSERT_EQ(send(c.cfd, ping, n, 0), (ssize_t)n);
	}
	ward__ws_on_readable(c.ws);
	ASSERT_EQ(ward__ws_queued_bytes(c.ws), 0);
	ASSERT_TRUE(ward__ws_want_read(c.ws));
	for (int i = 0; i < 3; i++) {
		struct frame_in f;

		cread_frame(&c, &f);
		ASSERT_EQ(f.opcode, i < 2 ? 0x1 : 0xa);
		free(f.data);
	}
	/* The message count is capped too. */
	for (int i = 0; i < 4; i++)
		ASSERT_OK(ward__ws_send(c.ws, WARD_WS_TEXT, "m", 1));
	ASSERT_EQ(ward__ws_send(c.ws, WARD_WS_TEXT, "m", 1), -ENOBUFS);
	/* A message as large as the whole queue still goes, alone. */
	ward__ws_on_writable(c.ws);
	ASSERT_EQ(ward__ws_queued_bytes(c.ws), 0);
	ASSERT_OK(ward__ws_send(c.ws, WARD_WS_TEXT, block, cfg.max_queue));
	conn_free(&c);
}

/*
 * Pongs with a payload, never read: what the queue holds is charged with
 * each message's own cost, so it stays within the byte cap however many
 * messages the count cap would allow (a million 20-byte pongs held 120 MB
 * charged as 20 MB before).
 */
TEST(ws_pong_flood_is_charged_per_message)
{
	struct ward__ws_config cfg = config();
	struct conn c;
	uint8_t *flood;
	size_t n = 0, pings = 20000, per = 20 + WARD_WS_MSG_COST;

	cfg.max_queue = (size_t)64 << 10;
	cfg.max_queue_msgs = 1u << 20;
	conn_new(&c, &cfg);
	upgrade(&c, "Authorization: Bearer t0ken\r\n");
	flood = malloc(pings * 26);
	if (!flood)
		abort();
	for (size_t i = 0; i < pings; i++)
		n += frame(flood + n, true, 0x9, "abcdefghijklmnopqrst", 20, true, 0);
	for (size_t off = 0; off < n;) {
		ssize_t r = send(c.cfd, flood + off, n - off, MSG_DONTWAIT);

		if (r > 0)
			off += (size_t)r;
		ward__ws_on_readable(c.ws);
		ward__ws_on_writable(c.ws);
		/* At most the cap plus the pongs of what one 4 KiB read of frames holds. */
		ASSERT_LE(ward__ws_queued_bytes(c.ws), cfg.max_queue + (4096 / 26 + 1) * per);
		ASSERT_LE(ward__ws_queued_msgs(c.ws), cfg.max_queue / per + 4096 / 26 + 1);
		if (r < 0 && !ward__ws_want_read(c.ws))
			break;
	}
	ASSERT_FALSE(ward__ws_finished(c.ws));
	free(flood);
	conn_free(&c);
}

TEST(ws_ping_flood_without_reading_stays_bounded)
{
	struct ward__ws_config cfg = config();
	struct conn c;
	uint8_t *flood;
	size_t n = 0, pings = 20000;

	cfg.max_queue_msgs = 100;
	conn_new(&c, &cfg);
	upgrade(&c, "Authorization: Bearer t0ken\r\n");
	flood = malloc(pings * 6);
	if (!flood)
		abort();
	for (size_t i = 0; i < pings; i++)
		n += frame(flood + n, true, 0x9, "", 0, true, 0);
	/* The client writes and never reads; the socket buffer soon refuses the pongs. */
	for (size_t off = 0; off < n;) {
		ssize_t r = send(c.cfd, flood + off, n - off, MSG_DONTWAIT);

		if (r > 0)
			off += (size_t)r;
		ward__ws_on_readable(c.ws);
		ward__ws_on_writable(c.ws);
		/* At most the cap plus what one 4 KiB read of frames can hold. */
		ASSERT_LE(ward__ws_queued_msgs(c.ws), 100 + 4096 / 6 + 1);
		if (r < 0 && !ward__ws_want_read(c.ws))
			break;
	}
	ASSERT_FALSE(ward__ws_finished(c.ws));
	free(flood);
	conn_free(&c);
}

TEST(ws_pause_and_resume_keep_the_order)
{
	struct ward__ws_config cfg = config();
	struct conn c;
	uint8_t buf[256];
	size_t n;

	conn_new(&c, &cfg);
	upgrade(&c, "Authorization: Bearer t0ken\r\n");
	c.rec.pause_each = true;
	n = frame(buf, true, 0x1, "one", 3, true, 0);
	n += frame(buf + n, true, 0x1, "two", 3, true, 0);
	n += frame(buf + n, true, 0x2, "three", 5, true, 0);
	cwrite(&c, buf, n);
	/* Paused after the first: the others were read in the same read and are held. */
	ASSERT_EQ(c.rec.n, 1);
	ASSERT_FALSE(ward__ws_want_read(c.ws));
	csend(&c, true, 0x1, "four", 4);
	ASSERT_EQ(c.rec.n, 1);
	ward__ws_resume(c.ws);
	ASSERT_EQ(c.rec.n, 2);
	ASSERT_STREQ((char *)c.rec.data[1], "two");
	c.rec.pause_each = false;
	ward__ws_resume(c.ws);
	ASSERT_EQ(c.rec.n, 3);
	ASSERT_STREQ((char *)c.rec.data[2], "three");
	ASSERT_EQ(c.rec.type[2], WARD_WS_BINARY);
	/* "four" waited in the socket, unread, and comes now. */
	ASSERT_TRUE(ward__ws_want_read(c.ws));
	pump(c.ws);
	ASSERT_EQ(c.rec.n, 4);
	ASSERT_STREQ((char *)c.rec.data[3], "four");
	conn_free(&c);
}

TEST(ws_on_message_failure_closes_with_1011)
{
	struct ward__ws_config cfg = config();
	struct conn c;
	struct ward__ws_info info;

	conn_new(&c, &cfg);
	upgrade(&c, "Authorization: Bearer t0ken\r\n");
	c.rec.fail_with = -ENOMEM;
	csend(&c, true, 0x1, "x", 1);
	expect_close(&c, 1011);
	csend(&c, true, 0x8, "\x03\xe8", 2);
	ASSERT_TRUE(ward__ws_finished(c.ws));
	ward__ws_get_info(c.ws, &info);
	ASSERT_EQ(info.error, -ENOMEM);
	conn_free(&c);
}

TEST(ws_keepalive)
{
	struct ward__ws_config cfg = {.token = "t0ken", .keepalive_ms = 1000};
	struct conn c;
	struct frame_in f;
	struct ward__ws_info info;
	uint64_t d1, d2;

	conn_new(&c, &cfg);
	upgrade(&c, "Authorization: Bearer t0ken\r\n");
	d1 = ward__ws_deadline(c.ws);
	ASSERT_NE(d1, 0);
	ward__ws_on_timer(c.ws, d1 - 1);
	ASSERT_EQ(ward__ws_deadline(c.ws), d1);
	/* First tick: a ping. The client answers. */
	ward__ws_on_timer(c.ws, d1);
	cread_frame(&c, &f);
	ASSERT_EQ(f.opcode, 0x9);
	csend(&c, true, 0xa, f.data, f.len);
	free(f.data);
	d2 = ward__ws_deadline(c.ws);
	ASSERT_EQ(d2, d1 + 1000000000u);
	/* Second tick: the client was heard, another ping; this one goes unanswered. */
	ward__ws_on_timer(c.ws, d2);
	ASSERT_FALSE(ward__ws_finished(c.ws));
	cread_frame(&c, &f);
	ASSERT_EQ(f.opcode, 0x9);
	free(f.data);
	ward__ws_on_timer(c.ws, ward__ws_deadline(c.ws));
	ASSERT_TRUE(ward__ws_finished(c.ws));
	ward__ws_get_info(c.ws, &info);
	ASSERT_EQ(info.error, -ETIMEDOUT);
	conn_free(&c);
}

/* ------------------------------------------------------------------ a real client */

/*
 * A tiny event loop of the kind the server has: level-triggered epoll over a
 * loopback listener and its connections, each driven by interest and
 * deadline. The client is tests/helpers/ws-client.py (python3-websockets),
 * which runs its own checks and exits 0 when all passed; messages "close"
 * and "big" ask the server for a close and for a 1 MiB binary answer.
 */
#define MAX_CONNS 16

static int py_on_message(struct ward__ws *ws, enum ward__ws_type type, const uint8_t *data,
			 size_t len, void *userdata)
{
	(void)userdata;
	if (type == WARD_WS_TEXT && len == 5 && memcmp(data, "close", 5) == 0)
		return ward__ws_close(ws, 1000, "bye");
	if (type == WARD_WS_TEXT && len == 3 && memcmp(data, "big", 3) == 0) {
		size_t n = 1u << 20;
		uint8_t *big = malloc(n);
		int r;

		if (!big)
			return -ENOMEM;
		for (size_t i = 0; i < n; i++)
			big[i] = (uint8_t)i;
		r = ward__ws_send(ws, WARD_WS_BINARY, big, n);
		free(big);
		return r;
	}
	return ward__ws_send(ws, type, data, len);
}

static void set_interest(int ep, struct ward__ws *ws, int slot)
{
	struct epoll_event ev = {.data.u32 = (uint32_t)slot};

	ev.events =
		(ward__ws_want_read(ws) ? EPOLLIN : 0) | (ward__ws_want_write(ws) ? EPOLLOUT : 0);
	if (epoll_ctl(ep, EPOLL_CTL_MOD, ward__ws_fd(ws), &ev) < 0)
		abort();
}

/*
 * Debian's python3-websockets is installed for Debian's python3: use that
 * one, whatever another python3 (pyenv, a venv) comes first in PATH. Its
 * full path goes in argv[0] too: Python finds its prefix, and so its
 * packages, from argv[0], searching PATH when it has no slash.
 */
static const char *python(void)
{
	return access("/usr/bin/python3", X_OK) == 0 ? "/usr/bin/python3" : "python3";
}

/* True when python3 can import websockets. */
static bool have_websockets(void)
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return false;
	if (pid == 0) {
		int fd = open("/dev/null", O_WRONLY | O_CLOEXEC);

		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		execlp(python(), python(), "-c", "import websockets", (char *)NULL);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) != pid)
		return false;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

static uint64_t monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

TEST_TIMEOUT(ws_python_websockets_client, 120)
{
	const char *src = getenv("WARD_SRC");
	char script[4096], port_s[16];
	struct ward__ws_callbacks cbs = {.on_message = py_on_message};
	struct ward__ws_config cfg = {
		.token = "s3cret-token", .max_message = 1 << 20, .keepalive_ms = 30000};
	struct ward__ws *conns[MAX_CONNS] = {0};
	struct sockaddr_in addr = {.sin_family = AF_INET,
				   .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t alen = sizeof(addr);
	int lfd, ep, status = -1, accepted = 0, opened = 0;
	pid_t pid;

	if (!src)
		SKIP("WARD_SRC not set");
	snprintf(script, sizeof(script), "%s/tests/helpers/ws-client.py", src);
	if (!have_websockets())
		SKIP("python3-websockets is not installed (scripts/setup-deps.sh installs it)");

	lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	ASSERT_OK(lfd);
	ASSERT_OK(bind(lfd, (struct sockaddr *)&addr, sizeof(addr)));
	ASSERT_OK(listen(lfd, 16));
	ASSERT_OK(getsockname(lfd, (struct sockaddr *)&addr, &alen));
	snprintf(port_s, sizeof(port_s), "%u", ntohs(addr.sin_port));
	ep = epoll_create1(EPOLL_CLOEXEC);
	ASSERT_OK(ep);
	ASSERT_OK(epoll_ctl(ep, EPOLL_CTL_ADD, lfd,
			    &(struct epoll_event){.events = EPOLLIN, .data.u32 = MAX_CONNS}));

	pid = fork();
	ASSERT_OK(pid);
	if (pid == 0) {
		execlp(python(), python(), script, port_s, "s3cret-token", (char *)NULL);
		_exit(127);
	}

	for (;;) {
		struct epoll_event evs[8];
		uint64_t next = 0, now;
		int timeout = 200, n;
		pid_t w = waitpid(pid, &status, WNOHANG);

		if (w == pid)
			break;
		for (int i = 0; i < MAX_CONNS; i++) {
			uint64_t d = conns[i] ? ward__ws_deadline(conns[i]) : 0;

			if (d && (!next || d < next))
				next = d;
		}
		now = monotonic_ns();
		if (next)
			timeout = next <= now ? 0 : (int)MIN((next - now) / 1000000 + 1, 200);
		n = epoll_wait(ep, evs, 8, timeout);
		ASSERT_TRUE(n >= 0 || errno == EINTR);
		for (int k = 0; k < n; k++) {
			uint32_t slot = evs[k].data.u32;
			struct ward__ws *ws;

			if (slot == MAX_CONNS) {
				int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
				int i;

				if (fd < 0)
					continue;
				for (i = 0; i < MAX_CONNS && conns[i]; i++)
					;
				ASSERT_LE(i, MAX_CONNS - 1);
				ASSERT_OK(ward__ws_new(fd, &cfg, &cbs, NULL, &conns[i]));
				accepted++;
				ASSERT_OK(
					epoll_ctl(ep, EPOLL_CTL_ADD, fd,
						  &(struct epoll_event){.events = EPOLLIN,
									.data.u32 = (uint32_t)i}));
				continue;
			}
			ws = conns[slot];
			if (!ws)
				continue;
			if (evs[k].events & (EPOLLERR | EPOLLHUP))
				ward__ws_on_hangup(ws);
			if (!ward__ws_finished(ws) && (evs[k].events & EPOLLIN))
				ward__ws_on_readable(ws);
			if (!ward__ws_finished(ws) && (evs[k].events & EPOLLOUT))
				ward__ws_on_writable(ws);
		}
		now = monotonic_ns();
		for (int i = 0; i < MAX_CONNS; i++) {
			struct ward__ws *ws = conns[i];

			if (!ws)
				continue;
			if (ward__ws_deadline(ws) && ward__ws_deadline(ws) <= now)
				ward__ws_on_timer(ws, now);
			/* Whatever the callbacks queued goes out now, not after a poller round. */
			if (!ward__ws_finished(ws) && ward__ws_want_write(ws))
				ward__ws_on_writable(ws);
			if (ward__ws_finished(ws)) {
				struct ward__ws_info info;

				ward__ws_get_info(ws, &info);
				if (info.http_status == 101)
					opened++;
				printf("# connection %d: http %d, close sent %u received %u, error %d "
				       "(%s)\n",
				       i, info.http_status, info.close_sent, info.close_received,
				       info.error, info.reason);
				ward__ws_free(ws);
				conns[i] = NULL;
				continue;
			}
			set_interest(ep, ws, i);
		}
	}
	fflush(stdout);
	for (int i = 0; i < MAX_CONNS; i++)
		ward__ws_free(conns[i]);
	close(ep);
	close(lfd);
	ASSERT_TRUE(WIFEXITED(status));
	if (WEXITSTATUS(status) == 77)
		SKIP("the client could not run its checks");
	ASSERT_EQ(WEXITSTATUS(status), 0);
	/* The client made its nine connections, five of them upgraded. */
	ASSERT_GE(accepted, 9);
	ASSERT_GE(opened, 5);
}

int main(void)
{
	return tap_main();
}
