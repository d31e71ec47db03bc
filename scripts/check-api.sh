#!/usr/bin/env bash
# Checks the public Swift API of Vigil's library products for breaking changes against a baseline
# revision (the previous release) with swift-api-digester and the allow-list .api-breakage-allowlist
# (every line of which CHANGELOG.md quotes and explains).
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
# How: `swift package diagnose-api-breaking-changes` cannot load Vigil's modules (SwiftPM 6.3.1):
# it hands swift-api-digester both the module map SwiftPM generates for TOMLKit's C target and the
# one TOMLKit ships (include/CTOML/module.modulemap, which clang also finds under -I include), and
# the host copies of the SwiftPM plugins' tool's C modules ("redefinition of module 'CTOML'",
# "Failed to load module: Vigil"; SwiftPM issues 8103 and 9254). So this script drives the digester
# itself, with one module map per C module: each package's own where it ships one, else SwiftPM's
# generated one, never a `-tool` copy. The baseline is built once (a detached git worktree under
# .build-api-baseline/) and its API files kept in .build-api-baseline/REVISION/ for the next run;
# a module the baseline does not have is not compared.
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
digester=$(dirname "$(readlink -f "$(command -v swift)")")/swift-api-digester

# The search paths for the digester over the debug build of the package at ROOT, in `args`.
digester_args() {
  local root=$1 include map target own=" "
  args=(-I "$root/.build/debug/Modules")
  for include in "$root"/.build/checkouts/*/Sources/*/include "$root"/Sources/*/include; do
    [[ -d $include ]] || continue
    map=$(find "$include" -maxdepth 2 -name module.modulemap | head -1)
    if [[ -n $map ]]; then
      args+=(-I "$include")
      own+="$(basename "$(dirname "$include")") "
    fi
  done
  for target in "$root"/.build/debug/*.build; do
    [[ $target == *-tool.build || $own == *" $(basename "$target" .build) "* ]] && continue
    [[ -f $target/module.modulemap ]] && args+=(-I "$target")
  done
  for target in "$root"/Sources/C*; do [[ -f $target/module.modulemap ]] && args+=(-I "$target"); done
  # shellcheck disable=SC2207 # pkg-config's flags are words
  args+=($(pkg-config --cflags libsodium alsa libsystemd sndfile espeak-ng))
}

saved=.build-api-baseline/$commit
missing=()
for module in "${products[@]}"; do [[ -f $saved/$module.json || -f $saved/$module.absent ]] || missing+=("$module"); done
if ((${#missing[@]} > 0)); then
  checkout=.build-api-baseline/checkout
  rm -rf "$checkout"
  git worktree prune
  git worktree add -q --detach "$checkout" "$commit"
  echo "check-api: building the baseline in $checkout (once)"
  (cd "$checkout" && VIGIL_API_CHECK=$(IFS=,; echo "${products[*]}") swift build -q) >&2
  digester_args "$PWD/$checkout"
  mkdir -p "$saved"
  for module in "${missing[@]}"; do
    if ! "$digester" -dump-sdk -compiler-style-diags "${args[@]}" -module "$module" -o "$saved/$module.json" \
      >"$saved/$module.log" 2>&1 || ! grep -q '"children"' "$saved/$module.json"; then
      rm -f "$saved/$module.json"
      if [[ -d $checkout/.build/debug/Modules/$module.swiftmodule ]]; then
        cat "$saved/$module.log" >&2
        echo "check-api: cannot read the baseline's API of $module (above)" >&2
        exit 1
      fi
      : >"$saved/$module.absent"  # a module the baseline does not have
    fi
  done
  git worktree remove --force "$checkout"
fi

VIGIL_API_CHECK=$(IFS=,; echo "${products[*]}") swift build -q >&2
digester_args "$PWD"
status=0
for module in "${products[@]}"; do
  if [[ ! -f $saved/$module.json ]]; then
    echo "check-api: $module: new since $baseline, not compared"
    continue
  fi
  rc=0
  out=$("$digester" -diagnose-sdk -compiler-style-diags -baseline-path "$saved/$module.json" -module "$module" \
    -breakage-allowlist-path .api-breakage-allowlist "${args[@]}" 2>&1) || rc=$?
  breaks=$(grep -o 'API breakage: .*' <<<"$out" | sed 's/ \[#api-digester-breaking-change\]$//' || true)
  if [[ -n $breaks ]]; then
    status=1
    echo "check-api: $module: $(wc -l <<<"$breaks") breaking change(s):"
    sed 's/^/  /' <<<"$breaks"
  elif ((rc != 0)); then
    status=1
    echo "$out" >&2
    echo "check-api: $module: the digester failed (above)" >&2
  else
    echo "check-api: $module: no breaking change"
  fi
done
echo "check-api: took $((SECONDS - start))s"
if ((status != 0)); then
  echo "check-api: the public API breaks against $baseline (above). If the break is intended, add each" \
    "message to .api-breakage-allowlist and quote it, with the reason, in CHANGELOG.md under the release" \
    "that makes it (a breaking change raises the minor version before 1.0.0)" >&2
fi
exit "$status"
