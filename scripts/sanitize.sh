#!/usr/bin/env bash
# Runs Vigil's test suite under ThreadSanitizer and/or AddressSanitizer.
#
#   scripts/sanitize.sh [thread|address|all] [--concurrency] [--target NAME]… [--filter REGEX]… [--skip REGEX]…
#
# Without --concurrency or --filter the whole suite runs, one `swift test` per test target (all
# of them, or those named with --target), so a crash or a hang in one target loses nothing of
# the others, and the summary gives each target's time, exit status and report count.
# --concurrency runs only the suites that exercise Vigil's own threads and actors (the supervisor
# engine, the host runtime's keepAlive/stop/status, the audio writer thread, the announcer's
# ducking, the D-Bus connection's thread): what CI runs under ThreadSanitizer (scripts/test.sh
# with CI=true).
#
# `all` (the default) runs thread, then address. Each sanitizer builds into its own scratch
# directory (.build-tsan, .build-asan) so the normal debug build in .build is left alone; the
# first build of each compiles every dependency again, instrumented (many minutes on two cores).
# The suite runs serially, as scripts/test.sh runs it: the integration tests start real
# PulseAudio servers, dbus-daemons and crash-looping workers, and under a sanitizer every process
# is several times slower. Reports from every sanitized process — the test runner and the `vigil`
# and SilentEngineBench children the tests start — are written to
# .build-{tsan,asan}/reports/ and summarised at the end. Exit status 0 only when every test
# passed and no process wrote a report.
#
# Environment: VIGIL_SANITIZE_REPORTS=DIR writes the reports there instead.
set -euo pipefail
cd "$(dirname "$0")/.."

usage() {
  sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
}

# The suites behind --concurrency (swift test --filter regular expressions).
concurrency=(
  --filter 'VigilSupervisorTests\.(SupervisorTests|SupervisorFaultTests|WorkerNotifyTests)'
  --filter 'VigilTests\.VigilHostTests'
  --filter 'VigilAudioTests\.(PulseIntegrationTests|SilentEnginePluginTests)'
  --filter 'VigilAnnounceTests\.DuckingTests'
  --filter '^VigilDBusTests\.'
)
kinds=()
test_args=()
targets=()
filtered=0
while (($#)); do
  case "$1" in
  thread | address) kinds+=("$1") ;;
  all) kinds+=(thread address) ;;
  --concurrency)
    test_args+=("${concurrency[@]}")
    filtered=1
    # …and only their test targets and the targets these need are built (Package.swift reads this):
    # no executable, SwiftPM plugin or library they do not use (vigil, the TUF client and
    # swift-crypto, the metrics exporter and swift-nio): none of these suites starts a `vigil`.
    export VIGIL_TEST_TARGETS=VigilSupervisorTests,VigilTests,VigilAudioTests,VigilAnnounceTests,VigilDBusTests
    ;;
  --filter | --skip)
    (($# >= 2)) || { echo "vigil: $1 needs a regular expression" >&2; exit 64; }
    test_args+=("$1" "$2")
    [[ $1 == --filter ]] && filtered=1
    shift
    ;;
  --target)
    (($# >= 2)) || { echo "vigil: --target needs a test target's name" >&2; exit 64; }
    [[ -d Tests/$2 && $2 == *Tests ]] || { echo "vigil: no test target '$2' in Tests/" >&2; exit 64; }
    targets+=("$2")
    shift
    ;;
  -h | --help)
    usage
    exit 0
    ;;
  *)
    echo "vigil: unknown argument '$1' (expected thread, address, all, --concurrency, --target NAME, --filter REGEX or --skip REGEX)" >&2
    exit 64
    ;;
  esac
  shift
done
((${#kinds[@]})) || kinds=(thread address)
if ((filtered && ${#targets[@]})); then
  echo "vigil: --target runs whole test targets; it does not combine with --filter or --concurrency" >&2
  exit 64
fi
if ((!filtered && !${#targets[@]})); then
  for dir in Tests/*Tests; do targets+=("$(basename "$dir")"); done
fi

scripts/install-deps.sh

# BuildPluginTests builds a separate host package with the real `swift build` (about 7 minutes
# unsanitized): it exercises SwiftPM and the compiler, none of Vigil's threads run in this process,
# and the `vigil` it builds is not sanitized. It is skipped here; scripts/test.sh runs it.
test_args+=(--skip BuildPluginTests)
# RestartLeakTests bounds the host's RSS growth over 50 server restarts to 1 MB: under a sanitizer
# the RSS is mostly the sanitizer's own (shadow memory, ThreadSanitizer's access history,
# AddressSanitizer's quarantine of freed blocks), which grows by design (1.8 MB here under
# ThreadSanitizer). scripts/test.sh checks that bound on the normal build.
test_args+=(--skip RestartLeakTests)

suppressions=$PWD/scripts/sanitize

# The number of reports (SUMMARY lines) in the files PREFIX.*.
count_reports() {
  local files=("$1".*)
  [[ -e ${files[0]} ]] || { echo 0; return; }
  grep -h -c '^SUMMARY: ' "${files[@]}" | awk '{n += $1} END {print n + 0}'
}
clang=$(dirname "$(readlink -f "$(command -v swift)")")/clang
summary=()
failed=0

for kind in "${kinds[@]}"; do
  case "$kind" in
  thread) scratch=.build-tsan ;;
  address) scratch=.build-asan ;;
  esac
  reports=${VIGIL_SANITIZE_REPORTS:-$PWD/$scratch/reports}
  mkdir -p "$reports"
  rm -f "$reports/$kind".*

  # halt_on_error=0 (ThreadSanitizer): a race is reported and the run goes on, so one run lists
  # every race instead of the first; the process still exits with 66 at the end when it reported
  # one, so the test run fails. log_path: reports go to files (one per process) rather than into
  # the stderr that CLI tests read and compare.
  export TSAN_OPTIONS="halt_on_error=0:exitcode=66:second_deadlock_stack=1:history_size=4:log_path=$reports/thread:suppressions=$suppressions/tsan.supp"
  # AddressSanitizer stops at its first error (the code is not built to recover). detect_leaks=1:
  # LeakSanitizer reports only memory that nothing references any more when the process exits;
  # the Swift runtime's metadata and conformance caches stay referenced from globals and are not
  # reported. What it finds in third-party libraries is suppressed in lsan.supp (and
  # Fuzz/lsan.supp), each entry with its reason.
  export ASAN_OPTIONS="halt_on_error=1:exitcode=66:detect_leaks=1:strict_init_order=1:check_initialization_order=1:detect_stack_use_after_return=1:log_path=$reports/address"
  # The fuzz targets' entries (Fuzz/lsan.supp: TOMLKit, libvorbis) hold here too: the tests run
  # the same libraries on the same kind of input.
  mkdir -p "$scratch"
  cat "$suppressions/lsan.supp" Fuzz/lsan.supp >"$scratch/lsan.supp"
  export LSAN_OPTIONS="suppressions=$PWD/$scratch/lsan.supp:print_suppressions=0"
  preload=
  if [[ $kind == thread ]]; then
    # The Swift runtime's Mutex hands a contended lock over where ThreadSanitizer cannot see it;
    # tsan-mutex.c says why and annotates it. Checked first on a program that is correctly locked.
    mkdir -p "$scratch"
    "$clang" -O1 -shared -fPIC -Wall -Werror -o "$scratch/tsan-mutex.so" "$suppressions/tsan-mutex.c"
    if [[ ! -x $scratch/mutex-check || $suppressions/mutex-check.swift -nt $scratch/mutex-check ]]; then
      swiftc -sanitize=thread -g "$suppressions/mutex-check.swift" -o "$scratch/mutex-check"
    fi
    rm -f "$reports/$kind".*
    LD_PRELOAD="$scratch/tsan-mutex.so" "$scratch/mutex-check"
    if compgen -G "$reports/$kind.*" >/dev/null; then
      cat "$reports/$kind".* >&2
      echo "vigil: tsan-mutex.c does not cover this toolchain's Mutex (reports above): fix it first" >&2
      exit 1
    fi
    preload=$PWD/$scratch/tsan-mutex.so
  fi

  echo "vigil: building with --sanitize=$kind into $scratch"
  start=$SECONDS
  log=$(mktemp)
  # The index store stays on: on Linux, `--build-tests` discovers the tests from it (with
  # --disable-index-store a clean scratch directory fails: "index store path does not exist").
  if ! swift build --build-tests --sanitize="$kind" --scratch-path "$scratch" >"$log" 2>&1; then
    grep -E 'error' "$log" | head -50 >&2 || tail -50 "$log" >&2
    rm -f "$log"
    echo "vigil: the $kind-sanitized build failed (errors above)" >&2
    exit 1
  fi
  rm -f "$log"
  built=$((SECONDS - start))
  echo "vigil: $kind-sanitized build took ${built}s; running the suite serially"

  # One run per target (the whole suite), or one run of the filtered tests.
  runs=("${targets[@]}")
  ((${#runs[@]})) || runs=(filtered)
  start=$SECONDS
  status=0
  for run in "${runs[@]}"; do
    filter=()
    [[ $run == filtered ]] || filter=(--filter "^$run\\.")
    echo "vigil: $kind: running ${run/#filtered/the selected tests}"
    before=$(count_reports "$reports/$kind")
    run_start=$SECONDS
    run_status=0
    LD_PRELOAD=$preload swift test --skip-build --no-parallel --sanitize="$kind" --scratch-path "$scratch" \
      "${filter[@]}" "${test_args[@]}" || run_status=$?
    if [[ $run != filtered ]]; then
      found=$(($(count_reports "$reports/$kind") - before))
      summary+=("$kind $run: tests $((SECONDS - run_start))s, swift test exit $run_status, $found report(s)")
      echo "vigil: ${summary[-1]} ($(date -u '+%H:%M UTC'))"
    fi
    ((run_status == 0)) || status=$run_status
  done
  ran=$((SECONDS - start))

  shopt -s nullglob
  files=("$reports/$kind".*)
  shopt -u nullglob
  count=$(count_reports "$reports/$kind")
  if ((${#files[@]})); then
    echo "vigil: $kind sanitizer reports (${#files[@]} files in $reports):"
    grep -h '^SUMMARY: ' "${files[@]}" | sort | uniq -c | sort -rn
  fi
  line="$kind: build ${built}s, tests ${ran}s, swift test exit $status, $count report(s)"
  summary+=("$line")
  ((status == 0 && count == 0)) || failed=1
done

echo
echo "vigil: sanitizer summary ($(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, $(uname -m))"
for line in "${summary[@]}"; do echo "  $line"; done
exit "$failed"
