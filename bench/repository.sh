#!/usr/bin/env bash
# `vigil plugin update` with nothing new against a TUF repository of 1,000 plugins, side by side
# with python-tuf's ngclient refreshing the same repository in the same run (issue 32, point 5).
#
#   bench/repository.sh                    # release build of vigil, 1,000 plugins
#   PLUGINS=200 bench/repository.sh        # fewer plugins
#   VIGIL_BIN=.build/debug bench/repository.sh   # an already built vigil (say so with the figures)
#
# Method
# - N plugins (supervisor plugins running /bin/sleep), each with its own key (`vigil plugin keygen`)
#   and signed (`vigil plugin sign`), published with Tests/Fixtures/tuf/make-repo.py (python-tuf's
#   Metadata API): top-level targets delegate NAME/* to a role NAME per plugin (N delegated roles,
#   consistent snapshots), served by make-repo.py's loopback HTTP server.
# - A host project activates and trusts all N, installed in its manifests/ as the repository has
#   them. One `vigil plugin update` fills the metadata directory; then R timed runs, each "nothing
#   to update" (checked): wall time and peak RSS (GNU time's %e and %M).
# - In the same run, tuf-ngclient.py (bench/): ngclient's Updater over the same server, a warm
#   metadata directory, refresh + get_targetinfo("NAME/plugin.json") for every plugin, R timed runs.
# - go-tuf's client is not run: the conformance suite's go-tuf client needs Go 1.25, Debian 12 has
#   Go 1.19 (golang-go) and no newer Go can be installed here.
# - Target (issue 32): faster than both.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
n=${PLUGINS:-1000}
runs=${RUNS:-3}
bench_header "bench/repository.sh: vigil plugin update, $n plugins, nothing new"

if [[ -n "${VIGIL_BIN:-}" ]]; then
  bin=$VIGIL_BIN
  echo "vigil: $bin/vigil (as built, not rebuilt)"
else
  release_build -- vigil
  echo "vigil: release build"
fi
vigil=$(realpath "$bin/vigil")
python=$(scripts/tuf-venv.sh)
work=$(mktemp -d)
server=""
trap '[[ -n $server ]] && kill "$server"; [[ -n ${KEEP:-} ]] && echo "kept $work" || rm -rf "$work"' EXIT
mkdir -p "$work/keys" "$work/src" "$work/host/manifests"

names=()
for i in $(seq -w 1 "$n"); do names+=("p$i"); done
echo "making $n signed plugins…"
make_plugin() {
  local name=$1 work=$2 vigil=$3
  "$vigil" plugin keygen --name "$name" --dir "$work/keys" >/dev/null
  mkdir -p "$work/src/$name"
  printf '{"schema": "vigil.plugin-manifest/v1", "name": "%s", "version": "1.0.0", "entry": "supervisor",\n "settings": {"notification": false, "workers": [{"name": "w", "command": "/bin/sleep", "args": ["300"]}]}}\n' \
    "$name" >"$work/src/$name/plugin.json"
  "$vigil" plugin sign "$work/src/$name" --key "$work/keys/$name.key" >/dev/null
}
export -f make_plugin
printf '%s\n' "${names[@]}" | xargs -P "$(nproc)" -I{} bash -c 'make_plugin "$@"' _ {} "$work" "$vigil"

echo "publishing them with python-tuf…"
"$python" Tests/Fixtures/tuf/make-repo.py init "$work/repo" >/dev/null
keys=()
for name in "${names[@]}"; do keys+=(--key "$name=$work/keys/$name.key"); done
"$python" Tests/Fixtures/tuf/make-repo.py publish "$work/repo" "${names[@]/#/$work/src/}" "${keys[@]}"
"$python" Tests/Fixtures/tuf/make-repo.py serve "$work/repo" --port-file "$work/port" >/dev/null &
server=$!
for _ in $(seq 100); do [[ -s $work/port ]] && break; sleep 0.1; done
port=$(cat "$work/port")

# The host: every plugin activated, trusted and installed as published.
cp "$work/repo/metadata/1.root.json" "$work/host/root.json"
{
  printf 'plugins = [%s]\n\n[host]\nservices = ["supervisor"]\n\n' "$(printf '"%s", ' "${names[@]}" | sed 's/, $//')"
  printf '[repository]\nroot = "root.json"\nmirrors = ["http://127.0.0.1:%s/"]\nmetadata_dir = "%s"\n\n' \
    "$port" "$work/state/repository"
  echo "[trusted_plugins]"
  for name in "${names[@]}"; do
    key=$(sed -n 2p "$work/keys/$name.pub" | base64 -d | tail -c 32 | base64 -w0)
    echo "$name = \"ed25519:$key\""
  done
} >"$work/host/vigil.toml"
chmod 600 "$work/host/vigil.toml"
cp -r "$work/src/." "$work/host/manifests/"
export XDG_STATE_HOME=$work/state HOME=$work
mkdir -p "$work/state" && chmod 700 "$work/state"

first=$("$vigil" plugin update --config "$work/host/vigil.toml" | tail -1)
[[ $first == "nothing to update" ]] || { echo "first update: $first" >&2; exit 1; }
mkdir -p "$work/ngclient"
cp "$work/repo/metadata/1.root.json" "$work/ngclient/root.json"
ngclient=("$python" bench/tuf-ngclient.py "$work/ngclient" "http://127.0.0.1:$port/metadata/"
  "http://127.0.0.1:$port/targets/" "${names[@]}")
found=$("${ngclient[@]}")
[[ $found == "$n" ]] || { echo "ngclient found $found of $n" >&2; exit 1; }

measure() { # LABEL COMMAND…: RUNS runs of wall seconds and peak RSS (KiB), then the median
  local label=$1
  shift
  local walls=() rss=()
  for _ in $(seq "$runs"); do
    /usr/bin/time -f '%e %M' -o "$work/time" "$@" >"$work/out" 2>&1 || { cat "$work/out" >&2; exit 1; }
    read -r wall kib <"$work/time"
    walls+=("$wall")
    rss+=("$kib")
  done
  local mw mr
  mw=$(printf '%s\n' "${walls[@]}" | sort -n | sed -n "$(((runs + 1) / 2))p")
  mr=$(printf '%s\n' "${rss[@]}" | sort -n | sed -n "$(((runs + 1) / 2))p")
  printf '%-34s wall %6.2f s (runs: %s)   peak RSS %6.1f MiB\n' "$label" "$mw" "${walls[*]}" "$(echo "$mr / 1024" | bc -l)"
  eval "${label%% *}_wall=$mw"
}
measure "vigil plugin update" "$vigil" plugin update --config "$work/host/vigil.toml"
grep -q "nothing to update" "$work/out" || { echo "vigil updated something" >&2; exit 1; }
measure "ngclient refresh + $n lookups" "${ngclient[@]}"
echo "python-tuf: $("$python" -c 'import tuf; print(tuf.__version__)'); go-tuf: not run (Go 1.19 here, its client needs 1.25)"
check "vigil faster than python-tuf's ngclient" "(( \$(echo \"$vigil_wall < $ngclient_wall\" | bc) ))"
