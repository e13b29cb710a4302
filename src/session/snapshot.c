/* SPDX-License-Identifier: MIT */
/*
 * Login shell snapshots (see snapshot.h): the capture, a login shell run
 * once in a sandbox of its own that writes its state to a pipe, and the
 * wrapping of a login command into a plain shell that reads that state.
 *
 * The capture's dump goes to a pipe of its own, never to its stdout: the
 * profile prints what it likes on stdout and stderr before the dump is
 * written (those go nowhere). It is read back, before it leaves the
 * sandbox, by a clean shell under `set -e`, and kept only when that
 * printed nothing and failed nothing: a dump that does not source cleanly
 * would print its errors into every command. Everything in the scripts is
 * a builtin, so a profile that empties PATH does not break them, and the
 * pipe is named /dev/fd/N: dash and zsh read one digit in `>&N`.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "basic/buf.h"
#include "basic/cleanup.h"
#include "basic/error.h"
#include "basic/util.h"
#include "exec/proc.h"
#include "policy/policy.h"
#include "session/session.h"
#include "session/snapshot.h"

/* The capture's last line, which says the dump is complete. */
#define END_MARK "# ward snapshot end\n"
/* The capture's exit codes of its own: the dump did not read back cleanly; bash lacks compgen. */
#define EXIT_INVALID 86
#define EXIT_NO_COMPGEN 87
/* Past the capture's own limit (the sandbox is killed at it), how long ward still waits. */
#define GUARD_EXTRA_MS 5000

struct ward__snapshot {
	struct ward__loop *loop;
	char *shell;
	enum ward__shell_kind kind;
	enum ward__snapshot_state state;
	struct ward_policy *policy; /* the capture's, resolved; the proc reads it */
	struct ward__proc *proc;
	int rfd; /* the dump's pipe */
	uint64_t rio;
	struct ward__buf out;
	char err_tail[512]; /* the end of the capture's stderr, for a failure's reason */
	size_t err_len;
	bool too_large, closed, eof;
	uint64_t finish_timer, guard_timer;
	char *body; /* the dump, without its end mark */
	size_t len;
	char *why;
	bool failure_noted;
	ward__snapshot_done_fn done;
	void *userdata;
};

/* ------------------------------------------------------------ helpers */

enum ward__shell_kind ward__shell_kind(const char *shell)
{
	const char *base;

	if (!shell || !shell[0])
		return WARD__SHELL_OTHER;
	base = strrchr(shell, '/');
	base = base ? base + 1 : shell;
	if (strcmp(base, "bash") == 0)
		return WARD__SHELL_BASH;
	if (strcmp(base, "zsh") == 0)
		return WARD__SHELL_ZSH;
	if (strcmp(base, "sh") == 0 || strcmp(base, "dash") == 0)
		return WARD__SHELL_POSIX;
	return WARD__SHELL_OTHER;
}

/* s in single quotes, as every shell here reads it back. */
static char *quote(const char *s)
{
	struct ward__buf b;

	ward__buf_init(&b, WARD_BUF_MAX_CAPACITY);
	if (ward__buf_append_byte(&b, '\'') < 0)
		goto fail;
	for (; *s; s++)
		if ((*s == '\'' ? ward__buf_append_str(&b, "'\\''")
				: ward__buf_append_byte(&b, *s)) < 0)
			goto fail;
	if (ward__buf_append_byte(&b, '\'') < 0)
		goto fail;
	return (char *)ward__buf_steal(&b, NULL);
fail:
	ward__buf_release(&b);
	return NULL;
}

/* Whether s is a shell variable's name (others cannot be set, nor changed by a dump). */
static bool is_name(const char *s)
{
	size_t len = strlen(s);

	if (len == 0 ||
	    !(s[0] == '_' || (s[0] >= 'A' && s[0] <= 'Z') || (s[0] >= 'a' && s[0] <= 'z')))
		return false;
	for (size_t i = 1; i < len; i++)
		if (!(s[i] == '_' || (s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= 'a' && s[i] <= 'z') ||
		      (s[i] >= '0' && s[i] <= '9')))
			return false;
	return true;
}

/* The value of name in envp, or NULL. */
static const char *env_get(char *const *envp, const char *name)
{
	size_t n = strlen(name);

	for (; envp && *envp; envp++)
		if (strncmp(*envp, name, n) == 0 && (*envp)[n] == '=')
			return *envp + n + 1;
	return NULL;
}

/* ------------------------------------------------------------ the capture's scripts */

/*
 * bash: ~/.bashrc as Codex reads it (a login shell reads it only when the
 * profile does, and an agent's commands should see what the person's
 * terminal sees), then every function (with the export of those exported),
 * alias, `set -o` option and shopt, and every exported variable but the
 * ones a shell sets for itself or refuses to take back (the read-only
 * ones). printf %q quotes for bash, and the dump is for bash alone.
 */
#define BASH_SCRIPT                                                                              \
	"if [ -z \"${BASH_ENV-}\" ] && [ -r \"$HOME/.bashrc\" ]; then . \"$HOME/.bashrc\"; fi\n" \
	"builtin type compgen >/dev/null 2>&1 || exit %2$d\n"                                    \
	"__ward_s=$(\n"                                                                          \
	"IFS=' \t\n'\n"                                                                          \
	"declare -f\n"                                                                           \
	"declare -F | while IFS= read -r __ward_n; do\n"                                         \
	"case $__ward_n in \"declare -fx \"*) printf '%%s\\n' \"$__ward_n\" ;; esac\n"           \
	"done\n"                                                                                 \
	"alias -p\n"                                                                             \
	"set +o\n"                                                                               \
	"shopt -p | while IFS= read -r __ward_n; do\n"                                           \
	"case $__ward_n in *' login_shell' | *' restricted_shell') ;;\n"                         \
	"*) printf '%%s\\n' \"$__ward_n\" ;; esac\n"                                             \
	"done\n"                                                                                 \
	"set -f\n"                                                                               \
	"for __ward_n in $(compgen -e); do\n"                                                    \
	"case $__ward_n in\n"                                                                    \
	"PWD | OLDPWD | SHLVL | _ | SHELLOPTS | BASHOPTS | EUID | UID | PPID | BASHPID) ;;\n"    \
	"*) printf 'export %%s=%%q\\n' \"$__ward_n\" \"${!__ward_n}\" ;;\n"                      \
	"esac\n"                                                                                 \
	"done\n"                                                                                 \
	")\n"                                                                                    \
	"__ward_v=$(unset BASH_ENV; printf '%%s\\n' \"$__ward_s\" |\n"                           \
	"%4$s -c 'set -e; . /dev/stdin' 2>&1) &&\n"                                              \
	"[ -z \"$__ward_v\" ] || { printf '%%s\\n' \"$__ward_v\" >&2; exit %3$d; }\n"            \
	"printf '%%s\\n" END_MARK "' \"$__ward_s\" >|/dev/fd/%1$d\n"

/*
 * zsh: ~/.zshrc (or $ZDOTDIR's) as Codex reads it, then every function,
 * alias (global and suffix ones too), option (each one set or unset, so
 * that the dump says the same whatever KSH_OPTION_PRINT), fpath (which
 * autoloaded functions need and is not exported), and every exported
 * parameter. The check reads it with -f, without the person's .zshenv,
 * which every `zsh -c` reads anyway.
 */
#define ZSH_SCRIPT                                                                            \
	"if [[ -r ${ZDOTDIR:-$HOME}/.zshrc ]]; then . ${ZDOTDIR:-$HOME}/.zshrc; fi\n"         \
	"__ward_s=$(\n"                                                                       \
	"typeset -f\n"                                                                        \
	"alias -L\n"                                                                          \
	"alias -sL\n"                                                                         \
	"for __ward_n in ${(ko)options}; do\n"                                                \
	"case $__ward_n in\n"                                                                 \
	"interactive | login | shinstdin | privileged | restricted | "                        \
	"zle | singlecommand | monitor) ;;\n"                                                 \
	"*) if [[ $options[$__ward_n] = on ]]; then print -r -- \"setopt $__ward_n\";\n"      \
	"else print -r -- \"unsetopt $__ward_n\"; fi ;;\n"                                    \
	"esac\n"                                                                              \
	"done\n"                                                                              \
	"print -r -- \"fpath=(${(j: :)${(qq)fpath[@]}})\"\n"                                  \
	"for __ward_n in ${(k)parameters[(R)*export*]}; do\n"                                 \
	"case $__ward_n in\n"                                                                 \
	"PWD | OLDPWD | SHLVL | _) ;;\n"                                                      \
	"*) print -r -- \"export $__ward_n=${(qq)${(P)__ward_n}}\" ;;\n"                      \
	"esac\n"                                                                              \
	"done\n"                                                                              \
	")\n"                                                                                 \
	"__ward_v=$(print -r -- \"$__ward_s\" | %3$s -f -c 'set -e; . /dev/stdin' 2>&1) &&\n" \
	"[[ -z $__ward_v ]] || { print -r -- \"$__ward_v\" >&2; exit %2$d; }\n"               \
	"print -r -- \"$__ward_s\" >|/dev/fd/%1$d\n"                                          \
	"print -rn -- '" END_MARK "' >|/dev/fd/%1$d\n"

/* POSIX sh lists exported variables and nothing else (export -p quotes them for sh). */
#define POSIX_SCRIPT                                                                           \
	"__ward_s=$(unset PWD OLDPWD _; export -p)\n"                                          \
	"__ward_v=$(printf '%%s\\n' \"$__ward_s\" | %3$s -c 'set -e; . /dev/stdin' 2>&1) &&\n" \
	"[ -z \"$__ward_v\" ] || { printf '%%s\\n' \"$__ward_v\" >&2; exit %2$d; }\n"          \
	"printf '%%s\\n" END_MARK "' \"$__ward_s\" >|/dev/fd/%1$d\n"

static char *capture_script(enum ward__shell_kind kind, int fd, const char *shell)
{
	_cleanup_free_ char *q = quote(shell);
	char *s = NULL;
	int r = -1;

	if (!q)
		return NULL;
	switch (kind) {
	case WARD__SHELL_BASH:
		r = asprintf(&s, BASH_SCRIPT, fd, EXIT_NO_COMPGEN, EXIT_INVALID, q);
		break;
	case WARD__SHELL_ZSH:
		r = asprintf(&s, ZSH_SCRIPT, fd, EXIT_INVALID, q);
		break;
	case WARD__SHELL_POSIX:
		r = asprintf(&s, POSIX_SCRIPT, fd, EXIT_INVALID, q);
		break;
	case WARD__SHELL_OTHER:
		break;
	}
	return r < 0 ? NULL : s;
}

/* ------------------------------------------------------------ the capture */

static void on_finish(struct ward__loop *l, void *userdata);

static void schedule_finish(struct ward__snapshot *sn)
{
	if (!sn->finish_timer && sn->state == WARD__SNAPSHOT_RUNNING)
		ward__loop_add_timer(sn->loop, 0, on_finish, sn, &sn->finish_timer);
}

static void close_pipe(struct ward__snapshot *sn)
{
	ward__loop_del_io(sn->loop, sn->rio);
	sn->rio = 0;
	if (sn->rfd >= 0)
		close(sn->rfd);
	sn->rfd = -1;
}

static void on_pipe(struct ward__loop *l, int fd, uint32_t events, void *userdata)
{
	struct ward__snapshot *sn = userdata;
	char chunk[16384];

	for (;;) {
		ssize_t n = read(fd, chunk, sizeof(chunk));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		if (n <= 0) {
			sn->eof = true;
			break;
		}
		if (sn->out.len + (size_t)n > WARD_SNAPSHOT_MAX + strlen(END_MARK) ||
		    ward__buf_append(&sn->out, chunk, (size_t)n) < 0) {
			/* Nothing more is read: the capture dies, its dump is not used. */
			sn->too_large = true;
			ward__proc_terminate(sn->proc);
			break;
		}
	}
	close_pipe(sn);
	if (sn->closed)
		schedule_finish(sn);
}

static void on_output(struct ward__proc *p, enum ward__proc_stream stream, const uint8_t *data,
		      size_t len, void *userdata)
{
	struct ward__snapshot *sn = userdata;
	size_t cap = sizeof(sn->err_tail);

	/* The profile's stdout goes nowhere; the end of stderr may say why a capture failed. */
	if (stream != WARD__PROC_STDERR)
		return;
	if (len >= cap) {
		memcpy(sn->err_tail, data + len - cap, cap);
		sn->err_len = cap;
		return;
	}
	if (sn->err_len + len > cap) {
		size_t drop = sn->err_len + len - cap;

		memmove(sn->err_tail, sn->err_tail + drop, sn->err_len - drop);
		sn->err_len -= drop;
	}
	memcpy(sn->err_tail + sn->err_len, data, len);
	sn->err_len += len;
}

static void on_closed(struct ward__proc *p, void *userdata)
{
	struct ward__snapshot *sn = userdata;

	sn->closed = true;
	/* Everything in the sandbox died with the shell: the pipe's end follows. */
	if (sn->eof || sn->too_large || sn->rfd < 0)
		schedule_finish(sn);
}

static const struct ward__proc_ops capture_ops = {
	.output = on_output,
	.closed = on_closed,
};

static void on_guard(struct ward__loop *l, void *userdata)
{
	struct ward__snapshot *sn = userdata;

	sn->guard_timer = 0;
	on_finish(l, sn);
}

/* The last line of what the capture printed on stderr, cut to fit a note. */
static void last_line(const struct ward__snapshot *sn, char *buf, size_t size)
{
	size_t end = sn->err_len, start;

	while (end > 0 && (sn->err_tail[end - 1] == '\n' || sn->err_tail[end - 1] == '\r'))
		end--;
	start = end;
	while (start > 0 && sn->err_tail[start - 1] != '\n')
		start--;
	if (end - start > 200)
		end = start + 200;
	snprintf(buf, size, "%.*s", (int)(end - start), sn->err_tail + start);
	for (char *c = buf; *c; c++)
		if ((unsigned char)*c < 0x20)
			*c = ' ';
}

/* Why the capture gave no dump (malloc()ed), or NULL when it gave one. */
static char *failure(const struct ward__snapshot *sn)
{
	size_t ml = strlen(END_MARK);
	int code = sn->proc ? ward__proc_exit_code(sn->proc) : -1;
	char line[256], *why = NULL;
	int r = 0;

	last_line(sn, line, sizeof(line));
	if (!sn->closed)
		r = asprintf(&why, "the login shell did not finish in %d s",
			     WARD_SNAPSHOT_TIMEOUT_MS / 1000);
	else if (sn->too_large)
		r = asprintf(&why, "its dump is larger than %zu KiB", WARD_SNAPSHOT_MAX >> 10);
	else if (ward__proc_timed_out(sn->proc))
		r = asprintf(&why, "the login shell took longer than %d s",
			     WARD_SNAPSHOT_TIMEOUT_MS / 1000);
	else if (code == EXIT_INVALID)
		r = asprintf(&why, "its dump does not read back cleanly: %s", line);
	else if (code == EXIT_NO_COMPGEN)
		r = asprintf(&why, "this bash has no compgen to list its variables");
	else if (code != 0)
		r = asprintf(&why, "the login shell exited with %d%s%s", code, line[0] ? ": " : "",
			     line);
	else if (sn->out.len < ml || memcmp(sn->out.data + sn->out.len - ml, END_MARK, ml) != 0)
		r = asprintf(&why,
			     "the login shell ended before its dump was written (does the "
			     "profile exec or exit?)");
	else
		return NULL;
	return r < 0 ? strdup("out of memory") : why;
}

/* The capture is over: the dump is kept, or why not is. */
static void on_finish(struct ward__loop *l, void *userdata)
{
	struct ward__snapshot *sn = userdata;

	/* Once: the guard, a stop and the end may each have asked for it. */
	ward__loop_del_timer(l, sn->finish_timer);
	ward__loop_del_timer(l, sn->guard_timer);
	sn->finish_timer = sn->guard_timer = 0;
	if (sn->state != WARD__SNAPSHOT_RUNNING)
		return;
	close_pipe(sn);
	if (!sn->why)
		sn->why = failure(sn);
	if (!sn->why) {
		sn->len = sn->out.len - strlen(END_MARK);
		sn->body = (char *)ward__buf_steal(&sn->out, NULL);
		if (sn->body)
			sn->body[sn->len] = '\0';
		else
			sn->why = strdup("out of memory");
	}
	ward__buf_release(&sn->out);
	/* Whatever the profile left running dies with its sandbox. */
	ward__proc_free(sn->proc);
	sn->proc = NULL;
	ward_policy_free(sn->policy);
	sn->policy = NULL;
	sn->state = sn->body ? WARD__SNAPSHOT_READY : WARD__SNAPSHOT_FAILED;
	if (sn->done)
		sn->done(sn, sn->userdata);
}

int ward__snapshot_start(struct ward__loop *l, const struct ward__snapshot_spec *spec,
			 struct ward__snapshot **ret, struct ward_error *err)
{
	struct ward__snapshot *sn;
	_cleanup_free_ char *script = NULL;
	struct ward__proc_spec ps = {0};
	char *argv[4];
	int fds[2] = {-1, -1};
	int r;

	if (ward__shell_kind(spec->shell) == WARD__SHELL_OTHER)
		return ward__error(err, -EOPNOTSUPP, "snapshot", "no snapshot for shell '%s'",
				   spec->shell);
	sn = calloc(1, sizeof(*sn));
	if (!sn)
		return ward__error(err, -ENOMEM, "snapshot", "out of memory");
	sn->loop = l;
	sn->rfd = -1;
	sn->kind = ward__shell_kind(spec->shell);
	sn->done = spec->done;
	sn->userdata = spec->userdata;
	/* The buffer grows with what comes; the cap is checked as it does. */
	ward__buf_init(&sn->out, WARD_SNAPSHOT_MAX + strlen(END_MARK));
	sn->shell = strdup(spec->shell);
	if (!sn->shell) {
		r = ward__error(err, -ENOMEM, "snapshot", "out of memory");
		goto fail;
	}
	r = ward_policy_copy(spec->policy, &sn->policy);
	if (r < 0) {
		ward__error(err, r, "snapshot", "cannot copy the policy: %m");
		goto fail;
	}
	r = ward_policy_resolve(sn->policy, err);
	if (r < 0)
		goto fail;
	r = ward__pipe_one_nonblock(fds, 0);
	if (r < 0) {
		ward__error(err, r, "snapshot", "cannot create a pipe: %m");
		goto fail;
	}
	sn->rfd = fds[0];
	script = capture_script(sn->kind, fds[1], spec->shell);
	if (!script) {
		r = ward__error(err, -ENOMEM, "snapshot", "out of memory");
		goto fail;
	}
	argv[0] = sn->shell;
	argv[1] = (char *)"-lc";
	argv[2] = script;
	argv[3] = NULL;
	ps.policy = sn->policy;
	ps.argv = argv;
	ps.envp = spec->envp;
	ps.keep_fds = &fds[1];
	ps.n_keep_fds = 1;
	ps.timeout_ms = WARD_SNAPSHOT_TIMEOUT_MS;
	/* Its refusals are the profile's, nobody's to read. */
	ps.no_observe_fs = true;
	/*
	 * No pool: a sandbox of its own, built for this run and gone with it,
	 * so nothing the profile started is there when a command runs.
	 */
	r = ward__proc_start(l, &ps, &capture_ops, sn, &sn->proc, err);
	close(fds[1]);
	fds[1] = -1;
	if (r < 0)
		goto fail;
	r = ward__loop_add_io(l, sn->rfd, EPOLLIN, on_pipe, sn, &sn->rio);
	if (r >= 0)
		r = ward__loop_add_timer(
			l,
			ward__now_ns() +
				(uint64_t)(WARD_SNAPSHOT_TIMEOUT_MS + GUARD_EXTRA_MS) * 1000000,
			on_guard, sn, &sn->guard_timer);
	if (r < 0) {
		ward__error(err, r, "snapshot", "cannot watch the capture: %m");
		goto fail;
	}
	*ret = sn;
	return 0;
fail:
	if (fds[1] >= 0)
		close(fds[1]);
	sn->done = NULL;
	ward__snapshot_free(sn);
	return r;
}

void ward__snapshot_free(struct ward__snapshot *sn)
{
	if (!sn)
		return;
	ward__loop_del_timer(sn->loop, sn->finish_timer);
	ward__loop_del_timer(sn->loop, sn->guard_timer);
	close_pipe(sn);
	ward__proc_free(sn->proc);
	ward_policy_free(sn->policy);
	ward__buf_release(&sn->out);
	free(sn->shell);
	free(sn->body);
	free(sn->why);
	free(sn);
}

void ward__snapshot_stop(struct ward__snapshot *sn)
{
	if (!sn || sn->state != WARD__SNAPSHOT_RUNNING || sn->why)
		return;
	sn->why = strdup("the sessions are ending");
	if (!sn->why)
		sn->why = strdup("out of memory");
	ward__loop_del_timer(sn->loop, sn->finish_timer);
	sn->finish_timer = 0;
	ward__loop_add_timer(sn->loop, 0, on_finish, sn, &sn->finish_timer);
}

enum ward__snapshot_state ward__snapshot_state(const struct ward__snapshot *sn)
{
	return sn->state;
}

const char *ward__snapshot_shell(const struct ward__snapshot *sn)
{
	return sn->shell;
}

const char *ward__snapshot_failure(const struct ward__snapshot *sn)
{
	return sn->state == WARD__SNAPSHOT_FAILED ? sn->why : NULL;
}

bool ward__snapshot_take_failure_note(struct ward__snapshot *sn)
{
	bool was = sn->failure_noted;

	sn->failure_noted = true;
	return was;
}

/* ------------------------------------------------------------ a command through it */

void ward__snapshot_run_release(struct ward__snapshot_run *r)
{
	for (size_t i = 0; i < ELEMENTSOF(r->argv); i++) {
		free(r->argv[i]);
		r->argv[i] = NULL;
	}
	strv_freep(&r->envp);
	free(r->input);
	r->input = NULL;
	r->input_len = 0;
	if (r->fd >= 0)
		close(r->fd);
	r->fd = -1;
}

/*
 * How the text reaches the shell. Without a terminal, on stdin. With one,
 * stdin is the terminal: bash and zsh read a sealed memfd kept at its
 * number, and close it after; dash cannot name a descriptor above 9 (nor
 * close one), so its text, only exported variables, comes in a variable
 * it unsets.
 */
enum way {
	WAY_STDIN,
	WAY_MEMFD,
	WAY_VARIABLE,
};

#define SNAPSHOT_VARIABLE "__ward_snapshot"

/*
 * What the shell reads before the command: ward's variables saved, the
 * dump, ward's variables back, the helpers gone, and the way the text
 * came closed (stdin becomes /dev/null, as without the snapshot). The
 * words are quoted so that no alias of the profile's can stand for them.
 */
static int build_text(const struct ward__snapshot *sn, char *const *envp, char *const *names,
		      const char *bash_env, enum way way, int fd, struct ward__buf *b)
{
	size_t k = 0;
	int r = 0;

	for (size_t i = 0; names && names[i] && r >= 0; i++) {
		if (!is_name(names[i]) || !env_get(envp, names[i]))
			continue;
		r = ward__buf_printf(b, "__ward_o%zu=${%s-}\n", k++, names[i]);
	}
	if (r >= 0)
		r = ward__buf_append(b, sn->body, sn->len);
	for (size_t i = 0, j = 0; names && names[i] && r >= 0; i++) {
		if (!is_name(names[i]) || !env_get(envp, names[i]))
			continue;
		r = ward__buf_printf(b, "\\export %s=\"$__ward_o%zu\"\n", names[i], j++);
	}
	for (size_t j = 0; j < k && r >= 0; j++)
		r = ward__buf_printf(b, "\\unset __ward_o%zu\n", j);
	if (r >= 0 && sn->kind == WARD__SHELL_BASH) {
		if (bash_env) {
			_cleanup_free_ char *q = quote(bash_env);

			r = q ? ward__buf_printf(b, "\\export BASH_ENV=%s\n", q) : -ENOMEM;
		} else {
			r = ward__buf_append_str(b, "\\unset BASH_ENV\n");
		}
	}
	if (r < 0)
		return r;
	switch (way) {
	case WAY_STDIN:
		return ward__buf_append_str(b, "\\exec </dev/null\n");
	case WAY_MEMFD:
		/* zsh names a descriptor above 9 only through a variable. */
		return sn->kind == WARD__SHELL_ZSH
			? ward__buf_printf(
				  b, "__ward_fd=%d\n\\exec {__ward_fd}<&-\n\\unset __ward_fd\n", fd)
			: ward__buf_printf(b, "\\exec %d<&-\n", fd);
	case WAY_VARIABLE:
		return ward__buf_append_str(b, "\\unset " SNAPSHOT_VARIABLE "\n");
	}
	return -EINVAL;
}

/* A copy of envp, with name=value in place of any earlier one when name is given. */
static char **env_copy(char *const *envp, const char *name, const char *value)
{
	size_t n = 0, k = 0, nl = name ? strlen(name) : 0;
	char **v;

	while (envp && envp[n])
		n++;
	v = calloc(n + 2, sizeof(*v));
	if (!v)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		if (name && strncmp(envp[i], name, nl) == 0 && envp[i][nl] == '=')
			continue;
		v[k] = strdup(envp[i]);
		if (!v[k++])
			goto fail;
	}
	if (name && asprintf(&v[k], "%s=%s", name, value) < 0) {
		v[k] = NULL;
		goto fail;
	}
	return v;
fail:
	strv_freep(&v);
	return NULL;
}

/* The shell's script: its own way to read the text before it parses cmd. */
static char *shell_script(enum ward__shell_kind kind, enum way way, const char *path,
			  const char *cmd)
{
	_cleanup_free_ char *q = NULL;
	char *s = NULL;
	int r = -1;

	switch (kind) {
	case WARD__SHELL_BASH:
		/*
		 * bash reads BASH_ENV before it parses the command: aliases, $0
		 * and the command's line numbers are as with -lc.
		 */
		return strdup(cmd);
	case WARD__SHELL_ZSH:
		/* zsh parses all of -c first: the command is eval'd once the dump defined its aliases. */
		q = quote(cmd);
		if (q)
			r = asprintf(&s, ". %s\neval %s", path, q);
		break;
	case WARD__SHELL_POSIX:
		/* On the command's first line, so that its line numbers hold. */
		r = way == WAY_VARIABLE ? asprintf(&s, "eval \"$" SNAPSHOT_VARIABLE "\"; %s", cmd)
					: asprintf(&s, ". %s; %s", path, cmd);
		break;
	case WARD__SHELL_OTHER:
		break;
	}
	return r < 0 ? NULL : s;
}

int ward__snapshot_wrap(const struct ward__snapshot *sn, const char *cmd, bool tty,
			char *const *envp, char *const *names, struct ward__snapshot_run *ret,
			const char **ret_why)
{
	struct ward__snapshot_run run = {.fd = -1};
	struct ward__buf text;
	const char *shellopts = env_get(envp, "SHELLOPTS");
	bool bash = sn->kind == WARD__SHELL_BASH;
	enum way way = !tty ? WAY_STDIN : sn->kind == WARD__SHELL_POSIX ? WAY_VARIABLE : WAY_MEMFD;
	char path[32] = "/dev/stdin";
	int r;

	*ret_why = "out of memory";
	if (sn->state != WARD__SNAPSHOT_READY) {
		*ret_why = "the login shell's snapshot is not ready";
		return -EOPNOTSUPP;
	}
	/* A bash in POSIX mode skips BASH_ENV: the dump would be the command's stdin. */
	if (bash &&
	    (env_get(envp, "POSIXLY_CORRECT") || (shellopts && strstr(shellopts, "posix")))) {
		*ret_why = "bash in POSIX mode (POSIXLY_CORRECT, SHELLOPTS) does not read BASH_ENV";
		return -EOPNOTSUPP;
	}
	ward__buf_init(&text, WARD_BUF_MAX_CAPACITY);
	if (way == WAY_MEMFD) {
		/* The memfd's number is in the text: it is made first. */
		run.fd = memfd_create("ward-login-snapshot", MFD_CLOEXEC | MFD_ALLOW_SEALING);
		if (run.fd < 0) {
			r = -errno;
			*ret_why = "cannot create a memfd";
			goto fail;
		}
		snprintf(path, sizeof(path), "/dev/fd/%d", run.fd);
	}
	r = build_text(sn, envp, names, bash ? env_get(envp, "BASH_ENV") : NULL, way, run.fd,
		       &text);
	if (r < 0)
		goto fail;
	switch (way) {
	case WAY_STDIN:
		if (text.len > WARD_PROC_STDIN_QUEUE_MAX) {
			*ret_why =
				"the snapshot and ward's variables exceed a command's stdin queue";
			r = -EOPNOTSUPP;
			goto fail;
		}
		break;
	case WAY_MEMFD:
		r = ward__write_all(run.fd, text.data, text.len);
		/* Nothing in the sandbox can change what the shell reads. */
		if (r >= 0 &&
		    fcntl(run.fd, F_ADD_SEALS,
			  F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE) < 0)
			r = -errno;
		if (r < 0) {
			*ret_why = "cannot fill the memfd";
			goto fail;
		}
		break;
	case WAY_VARIABLE:
		/* One variable holds what one argument can (MAX_ARG_STRLEN). */
		if (strlen(SNAPSHOT_VARIABLE "=") + text.len > WARD_SESSION_CMD_MAX) {
			*ret_why = "the snapshot is too large for a terminal's sh";
			r = -EOPNOTSUPP;
			goto fail;
		}
		break;
	}
	run.argv[0] = strdup(sn->shell);
	run.argv[1] = strdup("-c");
	run.argv[2] = shell_script(sn->kind, way, path, cmd);
	if (bash)
		run.envp = env_copy(envp, "BASH_ENV", path);
	else if (way == WAY_VARIABLE)
		run.envp = env_copy(envp, SNAPSHOT_VARIABLE, (const char *)text.data);
	else
		run.envp = env_copy(envp, NULL, NULL);
	if (!run.argv[0] || !run.argv[1] || !run.argv[2] || !run.envp) {
		r = -ENOMEM;
		goto fail;
	}
	if (strlen(run.argv[2]) > WARD_SESSION_CMD_MAX) {
		*ret_why = "the command is too long to follow the snapshot in one argument";
		r = -EOPNOTSUPP;
		goto fail;
	}
	if (way == WAY_STDIN) {
		run.input = (char *)ward__buf_steal(&text, &run.input_len);
		if (!run.input) {
			r = -ENOMEM;
			goto fail;
		}
	}
	ward__buf_release(&text);
	*ret = run;
	*ret_why = NULL;
	return 0;
fail:
	ward__buf_release(&text);
	ward__snapshot_run_release(&run);
	return r;
}
