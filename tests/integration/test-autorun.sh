#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# shellcheck disable=SC2317,SC2016
#
# Autorun names: nothing a command plants in a workspace runs later outside
# the sandbox. Shell startup files, git config beyond .git, editor tasks and
# agent configuration, at a writable root and two levels beneath it, existing
# and missing; a home directory's ssh, systemd and autostart places; the
# directories of PATH. Each is refused (an existing one cannot be written, a
# missing one that appears stops the run and is removed) and reported with
# its reason, while ordinary work goes on: editing sources, builds, git,
# npm install. --unprotect lifts one; policy show lists them; an approval
# question offers the path. The scan cache changes none of it: a name
# planted after a cached run, a forged cache file, ward's own directory in a
# root. Also on the simulated hardened hosts (WARD_TEST_HOST), where the
# guard kills the sandbox and puts back.
. "$(dirname "$0")/lib.sh"

ASK=$WARD_SRC/tests/helpers/pty-ask.py

# guard_stopped PATH: the guard stopped the last run for PATH (never a success,
# never ward's own failure), saying so with the reason.
guard_stopped() {
	[ "$WRC" != 0 ] && [ "$WRC" != 125 ] || fail "expected the run to be stopped, got exit $WRC"
	grep -q -F -- "changed protected path '$1" "$T/.run/stderr" ||
		fail "stderr does not name $1"
}

# refused PATH OP [ARG...]: the probe's OP on PATH was refused with an errno,
# or the guard stopped the run naming PATH (a name that did not exist; in the
# fallback, any).
refused() {
	local path=$1 op=$2 l
	shift 2
	wp -- "$op" "$path" "$@"
	l=$(probe_line "$op") || l=""
	if [[ $l == "$op: ok"* ]] || [ -z "$l" ]; then
		guard_stopped "$path"
	else
		expect_denied "$op"
	fi
}

# stopped PATH COMMAND...: the run was stopped because it planted PATH, which is gone again.
stopped() {
	local path=$1
	shift
	w -- "$@"
	guard_stopped "$path"
	grep -q -F "autorun: " "$T/.run/stderr" || fail "stderr gives no autorun reason"
	assert_absent "$path"
}

# One name of each class, with content, at DIR.
plant_existing() {
	local d=$1
	mkdir -p "$d/.vscode" "$d/.claude" "$d/.config/git" "$d/.idea"
	printf 'orig\n' >"$d/.bashrc"
	printf 'orig\n' >"$d/.gitconfig"
	printf 'orig\n' >"$d/.gitmodules"
	printf 'orig\n' >"$d/.config/git/config"
	printf 'orig\n' >"$d/.vscode/tasks.json"
	printf 'orig\n' >"$d/.idea/workspace.xml"
	printf 'orig\n' >"$d/.mcp.json"
	printf 'orig\n' >"$d/.claude/settings.json"
}

EXISTING=(.bashrc .gitconfig .gitmodules .config/git/config .vscode/tasks.json .idea/workspace.xml
	.mcp.json .claude/settings.json)

t_existing_classes_at_the_root_and_two_levels_down() {
	local d f
	for d in "$WS" "$WS/a/b"; do
		plant_existing "$d"
	done
	for d in "$WS" "$WS/a/b"; do
		for f in "${EXISTING[@]}"; do
			refused "$d/$f" append evil
			assert_content "$d/$f" orig
		done
		# Nothing new inside a protected directory, and no renaming it away.
		refused "$d/.vscode/launch.json" write evil
		assert_absent "$d/.vscode/launch.json"
		refused "$d/.claude" rename "$d/claude.old"
		assert_absent "$d/claude.old"
		assert_content "$d/.claude/settings.json" orig
	done
}

t_missing_classes_at_the_root_and_two_levels_down() {
	local d n
	mkdir -p "$WS/a/b"
	for d in "$WS" "$WS/a/b"; do
		for n in .bashrc .zshenv .gitconfig .gitmodules .exrc .nvim.lua .mcp.json; do
			refused "$d/$n" write evil
			assert_absent "$d/$n"
		done
		for n in .vscode .idea .devcontainer .zed .claude .cursor .gemini .codex; do
			stopped "$d/$n" sh -c "mkdir '$d/$n' && echo evil >'$d/$n/x'; sleep 1"
		done
		# Two components: .config itself is anyone's, .config/fish and .config/git are not.
		w -- mkdir -p "$d/.config/other"
		expect_rc 0
		stopped "$d/.config/fish" mkdir -p "$d/.config/fish/conf.d"
		stopped "$d/.config/git" sh -c "mkdir -p '$d/.config/git'; sleep 1"
		rm -rf "$d/.config"
	done
}

t_new_directories_are_followed() {
	# Made in one go, two levels down, faster than any watch could be added by hand.
	stopped "$WS/x/y/.vscode" sh -c 'mkdir -p x/y/.vscode && echo evil >x/y/.vscode/tasks.json'
	# Prepared deep down (not protected there), then renamed into place.
	stopped "$WS/p/.claude" sh -c \
		'mkdir -p d1/d2/d3/p/.claude && echo evil >d1/d2/d3/p/.claude/settings.json && mv d1/d2/d3/p p; sleep 1'
	assert_absent "$WS/p/.claude"
	# A file renamed onto a name, and a hard link.
	printf 'evil\n' >"$WS/evil"
	mkdir -p "$WS/s"
	stopped "$WS/s/.mcp.json" mv evil s/.mcp.json
	printf 'evil\n' >"$WS/evil"
	stopped "$WS/s/.bashrc" ln evil s/.bashrc
	assert_content "$WS/evil" evil
}

t_deeper_and_package_trees_are_not_protected() {
	# The bound: three levels down is beyond the scan (docs/policy.md).
	w -- sh -c 'mkdir -p a/b/c/.vscode && echo ok >a/b/c/.vscode/tasks.json'
	expect_rc 0
	assert_content "$WS/a/b/c/.vscode/tasks.json" ok
	w -- sh -c 'mkdir -p node_modules/pkg/.vscode && echo ok >node_modules/pkg/.vscode/x'
	expect_rc 0
	assert_content "$WS/node_modules/pkg/.vscode/x" ok
}

t_a_home_inside_the_workspace() {
	local h
	for h in "$WS" "$WS/a/b"; do
		mkdir -p "$h/.ssh" "$h/.config/systemd"
		printf 'key\n' >"$h/.ssh/authorized_keys"
		HOME=$h refused "$h/.ssh/authorized_keys" append evil
		assert_content "$h/.ssh/authorized_keys" key
		HOME=$h refused "$h/.profile" write evil
		assert_absent "$h/.profile"
		HOME=$h stopped "$h/.config/systemd/user" sh -c \
			"mkdir -p '$h/.config/systemd/user' && echo evil >'$h/.config/systemd/user/x.service'"
		HOME=$h stopped "$h/.config/autostart" sh -c "mkdir -p '$h/.config/autostart'; sleep 1"
		HOME=$h refused "$h/.npmrc" write evil
		assert_absent "$h/.npmrc"
		# Another directory's .ssh is nobody's home.
		HOME=$h w -- mkdir -p "$WS/other/.ssh"
		expect_rc 0
		rm -rf "$WS/other"
	done
}

t_more_home_places() {
	local h=$WS p
	# Existing (the usual case: the tool is installed and configured): read-only.
	mkdir -p "$h/.vim/plugin" "$h/.config/tmux" "$h/.local/share/nvim/site" "$h/.ipython/profile_default"
	printf 'orig\n' >"$h/.gdbinit"
	printf 'orig\n' >"$h/.config/tmux/tmux.conf"
	for p in .vim/plugin/x.vim .config/tmux/tmux.conf .gdbinit .local/share/nvim/site/x.lua \
		.ipython/profile_default/startup.py; do
		HOME=$h refused "$h/$p" write evil
	done
	assert_content "$h/.gdbinit" orig
	assert_content "$h/.config/tmux/tmux.conf" orig
	assert_absent "$h/.vim/plugin/x.vim"
	# Missing: the first of each that appears stops the run and is removed.
	for p in .bash_aliases .bashrc.d .xsessionrc .yarnrc.yml .oh-my-zsh .config/vim .config/emacs \
		.config/direnv .config/husky .config/pip .config/starship.toml .config/systemd/user.control \
		.local/share/systemd .gradle/init.d .config/Code/User; do
		HOME=$h stopped "$h/$p" sh -c "mkdir -p '$h/$p'; sleep 1"
	done
	# Their neighbours are the tools' own.
	HOME=$h w -- mkdir -p "$h/.gradle/caches" "$h/.config/Code/Cache" "$h/.local/share/other"
	expect_rc 0
}

# A first run in a fresh home: ward makes its own journal's directories
# (~/.local/state/ward) before the scan, so the ~/.local it makes is read and
# watched like any other, and a plant beneath it is caught at once.
t_a_fresh_homes_first_run() {
	local h=$WS/fresh
	mkdir -p "$h"
	(
		unset WARD_CHANGES_DIR XDG_STATE_HOME
		HOME=$h stopped "$h/.local/share/applications" sh -c \
			"mkdir -p '$h/.local/share/applications' && echo evil >'$h/.local/share/applications/x.desktop'; sleep 1"
	) || return 1
	[ -d "$h/.local/state/ward/changes" ] || fail "ward did not make its journal's directory"
}

t_hook_runner_configs() {
	make_repo "$WS"
	# lefthook's hooks are installed (a stand-in for its script): its files are what they run.
	printf '#!/bin/sh\nexec lefthook run pre-commit "$@"\n' >"$WS/.git/hooks/pre-commit"
	chmod +x "$WS/.git/hooks/pre-commit"
	printf 'pre-commit:\n  commands: {}\n' >"$WS/lefthook.yml"
	printf 'repos: []\n' >"$WS/.pre-commit-config.yaml"
	refused "$WS/lefthook.yml" append evil
	assert_content "$WS/lefthook.yml" "$(printf 'pre-commit:\n  commands: {}')"
	refused "$WS/.pre-commit-config.yaml" append evil
	assert_content "$WS/.pre-commit-config.yaml" "repos: []"
	refused "$WS/lefthook-local.yml" write evil
	assert_absent "$WS/lefthook-local.yml"
	# The rest of the work tree is the command's.
	w -- sh -c 'echo two >file.txt && git commit -q --no-verify -am two'
	expect_rc 0
}

t_a_workspace_inside_the_homes_places() {
	local h=$WS/h
	mkdir -p "$h/.config/fish" "$h/.ssh"
	printf 'orig\n' >"$h/.config/fish/config.fish"
	printf 'key\n' >"$h/.ssh/authorized_keys"
	# ward run -C ~/.config: the home's places there are protected all the same.
	HOME=$h w -C "$h/.config" -- sh -c 'echo evil >>fish/config.fish'
	[ "$WRC" != 0 ] || fail "appending to ~/.config/fish/config.fish succeeded"
	assert_content "$h/.config/fish/config.fish" orig
	HOME=$h w -C "$h/.config" -- sh -c 'mkdir -p systemd/user && echo evil >systemd/user/x.service'
	guard_stopped "$h/.config/systemd/user"
	assert_absent "$h/.config/systemd/user"
	HOME=$h w -C "$h/.config" -- mkdir -p other/x
	expect_rc 0
	# ward run -C ~/.ssh: the workspace is a place itself; refused, saying why.
	HOME=$h w -C "$h/.ssh" -- sh -c 'echo evil >>authorized_keys'
	expect_rc 125
	grep -q "protected place of the home directory (autorun: ssh)" "$T/.run/stderr" ||
		fail "stderr does not say why: $(cat "$T/.run/stderr")"
	assert_content "$h/.ssh/authorized_keys" key
}

t_nested_repositories() {
	make_repo "$WS/tools"
	make_repo "$WS/a/b"
	refused "$WS/tools/.git/config" append evil
	refused "$WS/a/b/.git/hooks/post-checkout" write evil
	assert_absent "$WS/a/b/.git/hooks/post-checkout"
	! grep -q evil "$WS/tools/.git/config" || fail "tools/.git/config was written"
	# Work in them goes on.
	w -- sh -c 'cd tools && echo two >file.txt && git commit -q -am two && git -C ../a/b status --short'
	expect_rc 0
}

t_path_directories() {
	mkdir -p "$WS/bin" "$WS/a/b/bin" "$WS/tools"
	printf '#!/bin/sh\n' >"$WS/bin/tool"
	export PATH="$WS/bin:$WS/a/b/bin:$WS/tools/later/bin:$PATH"
	refused "$WS/bin/git" write evil
	assert_absent "$WS/bin/git"
	refused "$WS/a/b/bin/ls" write evil
	assert_absent "$WS/a/b/bin/ls"
	refused "$WS/bin/tool" append evil
	assert_content "$WS/bin/tool" '#!/bin/sh'
	# A PATH directory that does not exist: the way to it may be made, not it.
	w -- mkdir -p "$WS/tools/later"
	expect_rc 0
	stopped "$WS/tools/later/bin" mkdir -p "$WS/tools/later/bin"
	"$WARD" policy show >"$T/show" || fail "policy show failed"
	grep -q "\"reason\": \"autorun: on PATH\"" "$T/show" || fail "PATH directories not shown"
}

t_ordinary_work_goes_on() {
	need_cmd git make cc
	make_repo "$WS"
	mkdir -p "$WS/src"
	printf 'int main(void) { return 0; }\n' >"$WS/src/main.c"
	printf 'all:\n\tmkdir -p build/obj/x\n\tcc -o build/obj/x/main src/main.c\n' >"$WS/Makefile"
	git -C "$WS" add -A && git -C "$WS" commit -q -m src
	w -- sh -ec '
		echo "/* edited */" >> src/main.c
		make -s
		./build/obj/x/main
		mkdir -p gen/a gen/b && touch gen/a/one gen/b/two
		git add -A
		git commit -q -m build
		git checkout -q -b topic
		git stash list >/dev/null'
	expect_rc 0
	[ -x "$WS/build/obj/x/main" ] || fail "the build did not happen"
	assert_eq "$(git -C "$WS" log --oneline | wc -l)" 3 "commits"
}

t_npm_install_of_a_local_package() {
	need_cmd npm node
	# Inside the workspace: npm links a directory it installs and makes its programs executable.
	local pkg=$WS/vendor/pkg
	mkdir -p "$pkg/bin"
	printf '{"name":"ward-local-pkg","version":"1.0.0","bin":{"ward-local":"bin/cli.js"}}\n' \
		>"$pkg/package.json"
	printf '#!/usr/bin/env node\nconsole.log("hi")\n' >"$pkg/bin/cli.js"
	(cd "$T" && npm pack --silent "$pkg" >/dev/null 2>&1) || skip "npm pack failed"
	printf '{"name":"ws","version":"1.0.0"}\n' >"$WS/package.json"
	w --env-set "npm_config_cache=$WS/.cache/npm" -- sh -ec "
		npm install --offline --no-audit --no-fund '$T/ward-local-pkg-1.0.0.tgz' >/dev/null
		npm install --offline --no-audit --no-fund '$pkg' >/dev/null
		./node_modules/.bin/ward-local"
	expect_rc 0
	assert_exists "$WS/node_modules/ward-local-pkg/package.json" "$WS/node_modules/.bin/ward-local"
}

t_unprotect_lifts_one_entry() {
	mkdir -p "$WS/.vscode" "$WS/.idea"
	printf 'orig\n' >"$WS/.idea/workspace.xml"
	wp --unprotect "$WS/.vscode" -- write "$WS/.vscode/settings.json" '{}'
	expect_ok
	assert_content "$WS/.vscode/settings.json" '{}'
	# Only that one.
	refused "$WS/.idea/workspace.xml" append evil
	assert_content "$WS/.idea/workspace.xml" orig
	# A missing name too, and from a policy file.
	printf '{"unprotect": ["%s/.mcp.json"]}\n' "$WS" >"$T/p.json"
	wp --policy "$T/p.json" -- write "$WS/.mcp.json" '{}'
	expect_ok
	assert_content "$WS/.mcp.json" '{}'
}

t_reports_carry_the_reason() {
	mkdir -p "$WS/.vscode"
	w --json -- sh -c 'echo x >.vscode/tasks.json; echo y >.mcp.json; sleep 1'
	grep -q '"target":"'"$WS"'/.vscode/tasks.json","reason":"autorun: editor tasks"' "$T/.run/stdout" ||
		grep -q '"target":"'"$WS"'/.mcp.json","reason":"autorun: agent config"' "$T/.run/stdout" ||
		fail "no denial with its reason"
	"$WARD" policy show >"$T/show" || fail "policy show failed"
	for r in "autorun: editor tasks" "autorun: agent config" "autorun: shell startup" \
		"autorun: git config" "autorun: git submodules"; do
		grep -q "\"reason\": \"$r\"" "$T/show" || fail "policy show lacks '$r'"
	done
	grep -q '"runs": "an editor opening this folder' "$T/show" || fail "policy show lacks what runs it"
	grep -q '"watched": \[' "$T/show" || fail "policy show lacks the watched directories"
}

t_approval_offers_the_path() {
	need_cmd python3
	export XDG_STATE_HOME=$T/state XDG_CONFIG_HOME=$T/config
	mkdir -p "$WS/.vscode"
	LAST_CMD="ward run -a on-request (keys y)"
	timeout -k 3 60 python3 "$ASK" --keys y -- "$WARD" run -a on-request -- \
		sh -c 'echo "{}" >.vscode/settings.json' >"$T/.run/stdout" 2>"$T/.run/stderr"
	WRC=$?
	expect_rc 0
	assert_stdout_has "with that path writable, this once?"
	assert_stdout_has "writable   $WS/.vscode"
	assert_stdout_has "autorun: editor tasks"
	assert_content "$WS/.vscode/settings.json" '{}'
	# Declined: the refusal stands.
	timeout -k 3 60 python3 "$ASK" --keys n -- "$WARD" run -a on-request -- \
		sh -c 'echo "{}" >.vscode/tasks.json' >"$T/.run/stdout" 2>"$T/.run/stderr"
	WRC=$?
	[ "$WRC" != 0 ] || fail "the declined run succeeded"
	assert_absent "$WS/.vscode/tasks.json"
}

t_a_read_only_parent_does_not_keep_a_plant() {
	# Prepared deep down in a directory made read-only (only root could unlink
	# in it), its writable parent renamed into place: the guard opens it up.
	stopped "$WS/Y/X/.bashrc" sh -c \
		'mkdir -p d/d/P/X && echo evil >d/d/P/X/.bashrc && chmod 555 d/d/P/X && mv d/d/P Y; sleep 1'
	assert_absent "$WS/Y/X/.bashrc"
	[ "$(stat -c %a "$WS/Y/X")" = 555 ] || fail "the directory's mode was not given back"
	# The planted directory itself left mode 0: emptied and removed all the same.
	stopped "$WS/V/.vscode" sh -c \
		'mkdir -p f/f/P/.vscode && echo x >f/f/P/.vscode/tasks.json && chmod 0 f/f/P/.vscode && mv f/f/P V; sleep 1'
}

t_a_hard_link_does_not_keep_hold() {
	# Mounted read-only, .bashrc cannot be linked (EXDEV); in the fallback it
	# can, and the link stays: the protected name must not be that inode any more.
	printf 'orig\n' >"$WS/.bashrc"
	w -- sh -c 'ln .bashrc x; sleep 1'
	assert_content "$WS/.bashrc" orig
	if [ -e "$WS/x" ] && [ "$(stat -c %i "$WS/x")" = "$(stat -c %i "$WS/.bashrc")" ]; then
		fail "a link made in the sandbox is still the protected file"
	fi
}

t_hostile_names_are_shown_escaped() {
	local e
	e=$(printf 'x\033]0;PWNED\007\033[2J')
	w -- sh -c "mkdir '$e' && mkdir '$e/.vscode'; sleep 1"
	[ "$WRC" != 0 ] && [ "$WRC" != 125 ] || fail "expected the run to be stopped, got exit $WRC"
	assert_stderr_has 'x\x1b]0;PWNED\x07\x1b[2J/.vscode'
	! grep -q "$(printf '\033')" "$T/.run/stderr" || fail "an escape sequence reached stderr"
	# Not UTF-8: policy show still gives the path (its bytes escaped), never an entry without one.
	mkdir -p "$WS/$(printf 'bad\377')/.claude"
	"$WARD" policy show >"$T/show" || fail "policy show failed"
	grep -q '"path": "'"$WS"'/bad\\\\xff/.claude"' "$T/show" || fail "policy show lacks the path: $(grep -c bad "$T/show")"
}

t_approval_lifts_only_what_it_shows() {
	need_cmd python3
	export XDG_STATE_HOME=$T/state XDG_CONFIG_HOME=$T/config
	git init -q "$WS" && mkdir -p "$WS/a/b"
	# The guard names a planted .vscode by its watched directory's old path
	# (a/b, renamed to c); a/b is left a link that, through node_modules/x/.vscode
	# (never scanned), leads to the workspace itself. Lifting "a/b/.vscode" would
	# lift everything: it is not offered; c/.vscode, which names itself, is.
	cat >"$T/attack.sh" <<'EOS'
if [ ! -e .round1 ]; then
	touch .round1
	mkdir -p node_modules/x && ln -s ../../.. node_modules/x/.vscode
	mv a/b c && ln -s ../node_modules/x a/b
	mkdir c/.vscode
	sleep 2
else
	echo evil >.git/hooks/pre-commit
fi
EOS
	LAST_CMD="ward run -a on-request (keys y n)"
	timeout -k 3 60 python3 "$ASK" --keys yn -- "$WARD" run -a on-request -- sh "$T/attack.sh" \
		>"$T/.run/stdout" 2>"$T/.run/stderr"
	WRC=$?
	! grep -q "writable   $WS/a/b/.vscode" "$T/.run/stdout" || fail "a path through a link was offered"
	# The link a/b is followed (where it leads is looked into as a/b): the
	# .vscode there may stop the run first, never offered (it names W).
	grep -q -F "writable   $WS/c/.vscode" "$T/.run/stdout" ||
		grep -q -F "protected path '$WS/node_modules/x/.vscode'" "$T/.run/stdout" ||
		fail "neither c/.vscode offered nor the linked .vscode stopped the run"
	assert_absent "$WS/.git/hooks/pre-commit"
}

t_bounds_fail_closed() {
	# More new directories where names matter than the guard watches: the run stops.
	w -- sh -c 'mkdir lots && cd lots && seq 1 8300 | xargs mkdir; sleep 1'
	[ "$WRC" != 0 ] && [ "$WRC" != 125 ] || fail "expected the run to be stopped, got exit $WRC"
	assert_stderr_has "autorun: guard limit"
	rm -rf "$WS/lots"
	# More directories than the launch scan reads: said, and the root's names still protected.
	mkdir "$WS/wide" && (cd "$WS/wide" && seq 1 4200 | xargs mkdir)
	wp -- write "$WS/.mcp.json" evil
	assert_stderr_has "warning: the scan for autorun names stopped at a bound"
	guard_stopped "$WS/.mcp.json"
	assert_absent "$WS/.mcp.json"
	# The directories the scan did not read (the last of wide's, in the order
	# the scan reads them) are watched all the same, and so is a .config in one
	# (the way to .config/fish); level 1 was read whole.
	local last prev
	last=$(cd "$WS/wide" && python3 -c 'import os; print([e.name for e in os.scandir(".")][-1])')
	prev=$(cd "$WS/wide" && python3 -c 'import os; print([e.name for e in os.scandir(".")][-2])')
	mkdir "$WS/wide/$prev/.config"
	"$WARD" policy show >"$T/show" || fail "policy show failed"
	grep -q '"depth_complete": 1,' "$T/show" || fail "policy show: $(grep depth_complete "$T/show")"
	grep -q '"unread": [1-9]' "$T/show" || fail "policy show: no unread directories"
	stopped "$WS/wide/$last/.vscode" sh -c "mkdir wide/$last/.vscode && echo evil >wide/$last/.vscode/tasks.json"
	stopped "$WS/wide/$prev/.config/fish" sh -c "mkdir wide/$prev/.config/fish && echo evil >wide/$prev/.config/fish/config.fish"
	rm -rf "$WS/wide"
	# Past the bounds, a directory with subdirectories that matter cannot be
	# covered by a watch: the run is refused before the command starts, and
	# --unprotect of the big subtree lets it run.
	(cd "$WS" && seq 1 4200 | sed 's/^/d/' | xargs mkdir)
	w -- sh -c 'echo ran >ran'
	[ "$WRC" = 125 ] || fail "expected 125, got $WRC"
	assert_stderr_has "the autorun scan reached its bounds"
	assert_stderr_has "--unprotect"
	assert_absent "$WS/ran"
	w --unprotect "$WS" -- sh -c 'echo ran >ran'
	[ "$WRC" = 0 ] || fail "with --unprotect: exit $WRC"
}

t_an_unreadable_directory_does_not_hide() {
	# Mode 0300 (writable and searchable, not readable) kept the scan and the
	# guard out of a directory of ward's own user: they open it up instead.
	# At launch: the .vscode inside is found, read-only.
	mkdir -p "$WS/a/X/.vscode"
	echo orig >"$WS/a/X/.vscode/tasks.json"
	chmod 300 "$WS/a/X"
	refused "$WS/a/X/.vscode/tasks.json" write evil
	chmod 700 "$WS/a/X"
	grep -q orig "$WS/a/X/.vscode/tasks.json" || fail "tasks.json was changed"
	# While the command runs: a directory made 0300 out of sight (node_modules
	# is never looked into) and renamed in is looked into all the same.
	stopped "$WS/P/Y/.mcp.json" sh -c 'mkdir -p node_modules/P/Y && echo {} >node_modules/P/Y/.mcp.json && chmod 300 node_modules/P/Y && mv node_modules/P P; sleep 1'
}

t_a_renamed_directory_is_known_by_its_new_path() {
	mkdir -p "$WS/a/b" "$WS/x/y" "$WS/p/q"
	# --unprotect W/a/b/.vscode lifts that path, not a .vscode in a/b moved to c.
	w --unprotect "$WS/a/b/.vscode" -- sh -c 'mv a/b c && sleep 0.5 && mkdir c/.vscode && echo evil >c/.vscode/tasks.json; sleep 1'
	guard_stopped "$WS/c/.vscode"
	assert_absent "$WS/c/.vscode"
	# The denial names where the plant is, not where its directory was.
	stopped "$WS/z/.vscode" sh -c 'mv x/y z && mkdir z/.vscode; sleep 1'
	! grep -q "x/y/.vscode" "$T/.run/stderr" || fail "the denial names the old path"
	# A watched directory beneath the renamed one follows it.
	mkdir -p "$WS/m/n"
	stopped "$WS/k/n/.vscode" sh -c 'mv m k && mkdir k/n/.vscode; sleep 1'
	! grep -q "m/n/.vscode" "$T/.run/stderr" || fail "the denial names the old path"
	# Two watched directories swapped (RENAME_EXCHANGE): s1/t is the one that was s2/t.
	mkdir -p "$WS/s1/t" "$WS/s2/t"
	touch "$WS/s1/t/one"
	w --unprotect "$WS/s2/t/.vscode" -- python3 -c '
import ctypes, os, time
libc = ctypes.CDLL(None, use_errno=True)
if libc.syscall(316, -100, b"s1/t", -100, b"s2/t", 2) != 0:
    raise SystemExit("renameat2: %d" % ctypes.get_errno())
time.sleep(0.3)
os.mkdir("s1/t/.vscode")
time.sleep(1)'
	guard_stopped "$WS/s1/t/.vscode"
	[ -e "$WS/s2/t/one" ] || fail "the exchange did not happen"
	# A plant moved away right after it was made is still found and removed.
	mkdir -p "$WS/u/v"
	w -- sh -c 'mkdir u/v/.vscode && mv u/v u/w; sleep 1'
	[ "$WRC" != 0 ] || fail "expected the run to be stopped"
	assert_absent "$WS/u/v/.vscode"
	assert_absent "$WS/u/w/.vscode"
	# Out of sight (node_modules) and back: the .vscode it brings back is found.
	stopped "$WS/r/.vscode" sh -c 'mkdir node_modules && mv p/q node_modules/ && mkdir node_modules/q/.vscode && sleep 0.3 && mv node_modules/q r; sleep 1'
}

# ------------------------------------------------------------------ the scan cache

cache_dir() { echo "${XDG_CACHE_HOME:-$HOME/.cache}/ward"; }

# Nine directories within two levels (a cache file of their own), settled (a
# directory changed within the last second is not trusted), and cached by a
# first launch: the second is answered by the file for N of them (9).
cached_tree() {
	local d n=${1:-9}
	# The cache believes only filesystems whose ctime it can trust (scan-cache.c).
	case $(stat -f -c %T "$WS") in
	ext2/ext3 | xfs | btrfs | tmpfs) ;;
	*) skip_env "the workspace's filesystem ($(stat -f -c %T "$WS")) is not one the scan cache trusts" ;;
	esac
	for d in a b c d; do
		mkdir -p "$WS/$d/x"
		: >"$WS/$d/f"
	done
	sleep 1.1
	"$WARD" policy show >/dev/null || fail "policy show failed"
	"$WARD" policy show >"$T/show" || fail "policy show failed"
	grep -q "\"cached\": $n," "$T/show" ||
		fail "the second launch was not answered by the cache: $(grep '"cached"' "$T/show")"
}

t_cache_a_name_planted_after_a_cached_run() {
	cached_tree
	mkdir -p "$WS/a/x/.vscode"
	printf 'orig\n' >"$WS/a/x/.vscode/tasks.json"
	printf 'orig\n' >"$WS/b/.mcp.json"
	refused "$WS/a/x/.vscode/tasks.json" append evil
	assert_content "$WS/a/x/.vscode/tasks.json" orig
	refused "$WS/b/.mcp.json" append evil
	assert_content "$WS/b/.mcp.json" orig
	# Where the cache answered, missing names are watched as ever.
	stopped "$WS/c/x/.claude" sh -c "mkdir '$WS/c/x/.claude' && echo evil >'$WS/c/x/.claude/s'"
	# A directory made on the host since the cached run is read and watched.
	mkdir -p "$WS/e/y"
	stopped "$WS/e/y/.idea" sh -c "mkdir '$WS/e/y/.idea'; sleep 1"
}

t_cache_a_forged_or_damaged_file_changes_nothing() {
	local f
	need_cmd python3
	cached_tree
	mkdir -p "$WS/a/x/.vscode"
	printf 'orig\n' >"$WS/a/x/.vscode/tasks.json"
	# What a command able to write the file would do (in the fallback nothing in a
	# writable root is read-only): a/x's record given a/x's ctime of now and its
	# listing of before, under a code made without ward's key.
	python3 - "$(cache_dir)" "$WS/a/x" <<'EOF' || fail "cannot forge the cache file"
import glob, os, struct, sys
st = os.stat(sys.argv[2])
found = False
for f in glob.glob(sys.argv[1] + "/scan-*"):
    b = bytearray(open(f, "rb").read())
    off = 40
    while off + 40 <= len(b):
        ino, = struct.unpack_from("=Q", b, off + 8)
        rlen, = struct.unpack_from("=I", b, off + 36)
        if ino == st.st_ino:
            struct.pack_into("=qI", b, off + 16, st.st_ctime_ns // 10**9, st.st_ctime_ns % 10**9)
            found = True
        off += 40 + ((rlen + 7) & ~7)
    open(f, "wb").write(b)
sys.exit(0 if found else 1)
EOF
	refused "$WS/a/x/.vscode/tasks.json" append evil
	assert_content "$WS/a/x/.vscode/tasks.json" orig
	# Garbage, and nothing.
	for f in "$(cache_dir)"/scan-*; do
		[ -f "$f" ] && head -c 4096 /dev/urandom >"$f"
	done
	refused "$WS/a/x/.vscode/tasks.json" append evil
	assert_content "$WS/a/x/.vscode/tasks.json" orig
	for f in "$(cache_dir)"/scan-*; do
		[ -f "$f" ] && : >"$f"
	done
	refused "$WS/a/x/.vscode/tasks.json" append evil
	assert_content "$WS/a/x/.vscode/tasks.json" orig
}

t_cache_directory_in_a_root_is_read_only() {
	local l
	export XDG_CACHE_HOME=$WS/.cache
	# Its directory is in the tree, and written by the first launch.
	mkdir -p "$WS/.cache/ward"
	cached_tree 10
	ls "$WS/.cache/ward/"scan-* >/dev/null 2>&1 || fail "no cache file in $WS/.cache/ward"
	wp -- write "$WS/.cache/ward/planted" x
	l=$(probe_line write) || fail "the probe did not run"
	if [[ $l == "write: ok"* ]]; then
		# Only without namespaces, where nothing in a root can be read-only: the
		# files are believed for their code, not their place (the case above).
		grep -q "user namespaces are unavailable" "$T/.run/stderr" ||
			fail "ward's own directory was writable in the sandbox"
	else
		expect_denied write EROFS
		assert_absent "$WS/.cache/ward/planted"
	fi
	"$WARD" policy show >"$T/show" || fail "policy show failed"
	grep -q "\"reason\": \"ward's own\"" "$T/show" || fail "policy show lacks ward's own directory"
}

t_watches_added_while_the_sandbox_is_built() {
	local i
	# Forty directories and more: their watches are added after the clone, and
	# the command starts only once they are all there.
	for i in $(seq 1 40); do
		mkdir -p "$WS/d$i/e"
	done
	stopped "$WS/d37/e/.vscode" sh -c 'mkdir d37/e/.vscode && echo evil >d37/e/.vscode/tasks.json'
	stopped "$WS/d2/.mcp.json" sh -c 'echo evil >d2/.mcp.json'
}

t_symlinked_parents() {
	local h=$WS
	# .local holds ward's own state: it is there at the start, as in a used home.
	mkdir -p "$h/.config" "$h/.local/state"
	# A link made where names go on beneath it is refused with their reason, and goes.
	HOME=$h stopped "$h/.config/systemd" sh -c \
		'mkdir -p x/user && ln -s ../x .config/systemd && echo evil >x/user/e.service; sleep 1'
	HOME=$h stopped "$h/.local/share" sh -c \
		'mkdir -p y/applications && ln -s ../y .local/share && echo evil >y/applications/e.desktop; sleep 1'
	HOME=$h stopped "$h/.cargo" sh -c 'mkdir z && ln -s z .cargo && echo evil >z/config.toml; sleep 1'
	grep -q -F "autorun: cargo config" "$T/.run/stderr" || fail "stderr gives not the cargo reason"
	rm -rf "$h/x" "$h/y" "$h/z"
	# A link at level 1 to a deep directory: where it leads is looked into as if it stood there.
	mkdir -p "$WS/d/d/d/p"
	stopped "$WS/d/d/d/p/.vscode" sh -c \
		'ln -s d/d/d/p proj && mkdir proj/.vscode && echo evil >proj/.vscode/tasks.json; sleep 1'
	rm -f "$WS/proj"
	# A stow-style .config, a link to a dotfiles repository at the start: its
	# places are kept where it leads, the rest stays writable.
	rm -rf "$h/.config"
	mkdir -p "$h/dotfiles/config/fish" "$h/dotfiles/config/other"
	printf 'orig\n' >"$h/dotfiles/config/fish/config.fish"
	ln -s dotfiles/config "$h/.config"
	HOME=$h w -- sh -c 'echo ok >.config/other/a && mkdir .config/new'
	expect_rc 0
	assert_content "$h/dotfiles/config/other/a" ok
	HOME=$h refused "$h/dotfiles/config/fish/config.fish" write evil
	assert_content "$h/dotfiles/config/fish/config.fish" orig
	HOME=$h stopped "$h/dotfiles/config/systemd/user" sh -c \
		'mkdir -p .config/systemd/user && echo evil >.config/systemd/user/e.service; sleep 1'
	# Pointed elsewhere by the command: refused, and the new link goes.
	HOME=$h stopped "$h/.config" sh -c 'mkdir -p c/autostart && ln -sfn c .config; sleep 1'
	[ "$(readlink "$h/.config")" = dotfiles/config ] || [ ! -e "$h/.config" ] ||
		fail ".config leads to $(readlink "$h/.config")"
}

tcase "existing autorun names of every class, at the root and two levels down, are read-only" \
	t_existing_classes_at_the_root_and_two_levels_down
tcase "missing autorun names of every class, at the root and two levels down, stop the run" \
	t_missing_classes_at_the_root_and_two_levels_down
tcase "directories made or moved in during the run are followed" t_new_directories_are_followed
tcase "deeper than two levels and package trees are not protected" \
	t_deeper_and_package_trees_are_not_protected
tcase "a home in the workspace keeps ssh, services, autostart and credentials" \
	t_a_home_inside_the_workspace
tcase "a home's editor, shell, session, service and build tool places" t_more_home_places
tcase "a fresh home's first run: what ward makes for itself is watched" t_a_fresh_homes_first_run
tcase "hook runners' configuration (lefthook, pre-commit) at a repository's top" t_hook_runner_configs
tcase "a workspace inside the home's places keeps them" t_a_workspace_inside_the_homes_places
tcase "repositories of their own one and two levels down keep hooks and config" t_nested_repositories
tcase "directories of PATH inside the workspace, existing and not" t_path_directories
tcase "sources, builds, git keep working" t_ordinary_work_goes_on
tcase "npm install of a local tarball and directory" t_npm_install_of_a_local_package
tcase "--unprotect lifts one entry" t_unprotect_lifts_one_entry
tcase "denials and policy show carry the reason" t_reports_carry_the_reason
tcase "an approval question offers the refused path" t_approval_offers_the_path
tcase "a planted name in a read-only directory is removed all the same" \
	t_a_read_only_parent_does_not_keep_a_plant
tcase "a hard link made to a protected file does not stay it" t_a_hard_link_does_not_keep_hold
tcase "names a command chose are escaped in messages and policy show" t_hostile_names_are_shown_escaped
tcase "an approval lifts what it shows, never where a link leads" t_approval_lifts_only_what_it_shows
tcase "past the guard's and the scan's bounds: stopped, or said" t_bounds_fail_closed
tcase "a directory made unreadable (0300) hides nothing" t_an_unreadable_directory_does_not_hide
tcase "a renamed directory is known by its new path" t_a_renamed_directory_is_known_by_its_new_path
tcase "a name planted after a run the scan cache answered is protected" \
	t_cache_a_name_planted_after_a_cached_run
tcase "a forged or damaged scan cache file changes nothing" \
	t_cache_a_forged_or_damaged_file_changes_nothing
tcase "the scan cache's directory in a root is read-only" t_cache_directory_in_a_root_is_read_only
tcase "symlinks where autorun names go on: made ones refused, existing ones followed" \
	t_symlinked_parents
tcase "many watches, added while the sandbox is built, are there before the command" \
	t_watches_added_while_the_sandbox_is_built
finish
