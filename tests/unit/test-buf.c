/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"

#include "basic/buf.h"

TEST(init_allocates_nothing)
{
	struct ward__buf b;

	ASSERT_OK(ward__buf_init(&b, 100));
	ASSERT_TRUE(b.data == NULL);
	ASSERT_EQ(b.len, 0);
	ASSERT_EQ(b.alloc, 0);
	ASSERT_EQ(ward__buf_room(&b), 100);
	ward__buf_release(&b);
	ASSERT_EQ(ward__buf_init(&b, WARD_BUF_MAX_CAPACITY + 1), -EINVAL);
}

TEST(append_up_to_the_cap_exactly)
{
	struct ward__buf b;
	char block[10];

	memset(block, 'x', sizeof(block));
	ASSERT_OK(ward__buf_init(&b, 25));
	ASSERT_OK(ward__buf_append(&b, block, 10));
	ASSERT_OK(ward__buf_append(&b, block, 10));
	/* 20 + 10 > 25: refused, and nothing of it is appended. */
	ASSERT_EQ(ward__buf_append(&b, block, 10), -ENOBUFS);
	ASSERT_EQ(b.len, 20);
	ASSERT_OK(ward__buf_append(&b, block, 5));
	ASSERT_EQ(b.len, 25);
	ASSERT_EQ(ward__buf_room(&b), 0);
	ASSERT_EQ(ward__buf_append_byte(&b, 'y'), -ENOBUFS);
	ASSERT_EQ(b.len, 25);
	/* Storage never exceeds max + 1 (the NUL). */
	ASSERT_LE(b.alloc, 26);
	ASSERT_EQ(b.data[25], '\0');
	ward__buf_release(&b);
}

TEST(nul_terminated_and_binary_safe)
{
	struct ward__buf b;
	static const uint8_t bin[] = {'a', 0, 'b', 0xff, 0};

	ASSERT_OK(ward__buf_init(&b, 1000));
	ASSERT_OK(ward__buf_append(&b, bin, sizeof(bin)));
	ASSERT_EQ(b.len, sizeof(bin));
	ASSERT_EQ(memcmp(b.data, bin, sizeof(bin)), 0);
	ASSERT_EQ(b.data[b.len], 0);
	ASSERT_OK(ward__buf_append_str(&b, "xyz"));
	ASSERT_EQ(b.len, sizeof(bin) + 3);
	ASSERT_STREQ((char *)b.data + sizeof(bin), "xyz");
	ward__buf_release(&b);
}

TEST(printf_all_or_nothing)
{
	struct ward__buf b;

	ASSERT_OK(ward__buf_init(&b, 12));
	ASSERT_OK(ward__buf_printf(&b, "%d-%s", 42, "abc"));
	ASSERT_STREQ((char *)b.data, "42-abc");
	ASSERT_EQ(ward__buf_printf(&b, "%s", "1234567"), -ENOBUFS);
	ASSERT_STREQ((char *)b.data, "42-abc");
	ASSERT_OK(ward__buf_printf(&b, "%s", "123456"));
	ASSERT_STREQ((char *)b.data, "42-abc123456");
	ASSERT_EQ(b.len, 12);
	ward__buf_release(&b);
}

TEST(insert)
{
	struct ward__buf b;

	ASSERT_OK(ward__buf_init(&b, 10));
	ASSERT_OK(ward__buf_append_str(&b, "adef"));
	ASSERT_OK(ward__buf_insert(&b, 1, "bc", 2));
	ASSERT_STREQ((char *)b.data, "abcdef");
	ASSERT_OK(ward__buf_insert(&b, 6, "gh", 2));
	ASSERT_OK(ward__buf_insert(&b, 0, "_", 1));
	ASSERT_STREQ((char *)b.data, "_abcdefgh");
	ASSERT_EQ(ward__buf_insert(&b, 0, "12", 2), -ENOBUFS);
	ASSERT_EQ(ward__buf_insert(&b, 11, "1", 1), -EINVAL);
	ASSERT_STREQ((char *)b.data, "_abcdefgh");
	ward__buf_release(&b);
}

TEST(steal_and_clear)
{
	struct ward__buf b;
	uint8_t *p;
	size_t len = 99;

	ASSERT_OK(ward__buf_init(&b, 100));
	/* Empty: still a valid empty string. */
	p = ward__buf_steal(&b, &len);
	ASSERT_TRUE(p != NULL);
	ASSERT_EQ(len, 0);
	ASSERT_EQ(p[0], 0);
	free(p);

	ASSERT_OK(ward__buf_append_str(&b, "hello"));
	ward__buf_clear(&b);
	ASSERT_EQ(b.len, 0);
	ASSERT_STREQ((char *)b.data, "");
	ASSERT_OK(ward__buf_append_str(&b, "world"));
	p = ward__buf_steal(&b, &len);
	ASSERT_EQ(len, 5);
	ASSERT_STREQ((char *)p, "world");
	ASSERT_TRUE(b.data == NULL);
	ASSERT_EQ(b.len, 0);
	ASSERT_EQ(b.max, 100);
	free(p);
	ward__buf_release(&b);
}

TEST(growth_stays_within_max)
{
	struct ward__buf b;
	uint8_t byte = 'q';

	ASSERT_OK(ward__buf_init(&b, 5000));
	for (size_t i = 0; i < 5000; i++) {
		ASSERT_OK(ward__buf_append(&b, &byte, 1));
		ASSERT_LE(b.alloc, 5001);
		ASSERT_TRUE(b.len < b.alloc);
	}
	ASSERT_EQ(ward__buf_append(&b, &byte, 1), -ENOBUFS);
	ASSERT_EQ(b.alloc, 5001);
	ward__buf_release(&b);
	ward__buf_release(&b); /* twice is fine */
}

TEST(reserve_overflow_is_refused)
{
	struct ward__buf b;

	ASSERT_OK(ward__buf_init(&b, 64));
	ASSERT_EQ(ward__buf_reserve(&b, SIZE_MAX), -ENOBUFS);
	ASSERT_EQ(ward__buf_append(&b, "x", SIZE_MAX), -ENOBUFS);
	ASSERT_OK(ward__buf_reserve(&b, 64));
	ASSERT_EQ(b.alloc, 65);
	ward__buf_release(&b);
}

int main(void)
{
	return tap_main();
}
