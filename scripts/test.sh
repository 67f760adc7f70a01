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
swift test --skip-build "$@"
