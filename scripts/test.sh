#!/usr/bin/env bash
# Runs Vigil's whole test suite on a fresh Debian 12 machine.
#
# Installs every package the tests need (scripts/install-deps.sh). The integration tests start
# their own private PulseAudio servers (null sinks), dbus-daemons and notify sockets in temporary
# directories and stop them again, so nothing outside those directories is touched.
# Extra arguments go to `swift test` (for example `--filter VigilCoreTests`).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh

if [[ -d ../shared/testvectors ]]; then
  echo "vigil: Wycheproof vectors found in ../shared/testvectors"
else
  echo "vigil: ../shared/testvectors is absent: the Wycheproof suite reports itself skipped"
fi

# The house style (.swift-format: 4 spaces, 120 columns), checked by the toolchain's own formatter.
# `swift format -i -r Sources Tests Plugins Examples Fuzz Benchmarks Package.swift` fixes what it reports.
echo "vigil: swift format lint --strict"
swift format lint --strict -r Sources Tests Plugins Examples Fuzz Benchmarks Package.swift

# python-tuf for the repository tests' generator and the conformance suite (one venv, under .build/).
scripts/tuf-venv.sh >/dev/null

echo "vigil: building (a first build compiles the dependencies: a few minutes)"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! swift build --build-tests >"$log" 2>&1; then
  grep -E 'error|warning' "$log" | head -50 >&2 || tail -50 "$log" >&2
  echo "vigil: build failed (errors above)" >&2
  exit 1
fi
grep -E 'warning:' "$log" >&2 || true
# Serial on purpose: the integration suites start real PulseAudio servers, dbus-daemons and
# crash-looping workers and check timings (restart backoff, watchdog pings, sink state within 2 s).
# Run in parallel on a two-core machine they starve each other; serially the suite takes about
# two minutes. VIGIL_TEST_PARALLEL=1 runs it in parallel anyway.
parallel=(--no-parallel)
[[ "${VIGIL_TEST_PARALLEL:-0}" == 1 ]] && parallel=()
# The output is kept so a failure is summed up at the end, where a truncated log still shows it.
test_log=$(mktemp)
trap 'rm -f "$log" "$test_log"' EXIT
if ! swift test --skip-build "${parallel[@]}" "$@" 2>&1 | tee "$test_log"; then
  echo "vigil: swift test failed; the failing tests and what they recorded:" >&2
  grep -E '✘|error:|recorded an issue|Fatal error|Test Case .* failed' "$test_log" | head -60 >&2 || true
  exit 1
fi

# The TUF conformance suite against vigil-tuf-client (docs/signing.md#repositories-the-tuf-client).
scripts/tuf-conformance.sh --vigil

# In CI (CI=true), or with VIGIL_TSAN=1: the concurrency suites again under ThreadSanitizer, in
# their own build directory (scripts/sanitize.sh --concurrency; the whole suite under both
# sanitizers is scripts/sanitize.sh all). It prints how long its build and run took.
if [[ "${CI:-}" == true || "${VIGIL_TSAN:-0}" == 1 ]]; then
  start=$SECONDS
  scripts/sanitize.sh thread --concurrency
  echo "vigil: ThreadSanitizer step took $((SECONDS - start))s (build and run)"
fi

# The public API of the library products against the previous release (it says why when it skips:
# no release yet); in CI (CI=true), or with VIGIL_PACKAGE_TEST=1, the release build, the .deb and
# the .deb installed into a clean Debian 12 root (scripts/test-package.sh prints what each part took).
scripts/check-api.sh
if [[ "${CI:-}" == true || "${VIGIL_PACKAGE_TEST:-0}" == 1 ]]; then
  scripts/test-package.sh
fi
