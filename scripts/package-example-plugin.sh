#!/usr/bin/env bash
# Builds the example shared-library plugin (Examples/HeartbeatPlugin) in release mode, stages the
# stripped library in Examples/HeartbeatPlugin/heartbeat-example and signs the manifest — what a plugin publisher
# does for every release (docs/native-plugins.md). Bump "version" in its plugin.json first.
#
#   scripts/package-example-plugin.sh SECRET_KEY
#
# SECRET_KEY is a 0600 copy of the examples key (../shared/signing/examples.key); never commit it.
set -euo pipefail
cd "$(dirname "$0")/.."
key=${1:?usage: scripts/package-example-plugin.sh SECRET_KEY}
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
swift build --product vigil
vigil="$(swift build --show-bin-path)/vigil"
"$vigil" plugin sign "$out" --key "$key"
# The examples key's fingerprint (README, Signing and trust).
"$vigil" plugin verify "$out" --fingerprint ed25519:Sb9NX1s1bgYEwpovUvJPjgv2VSn85ffOQPgktfl3XcY=
