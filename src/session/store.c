/* SPDX-License-Identifier: MIT */
/*
 * Interactive sessions (see session.h): the store, pruning, and the entry
 * points of the calls; a session's life and its calls are in calls.c, the
 * forms of a reply in reply.c (calls.h says how they stand).
 *
 * A session is a proc plus what the calls need: the output since the last
 * call (a 1 MiB head+tail capture, so a flood costs 1 MiB and keeps both
 * ends), the denials already reported, and a queue of calls waiting their
 * turn. A call completes when its yield window closes, or earlier when the
 * command has exited and its output is closed (at most 50 ms after the exit,
 * as Codex waits). A call that reports the exit also ends the session.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "basic/cleanup.h"
#include "basic/error.h"
#include "basic/util.h"
#include "policy/policy.h"
#include "session/session.h"
#include "changes/changes.h"
#include "session/calls.h"
#include "session/snapshot.h"

/* ------------------------------------------------------------ small helpers */

static int64_t clamp(int64_t v, int64_t lo, int64_t hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

static int64_t tokens_arg(int64_t v)
{
	return v < 0 ? WARD_MAX_OUTPUT_TOKENS_DEFAULT : MIN(v, (int64_t)WARD_MAX_OUTPUT_TOKENS_MAX);
}

/*
 * An exec whose login shell's snapshot is being taken: it waits (at most
 * the capture's time limit), then starts as any other. Its call exists
 * from the start, so that it can be cancelled and followed.
 */
struct deferred {
	struct call *c;
	struct ward__snapshot *sn;
	struct ward__exec_args a; /* its strings and policy are the copies below */
	char *cmd, *shell, *workdir;
	struct ward_policy *policy;
	struct deferred *next;
};

static void deferred_free(struct deferred *d)
{
	if (!d)
		return;
	free(d->cmd);
	free(d->shell);
	free(d->workdir);
	ward_policy_free(d->policy);
	free(d);
}

/* ------------------------------------------------------------ pruning */

/*
 * Makes room for one more session, as Codex prunes: never one of the
 * WARD_SESSION_PROTECTED_MRU most recently used, never one with a call in
 * flight or waiting; the least recently used exited session first, else the
 * least recently used live one (killed).
 */
static int prune(struct ward__sessions *s, struct ward_error *err)
{
	uint64_t top[WARD_SESSION_PROTECTED_MRU] = {0};
	uint64_t threshold;
	struct session *victim = NULL;

	if (s->count < s->max)
		return 0;
	/* The smallest of the MRU set: anything used later is protected. */
	for (struct session *se = s->head; se; se = se->next) {
		uint64_t v = se->last_used;

		for (size_t i = 0; i < WARD_SESSION_PROTECTED_MRU; i++)
			if (v > top[i]) {
				uint64_t t = top[i];

				top[i] = v;
				v = t;
			}
	}
	threshold = top[WARD_SESSION_PROTECTED_MRU - 1];
	for (int pass = 0; pass < 2 && !victim; pass++)
		for (struct session *se = s->head; se; se = se->next) {
			if (se->last_used >= threshold && threshold != 0)
				continue;
			if (se->active || se->queue_head)
				continue;
			if (pass == 0 && !se->exited)
				continue;
			if (!victim || se->last_used < victim->last_used)
				victim = se;
		}
	if (!victim)
		return ward__error(
			err, -EBUSY, "session",
			"too many sessions (%zu, all busy or recently used); end one with "
			"kill_session or wait for one to finish",
			s->count);
	ward__session_free(victim, "the session was ended to make room for a new one");
	return 0;
}

/* ------------------------------------------------------------ the store */

static char *default_shell(const char *configured)
{
	const char *cands[4] = {configured, getenv("SHELL"), "/bin/bash", "/bin/sh"};

	for (size_t i = 0; i < ELEMENTSOF(cands); i++) {
		if (!cands[i] || cands[i][0] != '/')
			continue;
		if (access(cands[i], X_OK) == 0)
			return strdup(cands[i]);
	}
	return strdup("/bin/sh");
}

/*
 * The variables that keep tools quiet and non-interactive under an agent
 * (Codex's UNIFIED_EXEC_ENV): set first, so the caller's own --env-set
 * entries override them.
 */
static const char *const quiet_env[][2] = {
	{"NO_COLOR", "1"},     {"LANG", "C.UTF-8"}, {"LC_CTYPE", "C.UTF-8"},
	{"LC_ALL", "C.UTF-8"}, {"COLORTERM", ""},   {"PAGER", "cat"},
	{"GIT_PAGER", "cat"},  {"GH_PAGER", "cat"}, {"CODEX_CI", "1"},
};

static int env_options(const struct ward_run_options *user, bool tty, struct ward_run_options **ret)
{
	struct ward_run_options *o;
	int r;

	r = ward_run_options_new(&o);
	if (r < 0)
		return r;
	for (size_t i = 0; i < ELEMENTSOF(quiet_env) && r >= 0; i++)
		r = ward_run_options_env_set(o, quiet_env[i][0], quiet_env[i][1]);
	/* A terminal session gets a terminal type that full-screen programs know. */
	if (r >= 0)
		r = ward_run_options_env_set(o, "TERM", tty ? "xterm-256color" : "dumb");
	if (r >= 0 && user) {
		o->env_inherit = user->env_inherit;
		o->env_default_excludes = user->env_default_excludes;
		for (size_t i = 0; i < user->n_env_exclude && r >= 0; i++)
			r = ward_run_options_env_exclude(o, user->env_exclude[i]);
		for (size_t i = 0; i < user->n_env_include_only && r >= 0; i++)
			r = ward_run_options_env_include_only(o, user->env_include_only[i]);
		for (size_t i = 0; i < user->n_env_set && r >= 0; i++) {
			_cleanup_free_ char *kv = strdup(user->env_set[i]);
			char *eq = kv ? strchr(kv, '=') : NULL;

			if (!eq) {
				r = -ENOMEM;
				break;
			}
			*eq = '\0';
			r = ward_run_options_env_set(o, kv, eq + 1);
		}
	}
	if (r < 0) {
		ward_run_options_free(o);
		return r;
	}
	*ret = o;
	return 0;
}

/*
 * The variables ward sets in every command, which a snapshot must not
 * change (as Codex restores its own over its snapshot): the quiet ones,
 * TERM, PWD for a workdir, and the caller's --env-set.
 */
static int env_names(const struct ward_run_options *user, char ***ret)
{
	size_t n = ELEMENTSOF(quiet_env) + 2 + (user ? user->n_env_set : 0), k = 0;
	char **v = calloc(n + 1, sizeof(*v));

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < ELEMENTSOF(quiet_env); i++)
		v[k++] = strdup(quiet_env[i][0]);
	v[k++] = strdup("TERM");
	v[k++] = strdup("PWD");
	for (size_t i = 0; user && i < user->n_env_set; i++)
		v[k++] = strndup(user->env_set[i], strcspn(user->env_set[i], "="));
	for (size_t i = 0; i < k; i++)
		if (!v[i]) {
			strv_freep(&v);
			return -ENOMEM;
		}
	*ret = v;
	return 0;
}

int ward__sessions_new(struct ward__loop *l, const struct ward__sessions_config *c,
		       struct ward__sessions **ret, struct ward_error *err)
{
	struct ward__sessions *s;
	struct ward_run_options *eo = NULL;
	int r;

	if (!c || !c->policy)
		return ward__error(err, -EINVAL, "session", "no policy given");
	if (c->max_sessions > WARD_SESSIONS_MAX)
		return ward__error(err, -ERANGE, "session", "at most %d sessions can be kept",
				   WARD_SESSIONS_MAX);
	s = calloc(1, sizeof(*s));
	if (!s)
		return ward__error(err, -ENOMEM, "session", "out of memory");
	s->loop = l;
	s->max = c->max_sessions ? c->max_sessions : WARD_SESSIONS_DEFAULT_MAX;
	s->login = c->login != 0;
	s->net_hooks = c->net_hooks;
	s->net_ask = c->net_ask;
	s->changes = c->changes;
	s->hold = c->hold;
	s->snapshots = !c->no_login_snapshot;
	/* Untouched pages of this table cost nothing: only used ids are ever written. */
	s->by_id = calloc(ID_SLOTS, sizeof(*s->by_id));
	s->shell = default_shell(c->shell);
	if (!s->by_id || !s->shell) {
		r = ward__error(err, -ENOMEM, "session", "out of memory");
		goto fail;
	}
	r = ward_policy_copy(c->policy, &s->policy);
	if (r < 0) {
		ward__error(err, r, "session", "cannot copy the policy: %m");
		goto fail;
	}
	s->cg_parent = c->cg_parent;
	/* The store's client alone uses the sandboxes prepared for its sessions. */
	r = ward__proc_pool_new(l, &s->pool);
	if (r < 0) {
		ward__error(err, r, "session", "out of memory");
		goto fail;
	}
	/* The base directory of relative workdirs: the policy's cwd, else ours. */
	s->cwd = c->policy->cwd ? strdup(c->policy->cwd) : ward__path_absolute(".");
	if (!s->cwd) {
		r = ward__error(err, -ENOMEM, "session", "out of memory");
		goto fail;
	}
	for (int tty = 0; tty < 2; tty++) {
		r = env_options(c->env, tty, &eo);
		if (r >= 0)
			r = ward__exec_env_build(eo, s->policy,
						 tty ? &s->envp_tty : &s->envp_pipes);
		if (r < 0) {
			ward__error(err, r, "env", "cannot build the sessions' environment: %m");
			goto fail;
		}
		if (tty)
			s->env_opts = eo;
		else
			s->env_opts_pipes = eo;
		eo = NULL;
	}
	r = env_names(c->env, &s->env_names);
	if (r < 0) {
		ward__error(err, r, "session", "out of memory");
		goto fail;
	}
	*ret = s;
	return 0;
fail:
	ward_run_options_free(eo);
	ward__sessions_free(s);
	return r;
}

void ward__sessions_free(struct ward__sessions *s)
{
	if (!s)
		return;
	/* Calls in flight are forgotten, not answered: whoever made them is going away too. */
	for (struct call *c = s->calls; c; c = c->next_all)
		c->cancelled = true;
	for (size_t i = 0; i < s->n_snaps; i++)
		ward__snapshot_free(s->snaps[i]);
	while (s->deferred_head) {
		struct deferred *d = s->deferred_head;

		s->deferred_head = d->next;
		deferred_free(d);
	}
	while (s->head)
		ward__session_free(s->head, "the session store is closing");
	while (s->calls)
		ward__session_call_free(s, s->calls);
	ward__proc_pool_free(s->pool);
	ward_policy_free(s->policy);
	ward_run_options_free(s->env_opts);
	ward_run_options_free(s->env_opts_pipes);
	strv_freep(&s->envp_pipes);
	strv_freep(&s->envp_tty);
	strv_freep(&s->env_names);
	free(s->by_id);
	free(s->cwd);
	free(s->shell);
	free(s);
}

/* ------------------------------------------------------------ the calls */

/*
 * The environment with PWD naming dir, when the environment carries PWD (it
 * names the policy's cwd there): NULL with *ret untouched when there is none.
 */
static int env_with_pwd(char *const *envp, const char *dir, char ***ret)
{
	size_t n = 0, at = SIZE_MAX;
	char **v;

	for (; envp && envp[n]; n++)
		if (strncmp(envp[n], "PWD=", 4) == 0)
			at = n;
	if (at == SIZE_MAX)
		return 0;
	v = calloc(n + 1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		v[i] = i == at ? NULL : strdup(envp[i]);
		if (i == at && asprintf(&v[i], "PWD=%s", dir) < 0)
			v[i] = NULL;
		if (!v[i]) {
			strv_freep(&v);
			return -ENOMEM;
		}
	}
	*ret = v;
	return 0;
}

/*
 * The command's directory: workdir (relative to the store's cwd), which must
 * be a directory. It is only where the command starts: the writable roots
 * stay the store policy's, whatever directory the model names. Under a
 * policy that hides paths (deny-read), a sandboxed command enters it inside
 * its sandbox, which answers for it: here, unsandboxed, a hidden directory,
 * a hidden file and a missing path would each get another answer, which the
 * sandbox itself refuses to tell. Without hidden paths the host's answer is
 * the sandbox's, and a bad workdir is the call's own error.
 */
static int resolve_workdir(struct ward__sessions *s, const char *workdir, bool hides, char **ret,
			   struct ward_error *err)
{
	_cleanup_free_ char *w = NULL;
	struct stat st;

	if (workdir && workdir[0])
		w = workdir[0] == '/' ? strdup(workdir) : ward__path_join(s->cwd, workdir);
	else
		w = strdup(s->cwd);
	if (!w)
		return ward__error(err, -ENOMEM, "session", "out of memory");
	if (hides) {
		*ret = TAKE_PTR(w);
		return 0;
	}
	if (stat(w, &st) < 0)
		return ward__error(err, -errno, "session", "workdir '%s': %m", w);
	if (!S_ISDIR(st.st_mode))
		return ward__error(err, -ENOTDIR, "session", "workdir '%s' is not a directory", w);
	*ret = TAKE_PTR(w);
	return 0;
}

/*
 * The command as list_sessions shows it: its first WARD_SESSION_LISTED_CMD
 * bytes (cut on a character boundary, "..." after). A session keeps this
 * copy for as long as it lives, and --max-sessions 50000 sessions of 128
 * KiB commands would keep 6 GB of them.
 */
static char *listed_command(const char *cmd)
{
	size_t n = strlen(cmd);
	char *out;

	if (n <= WARD_SESSION_LISTED_CMD)
		return strdup(cmd);
	n = WARD_SESSION_LISTED_CMD;
	while (n > 0 && ((unsigned char)cmd[n] & 0xc0) == 0x80)
		n--;
	out = malloc(n + 4);
	if (out) {
		memcpy(out, cmd, n);
		memcpy(out + n, "...", 4);
	}
	return out;
}

/*
 * The note a session's first reply carries when its login command ran
 * `-lc` for want of a snapshot: once per shell, so that a lasting reason
 * (the capture failed) is told without repeating it in every result.
 */
static int note_login(struct session *se, struct ward__snapshot *sn, const char *why)
{
	if (ward__snapshot_take_failure_note(sn))
		return 0;
	if (asprintf(&se->login_note,
		     "no snapshot of the login shell (%s): login commands run '%s -lc', the "
		     "profile in each one",
		     why, ward__snapshot_shell(sn)) < 0) {
		se->login_note = NULL;
		return -ENOMEM;
	}
	return 0;
}

/*
 * Review and undo: the session's changes go through a layer (src/changes)
 * when the store records or holds them. Where no layer can be had (the
 * fallback without namespaces, no journal), a recorded session runs as
 * before and its first reply says its changes are not recorded; a hold
 * asked for is refused instead.
 */
static int begin_changes(struct ward__sessions *s, struct session *se,
			 const struct ward__exec_args *a, char *const *argv, struct ward_error *err)
{
	const struct ward__features *f;
	bool hold = a->hold < 0 ? s->hold : a->hold > 0;
	struct ward_error e = {0};
	int r;

	if (!s->changes && a->hold > 0)
		return ward__error(err, -EINVAL, "changes",
				   "this server keeps no journal of changes: nothing can be held");
	if (!s->changes || se->policy->mode == WARD_MODE_READ_ONLY)
		return 0; /* nothing to record, or nothing a command can change */
	if (se->policy->mode == WARD_MODE_DANGER_FULL_ACCESS) {
		if (hold)
			return ward__error(err, -EINVAL, "changes",
					   "a command outside the sandbox cannot be held");
		se->changes_note = strdup("it ran outside the sandbox: its changes are not "
					  "recorded (undo is not available)");
		return 0;
	}
	f = ward__features_get();
	if (!f->userns && !f->rootns) {
		if (hold)
			return ward__error(err, -EOPNOTSUPP, "changes",
					   "holding changes needs a mount namespace, which this "
					   "host refuses");
		se->changes_note = strdup("the changes are not recorded (undo is not available): "
					  "this host refuses the mount namespace a layer needs");
		return 0;
	}
	r = ward__changes_begin(s->changes, se->policy, hold ? WARD_RUN_HOLD : WARD_RUN_RECORD,
				argv, &se->crun, &e);
	if (r < 0 && hold)
		return ward__error(err, r, "changes", "%s", e.message);
	if (r < 0 &&
	    asprintf(&se->changes_note, "the changes are not recorded (undo is not available): %s",
		     e.message) < 0)
		se->changes_note = NULL;
	return 0;
}

static int start_session(struct ward__sessions *s, const struct ward__exec_args *a, char *workdir,
			 struct ward__snapshot *sn, struct session **ret, struct ward_error *err)
{
	_cleanup_strv_free_ char **own_env = NULL;
	struct ward__snapshot_run run = {.fd = -1};
	struct ward__proc_spec spec = {0};
	struct session *se;
	const char *shell = a->shell && a->shell[0] ? a->shell : s->shell;
	int login = a->login < 0 ? s->login : a->login;
	char *argv[4];
	int id, r;

	id = ward__session_allocate_id(s);
	if (id < 0)
		return ward__error(err, id, "session", "no free session id");
	se = calloc(1, sizeof(*se));
	if (!se)
		return ward__error(err, -ENOMEM, "session", "out of memory");
	se->store = s;
	se->id = id;
	se->tty = a->tty;
	se->started = time(NULL);
	se->workdir = workdir;
	ward__capture_init(&se->out, WARD_SESSION_OUTPUT_MAX);
	/* Resolved per session: what exists (a .git made since) is looked at anew. */
	r = ward_policy_copy(a->policy ? a->policy : s->policy, &se->policy);
	if (r >= 0 && a->unsandboxed)
		r = ward_policy_set_mode(se->policy, WARD_MODE_DANGER_FULL_ACCESS);
	if (r < 0) {
		ward__error(err, r, "session", "cannot set up the session's policy: %m");
		goto fail;
	}
	if (a->unsandboxed) {
		/*
		 * Danger-full-access refuses what it cannot honour, and an approved
		 * escalation drops it, except a denied read: that exists only inside
		 * the sandbox, so such a policy never runs outside (as Codex).
		 */
		ward__strv_release(&se->policy->deny_read);
		ward__strv_release(&se->policy->protect);
		ward__strv_release(&se->policy->unix_sockets);
		se->policy->network = true;
	}
	r = ward_policy_resolve(se->policy, err);
	if (r < 0)
		goto fail;
	se->command = listed_command(a->cmd);
	if (!se->command) {
		r = ward__error(err, -ENOMEM, "session", "out of memory");
		goto fail;
	}
	argv[0] = (char *)shell;
	argv[1] = login ? (char *)"-lc" : (char *)"-c";
	argv[2] = (char *)a->cmd;
	argv[3] = NULL;
	r = begin_changes(s, se, a, argv, err);
	if (r < 0)
		goto fail;
	spec.policy = se->policy;
	spec.pool = s->pool;
	if (se->crun) {
		spec.layers = se->crun->layers;
		spec.n_layers = se->crun->n_layers;
	}
	spec.net_hooks = s->net_hooks;
	spec.net_ask = s->net_ask;
	spec.argv = argv;
	spec.cwd = se->workdir;
	if (a->unsandboxed || a->policy) {
		r = ward__exec_env_build(a->tty ? s->env_opts : s->env_opts_pipes, se->policy,
					 &own_env);
		if (r < 0) {
			ward__error(err, r, "env", "cannot build the command's environment: %m");
			goto fail;
		}
	}
	spec.envp = own_env ? own_env : a->tty ? s->envp_tty : s->envp_pipes;
	if (strcmp(se->workdir, se->policy->resolved_cwd) != 0) {
		char **v = NULL;

		r = env_with_pwd(spec.envp, se->workdir, &v);
		if (r < 0) {
			ward__error(err, r, "env", "cannot build the command's environment: %m");
			goto fail;
		}
		if (v) {
			strv_freep(&own_env);
			own_env = v;
			spec.envp = own_env;
		}
	}
	if (login && sn) {
		const char *why = ward__snapshot_failure(sn);

		r = 0;
		if (!why &&
		    ward__snapshot_wrap(sn, a->cmd, a->tty, spec.envp, s->env_names, &run, &why) >=
			    0) {
			spec.argv = run.argv;
			spec.envp = run.envp;
			/* Without a terminal the text comes on stdin; with one, on its own descriptor. */
			spec.stdin_pipe = !a->tty;
			spec.keep_fds = &run.fd;
			spec.n_keep_fds = run.fd >= 0 ? 1 : 0;
		} else {
			r = note_login(se, sn, why);
		}
		if (r < 0) {
			ward__error(err, r, "session", "out of memory");
			goto fail;
		}
	}
	spec.tty = a->tty;
	spec.rows = a->rows;
	spec.cols = a->cols;
	spec.cg_parent = s->cg_parent;
	/* A spent budget refuses the start: never another session's process killed to make room. */
	r = ward__cgroup_admit(s->cg_parent, 2, "the server's", err);
	if (r < 0)
		goto fail;
	r = ward__proc_start(s->loop, &spec, &ward__session_proc_ops, se, &se->proc, err);
	if (r < 0)
		goto fail;
	/* The shell reads the snapshot to its end, then takes /dev/null as its stdin. */
	if (run.input) {
		ward__proc_write(se->proc, run.input, run.input_len);
		ward__proc_close_stdin(se->proc);
	}
	ward__snapshot_run_release(&run);
	s->by_id[id - WARD_SESSION_ID_MIN] = se;
	s->count++;
	se->next = s->head;
	if (s->head)
		s->head->prev = se;
	s->head = se;
	ward__session_touch(se);
	*ret = se;
	return 0;
fail:
	ward__snapshot_run_release(&run);
	if (se->crun) {
		(void)ward__journal_remove(se->crun);
		ward__changes_run_free(se->crun);
	}
	free(se->changes_note);
	se->workdir = NULL; /* the caller's still */
	ward__capture_release(&se->out);
	ward_policy_free(se->policy);
	free(se->login_note);
	free(se->command);
	free(se);
	return r;
}

/* ------------------------------------------------------------ login snapshots */

static void deferred_unlink(struct ward__sessions *s, struct deferred *d)
{
	struct deferred **pp = &s->deferred_head, *prev = NULL;

	for (; *pp && *pp != d; pp = &(*pp)->next)
		prev = *pp;
	if (!*pp)
		return;
	*pp = d->next;
	if (s->deferred_tail == d)
		s->deferred_tail = prev;
	d->next = NULL;
	s->n_deferred--;
}

/* Starts a command that waited for sn; its call gets an error if it cannot. */
static void deferred_start(struct ward__sessions *s, struct deferred *d)
{
	struct ward_error e = {0};
	struct session *se = NULL;
	struct call *c = d->c;
	int r = -ECANCELED;

	c->deferred = false;
	if (s->ending)
		ward__error(&e, r, "session", "not started: the sessions are ending");
	else
		r = prune(s, &e);
	if (r >= 0)
		r = start_session(s, &d->a, d->workdir, d->sn, &se, &e);
	if (r < 0) {
		ward__session_call_fail(c,
					e.message[0] ? e.message : "the command could not start");
		return;
	}
	d->workdir = NULL; /* the session's */
	/* The window opens at the spawn, as for any exec; the wall time counts the wait. */
	c->yield_ns += ward__now_ns() - c->start_ns;
	ward__session_call_enqueue(se, c, NULL);
}

static void on_snapshot_done(struct ward__snapshot *sn, void *userdata)
{
	struct ward__sessions *s = userdata;
	struct deferred *d;

	/* From the head each time: a start calls back (a pruned session's calls end). */
	for (;;) {
		for (d = s->deferred_head; d && d->sn != sn; d = d->next)
			;
		if (!d)
			break;
		deferred_unlink(s, d);
		deferred_start(s, d);
		deferred_free(d);
	}
}

/*
 * The snapshot a login command of shell runs with: the store's one for
 * it, taken now if there is none. NULL: none (a shell without one, too
 * many shells, a capture that could not start); the command runs -lc.
 */
static struct ward__snapshot *snapshot_for(struct ward__sessions *s, const char *shell)
{
	struct ward__snapshot_spec spec = {
		.shell = shell,
		.policy = s->policy,
		.envp = s->envp_pipes,
		.done = on_snapshot_done,
		.userdata = s,
	};
	struct ward__snapshot *sn;

	for (size_t i = 0; i < s->n_snaps; i++)
		if (strcmp(ward__snapshot_shell(s->snaps[i]), shell) == 0)
			return s->snaps[i];
	if (ward__shell_kind(shell) == WARD__SHELL_OTHER || s->ending ||
	    s->n_snaps >= WARD_SESSION_SNAPSHOT_SHELLS)
		return NULL;
	if (ward__snapshot_start(s->loop, &spec, &sn, NULL) < 0)
		return NULL;
	s->snaps[s->n_snaps++] = sn;
	return sn;
}

static int defer(struct ward__sessions *s, const struct ward__exec_args *a, char **workdir,
		 struct ward__snapshot *sn, struct call *c, struct ward_error *err)
{
	struct deferred *d;

	if (s->n_deferred >= WARD_SESSION_DEFERRED_MAX)
		return ward__error(err, -EBUSY, "session",
				   "%d commands already wait for the login shell's snapshot",
				   WARD_SESSION_DEFERRED_MAX);
	d = calloc(1, sizeof(*d));
	if (!d)
		return ward__error(err, -ENOMEM, "session", "out of memory");
	d->a = *a;
	d->a.until = NULL; /* the call holds it */
	d->a.workdir = NULL; /* resolved: d->workdir */
	d->cmd = strdup(a->cmd);
	d->shell = a->shell ? strdup(a->shell) : NULL;
	if (!d->cmd || (a->shell && !d->shell) ||
	    (a->policy && ward_policy_copy(a->policy, &d->policy) < 0)) {
		deferred_free(d);
		return ward__error(err, -ENOMEM, "session", "out of memory");
	}
	d->a.cmd = d->cmd;
	d->a.shell = d->shell;
	d->a.policy = d->policy;
	d->workdir = TAKE_PTR(*workdir);
	d->sn = sn;
	d->c = c;
	c->deferred = true;
	if (s->deferred_tail)
		s->deferred_tail->next = d;
	else
		s->deferred_head = d;
	s->deferred_tail = d;
	s->n_deferred++;
	return 0;
}

/* ------------------------------------------------------------ the calls (continued) */

int ward__sessions_exec(struct ward__sessions *s, const struct ward__exec_args *a,
			ward__session_done_fn done, void *userdata, uint64_t *ret_call,
			struct ward_error *err)
{
	_cleanup_free_ char *workdir = NULL;
	const struct ward_policy *pol;
	struct ward__snapshot *sn = NULL;
	struct session *se = NULL;
	const char *shell = a && a->shell && a->shell[0] ? a->shell : s->shell;
	struct call *c;
	int r;

	if (!a || !a->cmd)
		return ward__error(err, -EINVAL, "session", "cmd is required");
	if (!a->cmd[0])
		return ward__error(err, -EINVAL, "session", "cmd is empty");
	if (strlen(a->cmd) > WARD_SESSION_CMD_MAX)
		return ward__error(err, -E2BIG, "session",
				   "cmd is longer than %zu bytes (the kernel's limit for one "
				   "argument): write the script to a file and run that",
				   WARD_SESSION_CMD_MAX);
	if (a->shell && a->shell[0] && a->shell[0] != '/' && strchr(a->shell, '/'))
		return ward__error(err, -EINVAL, "session",
				   "shell '%s' must be an absolute path or a name in PATH",
				   a->shell);
	if (a->unsandboxed && (a->policy ? a->policy : s->policy)->deny_read.n > 0)
		return ward__error(
			err, -EPERM, "session",
			"cannot run outside the sandbox: the policy denies reads, which only "
			"the sandbox enforces");
	pol = a->policy ? a->policy : s->policy;
	r = resolve_workdir(s, a->workdir,
			    !a->unsandboxed && pol->mode != WARD_MODE_DANGER_FULL_ACCESS &&
				    pol->deny_read.n > 0,
			    &workdir, err);
	if (r < 0)
		return r;
	/* Only a call that is going to start a session may end another one. */
	r = prune(s, err);
	if (r < 0)
		return r;
	c = ward__session_call_new(s, CALL_EXEC, done, userdata);
	if (!c)
		return ward__error(err, -ENOMEM, "session", "out of memory");
	/* The wall time and the window include the spawn (c->start_ns is now). */
	c->yield_ns = (uint64_t)clamp(a->yield_ms < 0 ? WARD_EXEC_YIELD_DEFAULT_MS : a->yield_ms,
				      WARD_EXEC_YIELD_MIN_MS, WARD_EXEC_YIELD_MAX_MS) *
		1000000;
	c->max_tokens = tokens_arg(a->max_output_tokens);
	r = ward__session_call_set_until(c, a->until, a->until_len, a->until_any_output, err);
	if (r >= 0 && (a->login < 0 ? s->login : a->login) && s->snapshots)
		sn = snapshot_for(s, shell);
	if (r >= 0 && sn && ward__snapshot_state(sn) == WARD__SNAPSHOT_RUNNING)
		r = defer(s, a, &workdir, sn, c, err);
	else if (r >= 0)
		r = start_session(s, a, workdir, sn, &se, err);
	if (r < 0) {
		ward__session_call_free(s, c);
		return r;
	}
	if (ret_call)
		*ret_call = c->id;
	if (se) {
		workdir = NULL; /* the session's */
		ward__session_call_enqueue(se, c, NULL);
	}
	return 0;
}

/* Input queued in every session's stdin, and in calls waiting their turn. */
static size_t input_held(struct ward__sessions *s)
{
	size_t n = 0;

	for (struct session *se = s->head; se; se = se->next)
		if (se->tty)
			n += ward__proc_stdin_queued(se->proc);
	for (struct call *c = s->calls; c; c = c->next_all)
		if (!c->started)
			n += c->len;
	return n;
}

int ward__sessions_write(struct ward__sessions *s, const struct ward__write_args *a,
			 ward__session_done_fn done, void *userdata, uint64_t *ret_call,
			 struct ward_error *err)
{
	struct session *se;
	struct call *c;
	int64_t y;
	int r;

	if (!a)
		return ward__error(err, -EINVAL, "session", "invalid arguments");
	se = ward__session_lookup(s, a->session_id);
	if (!se)
		return ward__error(err, -ENOENT, "session", "Unknown process id %d", a->session_id);
	if (a->len > WARD_SESSION_CHARS_MAX)
		return ward__error(err, -E2BIG, "session", "chars is longer than %zu bytes",
				   WARD_SESSION_CHARS_MAX);
	if (a->len > 0 && !se->tty && !(a->len == 1 && a->chars[0] == '\x03'))
		return ward__error(err, -EPIPE, "session",
				   "stdin is closed for this session; rerun exec_command with "
				   "tty=true to keep stdin open");
	if (a->len > 0 && se->exited)
		return ward__error(err, -EPIPE, "session",
				   "process %d has exited; poll it with empty chars to collect its "
				   "output and exit code",
				   se->id);
	if (a->len > 1 && input_held(s) + a->len > WARD_SESSIONS_BYTES_BUDGET)
		return ward__error(err, -ENOBUFS, "session",
				   "the sessions hold %zu MiB of input not yet read by their "
				   "processes; wait for them to read it",
				   WARD_SESSIONS_BYTES_BUDGET >> 20);
	c = ward__session_call_new(s, CALL_WRITE, done, userdata);
	if (!c)
		return ward__error(err, -ENOMEM, "session", "out of memory");
	if (a->len > 0) {
		c->chars = malloc(a->len);
		if (!c->chars) {
			ward__session_call_free(s, c);
			return ward__error(err, -ENOMEM, "session", "out of memory");
		}
		memcpy(c->chars, a->chars, a->len);
		c->len = a->len;
		y = a->yield_ms < 0 ? WARD_WRITE_YIELD_DEFAULT_MS : a->yield_ms;
		y = clamp(y, WARD_EXEC_YIELD_MIN_MS, WARD_EXEC_YIELD_MAX_MS);
	} else {
		y = a->yield_ms < 0 ? WARD_WRITE_YIELD_DEFAULT_MS : a->yield_ms;
		y = clamp(y, WARD_POLL_YIELD_MIN_MS, WARD_POLL_YIELD_MAX_MS);
	}
	c->yield_ns = (uint64_t)y * 1000000;
	c->max_tokens = tokens_arg(a->max_output_tokens);
	r = ward__session_call_set_until(c, a->until, a->until_len, a->until_any_output, err);
	if (r >= 0)
		r = ward__session_call_enqueue(se, c, err);
	if (r < 0) {
		ward__session_call_free(s, c);
		return r;
	}
	if (ret_call)
		*ret_call = c->id;
	return 0;
}

int ward__sessions_kill(struct ward__sessions *s, int session_id, ward__session_done_fn done,
			void *userdata, uint64_t *ret_call, struct ward_error *err)
{
	struct session *se;
	struct call *c;

	se = ward__session_lookup(s, session_id);
	if (!se)
		return ward__error(err, -ENOENT, "session", "Unknown process id %d", session_id);
	if (se->kill_call)
		return ward__error(err, -EALREADY, "session", "session %d is already being killed",
				   session_id);
	c = ward__session_call_new(s, CALL_KILL, done, userdata);
	if (!c)
		return ward__error(err, -ENOMEM, "session", "out of memory");
	c->sess = se;
	c->yield_ns = (uint64_t)WARD_EXEC_YIELD_MAX_MS * 1000000;
	c->max_tokens = WARD_MAX_OUTPUT_TOKENS_DEFAULT;
	if (ret_call)
		*ret_call = c->id;
	/* The kill takes effect at once, ahead of any queued call. */
	se->killed = true;
	ward__proc_terminate(se->proc);
	if (se->active) {
		/* The call in flight collects the last output; this one reports the end. */
		se->kill_call = c;
		return 0;
	}
	ward__session_call_begin(c);
	return 0;
}

void ward__sessions_cancel(struct ward__sessions *s, uint64_t call)
{
	struct session *se;
	struct call *c;

	for (c = s->calls; c && c->id != call; c = c->next_all)
		;
	if (!c || c->cancelled)
		return;
	c->cancelled = true;
	if (c->deferred) {
		/* Not started yet: it never will be. */
		for (struct deferred *d = s->deferred_head; d; d = d->next)
			if (d->c == c) {
				deferred_unlink(s, d);
				deferred_free(d);
				break;
			}
		ward__session_call_free(s, c);
		return;
	}
	se = c->sess;
	if (!se || se->kill_call == c)
		return; /* the kill goes on; its end is not reported */
	if (se->active == c) {
		/* It stops waiting now; its output stays for the next call. */
		se->active = NULL;
		ward__session_call_free(s, c);
		ward__session_begin_next(se);
		return;
	}
	for (struct call **pp = &se->queue_head; *pp; pp = &(*pp)->next_in_session) {
		if (*pp != c)
			continue;
		*pp = c->next_in_session;
		if (se->queue_tail == c) {
			se->queue_tail = NULL;
			for (struct call *q = se->queue_head; q; q = q->next_in_session)
				se->queue_tail = q;
		}
		se->n_queued--;
		ward__session_call_free(s, c);
		return;
	}
}

int ward__sessions_set_progress(struct ward__sessions *s, uint64_t call, uint64_t interval_ms,
				ward__session_progress_fn fn, void *userdata)
{
	for (struct call *c = s->calls; c; c = c->next_all)
		if (c->id == call) {
			c->progress = fn;
			c->progress_userdata = userdata;
			c->progress_interval_ms = MAX(interval_ms, (uint64_t)100);
			if (c->started && !c->progress_timer)
				return ward__loop_add_timer(
					s->loop, ward__now_ns() + c->progress_interval_ms * 1000000,
					ward__session_on_progress, c, &c->progress_timer);
			return 0;
		}
	return -ENOENT;
}

json_t *ward__sessions_list(struct ward__sessions *s)
{
	json_t *a = json_array();

	for (struct session *se = s->head; a && se; se = se->next) {
		json_t *o = json_object();
		char when[32];
		struct tm tm;

		if (!o)
			break;
		gmtime_r(&se->started, &tm);
		strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
		json_object_set_new(o, "session_id", json_integer(se->id));
		json_object_set_new(o, "command", json_string(se->command));
		json_object_set_new(o, "workdir", json_string(se->workdir));
		json_object_set_new(o, "tty", json_boolean(se->tty));
		json_object_set_new(o, "running", json_boolean(!se->exited));
		if (se->exited)
			json_object_set_new(o, "exit_code",
					    json_integer(ward__proc_exit_code(se->proc)));
		json_object_set_new(o, "started", json_string(when));
		json_object_set_new(o, "pending_output_bytes",
				    json_integer((json_int_t)se->out.total));
		json_object_set_new(o, "busy", json_boolean(se->active != NULL));
		json_array_append_new(a, o);
	}
	return a;
}

void ward__sessions_terminate_all(struct ward__sessions *s)
{
	/* A command waiting for its snapshot is not started: its call ends from the loop. */
	s->ending = true;
	for (size_t i = 0; i < s->n_snaps; i++)
		ward__snapshot_stop(s->snaps[i]);
	for (struct session *se = s->head; se; se = se->next)
		ward__proc_terminate(se->proc);
}

size_t ward__sessions_count(const struct ward__sessions *s)
{
	return s->count;
}

const char *ward__sessions_shell(const struct ward__sessions *s)
{
	return s->shell;
}

const char *ward__sessions_cwd(const struct ward__sessions *s)
{
	return s->cwd;
}

size_t ward__sessions_calls_in_flight(const struct ward__sessions *s)
{
	return s->n_calls;
}
