#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# shellcheck disable=SC2317,SC2119,SC2016
#
# ward's AppArmor profile for hosts that restrict unprivileged user namespaces
# (Ubuntu 24.04+): it grants `userns` and nothing else to the installed ward,
# compiles with apparmor_parser (compile only: -Q skips the kernel, -K the
# cache; this machine class runs no AppArmor), meson install puts it in
# /etc/apparmor.d, and `ward doctor` detects the restriction and prints the
# exact command that loads a profile for the ward it runs as.
#
# Debian 12's apparmor_parser (3.0) predates the `userns` rule and the 4.0 ABI
# (AppArmor 4.0, Ubuntu 24.04). There the profile is compiled with exactly those
# two lines changed to what 3.0 knows, and the parser's only complaint about the
# unchanged profile must be the userns rule itself; with a 4.x parser the
# profile is compiled as shipped.
. "$(dirname "$0")/lib.sh"

PROFILE=${WARD_APPARMOR_PROFILE_BUILT:-$(dirname "$WARD")/apparmor/ward}
INSTALL_PATH=${WARD_INSTALL_PATH:-/usr/local/bin/ward}

need_parser() {
	command -v apparmor_parser >/dev/null 2>&1 || [ -x /usr/sbin/apparmor_parser ] ||
		skip "apparmor_parser is not installed (Debian: apt-get install apparmor)"
	PARSER=$(command -v apparmor_parser || echo /usr/sbin/apparmor_parser)
	[ -r /etc/apparmor.d/tunables/global ] || skip "/etc/apparmor.d/tunables/global is missing"
	PARSER_VERSION=$("$PARSER" --version | sed -n 's/.*version \([0-9][0-9.]*\).*/\1/p' | head -n 1)
	[ -n "$PARSER_VERSION" ] || fail "cannot read apparmor_parser's version"
}

# compile FILE: apparmor_parser, compile only; output in $T/.run/parser.
compile() {
	"$PARSER" -QK -I /etc/apparmor.d "$1" >"$T/.run/parser" 2>&1
}

# check_profile FILE: compiles FILE as it is (parser 4+), or (parser 3) proves
# that the userns rule is the only thing the parser does not know.
check_profile() {
	local f=$1 line
	if [ "${PARSER_VERSION%%.*}" -ge 4 ]; then
		compile "$f" || fail "apparmor_parser $PARSER_VERSION rejects $f: $(cat "$T/.run/parser")"
		return 0
	fi
	# The 3.0 parser: the 4.0 ABI file does not exist there, so the ABI line first.
	sed 's|^abi <abi/4.0>,|abi <abi/3.0>,|' "$f" >"$T/abi3"
	if compile "$T/abi3"; then
		fail "apparmor_parser $PARSER_VERSION accepted the userns rule; expected it to predate it"
	fi
	line=$(grep -n '^ *userns,$' "$T/abi3" | cut -d: -f1)
	grep -q "at line $line: syntax error" "$T/.run/parser" ||
		fail "apparmor_parser $PARSER_VERSION complains about more than the userns rule (line $line): $(cat "$T/.run/parser")"
	sed '/^ *userns,$/d' "$T/abi3" >"$T/abi3-nouserns"
	compile "$T/abi3-nouserns" ||
		fail "apparmor_parser $PARSER_VERSION rejects the profile without the userns rule: $(cat "$T/.run/parser")"
}

t_profile_text() {
	[ -f "$PROFILE" ] || fail "the profile was not built: $PROFILE"
	# The rules: exactly one, userns; the rest is the header, the ABI and the local include.
	local rules
	rules=$(grep -v -e '^ *#' -e '^ *$' "$PROFILE")
	assert_eq "$rules" "$(printf '%s\n' 'abi <abi/4.0>,' 'include <tunables/global>' \
		"profile ward \"$INSTALL_PATH\" flags=(unconfined) {" '  userns,' \
		'  include if exists <local/ward>' '}')" "the profile's rules"
}

t_profile_compiles() {
	need_parser
	check_profile "$PROFILE"
	# The check has teeth: a profile with a typo is rejected.
	sed 's/userns,/usrns,/; s/^abi <abi\/4.0>,/abi <abi\/3.0>,/; /usrns/d; s/^include <tunables\/global>/include <tunables\/globl>/' \
		"$PROFILE" >"$T/broken"
	compile "$T/broken" && fail "apparmor_parser accepted a profile including a missing file"
	return 0
}

t_meson_installs_profile() {
	need_cmd meson
	local build installed
	build=$(dirname "$WARD")
	[ -f "$build/meson-info/intro-installed.json" ] || fail "no meson introspection data in $build"
	installed=$(meson introspect "$build" --installed 2>/dev/null) || fail "meson introspect failed"
	if [ -d /etc/apparmor.d ]; then
		grep -q '"/etc/apparmor.d/ward"' <<<"$installed" ||
			fail "meson install would not put the profile in /etc/apparmor.d: $installed"
	else
		grep -q 'apparmor.d' <<<"$installed" && fail "installed without /etc/apparmor.d: $installed"
	fi
	grep -q "\"$INSTALL_PATH\"" <<<"$installed" || fail "ward is not installed at $INSTALL_PATH: $installed"
	# A staged install (DESTDIR) gets the file and loads nothing.
	DESTDIR=$T/dest sh "$WARD_SRC/apparmor/load-profile.sh" /etc/apparmor.d/ward ||
		fail "the load step failed under DESTDIR"
}

t_doctor_restriction() {
	[ -x "$HARDENED" ] || fail "hardened-wrapper is not built"
	LAST_CMD="hardened-wrapper --apparmor-restrict ward doctor"
	timeout 20 "$HARDENED" --apparmor-restrict "$WARD" doctor </dev/null >"$T/.run/stdout" 2>"$T/.run/stderr"
	WRC=$?
	expect_rc 1
	assert_stdout_has "kernel.apparmor_restrict_unprivileged_userns=1"
	assert_stdout_has "load ward's profile"
	timeout 20 "$HARDENED" --apparmor-restrict "$WARD" doctor --json </dev/null >"$T/.run/stdout" 2>"$T/.run/stderr"
	WRC=$?
	expect_rc 1
	[ -n "$PY" ] || skip "python3 is needed to read the JSON"
	"$PY" -c 'import json, sys; a = json.load(open(sys.argv[1]))["apparmor"]; assert a["restricts_unprivileged_userns"] is True, a; print(a["load_command"]); print(a["profile"])' \
		"$T/.run/stdout" >"$T/aa" || fail "doctor --json has no load command: $(out)"
	local cmd profile exe name
	cmd=$(sed -n 1p "$T/aa")
	profile=$(sed -n 2p "$T/aa")
	exe=$(readlink -f "$WARD")
	if [ "$exe" = "$INSTALL_PATH" ] && [ -f /etc/apparmor.d/ward ]; then
		assert_eq "$cmd" "sudo apparmor_parser -r /etc/apparmor.d/ward" "the load command"
		return 0
	fi
	# A ward outside the installed path: a profile of its own, for its own path.
	name=ward-$(sed 's|^/||; s|[/ ]|.|g' <<<"$exe")
	assert_eq "$profile" "/etc/apparmor.d/$name" "the profile file"
	assert_match "$cmd" "\\| sudo tee /etc/apparmor.d/$name >/dev/null && sudo apparmor_parser -r /etc/apparmor.d/$name\$" "the load command"
	# The profile the command writes (everything before the pipe, run here) names
	# this ward and grants userns only, and compiles.
	bash -c "${cmd%% | sudo tee*}" >"$T/generated" || fail "the printf part failed: $cmd"
	assert_eq "$(cat "$T/generated")" "$(printf '%s\n' 'abi <abi/4.0>,' 'include <tunables/global>' \
		"profile $name \"$exe\" flags=(unconfined) {" '  userns,' '}')" "the generated profile"
	if command -v apparmor_parser >/dev/null 2>&1 || [ -x /usr/sbin/apparmor_parser ]; then
		need_parser
		check_profile "$T/generated"
	fi
	# Without the restriction, doctor says nothing about AppArmor.
	timeout 20 "$WARD" doctor </dev/null >"$T/.run/stdout" 2>"$T/.run/stderr"
	grep -q "load ward's profile" "$T/.run/stdout" && fail "doctor speaks of AppArmor without the restriction"
	return 0
}

tcase "the profile grants userns to the installed ward and nothing else" t_profile_text
tcase "the profile compiles with apparmor_parser (compile only)" t_profile_compiles
tcase "meson install puts the profile in /etc/apparmor.d" t_meson_installs_profile
tcase "ward doctor detects the restriction and prints the exact load command" t_doctor_restriction
finish
