/* SPDX-License-Identifier: MIT */
/*
 * Captured runs: one command in the sandbox, its output captured (head+tail,
 * bounded), a deadline, cancellation, and what the sandbox denied.
 *
 * One thread, one epoll loop over everything the run waits for: the two
 * output pipes, the stdin pipe when bytes are fed, the sandbox's report pipe
 * (denials, the command's status), the protected-path guard, init's pidfd, a
 * timerfd for the deadline and the cancel handle's eventfd. Nothing blocks
 * except epoll_wait(), so a command that floods its output, never reads its
 * stdin or leaves a process holding the pipes cannot stall ward.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "basic/cleanup.h"
#include "basic/error.h"
#include "basic/util.h"
#include "exec/exec.h"
#include "exec/netproxy.h"

/* ------------------------------------------------------------ helpers */

static void strv_free_n(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

/* Appends a copy of s to a bounded vector. */
static int strv_append(char ***v, size_t *n, size_t max, const char *s)
{
	char **nv;
	char *c;

	if (*n >= max)
		return -E2BIG;
	c = strdup(s);
	if (!c)
		return -ENOMEM;
	nv = reallocarray(*v, *n + 1, sizeof(char *));
	if (!nv) {
		free(c);
		return -ENOMEM;
	}
	nv[(*n)++] = c;
	*v = nv;
	return 0;
}

/* ------------------------------------------------------------ options */

WARD_PUBLIC int ward_run_options_new(struct ward_run_options **ret_opts)
{
	struct ward_run_options *o;

	if (!ret_opts)
		return -EINVAL;
	o = calloc(1, sizeof(*o));
	if (!o)
		return -ENOMEM;
	o->max_output = WARD_OUTPUT_CAP_DEFAULT;
	o->stdin_fd = -1;
	o->env_inherit = WARD_ENV_INHERIT_ALL;
	*ret_opts = o;
	return 0;
}

static void argv_free(char **argv)
{
	if (!argv)
		return;
	for (char **s = argv; *s; s++)
		free(*s);
	free(argv);
}

WARD_PUBLIC void ward_run_options_free(struct ward_run_options *opts)
{
	if (!opts)
		return;
	argv_free(opts->argv);
	free(opts->stdin_data);
	strv_free_n(opts->env_exclude, opts->n_env_exclude);
	strv_free_n(opts->env_include_only, opts->n_env_include_only);
	strv_free_n(opts->env_set, opts->n_env_set);
	free(opts);
}

WARD_PUBLIC int ward_run_options_set_argv(struct ward_run_options *opts, const char *const *argv)
{
	size_t n = 0, bytes = 0;
	char **copy;

	if (!opts || !argv || !argv[0])
		return -EINVAL;
	for (; argv[n]; n++) {
		bytes += strlen(argv[n]) + 1;
		if (n + 1 > WARD_ARGV_MAX_ARGS || bytes > WARD_ARGV_MAX_BYTES)
			return -E2BIG;
	}
	copy = calloc(n + 1, sizeof(char *));
	if (!copy)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		copy[i] = strdup(argv[i]);
		if (!copy[i]) {
			argv_free(copy);
			return -ENOMEM;
		}
	}
	argv_free(opts->argv);
	opts->argv = copy;
	return 0;
}

WARD_PUBLIC int ward_run_options_set_timeout_ms(struct ward_run_options *opts, uint64_t timeout_ms)
{
	if (!opts)
		return -EINVAL;
	/* itimerspec holds seconds in a time_t; a billion seconds is 31 years. */
	if (timeout_ms > UINT64_C(1000000000000))
		return -ERANGE;
	opts->timeout_ms = timeout_ms;
	return 0;
}

WARD_PUBLIC int ward_run_options_set_max_output(struct ward_run_options *opts, size_t bytes)
{
	if (!opts)
		return -EINVAL;
	if (bytes < WARD_OUTPUT_CAP_MIN || bytes > WARD_OUTPUT_CAP_MAX)
		return -ERANGE;
	opts->max_output = bytes;
	return 0;
}

WARD_PUBLIC int ward_run_options_set_stdin(struct ward_run_options *opts, const void *data,
					   size_t len)
{
	uint8_t *copy = NULL;

	if (!opts || (!data && len > 0))
		return -EINVAL;
	if (len > WARD_STDIN_MAX)
		return -E2BIG;
	if (len > 0) {
		copy = malloc(len);
		if (!copy)
			return -ENOMEM;
		memcpy(copy, data, len);
	}
	free(opts->stdin_data);
	opts->stdin_data = copy;
	opts->stdin_len = len;
	opts->have_stdin_data = true;
	opts->stdin_fd = -1;
	return 0;
}

WARD_PUBLIC int ward_run_options_set_stdin_fd(struct ward_run_options *opts, int fd)
{
	if (!opts || fd < -1)
		return -EINVAL;
	free(opts->stdin_data);
	opts->stdin_data = NULL;
	opts->stdin_len = 0;
	opts->have_stdin_data = false;
	opts->stdin_fd = fd;
	return 0;
}

WARD_PUBLIC int ward_run_options_set_env_inherit(struct ward_run_options *opts,
						 enum ward_env_inherit inherit)
{
	if (!opts)
		return -EINVAL;
	switch (inherit) {
	case WARD_ENV_INHERIT_ALL:
	case WARD_ENV_INHERIT_CORE:
	case WARD_ENV_INHERIT_NONE:
		opts->env_inherit = inherit;
		return 0;
	}
	return -EINVAL;
}

WARD_PUBLIC int ward_run_options_env_set(struct ward_run_options *opts, const char *name,
					 const char *value)
{
	_cleanup_free_ char *kv = NULL;
	size_t nl, vl;

	/* A name with '=' would split differently in the command than here. */
	if (!opts || !name || !value || !*name || strchr(name, '='))
		return -EINVAL;
	nl = strlen(name);
	vl = strlen(value);
	if (nl + 1 + vl + 1 > WARD_ENV_MAX_BYTES)
		return -E2BIG;
	kv = malloc(nl + 1 + vl + 1);
	if (!kv)
		return -ENOMEM;
	memcpy(kv, name, nl);
	kv[nl] = '=';
	memcpy(kv + nl + 1, value, vl + 1);
	/* A later set of the same name replaces the earlier one. */
	for (size_t i = 0; i < opts->n_env_set; i++)
		if (strncmp(opts->env_set[i], kv, nl + 1) == 0) {
			free(opts->env_set[i]);
			opts->env_set[i] = TAKE_PTR(kv);
			return 0;
		}
	return strv_append(&opts->env_set, &opts->n_env_set, WARD_ENV_MAX_VARS, kv);
}

static int add_pattern(char ***v, size_t *n, const char *pattern)
{
	if (!pattern || !*pattern || strlen(pattern) > 4096)
		return -EINVAL;
	return strv_append(v, n, WARD_ENV_MAX_PATTERNS, pattern);
}

WARD_PUBLIC int ward_run_options_env_exclude(struct ward_run_options *opts, const char *pattern)
{
	if (!opts)
		return -EINVAL;
	return add_pattern(&opts->env_exclude, &opts->n_env_exclude, pattern);
}

WARD_PUBLIC int ward_run_options_env_include_only(struct ward_run_options *opts,
						  const char *pattern)
{
	if (!opts)
		return -EINVAL;
	return add_pattern(&opts->env_include_only, &opts->n_env_include_only, pattern);
}

WARD_PUBLIC int ward_run_options_set_env_default_excludes(struct ward_run_options *opts,
							  bool enabled)
{
	if (!opts)
		return -EINVAL;
	opts->env_default_excludes = enabled;
	return 0;
}

WARD_PUBLIC int ward_run_options_set_output_callback(struct ward_run_options *opts,
						     ward_output_fn fn, void *userdata)
{
	if (!opts)
		return -EINVAL;
	opts->output_fn = fn;
	opts->output_userdata = userdata;
	return 0;
}

void ward__run_options_set_caller_exits(struct ward_run_options *opts, bool exits)
{
	opts->caller_exits = exits;
}

WARD_PUBLIC int ward_run_options_set_json_base64(struct ward_run_options *opts, bool enabled)
{
	if (!opts)
		return -EINVAL;
	opts->json_base64 = enabled;
	return 0;
}

/* ------------------------------------------------------------ cancellation */

WARD_PUBLIC int ward_cancel_new(struct ward_cancel **ret_cancel)
{
	struct ward_cancel *c;

	if (!ret_cancel)
		return -EINVAL;
	c = malloc(sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (c->fd < 0) {
		int r = -errno;

		free(c);
		return r;
	}
	*ret_cancel = c;
	return 0;
}

WARD_PUBLIC void ward_cancel_free(struct ward_cancel *cancel)
{
	if (!cancel)
		return;
	close(cancel->fd);
	free(cancel);
}

WARD_PUBLIC void ward_cancel_trigger(struct ward_cancel *cancel)
{
	uint64_t one = 1;
	int saved = errno;
	ssize_t n;

	if (!cancel)
		return;
	/* write(2) on an eventfd is async-signal-safe; errno is restored for the interrupted code. */
	n = write(cancel->fd, &one, sizeof(one));
	(void)n;
	errno = saved;
}

/* ------------------------------------------------------------ results */

WARD_PUBLIC void ward_result_free(struct ward_result *result)
{
	if (!result)
		return;
	for (size_t i = 0; i < WARD__OUT_N; i++)
		free(result->out[i].data);
	for (size_t i = 0; i < result->n_denials; i++)
		free(result->denials[i].target);
	free(result->denials);
	free(result);
}

WARD_PUBLIC int ward_result_exit_code(const struct ward_result *result)
{
	return result ? result->exit_code : -EINVAL;
}

WARD_PUBLIC int ward_result_signal(const struct ward_result *result)
{
	return result ? result->signal : 0;
}

WARD_PUBLIC bool ward_result_timed_out(const struct ward_result *result)
{
	return result && result->timed_out;
}

WARD_PUBLIC bool ward_result_cancelled(const struct ward_result *result)
{
	return result && result->cancelled;
}

WARD_PUBLIC uint64_t ward_result_duration_ms(const struct ward_result *result)
{
	return result ? result->duration_ms : 0;
}

static const struct ward__output *result_out(const struct ward_result *result, int which)
{
	if (!result)
		return NULL;
	switch (which) {
	case 0:
		return &result->out[WARD__OUT_AGGREGATED];
	case WARD_STREAM_STDOUT:
		return &result->out[WARD__OUT_STDOUT];
	case WARD_STREAM_STDERR:
		return &result->out[WARD__OUT_STDERR];
	default:
		return NULL;
	}
}

WARD_PUBLIC const void *ward_result_output(const struct ward_result *result, int which,
					   size_t *ret_len)
{
	const struct ward__output *o = result_out(result, which);

	if (ret_len)
		*ret_len = o ? o->len : 0;
	return o ? o->data : NULL;
}

WARD_PUBLIC uint64_t ward_result_omitted(const struct ward_result *result, int which)
{
	const struct ward__output *o = result_out(result, which);

	return o ? o->omitted : 0;
}

WARD_PUBLIC int ward_result_sandbox_denied(const struct ward_result *result, bool *ret_denied)
{
	if (!result || !ret_denied)
		return -EINVAL;
	/*
	 * A tripped guard is a denial ward saw itself, exact on any host.
	 * Otherwise, without an observer there is no exact answer, and a guess
	 * from the output text (Codex's way) is wrong both ways: say so.
	 */
	if (result->guard_tripped || result->n_denials > 0 || result->denials_dropped > 0) {
		*ret_denied = true;
		return 0;
	}
	if (!result->denials_exact)
		return -ENODATA;
	*ret_denied = false;
	return 0;
}

/* ------------------------------------------------------------ the run */

enum source {
	SRC_STDOUT = 1,
	SRC_STDERR,
	SRC_STDIN,
	SRC_REPORT,
	SRC_GUARD,
	SRC_PIDFD,
	SRC_TIMER,
	SRC_CANCEL,
	SRC_NET, /* the proxy's own loop (the network by domain) */
};

struct run {
	const struct ward_run_options *o;
	struct ward_cancel *cancel;
	struct ward__sandbox sb;
	bool spawned;
	struct ward__netproxy *net;
	int epfd;
	int out_fd; /* read ends, O_NONBLOCK; -1 once at EOF */
	int err_fd;
	int in_fd; /* write end of the stdin pipe, O_NONBLOCK; -1 when done */
	int timer_fd;
	size_t in_off;
	struct ward__capture cap[WARD__OUT_N];
	uint8_t *scratch; /* WARD_READ_CHUNK bytes */
	bool init_exited;
	uint64_t drain_deadline_ns;
	bool timed_out;
	bool cancelled;
	bool reports_broken; /* the report pipe failed: denials may be missing */
	bool reports_eof;
};

static void run_release(struct run *run)
{
	ward__netproxy_free(run->net);
	run->net = NULL;
	if (run->spawned && run->o->caller_exits && run->sb.have_status && run->o->n_layers == 0)
		ward__sandbox_release_exiting(&run->sb);
	else if (run->spawned)
		ward__sandbox_release(&run->sb);
	run->spawned = false;
	for (size_t i = 0; i < WARD__OUT_N; i++)
		ward__capture_release(&run->cap[i]);
	free(run->scratch);
	run->scratch = NULL;
	if (run->epfd >= 0)
		close(run->epfd);
	if (run->out_fd >= 0)
		close(run->out_fd);
	if (run->err_fd >= 0)
		close(run->err_fd);
	if (run->in_fd >= 0)
		close(run->in_fd);
	if (run->timer_fd >= 0)
		close(run->timer_fd);
	run->epfd = run->out_fd = run->err_fd = run->in_fd = run->timer_fd = -1;
}

static int watch(struct run *run, int fd, uint32_t events, enum source src)
{
	struct epoll_event ev = {.events = events, .data.u32 = src};

	return RET_NERRNO(epoll_ctl(run->epfd, EPOLL_CTL_ADD, fd, &ev));
}

static void unwatch(struct run *run, int fd)
{
	epoll_ctl(run->epfd, EPOLL_CTL_DEL, fd, NULL);
}

/* Closes one of our fds and stops watching it. */
static void close_source(struct run *run, int *fd)
{
	if (*fd < 0)
		return;
	unwatch(run, *fd);
	close(*fd);
	*fd = -1;
}

static void kill_sandbox(struct run *run)
{
	if (!run->init_exited)
		ward__sandbox_kill(&run->sb);
}

static void feed_stdin(struct run *run)
{
	const struct ward_run_options *o = run->o;

	while (run->in_off < o->stdin_len) {
		size_t n = MIN(o->stdin_len - run->in_off, WARD_READ_CHUNK);
		ssize_t w = ward__write_nosigpipe(run->in_fd, o->stdin_data + run->in_off, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == EAGAIN)
			return; /* The pipe is full: epoll says when it has room again. */
		if (w <= 0)
			break; /* EPIPE: the command closed its stdin; the rest is not wanted. */
		run->in_off += (size_t)w;
	}
	/* All written (or unwanted): EOF for the command. */
	close_source(run, &run->in_fd);
}

/* Reads one chunk from an output pipe into the captures and the callback. */
static int read_output(struct run *run, enum source src)
{
	int *fd = src == SRC_STDOUT ? &run->out_fd : &run->err_fd;
	size_t idx = src == SRC_STDOUT ? WARD__OUT_STDOUT : WARD__OUT_STDERR;
	ssize_t n;
	int r;

	if (*fd < 0)
		return 0;
	n = read(*fd, run->scratch, WARD_READ_CHUNK);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	if (n <= 0) {
		/* EOF: every writer is gone. A read error ends the stream the same way. */
		close_source(run, fd);
		return 0;
	}
	r = ward__capture_append(&run->cap[idx], run->scratch, (size_t)n);
	if (r < 0)
		return r;
	/* The aggregated capture sees chunks in the order ward read them across both pipes. */
	r = ward__capture_append(&run->cap[WARD__OUT_AGGREGATED], run->scratch, (size_t)n);
	if (r < 0)
		return r;
	if (run->o->output_fn &&
	    run->o->output_fn(run->o->output_userdata,
			      src == SRC_STDOUT ? WARD_STREAM_STDOUT : WARD_STREAM_STDERR,
			      run->scratch, (size_t)n) != 0 &&
	    !run->cancelled && !run->init_exited) {
		run->cancelled = true;
		kill_sandbox(run);
	}
	return 0;
}

static void on_init_exited(struct run *run)
{
	run->init_exited = true;
	unwatch(run, run->sb.pidfd);
	/*
	 * With namespaces, every process of the sandbox died with init, so the
	 * pipes reach EOF at once. Without them (the fallback), a leftover
	 * process may hold the pipes; it gets a short drain, then the kill below.
	 */
	run->drain_deadline_ns = ward__now_ns() + (uint64_t)WARD_DRAIN_MS * 1000000;
	close_source(run, &run->in_fd);
	if (run->timer_fd >= 0)
		close_source(run, &run->timer_fd);
	if (run->cancel)
		unwatch(run, run->cancel->fd);
}

/*
 * init reports the status after every other process of the sandbox is dead;
 * it then lingers (holding the guard's inotify instance, see init.c) until it
 * is killed: the status is the end of the run. So is the report pipe closing
 * without one (init is gone or going).
 */
static void end_on_status(struct run *run)
{
	if ((run->sb.have_status || run->reports_eof || run->sb.report_fd < 0) && !run->init_exited)
		on_init_exited(run);
}

static int handle_event(struct run *run, const struct epoll_event *ev)
{
	uint64_t u;
	ssize_t n;
	bool eof = false;
	int r;

	switch ((enum source)ev->data.u32) {
	case SRC_STDOUT:
	case SRC_STDERR:
		return read_output(run, (enum source)ev->data.u32);
	case SRC_STDIN:
		if (run->in_fd >= 0)
			feed_stdin(run);
		return 0;
	case SRC_REPORT:
		r = ward__sandbox_read_reports(&run->sb, &eof);
		if (r < 0) {
			run->reports_broken = true;
			eof = true;
		}
		if (eof) {
			run->reports_eof = true;
			unwatch(run, run->sb.report_fd);
		}
		end_on_status(run);
		return 0;
	case SRC_GUARD:
		if (ward__sandbox_handle_guard(&run->sb) < 0)
			unwatch(run, run->sb.guard_fd);
		/* A tripped guard waits for the sandbox's end, reading the reports itself. */
		end_on_status(run);
		return 0;
	case SRC_PIDFD:
		on_init_exited(run);
		return 0;
	case SRC_NET:
		ward__netproxy_dispatch(run->net);
		return 0;
	case SRC_TIMER:
		n = read(run->timer_fd, &u, sizeof(u));
		(void)n;
		close_source(run, &run->timer_fd);
		if (!run->init_exited && !run->cancelled) {
			/* The deadline: everything in the sandbox dies, the output so far is kept. */
			run->timed_out = true;
			kill_sandbox(run);
		}
		return 0;
	case SRC_CANCEL:
		/* Consume the trigger, so that a handle can serve the next run. */
		n = read(run->cancel->fd, &u, sizeof(u));
		(void)n;
		unwatch(run, run->cancel->fd);
		if (!run->init_exited && !run->timed_out) {
			run->cancelled = true;
			kill_sandbox(run);
		}
		return 0;
	}
	return 0;
}

static int event_loop(struct run *run, struct ward_error *err)
{
	struct epoll_event evs[16];
	int n, r;

	for (;;) {
		int timeout = -1;

		if (run->init_exited) {
			uint64_t now = ward__now_ns();

			if (run->out_fd < 0 && run->err_fd < 0)
				return 0;
			if (now >= run->drain_deadline_ns)
				return 0;
			timeout = (int)((run->drain_deadline_ns - now + 999999) / 1000000);
		}
		n = epoll_wait(run->epfd, evs, (int)ELEMENTSOF(evs), timeout);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return ward__error(err, -errno, "exec", "cannot wait for the command: %m");
		}
		for (int i = 0; i < n; i++) {
			r = handle_event(run, &evs[i]);
			if (r < 0)
				return ward__error(err, r, "exec", "cannot capture the output: %m");
		}
	}
}

static int setup_fds(struct run *run, int child_stdio[3], struct ward_error *err)
{
	const struct ward_run_options *o = run->o;
	int p[2] = {-1, -1};
	int r;

	/* stdin: given bytes through a pipe, the caller's fd, or /dev/null (tools that wait on stdin would hang). */
	if (o->have_stdin_data) {
		r = ward__pipe_one_nonblock(p, 1);
		if (r < 0)
			goto fail;
		child_stdio[0] = p[0];
		run->in_fd = p[1];
		p[0] = p[1] = -1;
	} else if (o->stdin_fd >= 0) {
		/* Duplicated so the spawn path owns a close-on-exec copy; the caller's fd stays the caller's. */
		child_stdio[0] = fcntl(o->stdin_fd, F_DUPFD_CLOEXEC, 3);
		if (child_stdio[0] < 0) {
			r = -errno;
			goto fail;
		}
	} else {
		child_stdio[0] = open("/dev/null", O_RDONLY | O_CLOEXEC | O_NOCTTY);
		if (child_stdio[0] < 0) {
			r = -errno;
			goto fail;
		}
	}

	r = ward__pipe_one_nonblock(p, 0);
	if (r < 0)
		goto fail;
	run->out_fd = p[0];
	child_stdio[1] = p[1];
	r = ward__pipe_one_nonblock(p, 0);
	if (r < 0)
		goto fail;
	run->err_fd = p[0];
	child_stdio[2] = p[1];
	return 0;
fail:
	return ward__error(err, r, "exec", "cannot set up the command's stdio: %m");
}

static int build_result(struct run *run, const struct ward_policy *policy, int wait_code,
			uint64_t start_ns, struct ward_result **ret, struct ward_error *err)
{
	struct ward__sandbox *sb = &run->sb;
	_cleanup_free_ struct ward_result *res = calloc(1, sizeof(*res));
	int r;

	if (!res)
		return ward__error(err, -ENOMEM, "exec", "out of memory");

	res->timed_out = run->timed_out;
	res->cancelled = run->cancelled;
	if (sb->have_status && WIFSIGNALED(sb->wait_status))
		res->signal = WTERMSIG(sb->wait_status);
	else if ((run->timed_out || run->cancelled || sb->guard_tripped) && !sb->have_status)
		/* ward killed the sandbox before the command ended: SIGKILL is what it died of. */
		res->signal = SIGKILL;
	else if (!sb->have_status && sb->limits.hit && sb->limits.hit_resource == WARD_RES_MEMORY)
		/* memory.oom.group killed the whole sandbox, init with it: SIGKILL, no status. */
		res->signal = SIGKILL;

	if (run->timed_out)
		res->exit_code = WARD_EXIT_CODE_TIMEOUT;
	else if (sb->have_status && WIFEXITED(sb->wait_status))
		res->exit_code = WEXITSTATUS(sb->wait_status);
	else if (res->signal)
		res->exit_code = 128 + res->signal;
	else
		res->exit_code = wait_code;
	/* A tripped guard killed the sandbox: never report success (as ward__sandbox_wait does). */
	if (sb->guard_tripped && res->exit_code == 0)
		res->exit_code = 1;

	if (sb->have_error) {
		res->have_error = true;
		res->error = sb->error.error;
		if (!run->timed_out && !run->cancelled &&
		    (sb->error.exit_code == WARD_EXIT_CODE_CANNOT_EXEC ||
		     sb->error.exit_code == WARD_EXIT_CODE_NOT_FOUND))
			res->exit_code = sb->error.exit_code;
	}

	res->duration_ms = (ward__now_ns() - start_ns) / 1000000;
	res->denials_exact = sb->denials_exact && !run->reports_broken;
	res->guard_tripped = sb->guard_tripped;
	memcpy(res->guard_left, sb->guard_left, sizeof(res->guard_left));
	res->denials_dropped = sb->denials_dropped;
	/* Taken over from the sandbox handle, which then releases nothing of them. */
	res->denials = TAKE_PTR(sb->denials);
	res->n_denials = sb->n_denials;
	sb->n_denials = 0;
	sb->denial_bytes = 0;
	res->isolated = sb->isolated;
	res->landlock_abi = sb->landlock_abi;
	res->seccomp = sb->seccomp;
	res->network = policy->network || policy->mode == WARD_MODE_DANGER_FULL_ACCESS;
	res->network_by_domain = ward__policy_net_by_domain(policy);
	res->limits = sb->limits;
	memcpy(res->fallback_missing, sb->fallback_missing, sizeof(res->fallback_missing));
	res->fallback_missing[sizeof(res->fallback_missing) - 1] = '\0';
	res->json_base64 = run->o->json_base64;

	/* One capture at a time, each freed as it is materialised, so the output is never held twice. */
	for (size_t i = 0; i < WARD__OUT_N; i++) {
		r = ward__capture_finish(&run->cap[i], &res->out[i].data, &res->out[i].len,
					 &res->out[i].omitted);
		if (r < 0) {
			ward_result_free(TAKE_PTR(res));
			return ward__error(err, r, "exec", "cannot store the output: %m");
		}
	}
	*ret = TAKE_PTR(res);
	return 0;
}

WARD_PUBLIC int ward_run(const struct ward_policy *policy, const struct ward_run_options *opts,
			 struct ward_cancel *cancel, struct ward_result **ret_result,
			 struct ward_error *err)
{
	struct run run = {
		.o = opts,
		.cancel = cancel,
		.epfd = -1,
		.out_fd = -1,
		.err_fd = -1,
		.in_fd = -1,
		.timer_fd = -1,
	};
	struct ward__spawn_opts so = {.tty_fd = -1, .observe_fs = true, .quiet_fallback = true};
	int child_stdio[3] = {-1, -1, -1};
	char **envp = NULL;
	uint64_t start_ns;
	int r, code = 0;

	ward__error_clear(err);
	if (!policy || !opts || !ret_result)
		return ward__error(err, -EINVAL, "exec", "invalid arguments");
	if (!policy->resolved)
		return ward__error(err, -EINVAL, "policy", "the policy was not resolved");
	if (!opts->argv || !opts->argv[0])
		return ward__error(err, -EINVAL, "exec", "no command given");

	r = ward__exec_env_build(opts, policy, &envp);
	if (r < 0) {
		ward__error(err, r, "env", "cannot build the command's environment: %m");
		goto out;
	}
	for (size_t i = 0; i < WARD__OUT_N; i++) {
		r = ward__capture_init(&run.cap[i], opts->max_output);
		if (r < 0) {
			ward__error(err, r, "exec", "invalid output cap %zu", opts->max_output);
			goto out;
		}
	}
	run.scratch = malloc(WARD_READ_CHUNK);
	if (!run.scratch) {
		r = ward__error(err, -ENOMEM, "exec", "out of memory");
		goto out;
	}
	run.epfd = epoll_create1(EPOLL_CLOEXEC);
	if (run.epfd < 0) {
		r = ward__error(err, -errno, "exec", "cannot create an epoll instance: %m");
		goto out;
	}
	if (opts->timeout_ms > 0) {
		run.timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
		if (run.timer_fd < 0) {
			r = ward__error(err, -errno, "exec", "cannot create a timer: %m");
			goto out;
		}
	}
	r = setup_fds(&run, child_stdio, err);
	if (r < 0)
		goto out;

	so.policy = policy;
	so.argv = opts->argv;
	so.layers = opts->layers;
	so.n_layers = opts->n_layers;
	so.envp = envp;
	for (size_t i = 0; i < 3; i++)
		so.stdio[i] = child_stdio[i];
	start_ns = ward__now_ns();
	r = ward__sandbox_spawn(&so, &run.sb, err);
	if (r < 0)
		goto out;
	run.spawned = true;
	/* The command holds its own copies now; ours must go, or EOF would never come. */
	for (size_t i = 0; i < 3; i++) {
		close(child_stdio[i]);
		child_stdio[i] = -1;
	}

	if (run.timer_fd >= 0) {
		struct itimerspec its = {
			.it_value = {.tv_sec = (time_t)(opts->timeout_ms / 1000),
				     .tv_nsec = (long)(opts->timeout_ms % 1000) * 1000000},
		};

		if (timerfd_settime(run.timer_fd, 0, &its, NULL) < 0) {
			r = ward__error(err, -errno, "exec", "cannot arm the timer: %m");
			goto out_kill;
		}
	}
	r = watch(&run, run.out_fd, EPOLLIN, SRC_STDOUT);
	if (r >= 0)
		r = watch(&run, run.err_fd, EPOLLIN, SRC_STDERR);
	if (r >= 0 && run.in_fd >= 0)
		r = watch(&run, run.in_fd, EPOLLOUT, SRC_STDIN);
	if (r >= 0 && run.sb.report_fd >= 0)
		r = watch(&run, run.sb.report_fd, EPOLLIN, SRC_REPORT);
	if (r >= 0 && run.sb.guard_fd >= 0)
		r = watch(&run, run.sb.guard_fd, EPOLLIN, SRC_GUARD);
	if (r >= 0)
		r = watch(&run, run.sb.pidfd, EPOLLIN, SRC_PIDFD);
	if (r >= 0 && run.timer_fd >= 0)
		r = watch(&run, run.timer_fd, EPOLLIN, SRC_TIMER);
	if (r >= 0 && cancel)
		r = watch(&run, cancel->fd, EPOLLIN, SRC_CANCEL);
	/* The network by domain: the proxy serves the sandbox from this loop, for as long as it lives. */
	if (r >= 0 && run.sb.net_fd >= 0) {
		r = ward__netproxy_start(NULL, &run.sb, policy, opts->net_hooks, opts->net_ask,
					 &run.net, err);
		if (r >= 0)
			r = watch(&run, ward__netproxy_fd(run.net), EPOLLIN, SRC_NET);
	}
	if (r < 0) {
		ward__error(err, r, "exec", "cannot watch the command: %m");
		goto out_kill;
	}
	if (run.in_fd >= 0)
		feed_stdin(&run);
	/* The status may have come in with the start-up reports already (a quick command). */
	end_on_status(&run);

	r = event_loop(&run, err);
	if (r < 0)
		goto out_kill;
	/* The proxy goes with the command: nothing of it outlives the run. */
	if (run.net)
		epoll_ctl(run.epfd, EPOLL_CTL_DEL, ward__netproxy_fd(run.net), NULL);
	ward__netproxy_free(run.net);
	run.net = NULL;
	/*
	 * Leftovers die here (init reports the status only after killing them, so
	 * this matters when it did not). A caller about to exit leaves the
	 * lingering init to the parent-death signal (see caller_exits).
	 */
	if (!run.sb.have_status || !run.o->caller_exits || run.o->n_layers > 0)
		ward__sandbox_kill(&run.sb);
	r = ward__sandbox_wait(&run.sb, &code);
	if (r < 0) {
		ward__error(err, r, "exec", "cannot wait for the sandbox: %m");
		goto out;
	}
	if (run.sb.have_error && run.sb.error.exit_code == WARD_EXIT_CODE_SETUP && !run.timed_out &&
	    !run.cancelled) {
		/* The sandbox could not be set up: an error of ward_run, not a result. */
		if (err)
			*err = run.sb.error.error;
		r = run.sb.error.error.code < 0 ? run.sb.error.error.code : -EIO;
		goto out;
	}
	r = build_result(&run, policy, code, start_ns, ret_result, err);
	goto out;

out_kill:
	ward__sandbox_kill(&run.sb);
	ward__sandbox_wait(&run.sb, &code);
out:
	for (size_t i = 0; i < 3; i++)
		if (child_stdio[i] >= 0)
			close(child_stdio[i]);
	run_release(&run);
	strv_freep(&envp);
	return r;
}
