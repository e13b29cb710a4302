/* SPDX-License-Identifier: MIT */
/*
 * The fixed lists of Codex's approval heuristics, for commands no rule
 * matched (shell-command/src/command_safety/), and the prefixes Codex never
 * turns into an allow rule (core/src/exec_policy.rs, BANNED_PREFIX_SUGGESTIONS).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "basic/cleanup.h"
#include "rules/rules.h"

/* The program's name as the lists see it: the basename (Codex's executable_name_lookup_key). */
static const char *prog_name(const char *argv0)
{
	const char *s = strrchr(argv0, '/');

	return s ? s + 1 : argv0;
}

/* ------------------------------------------------------------ known safe */

/* Read-only tools that are safe with any arguments (is_safe_to_call_with_exec). */
static const char *const always_safe[] = {
	"cat",
	"cd",
	"cut",
	"echo",
	"expr",
	"false",
	"grep",
	"head",
	"id",
	"ls",
	"nl",
	"paste",
	"pwd",
	"rev",
	"seq",
	"stat",
	"tail",
	"tr",
	"true",
	"uname",
	"uniq",
	"wc",
	"which",
	"whoami",
	/* Linux only in Codex; ward runs on Linux. */
	"numfmt",
	"tac",
};

bool ward__command_safe_any_args(const char *argv0)
{
	const char *name = prog_name(argv0);

	for (size_t i = 0; i < ELEMENTSOF(always_safe); i++)
		if (strcmp(name, always_safe[i]) == 0)
			return true;
	return false;
}

/* sed -n Np or sed -n M,Np: /^(\d+,)?\d+p$/ */
static bool valid_sed_n_arg(const char *s)
{
	size_t n = strlen(s), digits = 0;
	bool comma = false;

	if (n < 2 || s[n - 1] != 'p')
		return false;
	for (size_t i = 0; i < n - 1; i++) {
		if (s[i] >= '0' && s[i] <= '9') {
			digits++;
		} else if (s[i] == ',' && !comma && digits > 0) {
			comma = true;
			digits = 0;
		} else {
			return false;
		}
	}
	return digits > 0;
}

bool ward__command_known_safe(const char *const *argv, size_t argc)
{
	const char *name;

	if (argc == 0)
		return false;
	name = prog_name(argv[0]);
	for (size_t i = 0; i < ELEMENTSOF(always_safe); i++)
		if (strcmp(name, always_safe[i]) == 0)
			return true;
	if (strcmp(name, "base64") == 0) {
		/* Unless it writes a file. */
		for (size_t i = 1; i < argc; i++)
			if (strcmp(argv[i], "-o") == 0 || strcmp(argv[i], "--output") == 0 ||
			    strncmp(argv[i], "--output=", 9) == 0 ||
			    (strncmp(argv[i], "-o", 2) == 0 && argv[i][2]))
				return false;
		return true;
	}
	if (strcmp(name, "find") == 0) {
		/* Unless it runs commands, deletes, or writes file names to a file. */
		static const char *const unsafe[] = {"-exec",	"-execdir", "-ok",
						     "-okdir",	"-delete",  "-fls",
						     "-fprint", "-fprint0", "-fprintf"};

		for (size_t i = 0; i < argc; i++)
			for (size_t k = 0; k < ELEMENTSOF(unsafe); k++)
				if (strcmp(argv[i], unsafe[k]) == 0)
					return false;
		return true;
	}
	if (strcmp(name, "rg") == 0) {
		/* Unless it runs a preprocessor or a hostname helper, or calls decompressors. */
		for (size_t i = 0; i < argc; i++) {
			const char *a = argv[i];

			if (strcmp(a, "--search-zip") == 0 || strcmp(a, "-z") == 0 ||
			    strcmp(a, "--pre") == 0 || strncmp(a, "--pre=", 6) == 0 ||
			    strcmp(a, "--hostname-bin") == 0 ||
			    strncmp(a, "--hostname-bin=", 15) == 0)
				return false;
		}
		return true;
	}
	if (strcmp(name, "sed") == 0)
		return argc <= 4 && argc >= 3 && strcmp(argv[1], "-n") == 0 &&
			valid_sed_n_arg(argv[2]);
	return false;
}

/* ------------------------------------------------------------ dangerous */

/* rm with -f or --force before any "--" (rm_args_include_force_option). */
static bool rm_forced(const char *const *args, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const char *a = args[i];

		if (strcmp(a, "--") == 0)
			return false;
		if (strcmp(a, "--force") == 0)
			return true;
		if (a[0] == '-' && a[1] != '-' && strchr(a + 1, 'f'))
			return true;
	}
	return false;
}

static bool dangerous_exec(const char *const *argv, size_t argc, int depth)
{
	const char *name;

	if (argc == 0 || depth > 16)
		return false;
	name = prog_name(argv[0]);
	if (strcmp(name, "rm") == 0)
		return rm_forced(argv + 1, argc - 1);
	/* sudo [OPTIONS] CMD is as dangerous as CMD (options taking a value skip it). */
	if (strcmp(name, "sudo") == 0) {
		size_t i = 1;

		while (i < argc && argv[i][0] == '-') {
			const char *a = argv[i];

			if (strcmp(a, "--") == 0) {
				i++;
				break;
			}
			i += (strlen(a) == 2 && strchr("ugCDprtUT", a[1])) ? 2 : 1;
		}
		if (i >= argc)
			return false;
		return dangerous_exec(argv + i, argc - i, depth + 1);
	}
	/*
	 * So is env [OPTIONS] [NAME=VALUE]... CMD: the options and assignments
	 * are skipped (an option taking a value, -u NAME or -C DIR, skips it).
	 */
	if (strcmp(name, "env") == 0) {
		size_t i = 1;

		while (i < argc) {
			const char *a = argv[i];

			if (strcmp(a, "--") == 0) {
				i++;
				break;
			}
			if (strcmp(a, "-u") == 0 || strcmp(a, "-C") == 0 || strcmp(a, "-S") == 0 ||
			    strcmp(a, "--unset") == 0 || strcmp(a, "--chdir") == 0 ||
			    strcmp(a, "--split-string") == 0) {
				i += 2;
				continue;
			}
			if (a[0] == '-' || strchr(a, '=')) {
				i++;
				continue;
			}
			break;
		}
		if (i >= argc)
			return false;
		return dangerous_exec(argv + i, argc - i, depth + 1);
	}
	return false;
}

bool ward__command_dangerous(const char *const *argv, size_t argc)
{
	struct ward__cmdv lit = {0};
	const char *script;
	bool found = false;

	if (dangerous_exec(argv, argc, 0))
		return true;
	/* A shell script: any literal command in it, even nested in control flow or substitutions. */
	script = ward__shell_wrapper_script(argv, argc);
	if (!script)
		return false;
	if (ward__shell_literal_commands(script, &lit) < 0)
		return true; /* out of memory: not provably harmless */
	for (size_t i = 0; i < lit.n && !found; i++)
		found = dangerous_exec((const char *const *)lit.v[i].argv, lit.v[i].argc, 0);
	ward__cmdv_release(&lit);
	return found;
}

/* ------------------------------------------------------------ banned prefixes */

/*
 * Codex's BANNED_PREFIX_SUGGESTIONS, sorted as Codex sorts it: an allow rule
 * for any of these lets every script run outside the sandbox (interpreters,
 * shells, script runners) or hands the command to something else (sudo, env,
 * git's aliases and hooks).
 */
static const char *const banned[][3] = {
	{"/bin/bash"},
	{"/bin/bash", "-c"},
	{"/bin/bash", "-lc"},
	{"/bin/sh"},
	{"/bin/sh", "-c"},
	{"/bin/sh", "-lc"},
	{"/bin/zsh"},
	{"/bin/zsh", "-c"},
	{"/bin/zsh", "-lc"},
	{"Rscript"},
	{"bash"},
	{"bash", "-c"},
	{"bash", "-lc"},
	{"bun"},
	{"bun", "-e"},
	{"bun", "run"},
	{"cmd"},
	{"cmd", "/c"},
	{"cmd", "/k"},
	{"cmd.exe"},
	{"cmd.exe", "/c"},
	{"cmd.exe", "/k"},
	{"dash"},
	{"dash", "-c"},
	{"deno"},
	{"deno", "eval"},
	{"env"},
	{"fish"},
	{"fish", "-c"},
	{"git"},
	{"julia"},
	{"julia", "-e"},
	{"ksh"},
	{"ksh", "-c"},
	{"lua"},
	{"lua", "-e"},
	{"node"},
	{"node", "-e"},
	{"nodejs"},
	{"nodejs", "-e"},
	{"npm", "run"},
	{"osascript"},
	{"perl"},
	{"perl", "-e"},
	{"php"},
	{"php", "-r"},
	{"pnpm", "run"},
	{"powershell"},
	{"powershell", "-Command"},
	{"powershell", "-EncodedCommand"},
	{"powershell", "-File"},
	{"powershell", "-c"},
	{"powershell.exe"},
	{"powershell.exe", "-Command"},
	{"powershell.exe", "-EncodedCommand"},
	{"powershell.exe", "-File"},
	{"powershell.exe", "-c"},
	{"pwsh"},
	{"pwsh", "-Command"},
	{"pwsh", "-EncodedCommand"},
	{"pwsh", "-File"},
	{"pwsh", "-c"},
	{"pwsh", "-e"},
	{"pwsh", "-ec"},
	{"pwsh", "-f"},
	{"py"},
	{"py", "-3"},
	{"pypy"},
	{"pypy3"},
	{"python"},
	{"python", "-"},
	{"python", "-c"},
	{"python3"},
	{"python3", "-"},
	{"python3", "-c"},
	{"pythonw"},
	{"pyw"},
	{"rm"},
	{"ruby"},
	{"ruby", "-e"},
	{"sh"},
	{"sh", "-c"},
	{"sh", "-lc"},
	{"sudo"},
	{"yarn", "run"},
	{"zsh"},
	{"zsh", "-c"},
	{"zsh", "-lc"},
};

static bool equals_entry(const char *const *prefix, size_t n, const char *first,
			 const char *const *entry)
{
	size_t len = 0;

	while (len < 3 && entry[len])
		len++;
	if (n != len || strcmp(first, entry[0]) != 0)
		return false;
	for (size_t i = 1; i < n; i++)
		if (strcmp(prefix[i], entry[i]) != 0)
			return false;
	return true;
}

int ward__prefix_banned(const char *const *prefix, size_t n, const char **ret_why)
{
	const char *base;
	bool only_options = true;

	if (n == 0)
		return -EINVAL;
	base = prog_name(prefix[0]);
	for (size_t i = 0; i < ELEMENTSOF(banned); i++) {
		/* Codex's rule: the exact prefix. */
		if (equals_entry(prefix, n, prefix[0], banned[i])) {
			*ret_why = "it would let any script or program run outside the sandbox";
			return -EPERM;
		}
		/* ward's: also /usr/bin/python3 for python3. */
		if (base != prefix[0] && base[0] && equals_entry(prefix, n, base, banned[i])) {
			*ret_why = "it would let any script or program run outside the sandbox";
			return -EPERM;
		}
	}
	/*
	 * ward's: a banned program followed only by options (python3 -u,
	 * bash -e -c, env -i) still runs whatever comes next.
	 */
	for (size_t i = 1; i < n; i++)
		only_options = only_options && prefix[i][0] == '-';
	if (n > 1 && only_options)
		for (size_t i = 0; i < ELEMENTSOF(banned); i++)
			if (!banned[i][1] &&
			    (strcmp(prefix[0], banned[i][0]) == 0 ||
			     strcmp(base, banned[i][0]) == 0)) {
				*ret_why =
					"only options follow a program that runs whatever it is given";
				return -EPERM;
			}
	return 0;
}
