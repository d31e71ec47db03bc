#!/usr/bin/env bash
# Builds the example shared-library plugin (Examples/HeartbeatPlugin) in release mode, stages the
# stripped library in Examples/HeartbeatPlugin/heartbeat-example and signs the manifest — what a plugin publisher
# does for every release (docs/native-plugins.md). Bump "version" in its plugin.json first.
#
#   scripts/package-example-plugin.sh [KEY_DIR]
#
# KEY_DIR holds the examples keys (default ../shared/signing); scripts/sign-example.sh signs with
# 0600 copies of them. Never commit a secret key.
set -euo pipefail
cd "$(dirname "$0")/.."
keys=${1:-../shared/signing}
out=Examples/HeartbeatPlugin/heartbeat-example
lib=libVigilHeartbeatExample.so

swift build -c release --product VigilHeartbeatExample
bin=$(swift build -c release --show-bin-path)
tmp=$(mktemp "$out/.$lib.XXXXXX")
trap 'rm -f "$tmp"' EXIT
cp "$bin/$lib" "$tmp"
# Symbols for debugging and build paths stay out of the published library; .dynsym stays.
strip --strip-unneeded "$tmp"
chmod 0644 "$tmp"
mv "$tmp" "$out/$lib"
scripts/sign-example.sh "$keys"
