#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# shellcheck disable=SC2317,SC2119,SC2016
#
# Protected paths inside writable roots: .git/hooks, .git/config, the real git
# directory of a linked worktree, .codex, .agents, .ward. They cannot be
# written, renamed away, replaced, unmounted, or created when missing, while
# git itself keeps working: add, commit, branch, stash, rebase.
. "$(dirname "$0")/lib.sh"

need_git() { need_cmd git; }

t_hook_write() {
	need_git
	make_repo "$WS"
	local cfg
	cfg=$(sha256sum <"$WS/.git/config")
	wp -- write "$WS/.git/hooks/pre-commit" '#!/bin/sh'
	expect_denied write
	wp -- write "$WS/.git/hooks/pre-commit.sample" evil
	expect_denied write
	wp -- append "$WS/.git/config" '[core]'
	expect_denied append
	wp -- unlink "$WS/.git/config"
	expect_denied unlink
	wp -- rename "$WS/.git/config" "$WS/.git/config.old"
	expect_denied rename
	wp -- chmod "$WS/.git/hooks" 0777
	expect_denied chmod
	w -- git config core.hooksPath /tmp
	[ "$WRC" != 0 ] || fail "git config succeeded"
	w -- git config core.fsmonitor 'touch /tmp/pwned'
	[ "$WRC" != 0 ] || fail "git config succeeded"
	assert_absent "$WS/.git/hooks/pre-commit" "$WS/.git/config.old"
	assert_eq "$(sha256sum <"$WS/.git/config")" "$cfg" ".git/config checksum"
	grep -q evil "$WS/.git/hooks/pre-commit.sample" && fail "the hook sample was overwritten"
	assert_no_match "$(cat "$WS/.git/config")" "hooksPath|fsmonitor" ".git/config"
}

t_rename_onto_hooks() {
	need_git
	make_repo "$WS"
	printf '#!/bin/sh\necho evil\n' >"$WS/evil"
	chmod +x "$WS/evil"
	mkdir "$WS/evil-hooks"
	cp "$WS/evil" "$WS/evil-hooks/pre-commit"
	wp -- rename "$WS/evil" "$WS/.git/hooks/pre-commit"
	expect_denied rename
	wp -- rename "$WS/evil-hooks" "$WS/.git/hooks"
	expect_denied rename
	wp -- rename "$WS/evil-hooks" "$WS/.git/hooks" exchange
	expect_denied rename
	wp -- rename "$WS/evil" "$WS/.git/config"
	expect_denied rename
	wp -- link "$WS/evil" "$WS/.git/hooks/post-checkout"
	expect_denied link
	wp -- symlink "$WS/evil" "$WS/.git/hooks/post-merge"
	expect_denied symlink
	assert_absent "$WS/.git/hooks/pre-commit" "$WS/.git/hooks/post-checkout" "$WS/.git/hooks/post-merge"
	assert_exists "$WS/evil" "$WS/evil-hooks/pre-commit"
	grep -q evil "$WS/.git/config" && fail ".git/config was replaced"
	return 0
}

t_move_git_away() {
	need_git
	make_repo "$WS"
	local head
	head=$(git -C "$WS" rev-parse HEAD)
	wp -- rename "$WS/.git" "$WS/.git2"
	expect_denied rename
	wp -- rename "$WS/.git/hooks" "$WS/hooks2"
	expect_denied rename
	# The whole attack in a shell: move .git away, recreate it with a hook.
	w -- sh -c 'mv .git .git2; mkdir -p .git/hooks; printf "#!/bin/sh\necho pwned\n" > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit; rm -rf .git/hooks; mv .git/config .git/config.old; echo "[core] hooksPath = /tmp" > .git/config'
	assert_absent "$WS/.git2" "$WS/hooks2" "$WS/.git/config.old"
	[ -d "$WS/.git/hooks" ] || fail ".git/hooks is gone"
	assert_absent "$WS/.git/hooks/pre-commit"
	assert_eq "$(git -C "$WS" rev-parse HEAD)" "$head" "HEAD after the attack"
	assert_no_match "$(cat "$WS/.git/config")" hooksPath ".git/config"
}

t_umount_protected() {
	need_git
	make_repo "$WS"
	wp -- umount "$WS/.git/hooks"
	expect_denied umount
	wp -- umount "$WS/.git/hooks" detach
	expect_denied umount
	wp -- umount "$WS/.git/config" detach
	expect_denied umount
	wp -- remount-rw "$WS/.git/hooks"
	expect_denied remount-rw
	wp -- setattr-rw "$WS/.git/hooks"
	expect_denied setattr-rw
	wp -- mount-tmpfs "$WS/.git/hooks"
	expect_denied mount-tmpfs
	w -- sh -c "umount -l '$WS/.git/hooks' 2>/dev/null; umount '$WS/.git/hooks' 2>/dev/null; '$PROBE' write '$WS/.git/hooks/pre-commit'"
	expect_denied write
	assert_absent "$WS/.git/hooks/pre-commit"
}

t_nested_userns_remount() {
	need_git
	make_repo "$WS"
	printf 'orig\n' >"$OUT/file"
	wp -- userns-remount "$WS/.git/hooks" "$WS/.git/hooks/pre-commit"
	expect_denied userns-remount
	wp -- userns-remount "$OUT" "$OUT/file"
	expect_denied userns-remount
	need_cmd unshare
	w -- unshare -Urm sh -c "mount -o remount,bind,rw '$OUT' && echo escaped > '$OUT/file'"
	[ "$WRC" != 0 ] || fail "unshare -Urm succeeded inside"
	assert_content "$OUT/file" orig
	assert_absent "$WS/.git/hooks/pre-commit"
}

# The run that creates a missing protected path is stopped and the path removed.
expect_guard_tripped() { # expect_guard_tripped PATH
	[ "$WRC" != 0 ] || fail "the run that created $1 succeeded (exit 0)"
	[ "$WRC" != 125 ] || grep -q -i protect "$T/.run/stderr" ||
		fail "ward failed without naming the protected path"
	grep -q -F "$1" "$T/.run/stderr" || fail "stderr does not name $1"
	assert_absent "$1"
}

t_missing_hooks() {
	need_git
	make_repo "$WS"
	rm -rf "$WS/.git/hooks"
	w -- sh -c 'mkdir .git/hooks && printf "#!/bin/sh\necho pwned\n" > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit; sleep 1'
	expect_guard_tripped "$WS/.git/hooks"
	# The same with the probe, in one mkdir.
	wp -- mkdir "$WS/.git/hooks"
	expect_guard_tripped "$WS/.git/hooks"
}

t_missing_agent_dirs() {
	local d
	for d in .codex .agents .ward; do
		w -- sh -c "mkdir $d && echo evil > $d/config.toml; sleep 1"
		expect_guard_tripped "$WS/$d"
		# As a file, and through a rename of something prepared beforehand.
		wp -- write "$WS/$d" evil
		expect_guard_tripped "$WS/$d"
		mkdir -p "$WS/prep"
		w -- sh -c "mv prep $d; sleep 1"
		expect_guard_tripped "$WS/$d"
		mkdir -p "$WS/prep"
	done
	[ -d "$WS/prep" ] || fail "prep was removed"
	rmdir "$WS/prep"
	assert_eq "$(find "$WS" -mindepth 1 | wc -l)" 0 "entries in the workspace"
}

t_existing_agent_dirs() {
	local d
	for d in .codex .agents .ward; do
		mkdir "$WS/$d"
		printf 'orig\n' >"$WS/$d/config.toml"
		wp -- write "$WS/$d/config.toml" evil
		expect_denied write
		wp -- write "$WS/$d/new"
		expect_denied write
		wp -- rename "$WS/$d" "$WS/$d.old"
		expect_denied rename
		assert_content "$WS/$d/config.toml" orig
		assert_absent "$WS/$d/new" "$WS/$d.old"
	done
}

t_protected_in_extra_root() {
	need_git
	make_repo "$T/other"
	wp -w "$T/other" -- write "$T/other/.git/hooks/pre-commit"
	expect_denied write
	wp -w "$T/other" -- write "$T/other/file.txt" changed
	expect_ok
	assert_absent "$T/other/.git/hooks/pre-commit"
	assert_content "$T/other/file.txt" changed
}

t_git_workflow() {
	need_git
	make_repo "$WS"
	local cfg
	cfg=$(sha256sum <"$WS/.git/config")
	w -- sh -ec '
		echo two > two.txt
		git add two.txt
		git commit -q -m two
		git branch feature
		git checkout -q feature
		echo three > three.txt
		git add three.txt
		git commit -q -m three
		git checkout -q -
		echo four > four.txt
		git add four.txt
		git commit -q -m four
		echo dirty >> file.txt
		git stash -q
		git stash pop -q
		git checkout -q file.txt
		git checkout -q feature
		git rebase -q master 2>/dev/null || git rebase -q main
		git log --format=%s
		git status --porcelain
		echo workflow-done'
	expect_rc 0
	assert_stdout_has workflow-done
	assert_eq "$(git -C "$WS" log --format=%s feature | tr '\n' ' ')" "three four two one " "history on the host"
	git -C "$WS" fsck >/dev/null 2>&1 || fail "git fsck failed on the host"
	assert_eq "$(sha256sum <"$WS/.git/config")" "$cfg" ".git/config checksum"
	assert_eq "$(find "$WS/.git/hooks" -type f ! -name '*.sample' | wc -l)" 0 "non-sample hooks"
	# A nested repository made inside works too.
	w -- sh -ec 'git init -q sub && cd sub && echo x > x && git add x && git commit -q -m x && echo nested-done'
	expect_rc 0
	assert_stdout_has nested-done
}

t_git_worktree() {
	need_git
	make_repo "$T/repo"
	git -C "$T/repo" worktree add -q "$WS/wt" -b wt 2>/dev/null || fail "git worktree add"
	local gitdir cfg
	gitdir=$(git -C "$T/repo" rev-parse --absolute-git-dir)
	cfg=$(sha256sum <"$gitdir/config")
	w -C "$WS/wt" -w "$T/repo" -- sh -ec '
		echo wt > wt.txt
		git add wt.txt
		git commit -q -m wt
		git branch wt2
		echo dirty >> file.txt
		git stash -q
		git stash pop -q
		git checkout -q file.txt
		echo worktree-done'
	expect_rc 0
	assert_stdout_has worktree-done
	assert_eq "$(git -C "$T/repo" log --format=%s wt | head -n 1)" wt "commit seen from the main repository"
	# The real git directory's hooks and config, and the .git file, stay read-only.
	wp -C "$WS/wt" -w "$T/repo" -- write "$gitdir/hooks/post-checkout"
	expect_denied write
	wp -C "$WS/wt" -w "$T/repo" -- append "$gitdir/config" '[core]'
	expect_denied append
	wp -C "$WS/wt" -w "$T/repo" -- write "$WS/wt/.git" "gitdir: $OUT"
	expect_denied write
	# Without -w repo, the protected paths of the real git directory are refused as well.
	wp -C "$WS/wt" -- write "$gitdir/hooks/post-checkout"
	expect_denied write
	w -C "$WS/wt" -w "$T/repo" -- git config core.hooksPath /tmp
	[ "$WRC" != 0 ] || fail "git config in the worktree succeeded"
	assert_absent "$gitdir/hooks/post-checkout"
	assert_eq "$(sha256sum <"$gitdir/config")" "$cfg" "config of the real git directory"
	assert_match "$(cat "$WS/wt/.git")" "^gitdir: $gitdir/worktrees/wt" "the worktree's .git file"
}

# git follows $GIT_DIR/commondir in any git directory: pointing it at planted hooks and
# config must not be possible (it is missing in an ordinary repository: guarded).
t_commondir_redirect() {
	need_git
	make_repo "$WS"
	w -- sh -c 'mkdir -p .git/evil/hooks && cp -r .git/objects .git/refs .git/config .git/evil/ &&
		printf "#!/bin/sh\necho pwned > '"$OUT"'/hook-ran\n" > .git/evil/hooks/pre-commit &&
		chmod +x .git/evil/hooks/pre-commit && echo evil > .git/commondir; sleep 1'
	expect_guard_tripped "$WS/.git/commondir"
	git -C "$WS" commit -q --allow-empty -m after >/dev/null 2>&1
	assert_absent "$OUT/hook-ran"
	# Submodules' git directories are protected like the top one.
	mkdir -p "$WS/.git/modules/lib/sub/hooks"
	cp "$WS/.git/HEAD" "$WS/.git/modules/lib/sub/HEAD"
	printf '[core]\n' >"$WS/.git/modules/lib/sub/config"
	wp -- write "$WS/.git/modules/lib/sub/hooks/post-checkout" evil
	expect_denied write
	wp -- append "$WS/.git/modules/lib/sub/config" '[core]'
	expect_denied append
	assert_absent "$WS/.git/modules/lib/sub/hooks/post-checkout"
}

# A read-only bind or a guard holds on to a directory entry: renaming a parent away and
# building a new one in its place must not be possible.
t_parent_rename() {
	mkdir -p "$WS/sub" "$WS/a"
	echo orig >"$WS/sub/file"
	w --protect "$WS/sub/file" -- sh -c 'mv sub sub2; mkdir -p sub; echo evil > sub/file'
	[ "$WRC" != 0 ] || fail "the replacement succeeded"
	assert_content "$WS/sub/file" orig
	assert_absent "$WS/sub2"
	# A missing protected path: its deepest existing parent cannot be moved away either.
	w --protect "$WS/a/secret/f" -- sh -c 'mv a a2; mkdir -p a/secret; echo evil > a/secret/f'
	assert_absent "$WS/a/secret" "$WS/a2"
	# A writable root inside another one (here the workspace inside -w $T).
	need_git
	make_repo "$WS/par/repo"
	w -C "$WS/par/repo" -w "$WS" -- sh -c 'cd ../..; mv par par2 && cp -a par2 par &&
		echo evil > par/repo/.git/hooks/pre-commit'
	[ "$WRC" != 0 ] || fail "moving the parent of a nested root succeeded"
	assert_absent "$WS/par2" "$WS/par/repo/.git/hooks/pre-commit"
}

# Removing what the command created never follows a symlink it planted, and a directory it
# made read-only is still removed (ward is not root everywhere).
t_guard_cleanup_is_safe() {
	need_git
	make_repo "$WS"
	rm -rf "$WS/.git/hooks"
	mkdir -p "$OUT/victim/hooks"
	echo precious >"$OUT/victim/hooks/keep"
	w -- sh -c 'mkdir .git/h && printf "#!/bin/sh\necho pwned\n" > .git/h/pre-commit &&
		chmod +x .git/h/pre-commit && chmod 555 .git/h && mv .git/h .git/hooks; sleep 1'
	expect_guard_tripped "$WS/.git/hooks"
	w -- sh -c "ln -s $OUT/victim/hooks .git/hooks; sleep 1"
	expect_guard_tripped "$WS/.git/hooks"
	assert_content "$OUT/victim/hooks/keep" precious
}

# A FIFO (or device) planted where git metadata is read must not hang later runs.
t_planted_fifo() {
	mkdir "$WS/.git"
	mkfifo "$WS/.git/config" "$WS/.git/commondir"
	printf 'gitdir: %s\n' "$WS/.git" >"$WS/.gitfile"
	w -- true
	expect_rc 0
	LAST_CMD="ward policy show"
	(cd "$WS" && timeout -k 3 20 "$WARD" policy show >"$T/.run/stdout" 2>"$T/.run/stderr")
	WRC=$?
	expect_rc 0
}

# A linked worktree's links in the repository, and a submodule's .git file, cannot be
# pointed at a planted git directory (git would run its config from the host).
t_worktree_and_submodule_links() {
	need_git
	make_repo "$WS/repo"
	git -C "$WS/repo" worktree add -q "$T/wt" -b wt 2>/dev/null || fail "git worktree add"
	wp -C "$WS/repo" -- write "$WS/repo/.git/worktrees/wt/commondir" "$WS/evil"
	expect_denied write
	wp -C "$WS/repo" -- write "$WS/repo/.git/worktrees/wt/config.worktree" '[core]'
	expect_guard_tripped "$WS/repo/.git/worktrees/wt/config.worktree"
	assert_match "$(cat "$WS/repo/.git/worktrees/wt/commondir")" '^\.\./\.\.$' "commondir"
	# A submodule (git's own layout, made by git).
	make_repo "$T/subsrc"
	git -C "$WS/repo" -c protocol.file.allow=always submodule add -q "$T/subsrc" sub >/dev/null 2>&1 ||
		fail "git submodule add"
	local link
	link=$(cat "$WS/repo/sub/.git")
	wp -C "$WS/repo" -- write "$WS/repo/sub/.git" "gitdir: $WS/evil"
	expect_denied write
	wp -C "$WS/repo" -- rename "$WS/repo/sub" "$WS/repo/sub2"
	expect_denied rename
	assert_eq "$(cat "$WS/repo/sub/.git")" "$link" "the submodule's .git file"
	# git keeps working in both.
	w -C "$WS/repo" -- sh -ec 'git status --short >/dev/null; echo x > f2; git add f2; git commit -q -m f2; echo ok'
	expect_rc 0
	assert_stdout_has ok
}

tcase ".git/hooks and .git/config cannot be written, removed or renamed" t_hook_write
tcase "nothing can be renamed, linked or exchanged onto hooks or config" t_rename_onto_hooks
tcase ".git cannot be moved away and recreated" t_move_git_away
tcase "protected mounts cannot be unmounted or remounted" t_umount_protected
tcase "no remount from a nested user namespace" t_nested_userns_remount
tcase "creating a missing .git/hooks stops the run and leaves nothing" t_missing_hooks
tcase "creating missing .codex, .agents, .ward stops the run and leaves nothing" t_missing_agent_dirs
tcase "existing .codex, .agents, .ward are read-only" t_existing_agent_dirs
tcase "protected paths in extra writable roots" t_protected_in_extra_root
tcase "commondir cannot redirect git; submodule git directories are protected" t_commondir_redirect
tcase "parents of protected paths and nested roots cannot be moved away" t_parent_rename
tcase "worktree links and a submodule's .git file cannot be redirected" t_worktree_and_submodule_links
tcase "removing a created protected path is safe and complete" t_guard_cleanup_is_safe
tcase "a FIFO planted as git metadata does not hang ward" t_planted_fifo
tcase "git workflow in a writable repository" t_git_workflow
tcase "git workflow in a linked worktree (-w repo)" t_git_worktree
finish
