#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Builds the container image of deploy/Containerfile with podman (or buildah):
#
#   scripts/build-image.sh [TAG [TARGET]]     default: localhost/ward:latest, runtime
#
# The base is a Debian 12 made with debootstrap (scripts/debian-rootfs.sh) and
# imported as localhost/ward-debian:12, so no image registry is needed; with
# WARD_IMAGE_BASE=IMAGE (docker.io/library/debian:12, a mirror's) that one is
# used instead. The commit `ward --version` names is passed in (the image's
# build context has no .git). Needs root for the debootstrap'ed base.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
tag=${1:-localhost/ward:latest}
target=${2:-runtime}
die() {
	echo "build-image: $*" >&2
	exit 1
}

if command -v podman >/dev/null 2>&1; then
	build=(podman build)
elif command -v buildah >/dev/null 2>&1; then
	build=(buildah bud)
else
	die "neither podman nor buildah is installed (Debian: apt-get install podman)"
fi
# crun, podman's default where installed, refuses hosts with a hybrid cgroup layout.
runtime=()
command -v runc >/dev/null 2>&1 && runtime=(--runtime runc)

base=${WARD_IMAGE_BASE:-}
if [ -z "$base" ]; then
	base=localhost/ward-debian:12
	if ! "${build[0]}" inspect "$base" >/dev/null 2>&1; then
		tarball=$(bash "$top/scripts/debian-rootfs.sh") || die "cannot make the Debian 12 base"
		if [ "${build[0]}" = podman ]; then
			podman import "$tarball" "$base" >/dev/null || die "cannot import $tarball as $base"
		else
			ctr=$(buildah from scratch) && buildah add "$ctr" "$tarball" / >/dev/null &&
				buildah commit "$ctr" "$base" >/dev/null && buildah rm "$ctr" >/dev/null ||
				die "cannot import $tarball as $base"
		fi
	fi
fi
commit=$(git -C "$top" rev-parse --short=12 HEAD 2>/dev/null || cat "$top/.ward-commit" 2>/dev/null || echo unknown)
"${build[@]}" "${runtime[@]}" -f "$top/deploy/Containerfile" --target "$target" \
	--build-arg BASE="$base" --build-arg WARD_COMMIT="$commit" -t "$tag" "$top" >&2
echo "$tag"
