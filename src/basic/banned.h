/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Functions that are easy to misuse with attacker-controlled input. Force-included
 * into every translation unit by meson.build, after the system headers a file pulls
 * in, so a use turns into a compile error instead of a review comment.
 */
#define WARD_BANNED(func) sorry_##func##_is_banned_in_ward

#undef strcpy
#define strcpy(x, y) WARD_BANNED(strcpy)
#undef strcat
#define strcat(x, y) WARD_BANNED(strcat)
#undef sprintf
#define sprintf(...) WARD_BANNED(sprintf)
#undef vsprintf
#define vsprintf(...) WARD_BANNED(vsprintf)
#undef strtok
#define strtok(x, y) WARD_BANNED(strtok)
#undef atoi
#define atoi(x) WARD_BANNED(atoi)
#undef system
#define system(x) WARD_BANNED(system)
#undef popen
#define popen(x, y) WARD_BANNED(popen)
