#!/usr/bin/env bash
# Sets up touchgated, Touchgate's system daemon, on Debian 12 (bookworm) with systemd:
# builds touchgate and touchgated (release) as you, installs them under PREFIX
# (default /usr/local) as root, creates the touchgated user, and enables and starts
# touchgated.socket (the daemon itself starts at the first request).
#
#   scripts/install-daemon.sh            # run as yourself; asks sudo for the install steps
#   PREFIX=/usr scripts/install-daemon.sh
#
# Safe to run again (after a `git pull`, say): it rebuilds what changed, reinstalls,
# and restarts a running daemon so the new binary serves. Undo: `sudo make uninstall-daemon`.
set -euo pipefail

cd "$(dirname "$0")/.."
prefix=${PREFIX:-/usr/local}

if [ ! -d /run/systemd/system ]; then
  # Nothing here would start the daemon: say exactly what to run instead, installing nothing.
  cat >&2 <<EOF
install-daemon: systemd is not running here (no /run/systemd/system), so nothing was installed.
  Run touchgated yourself, in the foreground, as its own user (touchgated --help says the same):
    make all daemon
    sudo make PREFIX=$prefix install install-daemon
    sudo useradd --system --user-group --no-create-home --shell /usr/sbin/nologin touchgated
    sudo $prefix/sbin/touchgated --user touchgated
  (as root it makes /run/touchgate and /var/lib/touchgate that user's, then runs as that user),
  and give every user TOUCHGATE_SOCKET=/run/touchgate/socket (in /etc/environment), so that
  touchgate finds the daemon and reports it stopped when it is.
EOF
  exit 1
fi
for tool in make swift; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "install-daemon: '$tool' not found: run scripts/setup.sh first (it installs the build packages and checks Swift)." >&2
    exit 1
  fi
done
if [ "$(id -u)" -eq 0 ]; then sudo=(); else sudo=(sudo); fi

# Build as the invoking user: the build directory stays theirs, root only copies.
echo "install-daemon: building touchgate and touchgated (release)" >&2
make PREFIX="$prefix" all daemon

echo "install-daemon: installing under $prefix" >&2
"${sudo[@]}" make PREFIX="$prefix" install install-daemon

# A daemon already running from an earlier install keeps the old binary until restarted.
"${sudo[@]}" systemctl try-restart touchgated.service
"${sudo[@]}" systemctl enable --now touchgated.socket

if ! systemctl is-active --quiet touchgated.socket; then
  echo "install-daemon: touchgated.socket did not start; see: systemctl status touchgated.socket" >&2
  exit 1
fi
echo "install-daemon: touchgated.socket is listening on /run/touchgate/socket." >&2
echo "  Check: touchgate status   (expect 'mode: system (touchgated)')" >&2
echo "  A vault you already have in personal mode: touchgate migrate" >&2
