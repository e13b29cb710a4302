#!/bin/sh
# SPDX-License-Identifier: MIT
# meson install step: load ward's AppArmor profile where AppArmor is running.
# A staged install (DESTDIR) or a host without AppArmor only gets the file.
profile=$1
if [ -n "${DESTDIR:-}" ] || [ ! -d /sys/kernel/security/apparmor ]; then
	exit 0
fi
if ! command -v apparmor_parser >/dev/null 2>&1; then
	echo "ward: installed $profile; load it with: sudo apparmor_parser -r $profile" >&2
	exit 0
fi
if [ "$(id -u)" != 0 ]; then
	echo "ward: installed $profile; load it with: sudo apparmor_parser -r $profile" >&2
	exit 0
fi
apparmor_parser -r "$profile" || {
	echo "ward: cannot load $profile (see above); ward falls back without user namespaces until it is loaded" >&2
	exit 0
}
