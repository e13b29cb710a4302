/* SPDX-License-Identifier: MIT */
/*
 * ward-scope: asks systemd for a cgroup subtree delegated to a ward process,
 * the way systemd documents it (docs/CGROUP_DELEGATION.md): a transient
 * scope unit with Delegate=yes, holding the process, started over D-Bus by
 * the user's manager (as root, the system's). `ward-scope PID` prints the
 * unit's name once PID is in it, or one line saying why not (exit 1).
 *
 * DESIGN: a helper of its own because the D-Bus client is libsystemd's
 * sd-bus, which Debian ships as a shared library only, and the ward
 * executable is linked statically for its start-up time (every sandboxed
 * command pays it). A server pays this once at its start, `ward run` once
 * per run with a limit. The helper talks to the manager's private socket
 * first ($XDG_RUNTIME_DIR/systemd/private, /run/systemd/private), as
 * systemd-run does: it needs no bus daemon, which many users' sessions do
 * not run; the bus is the fallback. It waits for the start job to finish
 * (JobRemoved) and checks that the process is in the scope before it says
 * so.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <systemd/sd-bus.h>
#include <time.h>
#include <unistd.h>

#include "sandbox/limits.h"

#define TIMEOUT_USEC (10ULL * 1000 * 1000)

struct job_wait {
	const char *path;
	bool done;
	char result[32];
};

static int on_job_removed(sd_bus_message *m, void *userdata, sd_bus_error *ret_error)
{
	struct job_wait *w = userdata;
	const char *path = NULL, *unit = NULL, *result = NULL;
	uint32_t id;

	if (sd_bus_message_read(m, "uoss", &id, &path, &unit, &result) < 0)
		return 0;
	if (w->path && path && strcmp(path, w->path) == 0) {
		w->done = true;
		snprintf(w->result, sizeof(w->result), "%s", result ? result : "");
	}
	return 0;
}

/* The manager's private socket, else the bus (the user's or the system's). */
static int connect_manager(sd_bus **ret, bool user)
{
	const char *rt = getenv("XDG_RUNTIME_DIR");
	char addr[4200];
	sd_bus *bus = NULL;
	int r;

	if (user && rt && rt[0] == '/')
		snprintf(addr, sizeof(addr), "unix:path=%s/systemd/private", rt);
	else if (user)
		snprintf(addr, sizeof(addr), "unix:path=/run/user/%u/systemd/private",
			 (unsigned)geteuid());
	else
		snprintf(addr, sizeof(addr), "unix:path=/run/systemd/private");
	r = sd_bus_new(&bus);
	if (r >= 0)
		r = sd_bus_set_address(bus, addr);
	if (r >= 0)
		r = sd_bus_start(bus);
	if (r >= 0) {
		*ret = bus;
		return 0;
	}
	sd_bus_unref(bus);
	return user ? sd_bus_open_user(ret) : sd_bus_open_system(ret);
}

/* Whether /proc/PID/cgroup says the process is in unit. */
static bool pid_in_unit(long pid, const char *unit)
{
	char path[64], buf[4096], needle[160];
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%ld/cgroup", pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	snprintf(needle, sizeof(needle), "/%s\n", unit);
	return strstr(buf, needle) != NULL;
}

int ward__scope_main(int argc, char **argv)
{
	sd_bus_error error = SD_BUS_ERROR_NULL;
	sd_bus_message *m = NULL, *reply = NULL;
	sd_bus_slot *slot = NULL;
	sd_bus *bus = NULL;
	struct job_wait w = {0};
	const char *job = NULL;
	char unit[128], *end;
	uint32_t rnd = 0;
	uint64_t deadline;
	struct timespec ts;
	bool user = geteuid() != 0;
	long pid;
	int r;

	if (argc != 2 || (pid = strtol(argv[1], &end, 10)) <= 0 || *end) {
		fprintf(stderr, "usage: ward-scope PID (ward's own helper, not a command)\n");
		return 1;
	}
	if (getrandom(&rnd, sizeof(rnd), GRND_NONBLOCK) != sizeof(rnd))
		rnd = (uint32_t)getpid() * 2654435761u;
	snprintf(unit, sizeof(unit), "ward-%ld-%08x.scope", pid, rnd);

	r = connect_manager(&bus, user);
	if (r < 0) {
		fprintf(stderr, "cannot reach the systemd %s manager: %s\n",
			user ? "user" : "system", strerror(-r));
		return 1;
	}
	r = sd_bus_match_signal(bus, &slot, NULL, "/org/freedesktop/systemd1",
				"org.freedesktop.systemd1.Manager", "JobRemoved", on_job_removed,
				&w);
	if (r >= 0)
		r = sd_bus_message_new_method_call(
			bus, &m, "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
			"org.freedesktop.systemd1.Manager", "StartTransientUnit");
	if (r >= 0)
		r = sd_bus_message_append(m, "ss", unit, "fail");
	if (r >= 0)
		r = sd_bus_message_open_container(m, 'a', "(sv)");
	if (r >= 0)
		r = sd_bus_message_append(m, "(sv)", "Description", "s",
					  "cgroups of ward's sandboxes");
	if (r >= 0)
		r = sd_bus_message_append(m, "(sv)", "PIDs", "au", 1, (uint32_t)pid);
	/* The whole subtree is ward's: it makes its own cgroups beneath and writes their limits. */
	if (r >= 0)
		r = sd_bus_message_append(m, "(sv)", "Delegate", "b", 1);
	/* Gone when empty, also after a failure: nothing is left behind for anyone to clean. */
	if (r >= 0)
		r = sd_bus_message_append(m, "(sv)", "CollectMode", "s", "inactive-or-failed");
	if (r >= 0)
		r = sd_bus_message_close_container(m);
	if (r >= 0)
		r = sd_bus_message_append(m, "a(sa(sv))", 0);
	if (r < 0) {
		fprintf(stderr, "cannot build the request to systemd: %s\n", strerror(-r));
		goto out;
	}
	r = sd_bus_call(bus, m, TIMEOUT_USEC, &error, &reply);
	if (r < 0) {
		fprintf(stderr, "systemd refused a delegated scope: %s\n",
			error.message ? error.message : strerror(-r));
		goto out;
	}
	r = sd_bus_message_read(reply, "o", &job);
	if (r < 0) {
		fprintf(stderr, "cannot read systemd's answer: %s\n", strerror(-r));
		goto out;
	}
	w.path = job;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	deadline = (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000 + TIMEOUT_USEC;
	while (!w.done) {
		uint64_t now;

		r = sd_bus_process(bus, NULL);
		if (r < 0) {
			fprintf(stderr, "lost systemd: %s\n", strerror(-r));
			goto out;
		}
		if (r > 0)
			continue;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		now = (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
		if (now >= deadline)
			break;
		r = sd_bus_wait(bus, deadline - now);
		if (r < 0) {
			fprintf(stderr, "lost systemd: %s\n", strerror(-r));
			goto out;
		}
	}
	if (!w.done && !pid_in_unit(pid, unit)) {
		fprintf(stderr, "systemd did not start %s in time\n", unit);
		r = -ETIMEDOUT;
		goto out;
	}
	if (w.done && strcmp(w.result, "done") != 0) {
		fprintf(stderr, "systemd could not start %s: %s\n", unit, w.result);
		r = -EIO;
		goto out;
	}
	if (!pid_in_unit(pid, unit)) {
		fprintf(stderr, "systemd started %s, but process %ld is not in it\n", unit, pid);
		r = -ESRCH;
		goto out;
	}
	printf("%s\n", unit);
	r = 0;
out:
	sd_bus_error_free(&error);
	sd_bus_message_unref(m);
	sd_bus_message_unref(reply);
	sd_bus_slot_unref(slot);
	sd_bus_flush_close_unref(bus);
	return r < 0 ? 1 : 0;
}
