/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * DESIGN. src/basic/ is the floor every folder stands on: bounded buffers
 * (buf.h), cleanup attributes and fds (cleanup.h), errors (error.h), paths
 * and text helpers (util.h), file: URIs (uri.h), the event loop with its
 * timers, signals and child reaping (loop.h), and these macros.
 * One-way rule: it calls no other folder of ward (only the C library,
 * jansson and the public types of include/ward/ward.h); every folder may
 * call it.
 */

/*
 * Common macros. Every project header includes this one, and it includes banned.h
 * last, so any .c file that includes its system headers first (as STYLE.md asks)
 * gets the banned functions turned into compile errors.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include <string.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define WARD_INTERNAL __attribute__((visibility("hidden")))
#define _unused_ __attribute__((unused))
#define _noreturn_ __attribute__((noreturn))
#define _printf_(a, b) __attribute__((format(printf, a, b)))
#define _likely_(x) __builtin_expect(!!(x), 1)
#define _unlikely_(x) __builtin_expect(!!(x), 0)

#define ELEMENTSOF(x) (sizeof(x) / sizeof((x)[0]))
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))

/* Converts a libc -1/errno return into -errno once, at the call. */
static inline int negative_errno(void)
{
	return errno > 0 ? -errno : -EIO;
}

#define RET_NERRNO(expr)                             \
	({                                           \
		long _r = (long)(expr);              \
		_r < 0 ? negative_errno() : (int)_r; \
	})

#include "basic/banned.h"
