#!/usr/bin/env bash
# Sets up a Debian 12 machine and runs every test: policy core, vault and audit, the
# libfprint layer on virtual readers and on umockdev replays of real readers, the udev
# rules, and end-to-end runs of the built `touchgate` binary.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
if [ ! -d ../shared/fixtures ] && [ -z "${TOUCHGATE_FIXTURES:-}" ]; then
  echo "test: fixtures not found at ../shared/fixtures (set TOUCHGATE_FIXTURES to their path)" >&2
  exit 1
fi
# The official MCP Python SDK (PyPI `mcp`), as AI agents' harnesses speak it: the client in
# the tests of `touchgate mcp`, in a virtual environment of the checkout's own.
# python-fido2 2.x (PyPI `fido2`), a FIDO2 client we did not write, drives the passkey
# authenticator in its tests, beside libfido2.
if ! .build-python/bin/python -c 'import mcp, fido2.hid' >/dev/null 2>&1; then
  echo "test: installing the MCP Python SDK and python-fido2 into .build-python" >&2
  /usr/bin/python3 -m venv .build-python
  .build-python/bin/pip install -q 'mcp>=1.20,<3' 'fido2>=2.0,<3'
fi
swift build --build-tests
# Swift Testing starts every test at once by default: on a two-core machine that was
# hundreds of daemons, virtual readers, gpg-agents and PostgreSQL servers at a time, and
# timing-dependent failures in a different suite each run (a virtual finger's scan unmatched
# after its reader timed out, gpg's key generation outliving its timeout). Four at a time
# keeps both cores busy and the whole run as short (docs/TESTING.md).
export SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH="${SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH:-4}"
if [ $# -gt 0 ]; then
  exec swift test --skip-build "$@"
fi
# The whole run's output also goes to a log, and a failed run ends by repeating each
# recorded issue: in a long, interleaved output the tail is all a CI page may show.
log=$(mktemp /tmp/touchgate-test.XXXXXX)
trap 'rm -f "$log"' EXIT
status=0
swift test --skip-build --skip 'DebianPackageTests|PasskeyDeviceTests' 2>&1 | tee "$log" || status=$?
# The passkey device's VMs (qemu's emulation here: both cores for minutes, which made timed
# tests of other suites late) and then the Debian packages, built (a release build) and
# installed into a debootstrapped root and into the VM (docs/TESTING.md): each alone, after
# the rest, so that no timed test runs beside them.
swift test --skip-build --filter PasskeyDeviceTests 2>&1 | tee -a "$log" || status=$?
swift test --skip-build --filter DebianPackageTests 2>&1 | tee -a "$log" || status=$?
if [ "$status" -ne 0 ]; then
  echo
  echo "test: the run failed (exit $status); the issues it recorded, repeated from above:"
  awk '/^✘ .*recorded an issue/ { show = 1; print; next }
       show && /^↳/ { print; next }
       { show = 0 }
       /^✘ Test .* failed after/ { print }' "$log" | head -200
  exit "$status"
fi
