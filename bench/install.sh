#!/usr/bin/env bash
# Installed size (`BENCH_ONLY=install make bench`, or bench/install.sh [DEB_DIR]): what each
# package installs (its Installed-Size, as dpkg-deb reads it from the .deb `make deb` makes)
# beside its peers in Debian's archive (fprintd and its PAM module; gnome-keyring, the desktop's
# keyring; pass), as apt's package lists give theirs. DEB_DIR holds the .deb files; without
# it `make deb` makes them into a temporary directory (a release build: minutes).
#
# Environment:
#   BENCH_OUTPUT=BENCHMARKS.md where the section is written (replacing an earlier "## 13. Installed size")
set -euo pipefail
export LC_ALL=C
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
output=${BENCH_OUTPUT:-$root/BENCHMARKS.md}
say() { printf 'bench install: %s\n' "$*" >&2; }
# shellcheck source=bench/section.sh
source "$root/bench/section.sh"
for tool in dpkg-deb apt-cache awk; do
  command -v "$tool" >/dev/null || { say "$tool is missing: apt-get install dpkg apt gawk"; exit 1; }
done

work=$(mktemp -d /tmp/touchgate-install-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
debs=${1:-}
if [ -z "$debs" ]; then
  say "making the packages (make deb)"
  make -C "$root" deb DEBOUT="$work/debs" >&2
  debs=$work/debs
fi

# KiB, as dpkg counts Installed-Size.
ours() { dpkg-deb -f "$(ls "$debs"/"$1"_*.deb | head -1)" Installed-Size; }
archive() { apt-cache show --no-all-versions "$1" 2>/dev/null | awk '/^Installed-Size:/ { print $2; exit }'; }
mib() { awk -v k="$1" 'BEGIN { if (k == "") print "?"; else if (k < 1024) printf "%d KiB", k; else printf "%.1f MiB", k / 1024 }'; }

machine=0
rows=()
for package in touchgate touchgated libpam-touchgate touchgate-collector; do
  size=$(ours "$package")
  [ "$package" = touchgate-collector ] || machine=$((machine + size))
  rows+=("| \`$package\` | $(mib "$size") |")
done
peers=()
for package in fprintd libpam-fprintd libfprint-2-2 gnome-keyring libsecret-1-0 pass; do
  peers+=("| \`$package\` | $(mib "$(archive "$package")") |")
done
commit=$(git -C "$root" rev-parse --short HEAD)
version=$(dpkg-deb -f "$(ls "$debs"/touchgate_*.deb | head -1)" Version)

section=$work/section.md
{
  echo "## 13. Installed size"
  echo
  echo "Measured on its own (\`BENCH_ONLY=install make bench\`) on $(date -u '+%Y-%m-%d %H:%M') UTC, commit $commit,"
  echo "packages $version: Installed-Size of each .deb (dpkg-deb), the peers' from this machine's apt lists"
  echo "(Debian's packages of the same release). What a package pulls in beside itself (libfprint, GLib,"
  echo "libsodium and SQLite for ours; libfprint for fprintd) is not counted, on either side."
  echo
  echo "| package | installed |"
  echo "| --- | --- |"
  printf '%s\n' "${rows[@]}"
  echo "| **a machine with the daemon** (\`touchgate\`, \`touchgated\`, \`libpam-touchgate\`) | **$(mib "$machine")** |"
  echo
  echo "| peer | installed |"
  echo "| --- | --- |"
  printf '%s\n' "${peers[@]}"
  echo
  echo "**Bound:** the Swift runtime, linked statically into each program: \`touchgate\` holds two copies (the"
  echo "front, one static executable that starts in about a millisecond, and touchgate-cli, of which"
  echo "touchgate-client and touchgated are names; section 6). fprintd and gnome-keyring are C over GLib,"
  echo "whose runtime is shared with the rest of the desktop."
} >"$section"
cat "$section"
replace_section 13 "$section" "$output"
say "wrote section 13 of $output"
