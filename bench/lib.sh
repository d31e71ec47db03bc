# Helpers shared by the benchmark scripts in bench/ (sourced, not run):
#
#   source "$(dirname "$0")/lib.sh"
#
# It changes to the repository root.

cd "$(dirname "${BASH_SOURCE[0]}")/.."

# Prints the header every benchmark starts with: TITLE, the UTC date, the machine (host name,
# CPUs and their model, architecture, kernel) and `uptime` (the figures depend on the load).
bench_header() {
  echo "$1 — $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "machine: $(uname -n), $(nproc) CPUs ($(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo)), $(uname -m), Linux $(uname -r)"
  echo "uptime: $(uptime)"
}

# Builds each PRODUCT in release mode quietly, with the FLAGS before `--`, and sets `bin` to the
# directory holding them:  release_build [FLAGS…] -- PRODUCT…
# The benchmark hosts are in the nested Benchmarks/ package (built there, in Benchmarks/.build);
# `vigil` and SilentEngineBench (a fixture host the tests run too) are in the product package.
# One call builds from one package: the first PRODUCT says which.
release_build() {
  local flags=()
  while [[ $# -gt 0 && "$1" != -- ]]; do flags+=("$1"); shift; done
  shift
  [[ -d "Benchmarks/Sources/$1" ]] && flags+=(--package-path Benchmarks)
  local product
  for product in "$@"; do swift build -c release "${flags[@]}" --product "$product" >/dev/null; done
  bin=$(swift build -c release "${flags[@]}" --show-bin-path)
}

# Creates a private work directory, $work (mode 700), removed on exit after the script's
# `stop_clients` (if it defines one) and the sound server; sets `pulse_address`, the address of
# the private PulseAudio server pulse_start starts in it.
server_pid=""
bench_work() {
  work=$(mktemp -d)
  chmod 700 "$work"
  pulse_address=unix:$work/rt/pulse/native
  trap bench_cleanup EXIT
}
bench_cleanup() {
  if declare -F stop_clients >/dev/null; then stop_clients; fi
  [[ -n "$server_pid" ]] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
  rm -rf "$work"
}

# Starts a FRESH private PulseAudio server (runtime directory $work/rt, a 48 kHz stereo null sink
# named `bench`, suspend on idle after 1 s) and waits until it answers; sets `server_pid`.
# Arguments are added to its command line (more `-L module` options).
pulse_start() {
  rm -rf "$work/rt"; mkdir -m 700 "$work/rt"
  XDG_RUNTIME_DIR=$work/rt HOME=$work/rt pulseaudio -n --daemonize=no --exit-idle-time=-1 \
    --use-pid-file=false -L module-native-protocol-unix \
    -L "module-null-sink sink_name=bench rate=48000 channels=2 format=s16le" \
    -L "module-suspend-on-idle timeout=1" "$@" >"$work/pa.log" 2>&1 &
  server_pid=$!
  for _ in $(seq 100); do
    PULSE_SERVER=$pulse_address pactl info >/dev/null 2>&1 && return 0
    sleep 0.05
  done
  echo "pulseaudio did not start:" >&2; cat "$work/pa.log" >&2; exit 1
}
pulse_stop() { kill "$server_pid"; wait "$server_pid" 2>/dev/null || true; server_pid=""; }

# Run time (ns) of all threads of PID; its VmRSS and proportional set size (kB).
cpu_ns() { cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{s += $1} END {print s + 0}'; }
rss_kb() { awk '/^VmRSS/ {print $2}' /proc/"$1"/status; }
pss_kb() { awk '/^Pss:/ {print $2}' /proc/"$1"/smaps_rollup; }

# The key Examples/ExampleHost/vigil.toml trusts for first-party plugin NAME.
trusted_key() { sed -n "s/^$1 = \"\(.*\)\"\$/\1/p" Examples/ExampleHost/vigil.toml; }

# Prints a vigil.toml activating PLUGIN… from manifests/ with their first-party keys trusted,
# for a host named bench-host with background audio (and services, with the supervisor)
# declared; append the plugin tables.
bench_config() {
  local name
  printf 'plugins = [%s]\nplugin_paths = ["%s/manifests"]\n\n' "$(printf '"%s", ' "$@" | sed 's/, $//')" "$PWD"
  printf '[host]\nname = "bench-host"\nbackground_modes = ["audio"]\n'
  [[ " $* " == *" supervisor "* ]] && printf 'services = ["supervisor"]\n'
  printf '\n[trusted_plugins]\n'
  for name in "$@"; do printf '%s = "%s"\n' "$name" "$(trusted_key "$name")"; done
}

# Prints `PASS  LABEL` when the shell CONDITION holds, else `MISS  LABEL`:  check LABEL CONDITION
check() { if eval "$2"; then echo "PASS  $1"; else echo "MISS  $1"; fi; }
