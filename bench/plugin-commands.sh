#!/usr/bin/env bash
# How long a host developer waits for Vigil's SwiftPM plugins when nothing changed.
#
#   bench/plugin-commands.sh            # a temporary host package that depends on this checkout
#   KEEP=1 bench/plugin-commands.sh     # keep the package (path printed) for a closer look
#   WORK=/tmp/vigil-plugin-bench.XXXXXX bench/plugin-commands.sh   # reuse a kept package (no full rebuild)
#   bench/plugin-commands.sh --floor-only   # only SwiftPM's own floor (see below)
#
# Method
# - A host package as docs/host-guide.md builds it: one executable target that uses the Vigil
#   library and the VigilBuildCheck plugin, a vigil.toml trusting silent-engine, Vigil by path.
# - A first `swift build` compiles everything (printed, not a target). Then, with no change at all,
#   each command is timed (wall clock, `date +%s.%N`) in the order a developer switches between them:
#   `swift build`, `swift package vigil-check` twice, `swift build` again (does the plugin command
#   make the next build rebuild anything?), `swift build` then `swift run`.
# - SwiftPM's own floor on the same machine, for comparison: a throwaway package with one command
#   plugin that has no dependencies and prints a line, and a hello-world executable; after a first
#   build, three rounds of a no-change `swift package hello-cmd`, `swift build`, `swift run hello`.
# - Targets (issue 13): a no-change `swift package vigil-check` ≤ 5 s; `swift run` after
#   `swift build` with no change ≤ 3 s.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
root=$(pwd)
silent_engine_key=$(trusted_key silent-engine)

reuse=0
if [[ -n "${WORK:-}" && -f "${WORK}/host/Package.swift" ]]; then
  work=$WORK reuse=1 KEEP=1
else
  work=$(mktemp -d /tmp/vigil-plugin-bench.XXXXXX)
fi
cleanup() { [[ "${KEEP:-0}" == 1 ]] && echo "kept $work" >&2 || rm -rf "$work"; }
trap cleanup EXIT
mkdir -p "$work/host/Sources/MySigner"
cat >"$work/host/Package.swift" <<SWIFT
// swift-tools-version:6.1
import PackageDescription

let package = Package(
    name: "my-signer",
    dependencies: [.package(name: "vigil", path: "$root")],
    targets: [
        .executableTarget(
            name: "MySigner",
            dependencies: [.product(name: "Vigil", package: "vigil")],
            plugins: [.plugin(name: "VigilBuildCheck", package: "vigil")])
    ]
)
SWIFT
cat >"$work/host/Sources/MySigner/main.swift" <<'SWIFT'
import Vigil
print("my-signer: linked with Vigil (\(VigilError.self))")
SWIFT
cat >"$work/host/vigil.toml" <<TOML
plugins = ["silent-engine"]

[host]
name = "my-signer"
background_modes = ["audio"]

[trusted_plugins]
silent-engine = "$silent_engine_key"
TOML
export XDG_STATE_HOME="$work/state"
cd "$work/host"

# Runs "$@" quietly and prints its wall-clock seconds; a failure stops the benchmark with its output.
timed() {
  local start end log="$work/last.log"
  start=$(date +%s.%N)
  if ! "$@" >"$log" 2>&1; then
    cat "$log" >&2
    echo "failed: $*" >&2
    exit 1
  fi
  end=$(date +%s.%N)
  awk -v s="$start" -v e="$end" 'BEGIN { printf "%.2f", e - s }'
}

# SwiftPM's own floor: the same commands in a package with nothing of Vigil in it.
floor() {
  local dir="$work/floor"
  mkdir -p "$dir/Sources/hello" "$dir/Plugins/HelloCommand"
  cat >"$dir/Package.swift" <<'SWIFT'
// swift-tools-version:6.1
import PackageDescription

let package = Package(
    name: "floor",
    targets: [
        .executableTarget(name: "hello"),
        .plugin(
            name: "HelloCommand",
            capability: .command(intent: .custom(verb: "hello-cmd", description: "prints a line"))),
    ]
)
SWIFT
  echo 'print("hello")' >"$dir/Sources/hello/main.swift"
  cat >"$dir/Plugins/HelloCommand/plugin.swift" <<'SWIFT'
import PackagePlugin

@main struct HelloCommand: CommandPlugin {
    func performCommand(context: PluginContext, arguments: [String]) async throws { print("hello") }
}
SWIFT
  (
    cd "$dir"
    echo "SwiftPM's floor (a package with one trivial command plugin and a hello executable):"
    echo "first swift build: $(timed swift build) s"
    local round
    for round in 1 2 3; do
      echo "round $round: swift package hello-cmd $(timed swift package hello-cmd) s," \
        "swift build $(timed swift build) s, swift run hello $(timed swift run hello) s"
    done
  )
}
if [[ "${1:-}" == --floor-only ]]; then
  bench_header "bench/plugin-commands.sh --floor-only"
  echo "swift: $(swift --version 2>&1 | head -1)"
  floor
  exit 0
fi

bench_header "bench/plugin-commands.sh"
echo "swift: $(swift --version 2>&1 | head -1)"
echo
if ((reuse)); then
  touch Package.swift  # plan again with the current plugins
  first=$(timed swift build)
  echo "first swift build (reused package, planned again): $first s"
else
  first=$(timed swift build)
  echo "first swift build (compiles everything): $first s"
fi
echo
printf '%-58s %8s %8s\n' "command (no change since the previous one)" "seconds" "target"
row() {  # label target command…: runs the command (stopping the benchmark if it fails), prints a row
  local label=$1 target=$2 seconds
  shift 2
  seconds=$(timed "$@")
  printf '%-58s %8s %8s\n' "$label" "$seconds" "$target"
}
row "swift build" "" swift build
row "swift package vigil-check (after swift build)" "≤ 5" swift package vigil-check
row "swift package vigil-check (again)" "≤ 5" swift package vigil-check
row "swift build (after swift package vigil-check)" "" swift build
row "swift build" "" swift build
row "swift run (after swift build)" "≤ 3" swift run MySigner
row "swift run (again)" "≤ 3" swift run MySigner
echo
floor
