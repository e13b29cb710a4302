/* SPDX-License-Identifier: MIT */
/*
 * Asking the person at the keyboard, on the controlling terminal.
 *
 * /dev/tty, not stdin: stdin may be a pipe feeding the command, and an answer
 * must come from the person, not from data. The question shows everything
 * the decision depends on, escaped so that the command being approved cannot
 * rewrite it with terminal escapes. One key answers (raw mode, pending input
 * flushed first, so type-ahead cannot answer a question it never saw); the
 * terminal's settings are restored on every way out, and a termination signal
 * received while waiting restores them before it is delivered.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <termios.h>
#include <unistd.h>

#include "basic/buf.h"
#include "basic/cleanup.h"
#include "basic/util.h"
#include "cli/ask.h"
#include "cli/cli.h"
#include "rules/rules.h"

char *cli_sanitize(const char *s, size_t max)
{
	struct ward__buf b;
	const unsigned char *p = (const unsigned char *)s;
	size_t n = strlen(s), shown = MIN(n, max);
	char *out = NULL;
	int r = 0;

	if (ward__buf_init(&b, max * 6 + 16) < 0)
		return NULL;
	for (size_t i = 0; r >= 0 && i < shown;) {
		unsigned char c = p[i];
		size_t len = 0;

		if (c == '\n') {
			r = ward__buf_append_str(&b, "\\n");
			i++;
			continue;
		}
		if (c == '\t') {
			r = ward__buf_append_str(&b, "\\t");
			i++;
			continue;
		}
		if (c < 0x20 || c == 0x7f) {
			r = ward__buf_printf(&b, "\\x%02x", c);
			i++;
			continue;
		}
		if (c < 0x80) {
			r = ward__buf_append_byte(&b, c);
			i++;
			continue;
		}
		/* UTF-8: a whole valid sequence passes, except the C1 controls (U+0080..U+009F). */
		if (c >= 0xC2 && c <= 0xDF)
			len = 2;
		else if (c >= 0xE0 && c <= 0xEF)
			len = 3;
		else if (c >= 0xF0 && c <= 0xF4)
			len = 4;
		for (size_t k = 1; len && k < len; k++)
			if (i + k >= n || (p[i + k] & 0xC0) != 0x80)
				len = 0;
		if (len == 2 && c == 0xC2 && p[i + 1] < 0xA0) {
			r = ward__buf_printf(&b, "\\u%04x", p[i + 1]);
			i += 2;
		} else if (len) {
			r = ward__buf_append(&b, p + i, len);
			i += len;
		} else {
			r = ward__buf_printf(&b, "\\x%02x", c);
			i++;
		}
	}
	if (r >= 0 && shown < n)
		r = ward__buf_append_str(&b, "...");
	if (r >= 0)
		out = (char *)ward__buf_steal(&b, NULL);
	ward__buf_release(&b);
	return out;
}

/* Writes a labelled, escaped field. */
static void field(FILE *f, const char *label, const char *value, size_t max)
{
	_cleanup_free_ char *safe = value ? cli_sanitize(value, max) : NULL;

	if (safe)
		fprintf(f, "  %-10s %s\r\n", label, safe);
}

/*
 * What the command left the terminal in is undone before a question: a
 * network question comes while the command runs, and any question comes
 * after it wrote to the same terminal. Concealed or invisible text (SGR 8,
 * a foreground the colour of the background), the line-drawing character
 * set or a hidden cursor would let it print a question of its own naming a
 * harmless host and make ward's, naming the real one, unreadable. So: all
 * attributes off (SGR 0), G0 as ASCII and selected (ESC ( B, SI), the cursor
 * shown. Sequences every VT100-compatible terminal knows; a remapped colour
 * palette (OSC 4/10) is not undone, as terminals that do not know the
 * resetting OSC would print it.
 */
#define TERMINAL_SANE "\033[0m\033(B\017\033[?25h"

static void show(FILE *f, const struct ward_approval_question *q)
{
	_cleanup_free_ char *cmd = NULL, *prefix = NULL;
	size_t n = 0;

	while (q->argv[n])
		n++;
	cmd = ward__shell_join(q->argv, n);
	fputs(TERMINAL_SANE, f);
	if (q->network_target) {
		/* The network by domain: a host no pattern or rule decides, its connection waiting. */
		fprintf(f,
			"\r\nward: the command wants to reach a host (its connection waits)\r\n");
		field(f, "host", q->network_target, 600);
		field(f, "reason", q->reason, 1000);
		fputs("  [y] yes, once   [a] yes, for this session   ", f);
		if (q->proposed_network_rule &&
		    (q->decisions & (1u << WARD_REVIEW_APPROVED_EXECPOLICY_AMENDMENT))) {
			_cleanup_free_ char *safe = cli_sanitize(q->proposed_network_rule, 600);

			fprintf(f, "[p] yes, always (%s)   ", safe ? safe : "?");
		}
		fputs("[n] no   [q] abort\r\n> ", f);
		fflush(f);
		return;
	}
	fprintf(f, "\r\nward: %s\r\n",
		q->unprotect
			? "the sandbox kept this command from changing a protected path; run it "
			  "again (in the sandbox) with that path writable, this once?"
			: q->retry
			? "the sandbox denied this command; run it again OUTSIDE the sandbox?"
			: q->unsandboxed ? "approval needed to run this command OUTSIDE the sandbox"
					 : "approval needed to run this command (in the sandbox)");
	field(f, "command", cmd, 2000);
	field(f, "directory", q->cwd, 1000);
	for (size_t i = 0; q->unprotect && q->unprotect[i]; i++)
		field(f, i ? "" : "writable", q->unprotect[i], 1000);
	field(f, "reason", q->reason, 2000);
	field(f, "note", q->justification, 1000);
	for (size_t i = 0; i < q->n_denials && i < 8; i++) {
		char line[WARD_ERROR_MESSAGE_MAX];
		const char *name = strerrorname_np(q->denials[i].error);

		snprintf(line, sizeof(line), "%s %s (%s%s%s%s%s)", q->denials[i].access,
			 q->denials[i].target,
			 q->denials[i].syscall[0] ? q->denials[i].syscall : "",
			 q->denials[i].syscall[0] ? ", " : "", name ? name : "guard",
			 q->denials[i].reason ? ": " : "",
			 q->denials[i].reason ? q->denials[i].reason : "");
		field(f, i ? "" : "denied", line, 300);
	}
	if (q->n_denials > 8 || q->denials_dropped)
		fprintf(f, "  %-10s and %zu more\r\n", "",
			(q->n_denials > 8 ? q->n_denials - 8 : 0) + q->denials_dropped);
	if (q->proposed_prefix_rule) {
		size_t k = 0;

		while (q->proposed_prefix_rule[k])
			k++;
		prefix = ward__shell_join(q->proposed_prefix_rule, k);
	}
	fputs("  ", f);
	if (q->decisions & (1u << WARD_REVIEW_APPROVED))
		fputs("[y] yes, once   ", f);
	if (q->decisions & (1u << WARD_REVIEW_APPROVED_FOR_SESSION))
		fputs("[a] yes, for this session   ", f);
	if (prefix && (q->decisions & (1u << WARD_REVIEW_APPROVED_EXECPOLICY_AMENDMENT))) {
		_cleanup_free_ char *safe = cli_sanitize(prefix, 200);

		fprintf(f, "[p] yes, and always allow `%s`   ", safe ? safe : "?");
	}
	fputs("[n] no   [q] abort\r\n> ", f);
	fflush(f);
}

/* The answer for a key, or -1 to keep waiting. */
static int key_decision(unsigned char c, unsigned offered)
{
	int d = -1;

	switch (c) {
	case 'y':
	case 'Y':
		d = WARD_REVIEW_APPROVED;
		break;
	case 'a':
	case 'A':
		d = WARD_REVIEW_APPROVED_FOR_SESSION;
		break;
	case 'p':
	case 'P':
		d = WARD_REVIEW_APPROVED_EXECPOLICY_AMENDMENT;
		break;
	case 'n':
	case 'N':
	case 0x1b: /* Esc */
		d = WARD_REVIEW_DENIED;
		break;
	case 'q':
	case 'Q':
	case 0x03: /* Ctrl-C: raw mode delivers it as a key */
	case 0x04: /* Ctrl-D */
		d = WARD_REVIEW_ABORT;
		break;
	default:
		return -1;
	}
	return (offered & (1u << d)) ? d : -1;
}

static const char *decision_words(enum ward_review_decision d)
{
	switch (d) {
	case WARD_REVIEW_APPROVED:
		return "yes, once";
	case WARD_REVIEW_APPROVED_FOR_SESSION:
		return "yes, for this session";
	case WARD_REVIEW_APPROVED_EXECPOLICY_AMENDMENT:
		return "yes, and always";
	case WARD_REVIEW_DENIED:
		return "no";
	case WARD_REVIEW_ABORT:
		return "abort";
	}
	return "no";
}

static int no_terminal(struct cli_asker *k, enum ward_review_decision *ret, const char *what, int e)
{
	snprintf(k->why, sizeof(k->why), "nobody could be asked: %s%s%s", what, e ? ": " : "",
		 e ? strerror(e) : "");
	*ret = WARD_REVIEW_DENIED;
	return 0;
}

int cli_ask_tty(void *userdata, const struct ward_approval_question *q,
		enum ward_review_decision *ret_decision)
{
	struct cli_asker *k = userdata;
	_cleanup_close_ int fd = -1, sfd = -1;
	_cleanup_fclose_ FILE *f = NULL;
	struct termios saved, raw;
	sigset_t stop, old;
	int d = -1, sig = 0;

	k->why[0] = '\0';
	fd = open("/dev/tty", O_RDWR | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return no_terminal(k, ret_decision, "there is no terminal (/dev/tty)", errno);
	if (tcgetattr(fd, &saved) < 0)
		return no_terminal(k, ret_decision, "/dev/tty is not a terminal", errno);
	f = fdopen(dup(fd), "w");
	if (!f)
		return no_terminal(k, ret_decision, "cannot write to /dev/tty", errno);

	/* Termination signals arrive through a signalfd while the terminal is raw. */
	sigemptyset(&stop);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGTERM);
	sigaddset(&stop, SIGHUP);
	sigaddset(&stop, SIGQUIT);
	sigprocmask(SIG_BLOCK, &stop, &old);
	sfd = signalfd(-1, &stop, SFD_CLOEXEC | SFD_NONBLOCK);

	raw = saved;
	raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO | ISIG | IEXTEN);
	raw.c_iflag &= ~(tcflag_t)(IXON | ICRNL);
	raw.c_cc[VMIN] = 1;
	raw.c_cc[VTIME] = 0;
	/* TCSAFLUSH: what was typed before the question cannot answer it. */
	if (tcsetattr(fd, TCSAFLUSH, &raw) < 0) {
		sigprocmask(SIG_SETMASK, &old, NULL);
		return no_terminal(k, ret_decision, "cannot set /dev/tty to raw mode", errno);
	}
	show(f, q);
	while (d < 0 && !sig) {
		struct pollfd p[2] = {{.fd = fd, .events = POLLIN}, {.fd = sfd, .events = POLLIN}};
		unsigned char c;
		ssize_t n;

		if (poll(p, sfd >= 0 ? 2 : 1, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (sfd >= 0 && (p[1].revents & POLLIN)) {
			struct signalfd_siginfo si;

			if (read(sfd, &si, sizeof(si)) == sizeof(si))
				sig = (int)si.ssi_signo;
			continue;
		}
		if (!(p[0].revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		n = read(fd, &c, 1);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0) {
			snprintf(k->why, sizeof(k->why),
				 "nobody could be asked: the terminal closed");
			d = WARD_REVIEW_DENIED;
			break;
		}
		d = key_decision(c, q->decisions);
		if (d < 0) {
			fputc('\a', f);
			fflush(f);
		}
	}
	tcsetattr(fd, TCSAFLUSH, &saved);
	if (sig) {
		/* Restored first; then the signal does what it would have done. */
		fputs("\n", f);
		fclose(TAKE_PTR(f));
		signal(sig, SIG_DFL);
		sigprocmask(SIG_SETMASK, &old, NULL);
		kill(getpid(), sig);
		sigprocmask(SIG_UNBLOCK, &stop, NULL);
		raise(sig);
		_exit(128 + sig);
	}
	sigprocmask(SIG_SETMASK, &old, NULL);
	if (d < 0) {
		snprintf(k->why, sizeof(k->why), "nobody could be asked: reading /dev/tty failed");
		d = WARD_REVIEW_DENIED;
	}
	fprintf(f, "%s\n", decision_words((enum ward_review_decision)d));
	*ret_decision = (enum ward_review_decision)d;
	return 0;
}

int cli_ask_key(const char *prompt, const char *keys, char *ret_key)
{
	_cleanup_close_ int fd = -1, sfd = -1;
	_cleanup_fclose_ FILE *f = NULL;
	struct termios saved, raw;
	sigset_t stop, old;
	int sig = 0, r = -EIO;

	fd = open("/dev/tty", O_RDWR | O_CLOEXEC | O_NOCTTY);
	if (fd < 0 || tcgetattr(fd, &saved) < 0)
		return -ENOTTY;
	f = fdopen(dup(fd), "w");
	if (!f)
		return -ENOTTY;
	sigemptyset(&stop);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGTERM);
	sigaddset(&stop, SIGHUP);
	sigaddset(&stop, SIGQUIT);
	sigprocmask(SIG_BLOCK, &stop, &old);
	sfd = signalfd(-1, &stop, SFD_CLOEXEC | SFD_NONBLOCK);
	raw = saved;
	raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO | ISIG | IEXTEN);
	raw.c_iflag &= ~(tcflag_t)(IXON | ICRNL);
	raw.c_cc[VMIN] = 1;
	raw.c_cc[VTIME] = 0;
	/* TCSAFLUSH: what was typed before the question cannot answer it. */
	if (tcsetattr(fd, TCSAFLUSH, &raw) < 0) {
		sigprocmask(SIG_SETMASK, &old, NULL);
		return -ENOTTY;
	}
	fputs(prompt, f);
	fflush(f);
	while (r == -EIO && !sig) {
		struct pollfd p[2] = {{.fd = fd, .events = POLLIN}, {.fd = sfd, .events = POLLIN}};
		unsigned char c;
		ssize_t n;

		if (poll(p, sfd >= 0 ? 2 : 1, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (sfd >= 0 && (p[1].revents & POLLIN)) {
			struct signalfd_siginfo si;

			if (read(sfd, &si, sizeof(si)) == sizeof(si))
				sig = (int)si.ssi_signo;
			continue;
		}
		if (!(p[0].revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		n = read(fd, &c, 1);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0)
			break;
		if (c == 0x03 || c == 0x04) {
			r = -ECANCELED;
			break;
		}
		if (c >= 'A' && c <= 'Z')
			c = (unsigned char)(c - 'A' + 'a');
		if (c && strchr(keys, c)) {
			*ret_key = (char)c;
			r = 0;
			break;
		}
		fputc('\a', f);
		fflush(f);
	}
	tcsetattr(fd, TCSAFLUSH, &saved);
	if (sig) {
		fputs("\n", f);
		fclose(TAKE_PTR(f));
		signal(sig, SIG_DFL);
		sigprocmask(SIG_SETMASK, &old, NULL);
		kill(getpid(), sig);
		sigprocmask(SIG_UNBLOCK, &stop, NULL);
		raise(sig);
		_exit(128 + sig);
	}
	sigprocmask(SIG_SETMASK, &old, NULL);
	fprintf(f, "%c\n", r == 0 ? *ret_key : ' ');
	return r;
}
