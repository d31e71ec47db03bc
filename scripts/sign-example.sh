#!/usr/bin/env bash
# Signs the example shared-library plugin (Examples/HeartbeatPlugin/heartbeat-example) the way its
# publisher does after trust v2 (docs/signing.md, "Key rotation"):
#   1. once: rotations/1.json moves the plugin from the `examples` key to 2 of {`examples-next`,
#      `examples-cosigner`}, signed by the old key and both new ones (independent of the manifest's
#      bytes, so it is kept when the library changes);
#   2. every release: plugin.json is signed by both new keys (plugin.json.minisig, plugin.json.2.minisig).
# Re-run it after plugin.json or the library changes (scripts/package-example-plugin.sh calls it).
#
#   scripts/sign-example.sh [KEY_DIR]      # KEY_DIR defaults to ../shared/signing
#
# The secret keys are copied to 0600 temporary files and deleted afterwards; never commit them.
set -euo pipefail
cd "$(dirname "$0")/.."
keys=${1:-../shared/signing}
out=Examples/HeartbeatPlugin/heartbeat-example
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for k in examples examples-next examples-cosigner; do
    install -m 0600 "$keys/$k.key" "$tmp/$k.key"
done
swift build --product vigil >/dev/null
vigil="$(swift build --show-bin-path)/vigil"
if [ ! -e "$out/rotations/1.json" ]; then
    "$vigil" plugin rotate "$out" --from "$tmp/examples.key" \
        --to "$keys/examples-next.pub" --to "$keys/examples-cosigner.pub" --threshold 2 \
        --cosign "$tmp/examples-next.key" --cosign "$tmp/examples-cosigner.key"
fi
"$vigil" plugin sign "$out" --key "$tmp/examples-next.key"
"$vigil" plugin sign "$out" --key "$tmp/examples-cosigner.key"
# A host that pinned the examples key follows the rotation; one that pins the new keys needs both.
"$vigil" plugin verify "$out" --fingerprint ed25519:Sb9NX1s1bgYEwpovUvJPjgv2VSn85ffOQPgktfl3XcY=
"$vigil" plugin verify "$out" --fingerprint ed25519:QOrI7WAhblHeS1SlvhKdfN+RFij+HpbW9emtKjpi3bc= \
    --fingerprint ed25519:bCnW+qFsrMBYR/JRlFK0ETJwZ4I9gm+QEGBSDHN9StI=
# The real minisign accepts every file (prehashed signatures only: -H).
if command -v minisign >/dev/null; then
    minisign -V -H -q -p "$keys/examples.pub" -m "$out/rotations/1.json" -x "$out/rotations/1.json.minisig"
    minisign -V -H -q -p "$keys/examples-next.pub" -m "$out/plugin.json" -x "$out/plugin.json.minisig"
    minisign -V -H -q -p "$keys/examples-cosigner.pub" -m "$out/plugin.json" -x "$out/plugin.json.2.minisig"
fi
