/* SPDX-License-Identifier: MIT */
/*
 * bench/ws-stream: a WebSocket client of `ward serve` written to cost as
 * little as possible, so that bench/server measures the server's streaming
 * and not its client's: it starts one process, decodes every process/output
 * chunk (base64, a table per character) and counts the bytes until
 * process/closed. Plain C, blocking I/O, no JSON library: it finds the few
 * fields it needs in the server's own hand-built notifications.
 *
 * Usage: ws-stream URL CWD ARGV...   (URL ws://HOST:PORT, --no-auth server)
 * Prints "<milliseconds from process/start sent to process/closed> <bytes>".
 *        ws-stream --pipe ARGV...     the baseline: the same command's output
 * read from a plain pipe by this same program, from fork to EOF and exit.
 * A benchmark helper, not a general client: no fragmentation, no TLS.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int sock = -1;
static uint8_t *rbuf;
static size_t rcap, rlen, roff;

static void die(const char *what)
{
	fprintf(stderr, "ws-stream: %s: %s\n", what, errno ? strerror(errno) : "protocol error");
	exit(1);
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void send_all(const void *p, size_t n)
{
	const char *s = p;

	while (n > 0) {
		ssize_t k = send(sock, s, n, MSG_NOSIGNAL);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			die("send");
		s += k;
		n -= (size_t)k;
	}
}

/* A masked text frame (clients must mask, RFC 6455 section 5.3). */
static void send_text(const char *msg)
{
	size_t n = strlen(msg), h = 0;
	uint8_t *f = malloc(n + 14);
	uint8_t mask[4] = {0x12, 0x34, 0x56, 0x78};

	if (!f)
		die("malloc");
	f[h++] = 0x81;
	if (n < 126) {
		f[h++] = 0x80 | (uint8_t)n;
	} else if (n < 65536) {
		f[h++] = 0x80 | 126;
		f[h++] = (uint8_t)(n >> 8);
		f[h++] = (uint8_t)n;
	} else {
		f[h++] = 0x80 | 127;
		for (int i = 7; i >= 0; i--)
			f[h++] = (uint8_t)(n >> (8 * i));
	}
	memcpy(f + h, mask, 4);
	h += 4;
	for (size_t i = 0; i < n; i++)
		f[h + i] = (uint8_t)msg[i] ^ mask[i % 4];
	send_all(f, h + n);
	free(f);
}

/* Makes at least n unread bytes available at rbuf + roff. */
static void need(size_t n)
{
	if (roff > 0 && rlen - roff < n) {
		memmove(rbuf, rbuf + roff, rlen - roff);
		rlen -= roff;
		roff = 0;
	}
	if (n > rcap) {
		rcap = n + (1 << 20);
		rbuf = realloc(rbuf, rcap);
		if (!rbuf)
			die("realloc");
	}
	while (rlen - roff < n) {
		ssize_t k = recv(sock, rbuf + rlen, rcap - rlen, 0);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			die("recv");
		rlen += (size_t)k;
	}
}

/* The next message's payload (valid until the next call). */
static const char *next_message(size_t *ret_len)
{
	for (;;) {
		uint8_t op;
		uint64_t n;
		size_t h = 2;

		need(2);
		op = rbuf[roff] & 0x0f;
		n = rbuf[roff + 1] & 0x7f;
		if (n == 126) {
			need(4);
			n = (uint64_t)rbuf[roff + 2] << 8 | rbuf[roff + 3];
			h = 4;
		} else if (n == 127) {
			need(10);
			n = 0;
			for (int i = 0; i < 8; i++)
				n = n << 8 | rbuf[roff + 2 + i];
			h = 10;
		}
		need(h + n);
		roff += h + n;
		if (op == 0x9) { /* ping: a pong with the same payload */
			char pong[200];

			if (n > 125)
				die("ping");
			pong[0] = (char)0x8a;
			pong[1] = (char)(0x80 | n);
			memset(pong + 2, 0, 4);
			memcpy(pong + 6, rbuf + roff - n, n);
			send_all(pong, 6 + n);
			continue;
		}
		if (op == 0x8)
			die("closed by the server");
		*ret_len = n;
		return (const char *)rbuf + roff - n;
	}
}

static int8_t dec[256];

/* Decodes base64 from s up to the closing quote; returns the bytes it stands for. */
static size_t decode_count(const char *s, const char *end, uint8_t *out)
{
	const char *q = memchr(s, '"', (size_t)(end - s));
	size_t o = 0;

	if (!q)
		die("chunk");
	/* Whole quads, four table lookups each; padding only in the last one. */
	for (; q - s >= 4; s += 4) {
		int8_t a = dec[(uint8_t)s[0]], b = dec[(uint8_t)s[1]], c = dec[(uint8_t)s[2]],
		       d = dec[(uint8_t)s[3]];

		if ((a | b) < 0)
			die("base64");
		out[o++] = (uint8_t)(a << 2 | b >> 4);
		if (c < 0)
			break;
		out[o++] = (uint8_t)(b << 4 | c >> 2);
		if (d < 0)
			break;
		out[o++] = (uint8_t)(c << 6 | d);
	}
	return o;
}

int main(int argc, char **argv)
{
	const char *b64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	char host[64], req[8192], *colon;
	struct sockaddr_in sa = {.sin_family = AF_INET};
	size_t total = 0, len, off;
	uint8_t *scratch = NULL;
	size_t scratch_cap = 0;
	double t0;
	int one = 1;

	if (argc >= 3 && strcmp(argv[1], "--pipe") == 0) {
		static uint8_t buf[256 << 10];
		int fds[2];
		pid_t pid;
		ssize_t k;

		t0 = now_ms();
		if (pipe(fds) < 0)
			die("pipe");
		pid = fork();
		if (pid == 0) {
			dup2(fds[1], 1);
			close(fds[0]);
			close(fds[1]);
			execvp(argv[2], argv + 2);
			_exit(127);
		}
		close(fds[1]);
		while ((k = read(fds[0], buf, sizeof(buf))) > 0 || (k < 0 && errno == EINTR))
			total += k > 0 ? (size_t)k : 0;
		waitpid(pid, NULL, 0);
		printf("%.3f %zu\n", now_ms() - t0, total);
		return 0;
	}
	if (argc < 4 || strncmp(argv[1], "ws://", 5) != 0) {
		fprintf(stderr, "usage: ws-stream ws://HOST:PORT CWD ARGV...\n");
		return 2;
	}
	memset(dec, -1, sizeof(dec));
	for (int i = 0; i < 64; i++)
		dec[(uint8_t)b64[i]] = (int8_t)i;
	snprintf(host, sizeof(host), "%s", argv[1] + 5);
	colon = strrchr(host, ':');
	if (!colon)
		die("URL");
	*colon = '\0';
	sa.sin_port = htons((uint16_t)atoi(colon + 1));
	if (inet_pton(AF_INET, host, &sa.sin_addr) != 1)
		die("host");
	sock = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (sock < 0 || connect(sock, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		die("connect");
	setsockopt(sock, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	snprintf(req, sizeof(req),
		 "GET / HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
		 "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n",
		 argv[1] + 5);
	send_all(req, strlen(req));
	for (;;) {
		char *end;

		need(rlen - roff + 1);
		end = memmem(rbuf + roff, rlen - roff, "\r\n\r\n", 4);
		if (end) {
			if (strncmp((char *)rbuf + roff, "HTTP/1.1 101", 12) != 0)
				die("upgrade refused");
			roff = (size_t)((uint8_t *)end + 4 - rbuf);
			break;
		}
	}
	send_text("{\"id\":1,\"method\":\"initialize\",\"params\":{\"clientName\":\"ws-stream\"}}");
	for (;;) {
		const char *m = next_message(&len);

		if (memmem(m, len, "\"id\":1", 6))
			break;
	}
	send_text("{\"method\":\"initialized\"}");
	off = (size_t)snprintf(req, sizeof(req),
			       "{\"id\":2,\"method\":\"process/start\",\"params\":{\"processId\":"
			       "\"s\",\"cwd\":\"file://%s\",\"env\":{\"PATH\":\"/usr/bin:/bin\"},"
			       "\"tty\":false,\"argv\":[",
			       argv[2]);
	for (int i = 3; i < argc && off < sizeof(req) - 64; i++)
		off += (size_t)snprintf(req + off, sizeof(req) - off, "%s\"%s\"", i > 3 ? "," : "",
					argv[i]);
	snprintf(req + off, sizeof(req) - off, "]}}");
	t0 = now_ms();
	send_text(req);
	for (;;) {
		const char *m = next_message(&len), *c;

		if (len > 40 && memmem(m, 40, "\"process/output\"", 16)) {
			c = memmem(m, len, "\"chunk\":\"", 9);
			if (!c)
				die("chunk");
			if (len > scratch_cap) {
				scratch_cap = len;
				scratch = realloc(scratch, scratch_cap);
				if (!scratch)
					die("realloc");
			}
			total += decode_count(c + 9, m + len, scratch);
		} else if (memmem(m, len, "\"process/closed\"", 16)) {
			break;
		} else if (memmem(m, len, "\"error\"", 7)) {
			fprintf(stderr, "ws-stream: %.*s\n", (int)len, m);
			return 1;
		}
	}
	printf("%.3f %zu\n", now_ms() - t0, total);
	return 0;
}
