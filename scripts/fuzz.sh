#!/usr/bin/env bash
# Coverage-guided fuzzing of every parser that sees untrusted bytes (docs/fuzzing.md).
#
#   scripts/fuzz.sh [SECONDS] [TARGET…]     # default: 120 s for each of every target
#
# Builds `vigil-fuzz` with libFuzzer and AddressSanitizer (`-sanitize=fuzzer,address`, in
# .build-fuzz, apart from the ordinary build; the Swift toolchain ships both runtimes), then runs
# each target for SECONDS on a working corpus in
# .build-fuzz/corpus/TARGET that starts from Fuzz/Corpus/TARGET and Fuzz/Regressions/TARGET and
# keeps what earlier runs found. Limits per input: -timeout (s) and -rss_limit_mb / -malloc_limit_mb
# (a hang or an unbounded allocation is a finding like a crash). Findings go to
# .build-fuzz/findings/TARGET/; reproduce one with
#   .build-fuzz/debug/vigil-fuzz TARGET FILE
# (or, without the fuzzer runtime, `swift run --package-path Fuzz vigil-fuzz TARGET FILE`). Prints one line of figures
# per target with the date and the machine; exits 1 when any target found something.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${1:-120}
shift || true
all=(minisign-key minisign-signature manifest config notify preferences duck-journal control sound-file)
targets=("${@:-${all[@]}}")
scratch=.build-fuzz
timeout_s=${FUZZ_TIMEOUT:-10}
rss_mb=${FUZZ_RSS_MB:-2048}

# vigil-fuzz is the nested Fuzz/ package's (it depends on this one by path).
flags=(--package-path Fuzz --scratch-path "$PWD/$scratch" -Xswiftc -sanitize=fuzzer,address)
mkdir -p "$scratch"
echo "building vigil-fuzz with libFuzzer and AddressSanitizer (log: $scratch/build.log)…" >&2
if ! swift build "${flags[@]}" --product vigil-fuzz >"$scratch/build.log" 2>&1; then
  grep -v 'Cannot export local symbol' "$scratch/build.log" | tail -30 >&2
  exit 2
fi
fuzzer="$(swift build "${flags[@]}" --show-bin-path)/vigil-fuzz"

echo "scripts/fuzz.sh — $(date -u '+%Y-%m-%d %H:%M UTC') — $(uname -n), $(nproc) CPUs ($(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo)), $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "$seconds s per target, -timeout=$timeout_s -rss_limit_mb=$rss_mb -malloc_limit_mb=$rss_mb, $(swift --version 2>/dev/null | head -1)"
printf '%-20s %8s %10s %8s %7s %7s %7s %8s %9s\n' target seconds execs execs/s cov ft corpus rss_mb findings
found=0
for target in "${targets[@]}"; do
  corpus="$scratch/corpus/$target"
  findings="$scratch/findings/$target"
  log="$scratch/logs/$target.log"
  mkdir -p "$corpus" "$findings" "$(dirname "$log")"
  seeds=("Fuzz/Corpus/$target")
  [[ -d "Fuzz/Regressions/$target" ]] && seeds+=("Fuzz/Regressions/$target")
  before=$(find "$findings" -type f | wc -l)
  status=0
  LSAN_OPTIONS="suppressions=$PWD/Fuzz/lsan.supp:print_suppressions=0" "$fuzzer" "$target" "$corpus" "${seeds[@]}" -max_total_time="$seconds" \
    -timeout="$timeout_s" -rss_limit_mb="$rss_mb" -malloc_limit_mb="$rss_mb" -max_len=65536 \
    -artifact_prefix="$findings/" -print_final_stats=1 >"$log" 2>&1 || status=$?
  after=$(find "$findings" -type f | wc -l)
  new=$((after - before))
  last=$(grep -E '^#[0-9]+' "$log" | tail -1 || true)
  cov=$(sed -nE 's/.* cov: ([0-9]+).*/\1/p' <<<"$last")
  ft=$(sed -nE 's/.* ft: ([0-9]+).*/\1/p' <<<"$last")
  units=$(sed -nE 's/.* corp: ([0-9]+)\/.*/\1/p' <<<"$last")
  execs=$(sed -nE 's/^stat::number_of_executed_units: *([0-9]+)/\1/p' "$log")
  rate=$(sed -nE 's/^stat::average_exec_per_sec: *([0-9]+)/\1/p' "$log")
  rss=$(sed -nE 's/^stat::peak_rss_mb: *([0-9]+)/\1/p' "$log")
  printf '%-20s %8s %10s %8s %7s %7s %7s %8s %9s\n' "$target" "$seconds" "${execs:-?}" "${rate:-?}" \
    "${cov:-?}" "${ft:-?}" "${units:-?}" "${rss:-?}" "$new"
  if ((status != 0 || new > 0)); then
    found=1
    echo "  $target: libFuzzer exited $status; see $log and $findings/" >&2
    grep -E 'ERROR:|SUMMARY:|Fatal error|precondition|Test unit written' "$log" | head -5 | sed 's/^/  /' >&2 || true
  fi
done
exit "$found"
