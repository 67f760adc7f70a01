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
swift build --build-tests
if [ $# -gt 0 ]; then
  exec swift test --skip-build "$@"
fi
# The PAM stacks and gpg-agent suites run on their own, after the rest: run beside every
# other suite on a loaded two-core machine, their virtual finger's scans went unmatched
# (PAM) and gpg's key generation outlived its timeout (gpg), while each passes alone; the
# cause is not found yet (README, "Tests").
isolated='PAMTests|PinentryTests'
swift test --skip-build --skip "$isolated"
swift test --skip-build --filter "$isolated"
