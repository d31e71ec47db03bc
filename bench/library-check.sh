#!/usr/bin/env bash
# Benchmark: the shared-library check of `vigil plugin verify` on hostile and on maximal libraries.
#
#   bench/library-check.sh [RUNS]      (default 5 runs per library; the median is printed)
#
# Builds (gcc) and signs (a throw-away key) three plugin libraries, then times `vigil plugin verify`
# on each, in CPU seconds (user + system) of the whole process — signature, reading and hashing
# every byte, and the ELF check:
#   small        a plain plugin (a few KB): the fixed cost
#   issue-25     20,000 exported symbols whose names all point at one 4 MB string through the
#                section headers (issue 25: over 60 s of CPU with the old reader, which scanned the
#                string once per symbol); refused now (library-sections-disagree)
#   largest      the largest library the caps allow: 64 MiB minus a little, 20,000 exported symbols
#                all on the one GNU hash chain dlsym walks for vigil_plugin_entry (every symbol's
#                name compared), every dynamic string near its 4 KB cap; accepted
# Peers in the same run, on the same files: `sha256sum` (reading and hashing the bytes, which
# verify must do anyway) and `readelf -W --dyn-syms` (binutils parsing the same symbol table).
# Needs: gcc, python3, readelf; builds vigil (release) unless VIGIL=/path/to/vigil is given.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
runs=${1:-5}

if [[ -n "${VIGIL:-}" ]]; then vigil=$VIGIL; else release_build -- vigil; vigil=$bin/vigil; fi
bench_work
bench_header "bench/library-check.sh: median of $runs runs, CPU seconds (user + system)"
echo

# ID SYMBOLS PADDING_BYTES FILL RUNPATH_SLASHES OUTPUT: a plugin library (descriptor and note of
# plugin ID) exporting SYMBOLS integers, a read-only PADDING_BYTES array (FILL "a": 'a's ending
# in NUL, else a 1 and zeros) and, when RUNPATH_SLASHES > 0, a DT_RUNPATH of /usr/lib followed by
# that many slashes (a system directory, so allowed, near the 4 KB string cap).
build_library() {
  local id=$1 src=$work/lib.c
  shift
  {
    echo '#include "vigil_plugin.h"'
    echo '#include <string.h>'
    echo 'static bool i(const vigil_host *h) { (void)h; return true; }'
    echo 'static void d(void) {}'
    echo 'static const void *g(const char *id) { (void)id; return NULL; }'
    echo "VIGIL_PLUGIN_ENTRY(\"$id\", 0, i, d, g);"
    if [[ $3 == a ]]; then
      echo "__attribute__((used)) const char vigil_bench_padding[$2] = {[0 ... $(($2 - 2))] = 'a'};"
    elif [[ $2 -gt 0 ]]; then
      echo "__attribute__((used)) const char vigil_bench_padding[$2] = {1};"
    fi
    for ((n = 0; n < $1; n++)); do echo "int vigil_bench_symbol_$n = $n;"; done
  } >"$src"
  local rpath=()
  if [[ $4 -gt 0 ]]; then rpath=("-Wl,-rpath,/usr/lib$(printf '/%.0s' $(seq "$4"))"); fi
  gcc -shared -fPIC -O0 -I Sources/CVigilPluginABI/include -Wl,-soname,libbench.so -Wl,--hash-style=gnu \
    "${rpath[@]}" -o "$5" "$src"
}

# Signs plugin directory $work/plugins/NAME holding libbench.so.
sign_plugin() {
  local dir=$work/plugins/$1
  cat >"$dir/plugin.json" <<EOF
{"schema": "vigil.plugin-manifest/v1", "name": "$1", "version": "1.0.0", "description": "bench library",
 "entry": {"kind": "shared-library", "path": "libbench.so", "abi": 1},
 "resources": [{"path": "libbench.so"}]}
EOF
  "$vigil" plugin sign "$dir" --key "$work/keys/bench.key" >/dev/null
}

mkdir -p "$work/plugins/small" "$work/plugins/issue-25" "$work/plugins/largest" "$work/keys"
"$vigil" plugin keygen --name bench --dir "$work/keys" >/dev/null
fingerprint="ed25519:$(sed -n 2p "$work/keys/bench.pub" | base64 -d | tail -c 32 | base64)"

build_library small 0 0 - 0 "$work/plugins/small/libbench.so"
build_library issue-25 20000 $((4 << 20)) a 0 "$work/plugins/issue-25/libbench.so"
build_library largest 20000 $((61 << 20)) - 4000 "$work/plugins/largest/libbench.so"

python3 - "$work/plugins/issue-25/libbench.so" "$work/plugins/largest/libbench.so" <<'PY'
import struct, sys

def patch(path, fn):
    b = bytearray(open(path, 'rb').read())
    fn(b)
    open(path, 'wb').write(b)

def sections(b):
    shoff, = struct.unpack_from('<Q', b, 40)
    shnum, = struct.unpack_from('<H', b, 60)
    return [shoff + i * 64 for i in range(shnum)]

def dynsym(b):
    return next(s for s in sections(b) if struct.unpack_from('<I', b, s + 4)[0] == 11)

def issue25(b):
    # Every .dynsym name at offset 0 of a ".dynstr" that the section headers now place on the
    # 4 MB run of 'a' (as in issue 25): a reader that scans each name to its NUL reads 4 MB per symbol.
    sym = dynsym(b)
    link, = struct.unpack_from('<I', b, sym + 40)
    strhdr = sections(b)[link]
    start = b.find(b'a' * 4096)
    struct.pack_into('<QQ', b, strhdr + 24, start, (4 << 20))
    off, size = struct.unpack_from('<QQ', b, sym + 24)
    for s in range(off + 24, off + size, 24):
        struct.pack_into('<I', b, s, 0)

def largest(b):
    # All symbols on the chain dlsym walks for vigil_plugin_entry: every bucket starts at the
    # first hashed symbol, every chain word carries that name's hash, the bloom filter is all ones.
    gnu = next(s for s in sections(b) if struct.unpack_from('<I', b, s + 4)[0] == 0x6FFFFFF6)
    off, size = struct.unpack_from('<QQ', b, gnu + 24)
    nbuckets, symoffset, bloom, shift = struct.unpack_from('<IIII', b, off)
    h = 5381
    for c in b'vigil_plugin_entry':
        h = (h * 33 + c) & 0xFFFFFFFF
    for w in range(bloom):
        struct.pack_into('<Q', b, off + 16 + 8 * w, (1 << 64) - 1)
    buckets = off + 16 + 8 * bloom
    for k in range(nbuckets):
        struct.pack_into('<I', b, buckets + 4 * k, symoffset)
    chain = buckets + 4 * nbuckets
    symsize = struct.unpack_from('<Q', b, dynsym(b) + 32)[0] // 24
    for i in range(symoffset, symsize):
        struct.pack_into('<I', b, chain + 4 * (i - symoffset), (h & ~1) | (1 if i == symsize - 1 else 0))

patch(sys.argv[1], issue25)
patch(sys.argv[2], largest)
PY

for name in small issue-25 largest; do sign_plugin "$name"; done

# Median CPU seconds (user + system) of RUNS runs of COMMAND…, its output in $work/out and its
# last exit status in $work/status.
median_cpu() {
  local times=() TIMEFORMAT='%3U %3S'
  for ((r = 0; r < runs; r++)); do
    { time { "$@" >"$work/out" 2>&1; echo $? >"$work/status"; }; } 2>"$work/time"
    times+=("$(awk '{ printf "%.3f", $1 + $2 }' "$work/time")")
  done
  printf '%s\n' "${times[@]}" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}

declare -A reason
printf '%-10s %10s  %-32s %14s %22s\n' library size "vigil plugin verify (s, result)" "sha256sum (s)" "readelf --dyn-syms (s)"
for name in small issue-25 largest; do
  dir=$work/plugins/$name
  bytes=$(stat -c %s "$dir/libbench.so")
  verify=$(median_cpu "$vigil" plugin verify "$dir" --fingerprint "$fingerprint")
  result=accepted
  [[ $(cat "$work/status") -eq 0 ]] || result="refused"
  reason[$name]=$(cut -c1-200 "$work/out")
  sha=$(median_cpu sha256sum "$dir/libbench.so")
  # readelf prints each symbol's name: 4 MB for each of issue-25's 20,000 symbols (80 GB), so it
  # runs once there, writing to /dev/null, stopped after 60 s of wall-clock time (the same class).
  if [[ $name == issue-25 ]]; then
    readelf="$(runs=1 median_cpu timeout 60 sh -c 'readelf -W --dyn-syms "$1" >/dev/null' - "$dir/libbench.so")"
    if [[ $(cat "$work/status") -eq 124 ]]; then readelf="stopped at 60 s wall"; fi
  else
    readelf=$(median_cpu readelf -W --dyn-syms "$dir/libbench.so")
  fi
  printf '%-10s %9.1fM  %-32s %14s %22s\n' "$name" "$(awk -v b="$bytes" 'BEGIN { print b / 1048576 }')" \
    "$verify ($result)" "$sha" "$readelf"
done
echo
for name in small issue-25 largest; do echo "$name: ${reason[$name]}"; done
