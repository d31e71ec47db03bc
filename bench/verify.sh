#!/usr/bin/env bash
# Benchmark: manifest verification throughput, over the signed first-party manifests in manifests/.
#
#   bench/verify.sh [SECONDS]      (default 2 s of CPU time per loop)
#
# VerifyBench (release build) runs three loops per manifest, every iteration checked:
#   verify+parse   from the bytes in memory: the minisign signature parsed and verified over the
#                  exact manifest bytes (BLAKE2b-512, then two Ed25519 verifications: signature and
#                  global signature), then the manifest parsed (strict JSON, schema)
#   from-disk      the loader's whole pipeline on the directory (PluginLoader.verify with the key
#                  pinned, no rollback store): capped reads of plugin.json, .minisig and .pub, the
#                  trust decision, verify+parse, every resource
#   ed25519-raw    one libsodium Ed25519 verification (crypto_sign_verify_detached): the reference
# and prints each rate, per CPU-second of the benchmark's thread (a loaded machine steals wall-clock
# time, not CPU time), with its ratio to the raw verification in the same run. A minisign
# verification costs two Ed25519 verifications plus a hash, so 0.5 of the raw rate is the ceiling.
# Needs: nothing beyond the build; builds VerifyBench (release).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
seconds=${1:-2}

release_build -- VerifyBench
bench_header "bench/verify.sh: $seconds s of CPU time per loop"
echo
"$bin/VerifyBench" "$seconds" manifests/* | awk '
  { rate[$1, $2] = $NF; sub(/\/s$/, "", rate[$1, $2]); order[++n] = $1 SUBSEP $2; names[$1] = 1 }
  END {
    printf "%-15s %-13s %14s %12s\n", "manifest", "loop", "per CPU-second", "vs raw"
    for (i = 1; i <= n; i++) {
      split(order[i], k, SUBSEP)
      printf "%-15s %-13s %14d %12.3f\n", k[1], k[2], rate[k[1], k[2]], rate[k[1], k[2]] / rate[k[1], "ed25519-raw"]
    }
  }'
