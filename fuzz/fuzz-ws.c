/* SPDX-License-Identifier: MIT */
/*
 * Fuzzes the WebSocket server connection (src/transport/ws.c) as a hostile
 * client would: the input is what the client sends, through a socketpair,
 * cut into writes, while the test drives the connection as an event loop
 * would (interest, readable, writable) and reads whatever the server
 * answers. The first byte picks the configuration: authentication, a valid
 * upgrade request put in front (so most inputs reach the framing), small
 * limits, pausing or echoing in on_message, an owner's close half way,
 * socket buffers as small as the kernel allows (so writes are cut short).
 * Invariants checked:
 *
 *   - nothing crashes or leaks (ASan), whatever the bytes;
 *   - the send queue never holds more than its caps allow (plus what one
 *     read of frames can add in pongs);
 *   - on_message is only called on an open connection, with at most
 *     max_message bytes, and never after a close was asked for;
 *   - once the client stops (EOF) and the deadlines pass, the connection
 *     is finished: nothing can keep it alive.
 *
 * Built with -fsanitize=fuzzer it is a libFuzzer target; linked with replay.c
 * it replays the corpus (in every test run).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "transport/ws.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(x)                 \
	do {                     \
		if (!(x))        \
			abort(); \
	} while (0)

#define F_AUTH 0x01
#define F_PREFIX 0x02
#define F_PAUSE 0x04
#define F_ECHO 0x08
#define F_SMALL 0x10
#define F_CLOSE 0x20
#define F_TINY 0x40

struct state {
	unsigned flags;
	size_t max_message;
	size_t messages;
	bool closed_by_owner;
};

static int on_message(struct ward__ws *ws, enum ward__ws_type type, const uint8_t *data, size_t len,
		      void *userdata)
{
	struct state *st = userdata;

	CHECK(type == WARD_WS_TEXT || type == WARD_WS_BINARY);
	CHECK(len <= st->max_message && data);
	CHECK(!st->closed_by_owner);
	st->messages++;
	if (st->flags & F_ECHO)
		(void)ward__ws_send(ws, type, data, len);
	if ((st->flags & F_CLOSE) && st->messages == 2) {
		CHECK(ward__ws_close(ws, 1001, "bye") == 0);
		st->closed_by_owner = true;
	}
	return st->flags & F_PAUSE ? WARD_WS_PAUSE : 0;
}

static void drain(int cfd)
{
	uint8_t buf[65536];

	while (recv(cfd, buf, sizeof(buf), MSG_DONTWAIT) > 0)
		;
}

static void drive(struct ward__ws *ws, const struct ward__ws_config *cfg, int cfd)
{
	for (int i = 0; i < 4 && !ward__ws_finished(ws); i++) {
		if (ward__ws_want_read(ws))
			ward__ws_on_readable(ws);
		if (!ward__ws_finished(ws) && ward__ws_want_write(ws))
			ward__ws_on_writable(ws);
		/*
		 * The caps, plus the pongs for the pings already read when the
		 * queue filled (at most 8 KiB of frames: the bytes behind the
		 * request and one read) and the keepalive ping.
		 */
		CHECK(ward__ws_queued_msgs(ws) <= cfg->max_queue_msgs + 8192 / 6 + 8);
		CHECK(ward__ws_queued_bytes(ws) <= cfg->max_queue + 4096 + 4096);
		drain(cfd);
	}
}

static const char upgrade_head[] =
	"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n"
	"Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
	"Sec-WebSocket-Version: 13\r\nAuthorization: Bearer fuzz\r\n\r\n";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ward__ws_callbacks cbs = {.on_message = on_message};
	struct ward__ws_config cfg = {0};
	struct state st = {0};
	struct ward__ws *ws;
	uint32_t seed;
	size_t off = 0;
	int sv[2];

	if (size < 1)
		return 0;
	st.flags = data[0];
	seed = data[0] * 2654435761u + 7;
	data++;
	size--;
	if (st.flags & F_AUTH)
		cfg.token = "fuzz";
	if (st.flags & F_SMALL) {
		cfg.max_message = 256;
		cfg.max_fragments = 4;
		cfg.max_queue = 512;
		cfg.max_queue_msgs = 8;
		cfg.read_budget = 300;
		cfg.http = (struct ward__http_limits){
			.max_head = 512, .max_line = 200, .max_fields = 8};
	}
	cfg.max_message = cfg.max_message ? cfg.max_message : 1 << 20;
	cfg.max_queue = cfg.max_queue ? cfg.max_queue : WARD_WS_DEFAULT_MAX_QUEUE;
	cfg.max_queue_msgs =
		cfg.max_queue_msgs ? cfg.max_queue_msgs : WARD_WS_DEFAULT_MAX_QUEUE_MSGS;
	st.max_message = cfg.max_message;

	CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
	CHECK(fcntl(sv[0], F_SETFL, O_NONBLOCK) == 0);
	CHECK(ward__ws_new(sv[0], &cfg, &cbs, &st, &ws) == 0);
	if (st.flags & F_TINY) {
		int one = 1;

		CHECK(setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &one, sizeof(one)) == 0);
		CHECK(setsockopt(sv[1], SOL_SOCKET, SO_RCVBUF, &one, sizeof(one)) == 0);
	}

	if (st.flags & F_PREFIX)
		CHECK(send(sv[1], upgrade_head, sizeof(upgrade_head) - 1, 0) ==
		      (ssize_t)(sizeof(upgrade_head) - 1));
	while (off < size && !ward__ws_finished(ws)) {
		size_t chunk;
		ssize_t n;

		seed = seed * 1103515245u + 12345u;
		chunk = MIN((size_t)(seed >> 16) % 512 + 1, size - off);
		n = send(sv[1], data + off, chunk, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n > 0)
			off += (size_t)n;
		else if (n < 0 && errno != EAGAIN)
			break;
		drive(ws, &cfg, sv[1]);
		if ((seed >> 8) % 4 == 0 && !ward__ws_finished(ws))
			ward__ws_resume(ws);
		if (n < 0 && !ward__ws_want_read(ws) && !ward__ws_want_write(ws))
			break; /* the server reads no more of this client: it is closing or paused */
	}

	/* The client stops; the owner stops pausing. EOF and the deadlines must end it. */
	shutdown(sv[1], SHUT_WR);
	st.flags &= ~(unsigned)F_PAUSE;
	/*
	 * Each round reads at least a read budget of what is left (up to the
	 * input and the socket buffer) unless the connection is done reading,
	 * so the number of rounds needed is bounded; 4096 is far above it.
	 */
	for (int round = 0; round < 4096 && !ward__ws_finished(ws); round++) {
		ward__ws_resume(ws);
		drive(ws, &cfg, sv[1]);
		if (!ward__ws_finished(ws) && ward__ws_deadline(ws))
			ward__ws_on_timer(ws, ward__ws_deadline(ws));
	}
	CHECK(ward__ws_finished(ws));
	ward__ws_free(ws);
	close(sv[1]);
	return 0;
}
