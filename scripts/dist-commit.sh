#!/bin/sh
# SPDX-License-Identifier: MIT
#
# meson dist runs this in the tree it is about to pack (MESON_DIST_ROOT): it
# writes the commit the tarball was made from into .ward-commit, which a build
# from the tarball (no .git there) uses for `ward --version`.
set -eu
git -C "$MESON_SOURCE_ROOT" rev-parse --short=12 HEAD >"$MESON_DIST_ROOT/.ward-commit"
