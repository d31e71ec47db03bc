#!/usr/bin/env bash
# Checks the public Swift API of Vigil's library products for breaking changes against the previous
# release, with `swift package diagnose-api-breaking-changes` and the allow-list
# .api-breakage-allowlist (every line of which CHANGELOG.md quotes and explains).
#
#   scripts/check-api.sh          the baseline is VIGIL_API_BASELINE, else the revision .api-baseline
#                                 names, else the newest v* tag reachable from HEAD
#   scripts/check-api.sh REV      the baseline is REV (a tag, a commit, HEAD~5)
#   scripts/check-api.sh --self-test
#                                 shows that the check catches a break: in a scratch clone of HEAD, a
#                                 temporary commit adds a public function to VigilPlugin and the next
#                                 removes it; the check against the first must fail naming the removal,
#                                 and pass once the allow-list holds the digester's message (two full
#                                 builds: not part of scripts/test.sh)
#
# With no baseline (no release yet) it says so and exits 0. The baseline is built once in a
# temporary worktree; its API files are kept in .build-api-baseline/ for the next run.
#
# Why VIGIL_API_CHECK=PRODUCTS: the SwiftPM plugins' tool (vigil-plugin-tool) is compiled for the
# host too, with the C modules it needs (Vigil's and TOMLKit's CTOML), and SwiftPM hands the API
# digester the module maps of both copies ("redefinition of module 'CTOML'", "Failed to load
# module: Vigil"; SwiftPM issues 8103 and 9254). With it, Package.swift declares only the checked
# products and the targets they need (no plugin, nothing compiled twice, and the baseline's build
# is no bigger than it must be). The baseline's manifest must know the variable too: a revision
# from before the commit that added it cannot be a baseline.
set -euo pipefail
cd "$(dirname "$0")/.."

products=(Vigil VigilHostCore VigilPlugin VigilPluginSDK VigilExecutor VigilSupervisor)

if [[ "${1:-}" == --self-test ]]; then
  scratch=$(mktemp -d)
  trap 'rm -rf "$scratch"' EXIT
  git clone -q . "$scratch/vigil"
  cd "$scratch/vigil"
  commit() { git -c user.name=check-api -c user.email=check-api@localhost commit -q -m "$1"; }
  probe=Sources/VigilPlugin/APISelfTest.swift
  printf '/// Temporary: scripts/check-api.sh --self-test removes it in the next commit.
public func vigilAPISelfTest() {}
' >"$probe"
  git add "$probe" && commit "check-api self-test: a public function"
  git rm -q "$probe" && commit "check-api self-test: the function removed (a breaking change)"
  : >.api-breakage-allowlist
  status=0
  scripts/check-api.sh HEAD~1 >"$scratch/first.log" 2>&1 || status=$?
  message="API breakage: func vigilAPISelfTest() has been removed"
  if ((status == 0)) || ! grep -qF "${message#API breakage: }" "$scratch/first.log"; then
    cat "$scratch/first.log" >&2
    echo "check-api: self-test FAILED: the removal of a public function was not reported (exit $status)" >&2
    exit 1
  fi
  echo "$message" >.api-breakage-allowlist
  if ! scripts/check-api.sh HEAD~1 >"$scratch/second.log" 2>&1; then
    cat "$scratch/second.log" >&2
    echo "check-api: self-test FAILED: the allow-listed break still fails the check" >&2
    exit 1
  fi
  echo "check-api: self-test passed: the removal was reported (exit $status) and, allow-listed, accepted"
  exit 0
fi
baseline=${1:-${VIGIL_API_BASELINE:-}}
from="the command line"
if [[ -z "$baseline" && -f .api-baseline ]]; then
  baseline=$( (grep -v '^[[:space:]]*#' .api-baseline || true) | tr -d '[:space:]')
  from=".api-baseline"
fi
if [[ -z "$baseline" ]]; then
  baseline=$(git describe --tags --abbrev=0 --match 'v[0-9]*' HEAD 2>/dev/null || true)
  from="the newest release tag"
fi
if [[ -z "$baseline" ]]; then
  echo "check-api: skipped: no previous release to compare the API with (.api-baseline names none and" \
    "no v* tag is reachable from HEAD; CHANGELOG.md's first release is the one being made)"
  exit 0
fi
if ! commit=$(git rev-parse --verify --quiet "$baseline^{commit}"); then
  echo "check-api: the baseline $baseline (from $from) is not a commit of this clone —" \
    "fetch it (git fetch --tags, or clone with more history), or fix $from" >&2
  exit 1
fi
echo "check-api: comparing the API of ${products[*]} with $baseline ($commit, from $from)"
start=$SECONDS
status=0
VIGIL_API_CHECK=$(IFS=,; echo "${products[*]}") swift package diagnose-api-breaking-changes "$commit" --products "${products[@]}" \
  --breakage-allowlist-path .api-breakage-allowlist --baseline-dir .build-api-baseline || status=$?
echo "check-api: took $((SECONDS - start))s"
if ((status != 0)); then
  echo "check-api: the public API breaks against $baseline (above). If the break is intended, add each" \
    "message to .api-breakage-allowlist and quote it, with the reason, in CHANGELOG.md under the release" \
    "that makes it (a breaking change raises the minor version before 1.0.0)" >&2
fi
exit "$status"
