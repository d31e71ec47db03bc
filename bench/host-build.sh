#!/usr/bin/env bash
# Benchmark: a clean build of a supervisor-only host against the same host on the umbrella, in one
# run on one machine (issue 27, point 3).
#
#   bench/host-build.sh [-c debug|release]      (default debug: what a developer's first build is)
#
# Two copies of Examples/SupervisorHost (the same main.swift, the same vigil.toml), each depending on
# this checkout by path:
#   host core    the example as it is: products VigilHostCore + VigilSupervisor
#   umbrella     the same source with the product `Vigil` added (what a supervisor-only host had to
#                depend on before the split: it builds every plugin, the announcer, D-Bus and
#                their C libraries' modules)
# Dependencies are resolved first, untimed (checkouts from SwiftPM's cache); then each is built in
# its scratch directory with nothing compiled yet, one after the other, with /usr/bin/time: wall clock and CPU time (user +
# system, all processes), the build steps SwiftPM ran, the Swift modules it compiled, the binary's
# size and the C libraries it links (DT_NEEDED, beside glibc and the Swift runtime). On a loaded
# machine compare the CPU times: the wall clock mostly measures the wait for a CPU.
# Needs: the -dev packages of every C library (the umbrella's build), readelf.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
config=debug
[[ "${1:-}" == -c ]] && config=$2
repo=$PWD
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

variant() { # NAME EXTRA-PRODUCT-LINE
  mkdir -p "$work/$1"
  cp -r Examples/SupervisorHost/Sources Examples/SupervisorHost/vigil.toml "$work/$1/"
  sed -e "s|path: \"../..\"|path: \"$repo\"|" \
    -e "s|^\( *\).product(name: \"VigilHostCore\", package: \"vigil\"),|&$2|" \
    Examples/SupervisorHost/Package.swift >"$work/$1/Package.swift"
}
variant core ""
variant umbrella ' .product(name: "Vigil", package: "vigil"),'
grep -q '"Vigil", package' "$work/umbrella/Package.swift" || { echo "host-build: the umbrella variant lacks Vigil" >&2; exit 1; }

bench_header "bench/host-build.sh: clean $config build of a supervisor-only host"
for name in core umbrella; do
  swift package --package-path "$work/$name" --scratch-path "$work/$name.build" resolve >/dev/null 2>&1
done
printf '\n%-10s %9s %9s %6s %8s %10s  %s\n' host "wall (s)" "CPU (s)" steps modules "size (MB)" "C libraries linked"
for name in core umbrella; do
  scratch=$work/$name.build
  /usr/bin/time -f '%e %U %S' -o "$work/$name.time" \
    swift build --package-path "$work/$name" --scratch-path "$scratch" -c "$config" >"$work/$name.log" 2>&1 ||
    { cat "$work/$name.log" >&2; exit 1; }
  read -r wall user sys <"$work/$name.time"
  steps=$(grep -o '^\[[0-9]*/[0-9]*\]' "$work/$name.log" | tail -1 | sed 's|.*/||; s|\]||')
  modules=$(grep -c '^\[[0-9]*/[0-9]*\] Emitting module' "$work/$name.log" || true)
  binary=$(swift build --package-path "$work/$name" --scratch-path "$scratch" -c "$config" --show-bin-path)/SupervisorHost
  size=$(awk -v b="$(stat -c %s "$binary")" 'BEGIN { printf "%.1f", b / 1048576 }')
  libraries=$(readelf -d "$binary" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' |
    grep -Ev '^(libc|libm|libdl|libpthread|librt|libutil|libgcc_s|libstdc\+\+|ld-linux.*|libswift.*|libFoundation.*|lib_Foundation.*|libdispatch|libBlocksRuntime)\.so' |
    sed 's/\.so.*//' | sort | tr '\n' ' ')
  printf '%-10s %9.1f %9.1f %6s %8s %10s  %s\n' "$name" "$wall" "$(awk -v u="$user" -v s="$sys" 'BEGIN { print u + s }')" "$steps" "$modules" "$size" "$libraries"
done
echo "uptime after: $(uptime)"
