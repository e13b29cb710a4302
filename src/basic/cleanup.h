/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "basic/macro.h"

/*
 * Scope-bound cleanup. A function uses these or one forward "goto out", never both.
 * Ownership leaves a cleanup variable only through TAKE_PTR()/TAKE_FD().
 */
static inline void freep(void *p)
{
	free(*(void **)p);
}

static inline void closep(int *fd)
{
	if (*fd >= 0) {
		int saved = errno;
		close(*fd);
		errno = saved;
	}
}

static inline void fclosep(FILE **f)
{
	if (*f)
		fclose(*f);
}

static inline void strv_freep(char ***p)
{
	if (*p) {
		for (char **s = *p; *s; s++)
			free(*s);
		free(*p);
	}
}

#define _cleanup_(f) __attribute__((cleanup(f)))
#define _cleanup_free_ _cleanup_(freep)
#define _cleanup_close_ _cleanup_(closep)
#define _cleanup_fclose_ _cleanup_(fclosep)
#define _cleanup_strv_free_ _cleanup_(strv_freep)

#define DEFINE_TRIVIAL_CLEANUP_FUNC(type, func) \
	static inline void func##p(type *p)     \
	{                                       \
		if (*p)                         \
			func(*p);               \
	}

#define TAKE_PTR(p)                     \
	({                              \
		__typeof__(p) _p = (p); \
		(p) = NULL;             \
		_p;                     \
	})

#define TAKE_FD(fd)             \
	({                      \
		int _fd = (fd); \
		(fd) = -1;      \
		_fd;            \
	})
