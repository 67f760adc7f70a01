#!/usr/bin/env bash
# Installs what Touchgate needs to build and test on Debian 12 (bookworm), then checks
# that a Swift 6 toolchain is on PATH. Safe to run again: it installs only what is missing.
# With --build, only what builds it (and its Debian packages), none of the tests' tools.
set -euo pipefail

# What builds Touchgate and its Debian packages (`scripts/setup.sh --build` installs only these).
build=(
  pkg-config libfprint-2-dev libglib2.0-dev libsodium-dev libsqlite3-dev zlib1g-dev make libgmp-dev nettle-dev  # build
  libpwquality-dev cracklib-runtime                                                     # passphrase strength
  man-db groff-base                                                                    # the man pages (make install renders them)
  gcc libpam0g-dev                                                                     # the PAM module and the security-key provider
  dpkg-dev debhelper                                                                   # make deb
  libtss2-dev                                                                          # the TPM binding (tpm2-tss headers; the libraries are loaded at run time)
)
# What the tests use besides.
tests=(
  umockdev udev systemd util-linux mount bsdutils sqlite3                             # tests: replays, udev rules, tampering, daemon units (systemd-analyze, systemd-socket-activate)
  fprintd python3-dbusmock dbus-daemon libglib2.0-bin                                 # tests: the real fprintd on a private bus
  libpam-modules db-util pamtester sudo                                               # tests: real PAM stacks (pam_userdb, pamtester, sudo)
  polkitd pkexec openssl                                                              # tests: pkexec through Debian's polkitd and pkttyagent (openssl: the test's password hashes)
  gnome-keyring libpam-gnome-keyring                                                  # tests: the authtok hand-off unlocks a real keyring
  openssh-client openssh-server git python3 gnupg pass pinentry-tty python3-cryptography # tests: the helpers under ssh-agent, touchgate agent under sshd, git over HTTP, gpg-agent
  libpq5 postgresql                                                                   # fleet collection (libpq, loaded when shipping); tests: a real PostgreSQL 15 server
  libsecret-tools python3-secretstorage python3-keyring libsecret-1-dev                # tests: Secret Service clients (secret-tool, secretstorage, keyring, git-credential-libsecret built from git's contrib)
  lintian debootstrap                                                                 # tests: the packages checked, and installed into a debootstrapped Debian root
  swtpm swtpm-tools tpm2-tools libtss2-esys-3.0.2-0 libtss2-tcti-swtpm0               # tests: the TPM binding against swtpm on a Unix socket
  python3-venv python3-pip                                                            # tests: the MCP Python SDK in .build-python (below), the client of touchgate mcp
  libfido2-dev fido2-tools pkg-config                                                 # tests: libfido2's own client (a harness through its I/O hooks, fido2-token) against the passkey authenticator
  qemu-system-x86 e2fsprogs                                                           # tests: a Debian VM with /dev/uhid (scripts/vm.sh), for the passkey device under libfido2's tools
)
packages=("${build[@]}" "${tests[@]}")
# Run (not sourced by test.sh or quickstart.sh) as `scripts/setup.sh --build`: the build's only.
if [ "${BASH_SOURCE[0]}" = "$0" ] && [ "${1:-}" = "--build" ]; then
  packages=("${build[@]}")
fi

missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done

if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}" >&2
  if [ "$(id -u)" -eq 0 ]; then sudo=(); else sudo=(sudo); fi
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

if ! command -v swift >/dev/null 2>&1; then
  for candidate in /opt/swift/usr/bin /usr/share/swift/usr/bin; do
    [ -x "$candidate/swift" ] && export PATH="$candidate:$PATH" && break
  done
fi
if ! command -v swift >/dev/null 2>&1; then
  echo "setup: no Swift toolchain found. Install Swift 6 for Debian 12 from swift.org and put its usr/bin on PATH." >&2
  exit 1
fi
version=$(swift --version 2>/dev/null | grep -oE 'Swift version [0-9]+' | grep -oE '[0-9]+$' || echo 0)
if [ "$version" -lt 6 ]; then
  echo "setup: Swift 6 or later is needed; found: $(swift --version 2>&1 | head -1)" >&2
  exit 1
fi
