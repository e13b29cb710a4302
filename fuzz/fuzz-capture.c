/* SPDX-License-Identifier: MIT */
/*
 * Fuzzes the head+tail output capture against a reference model: any cap, any
 * sequence of chunk sizes. Checks the materialised bytes, the omitted count,
 * and that storage never exceeds the cap plus the marker room.
 *
 * Input: two bytes choose the cap (64 .. 4159), then records of one length
 * byte (scaled: n * 37 bytes, so a record can cross several caps) followed by
 * up to that many payload bytes.
 *
 * Built with -fsanitize=fuzzer it is a libFuzzer target; linked with
 * replay.c it replays the corpus (in every test run).
 */
#include <stdlib.h>
#include <string.h>

#include "basic/buf.h"
#include "exec/exec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ward__capture c;
	uint8_t *model, *got, *want;
	size_t cap, total = 0, got_len, want_len = 0, pos = 2;
	uint64_t omitted;

	if (size < 2)
		return 0;
	cap = WARD_OUTPUT_CAP_MIN + (((size_t)data[0] << 8 | data[1]) % 4096);
	if (ward__capture_init(&c, cap) < 0)
		abort();
	/*
	 * The model keeps everything. A record of length byte L yields L * 37 bytes
	 * and consumes 1 + L input bytes, except the last, which may be cut short:
	 * the total is below (size + 256) * 37.
	 */
	model = malloc((size + 256) * 37);
	if (!model)
		return 0;
	while (pos < size) {
		size_t n = (size_t)data[pos++] * 37, avail = size - pos, k;

		/* Payload: the input bytes, repeated to reach n (long chunks from short inputs). */
		for (k = 0; k < n; k++)
			model[total + k] = avail ? data[pos + k % avail] : (uint8_t)k;
		if (ward__capture_append(&c, model + total, n) < 0)
			abort();
		total += n;
		pos += MIN(avail, (size_t)data[pos - 1]);
		if (c.buf.alloc > cap + WARD_CAPTURE_MARKER_MAX + 1)
			abort();
	}
	if (ward__capture_finish(&c, &got, &got_len, &omitted) < 0)
		abort();
	if (omitted != (total > cap ? total - cap : 0))
		abort();

	want = malloc(MIN(total, cap) + WARD_CAPTURE_MARKER_MAX);
	if (!want)
		abort();
	if (total <= cap) {
		memcpy(want, model, total);
		want_len = total;
	} else {
		memcpy(want, model, cap / 2);
		want_len = cap / 2;
		want_len += ward__capture_marker(omitted, (char *)want + want_len);
		memcpy(want + want_len, model + total - (cap - cap / 2), cap - cap / 2);
		want_len += cap - cap / 2;
	}
	if (got_len != want_len || memcmp(got, want, got_len) != 0 || got[got_len] != 0)
		abort();
	free(want);
	free(got);
	free(model);
	ward__capture_release(&c);
	return 0;
}
