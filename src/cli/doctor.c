/* SPDX-License-Identifier: MIT */
/*
 * `ward doctor`: what this host's kernel offers, what `ward run` guarantees
 * here, and for each missing piece a hint on how to get it.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "sandbox/limits.h"
#include "sandbox/sandbox.h"
#include "ward-config.h"

static const char doctor_help[] =
	"Usage: ward doctor [--json]\n"
	"\n"
	"Report the kernel features ward uses (user namespaces, Landlock, seccomp and\n"
	"user notification, the mount API, pidfd, cgroups for resource limits), the\n"
	"guarantees 'ward run' gives on this host, how each resource limit is enforced\n"
	"(cgroup-v2, cgroup-v1, rlimit or none), and a hint for each one missing.\n"
	"Where AppArmor restricts user namespaces (Ubuntu 24.04+), it prints the exact\n"
	"command that loads ward's profile.\n"
	"Exit status: 0 full isolation, 1 less (the Landlock+seccomp fallback, or no private\n"
	"/proc in a container that masks its own), 125 usage.\n";

/*
 * The exact command that loads an AppArmor profile granting user namespaces
 * to this ward binary (Ubuntu 24.04's restriction). The profile meson install
 * put in place covers the installed path; a ward run from elsewhere (a build
 * directory) gets a profile of its own for its own path, named after it, written
 * and loaded in one command line. Returns false (and a reason in cmd) for a
 * path that cannot be written into a profile or a shell word safely.
 */
static bool apparmor_load_command(char *cmd, size_t size, char *profile, size_t psize)
{
	char exe[PATH_MAX], name[PATH_MAX];
	struct stat st;
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	size_t k = 0;

	if (n <= 0) {
		snprintf(cmd, size, "cannot find this ward's own path (/proc/self/exe)");
		return false;
	}
	exe[n] = '\0';
	if (WARD_APPARMOR_PROFILE[0] && strcmp(exe, WARD_INSTALL_PATH) == 0 &&
	    stat(WARD_APPARMOR_PROFILE, &st) == 0) {
		/* A package keeps it outside /etc/apparmor.d (Debian): copied there, it stays loaded. */
		if (strncmp(WARD_APPARMOR_PROFILE, "/etc/apparmor.d/", 16) != 0) {
			snprintf(profile, psize, "/etc/apparmor.d/ward");
			snprintf(
				cmd, size,
				"sudo install -m 644 %s /etc/apparmor.d/ward && sudo apparmor_parser -r /etc/apparmor.d/ward",
				WARD_APPARMOR_PROFILE);
			return true;
		}
		snprintf(profile, psize, "%s", WARD_APPARMOR_PROFILE);
		snprintf(cmd, size, "sudo apparmor_parser -r %s", WARD_APPARMOR_PROFILE);
		return true;
	}
	/* A quote, a backslash or a control character would need escaping in two languages: refuse. */
	for (const char *c = exe; *c; c++)
		if (*c == '\'' || *c == '"' || *c == '\\' || (unsigned char)*c < 0x20 ||
		    *c == 0x7f) {
			snprintf(
				cmd, size,
				"this ward's path '%s' has characters a profile cannot name safely; install ward (meson install) and run it from '%s'",
				exe, WARD_INSTALL_PATH);
			return false;
		}
	if (strcmp(exe, WARD_INSTALL_PATH) == 0) {
		snprintf(name, sizeof(name), "ward");
	} else {
		/* "/home/u/ward/build/ward" -> "ward-home.u.ward.build.ward": one profile per binary. */
		k = (size_t)snprintf(name, sizeof(name), "ward-");
		for (const char *c = exe + 1; *c && k + 1 < sizeof(name); c++)
			name[k++] = *c == '/' || *c == ' ' ? '.' : *c;
		name[k] = '\0';
	}
	snprintf(profile, psize, "/etc/apparmor.d/%s", name);
	n = snprintf(
		cmd, size,
		"printf '%%s\\n' 'abi <abi/4.0>,' 'include <tunables/global>' 'profile %s \"%s\" flags=(unconfined) {' '  userns,' '}' | sudo tee /etc/apparmor.d/%s >/dev/null && sudo apparmor_parser -r /etc/apparmor.d/%s",
		name, exe, name, name);
	if (n < 0 || (size_t)n >= size) {
		snprintf(cmd, size, "this ward's path is too long to name in a profile");
		return false;
	}
	return true;
}

struct item {
	const char *name;
	bool ok;
	char detail[512];
	const char *hint;
};

int cli_doctor(int argc, char **argv)
{
	const struct ward__features *f;
	struct item items[9];
	const struct ward__cg_base *lim;
	const struct ward__cg_host *lh;
	enum ward__enforce lim_how[WARD_CG_N];
	size_t n = 0;
	char aa_cmd[4 * PATH_MAX + 512] = "", aa_profile[PATH_MAX + 32] = "";
	bool aa_ok = false, aa = false;
	char ll[64];
	bool json = false;
	struct ward_policy *p = NULL;
	struct ward_error err = {0};
	char missing[1024] = "";

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--json") == 0)
			json = true;
		else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
			fputs(doctor_help, stdout);
			return 0;
		} else {
			cli_errorf("doctor: unknown option '%s' (see 'ward doctor --help')",
				   argv[i]);
			return WARD_EXIT_FAILURE;
		}
	}
	f = ward__features_get();
	/* Ubuntu 24.04's restriction is what refuses them here: the fix is ward's profile. */
	aa = !f->userns && f->apparmor_restricts_userns;
	if (aa)
		aa_ok = apparmor_load_command(aa_cmd, sizeof(aa_cmd), aa_profile,
					      sizeof(aa_profile));

	items[n] = (struct item){"user namespaces", f->userns, "", NULL};
	if (f->userns)
		snprintf(items[n].detail, sizeof(items[n].detail),
			 "available (mount, pid, ipc, uts, network)");
	else {
		snprintf(items[n].detail, sizeof(items[n].detail), "refused: %s", f->userns_why);
		items[n].hint = aa
			? (aa_ok ? "AppArmor restricts unprivileged user namespaces; load ward's profile (see 'apparmor' below)"
				 : "AppArmor restricts unprivileged user namespaces; ward's profile cannot be loaded for this binary (see 'apparmor' below)")
			: strstr(f->userns_why, "max_user_namespaces")
			? "sysctl user.max_user_namespaces=15000"
			: strstr(f->userns_why, "unprivileged_userns_clone")
			? "sysctl kernel.unprivileged_userns_clone=1"
			: strstr(f->userns_why, "CAP_SETFCAP")
			? "run ward as a user other than root (it needs no capability then), or give it CAP_SETFCAP (podman, docker: --cap-add=SETFCAP)"
			: strstr(f->userns_why, "seccomp")
			? "in Docker: --security-opt seccomp=<a profile allowing unshare and clone with CLONE_NEWUSER>"
			: "check the kernel's CONFIG_USER_NS and the container runtime";
	}
	n++;
	/* A container that masks parts of its /proc: the kernel refuses sandboxes a fresh one. */
	items[n] =
		(struct item){"private /proc", f->userns ? !f->proc_masked : f->rootns, "", NULL};
	if (f->userns && f->proc_masked) {
		snprintf(
			items[n].detail, sizeof(items[n].detail), "refused: %s",
			f->landlock_abi >= 1
				? "this container masks parts of its /proc, so the kernel refuses a fresh one; sandboxes keep the container's (read-only), where commands see its other processes"
				: "this container masks parts of its /proc, so the kernel refuses a fresh one, and without Landlock the container's cannot be kept safely: ward run refuses to run");
		items[n].hint =
			"podman or docker: --security-opt systempaths=unconfined; Kubernetes: securityContext.procMount: Unmasked (with hostUsers: false)";
	} else if (f->userns || f->rootns) {
		snprintf(items[n].detail, sizeof(items[n].detail),
			 "a fresh procfs for each sandbox's pid namespace");
	} else {
		snprintf(items[n].detail, sizeof(items[n].detail),
			 "none without namespaces: the host's processes are visible");
	}
	n++;
	items[n] = (struct item){"landlock", f->landlock_abi >= 1, "", NULL};
	if (f->landlock_abi >= 1)
		snprintf(items[n].detail, sizeof(items[n].detail), "ABI %d%s", f->landlock_abi,
			 f->landlock_abi >= 6 ? " (signal and abstract unix socket scoping)"
					      : " (no signal/abstract socket scoping: ABI < 6)");
	else {
		snprintf(items[n].detail, sizeof(items[n].detail), "unavailable: %s",
			 strerror(f->landlock_errno));
		items[n].hint =
			"boot with landlock in 'lsm=' (CONFIG_SECURITY_LANDLOCK=y), Linux 5.13 or newer";
	}
	n++;
	items[n] = (struct item){"seccomp", f->seccomp, "", NULL};
	snprintf(items[n].detail, sizeof(items[n].detail), "%s",
		 f->seccomp ? "filters available" : "unavailable");
	if (!f->seccomp)
		items[n].hint = "a kernel with CONFIG_SECCOMP_FILTER";
	n++;
	items[n] = (struct item){"seccomp user notification", f->seccomp_user_notif, "", NULL};
	snprintf(
		items[n].detail, sizeof(items[n].detail), "%s",
		f->seccomp_user_notif
			? "available: host unix sockets are supervised, denials are reported exactly"
			: "unavailable: host unix sockets cannot be told apart, denials are 'unavailable'");
	if (!f->seccomp_user_notif)
		items[n].hint = "Linux 5.9 or newer (SECCOMP_RET_USER_NOTIF and pidfd_getfd)";
	n++;
	items[n] = (struct item){"mount API", f->mount_api, "", NULL};
	snprintf(items[n].detail, sizeof(items[n].detail), "%s",
		 f->mount_api ? "open_tree, move_mount, mount_setattr" : "missing");
	if (!f->mount_api)
		items[n].hint = "Linux 5.12 or newer";
	n++;
	items[n] = (struct item){"pidfd", f->pidfd, "", NULL};
	snprintf(items[n].detail, sizeof(items[n].detail), "%s",
		 f->pidfd ? "available" : "missing");
	if (!f->pidfd)
		items[n].hint = "Linux 5.3 or newer";
	n++;
	/*
	 * Resource limits: ward's cgroup subtree is acquired for real (it may
	 * put this process in a systemd scope of its own, which goes when it
	 * exits): a limit is said to be enforced only once it could be.
	 */
	lim = ward__cg_base_get();
	lh = ward__cg_host_get();
	for (int c = 0; c < WARD_CG_N; c++) {
		enum ward__enforce how = lim->how[c];

		if (how == WARD_ENFORCE_NONE && c == WARD_CG_PIDS && (f->userns) &&
		    ward__rlimits_nproc_per_userns())
			how = WARD_ENFORCE_RLIMIT;
		lim_how[c] = how;
	}
	items[n] = (struct item){"resource limits",
				 lim_how[WARD_CG_MEMORY] != WARD_ENFORCE_NONE &&
					 lim_how[WARD_CG_PIDS] != WARD_ENFORCE_NONE &&
					 lim_how[WARD_CG_CPU] != WARD_ENFORCE_NONE,
				 "", NULL};
	snprintf(items[n].detail, sizeof(items[n].detail),
		 "memory %s, pids %s, cpu %s (cgroups: %s%s%s)",
		 ward__enforce_name(lim_how[WARD_CG_MEMORY]),
		 ward__enforce_name(lim_how[WARD_CG_PIDS]),
		 ward__enforce_name(lim_how[WARD_CG_CPU]), ward__cg_layout_name(lh->layout),
		 lim->scope[0] ? "; delegated by systemd as " : "", lim->scope);
	if (!items[n].ok)
		items[n].hint = lh->layout == WARD_CG_LAYOUT_UNIFIED
			? "run ward under systemd (a user manager delegating memory, pids, cpu), or in a cgroup delegated to it alone ('systemd-run --user --scope -p Delegate=yes ward ...')"
			: lh->layout != WARD_CG_LAYOUT_NONE
			? "cgroup v1 controllers are root's: run ward as root, or boot with cgroup v2 (systemd.unified_cgroup_hierarchy=1)"
			: "mount cgroup v2 (/sys/fs/cgroup) with the memory, pids and cpu controllers";
	n++;

	/*
	 * The network by domain is a proxy reached only from the sandbox's own
	 * network namespace: without namespaces it cannot be enforced, and
	 * --allow-domain is refused (exit 125) rather than pretended.
	 */
	items[n] = (struct item){"network by domain", f->userns || f->rootns, "", NULL};
	snprintf(
		items[n].detail, sizeof(items[n].detail), "%s",
		!(f->userns || f->rootns)
			? "unavailable: needs a network namespace; --allow-domain is refused"
			: f->seccomp_user_notif
			? "available: proxy variables, the DNS stub, and tools that ignore both"
			: "available through the proxy variables and the DNS stub; tools that connect "
			  "on their own are refused (no seccomp user notification)");
	if (!(f->userns || f->rootns))
		items[n].hint = "the user namespaces above (or run ward as root)";
	n++;

	if (ward_policy_new(&p) == 0 && ward_policy_resolve(p, &err) == 0 && !f->userns &&
	    !f->rootns)
		ward__features_missing_guarantees(f, p, missing, sizeof(missing));
	else if (f->userns && f->proc_masked)
		snprintf(missing, sizeof(missing), "%s",
			 f->landlock_abi >= 1 ? WARD_HOST_PROC_LOST : WARD_HOST_PROC_REFUSED);

	if (json) {
		json_t *o = json_object(), *feat = json_object(), *miss = json_array();
		char *s, *save = NULL;

		for (size_t i = 0; i < n; i++) {
			json_t *j = json_object();

			json_object_set_new(j, "ok", json_boolean(items[i].ok));
			json_object_set_new(j, "detail", json_string(items[i].detail));
			json_object_set_new(j, "hint",
					    items[i].hint ? json_string(items[i].hint)
							  : json_null());
			json_object_set_new(feat, items[i].name, j);
		}
		json_object_set_new(o, "features", feat);
		json_object_set_new(o, "landlock_abi", json_integer(f->landlock_abi));
		json_object_set_new(
			o, "isolation",
			json_string(f->userns && f->proc_masked && f->landlock_abi < 1
					    ? "none: ward run refuses to run"
					    : f->userns && f->proc_masked
					    ? "namespaces without a private /proc"
					    : f->userns ? "namespaces"
					    : f->rootns
					    ? "namespaces without a user namespace (root)"
					    : f->landlock_abi ? "landlock+seccomp fallback"
							      : "none: ward run refuses to run"));
		{
			json_t *a = json_object();

			json_object_set_new(a, "restricts_unprivileged_userns",
					    json_boolean(f->apparmor_restricts_userns));
			json_object_set_new(a, "profile",
					    aa && aa_profile[0] ? json_string(aa_profile)
								: json_null());
			json_object_set_new(a, "load_command",
					    aa && aa_ok ? json_string(aa_cmd) : json_null());
			json_object_set_new(a, "problem",
					    aa && !aa_ok ? json_string(aa_cmd) : json_null());
			json_object_set_new(o, "apparmor", a);
		}
		for (char *t = strtok_r(missing, ";", &save); t; t = strtok_r(NULL, ";", &save))
			json_array_append_new(miss, json_string(t[0] == ' ' ? t + 1 : t));
		json_object_set_new(o, "missing_guarantees", miss);
		{
			json_t *l = json_object();

			json_object_set_new(l, "cgroups",
					    json_string(ward__cg_layout_name(lh->layout)));
			for (int c = 0; c < WARD_CG_N; c++)
				json_object_set_new(l, ward__cg_ctrl_name(c),
						    json_string(ward__enforce_name(lim_how[c])));
			json_object_set_new(l, "scope",
					    lim->scope[0] ? json_string(lim->scope) : json_null());
			json_object_set_new(l, "why",
					    lim->why[0] ? json_string(lim->why) : json_null());
			json_object_set_new(o, "limits", l);
		}
		s = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
		json_decref(o);
		if (s)
			puts(s);
		free(s);
	} else {
		printf("ward %s on this host\n\nkernel features:\n", ward_version());
		for (size_t i = 0; i < n; i++) {
			printf("  %-3s %-26s %s\n", items[i].ok ? "ok" : "--", items[i].name,
			       items[i].detail);
			if (items[i].hint)
				printf("      hint: %s\n", items[i].hint);
		}
		if (aa) {
			printf("\napparmor:\n  kernel.apparmor_restrict_unprivileged_userns=1: only programs whose AppArmor\n"
			       "  profile grants 'userns' may create user namespaces.\n");
			if (aa_ok)
				printf("  load ward's profile (%s), then run 'ward doctor' again:\n    %s\n",
				       aa_profile, aa_cmd);
			else
				printf("  %s\n", aa_cmd);
		}
		printf("\nward run gives here:\n");
		if (f->landlock_abi >= 1)
			snprintf(ll, sizeof(ll), "Landlock ABI %d", f->landlock_abi);
		else
			snprintf(ll, sizeof(ll), "no Landlock (the mounts hold alone)");
		if (f->rootns && !f->userns)
			printf("  full isolation without a user namespace (ward runs as root): mount, pid, ipc, uts and\n"
			       "  network namespaces created directly, read-only host, protected paths, deny-read masks,\n"
			       "  %s, seccomp, every capability dropped (uid 0 without capabilities, securebits\n"
			       "  locked, empty bounding set, no_new_privs), own init\n",
			       ll);
		else if (f->userns && f->proc_masked && f->landlock_abi < 1)
			printf("  nothing: this container masks parts of its /proc and without Landlock 'ward run'\n"
			       "  refuses to run (exit 125)\n");
		else if (f->userns && f->proc_masked)
			printf("  isolation without a private /proc: namespaces (user, mount, pid, ipc, uts, network when\n"
			       "  off), read-only host, protected paths, deny-read masks, %s, seccomp, no capabilities,\n"
			       "  own init; without: %s\n",
			       ll, missing);
		else if (f->userns)
			printf("  full isolation: namespaces (user, mount, pid, ipc, uts, network when off), read-only host,\n"
			       "  protected paths, deny-read masks, %s, seccomp, no capabilities, own init\n",
			       ll);
		else if (f->landlock_abi >= 1)
			printf("  the fallback: Landlock ABI %d and seccomp only, without: %s\n",
			       f->landlock_abi, missing);
		else
			printf("  nothing: without user namespaces and Landlock, 'ward run' refuses to run (exit 125)\n");
		printf("\nresource limits here (--memory, --pids, --cpu; ward mcp and ward serve by default):\n");
		for (int c = 0; c < WARD_CG_N; c++)
			printf("  %-7s %s%s\n", ward__cg_ctrl_name(c),
			       ward__enforce_name(lim_how[c]),
			       lim_how[c] == WARD_ENFORCE_RLIMIT
				       ? " (RLIMIT_NPROC in the sandbox's user namespace: per sandbox)"
				       : lim_how[c] == WARD_ENFORCE_NONE ? " (not enforced)"
									 : "");
		if (lim->why[0])
			printf("  why not everything: %s\n", lim->why);
		printf("  per process always: --rlimit as, core, cpu, fsize, nofile\n");
	}
	ward_policy_free(p);
	return (f->userns && !f->proc_masked) || f->rootns ? 0 : 1;
}
