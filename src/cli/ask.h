/* SPDX-License-Identifier: MIT */
#pragma once

#include "ward/ward.h"

/* The terminal front end of approvals (ask.c). */
struct cli_asker {
	/* Why the answer was "denied" without a person (no terminal), or empty. */
	char why[256];
};

/*
 * Asks the person on the controlling terminal (/dev/tty, never stdin): shows
 * the command, its directory, the reason, the justification, the denials of a
 * denied run and the rule that could be added, and reads one key in raw mode
 * (the terminal restored on every way out, a termination signal included,
 * which is then delivered). Without a terminal the answer is "denied" and
 * asker->why says why. Always returns 0.
 */
int cli_ask_tty(void *userdata, const struct ward_approval_question *q,
		enum ward_review_decision *ret_decision);

/*
 * s made safe to print on a terminal: control characters, DEL, C1 controls
 * and bytes that are not UTF-8 become visible escapes (\n, \x1b, \u009b), so
 * a hostile command or path cannot move the cursor or rewrite the question;
 * at most max bytes of s are shown, then "...". malloc()ed, NULL on ENOMEM.
 */
char *cli_sanitize(const char *s, size_t max);

/*
 * One key from the person on the controlling terminal (raw mode, pending
 * input flushed first): prompt is shown (the caller made it safe to print),
 * a key of keys (lowercase; an uppercase key counts as its lowercase) is
 * returned in *ret_key. -ENOTTY without a terminal, -ECANCELED for Ctrl-C
 * or Ctrl-D, -EIO when reading failed.
 */
int cli_ask_key(const char *prompt, const char *keys, char *ret_key);
