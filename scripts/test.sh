#!/usr/bin/env bash
# Runs Vigil's whole test suite on a fresh Debian 12 machine.
# Installs what the tests need (scripts/install-deps.sh); the integration tests start their own
# private PulseAudio servers (null sinks), dbus-daemons and notify sockets in temporary
# directories and stop them again, so nothing on the machine is touched.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh

if [[ -d ../shared/testvectors ]]; then
  echo "vigil: Wycheproof vectors found in ../shared/testvectors"
else
  echo "vigil: ../shared/testvectors is absent: the Wycheproof suite will report itself skipped"
fi

swift build --build-tests 2>&1 | grep -vE '^\[[0-9]+/[0-9]+\] ' || true
swift build --build-tests -q
swift test --skip-build "$@"
