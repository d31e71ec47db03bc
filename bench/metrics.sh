#!/usr/bin/env bash
# What `[metrics]` costs (issue 30): the wakeups an idle `vigil up` adds with metrics on, and the
# CPU one scrape of /metrics costs with 50 supervised workers.
#
#   bench/metrics.sh                              # a release build of vigil
#   VIGIL=.build/debug/vigil IDLE_S=30 SCRAPES=200 bench/metrics.sh
#
# Method
# - Idle wakeups: two `vigil up` hosts side by side over the same window, each supervising one
#   worker that sleeps: one without [metrics], one with both ways out on (textfile and listen on
#   127.0.0.1). After SETTLE_S seconds (start-up done, first textfile written), the voluntary and
#   involuntary context switches of all of each host's threads (/proc/PID/task/*/status) are
#   counted over IDLE_S seconds. Added = (metrics on - metrics off) / IDLE_S; target <= 0.05/s.
# - Scrape CPU: a host with 50 workers and [metrics] listen; the run time of all its threads
#   (/proc/PID/task/*/schedstat) over SCRAPES sequential `curl /metrics`, minus its run time over
#   the same wall time without scrapes, divided by SCRAPES; target < 1 ms.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

IDLE_S=${IDLE_S:-30}
SETTLE_S=${SETTLE_S:-8}
SCRAPES=${SCRAPES:-200}
if [[ -z "${VIGIL:-}" ]]; then
  release_build -- vigil
  VIGIL=$bin/vigil
fi
command -v curl >/dev/null || { echo "missing curl: run scripts/install-deps.sh" >&2; exit 1; }

bench_work
pids=()
stop_clients() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
}

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# Starts `vigil up` for DIR/vigil.toml (supervisor with WORKERS sleepers, then EXTRA); sets `pid`.
start_host() {
  local dir=$1 workers=$2 extra=$3
  mkdir -m 700 -p "$dir/rt" "$dir/state"
  {
    bench_config supervisor
    printf '\n[supervisor]\nnotification = false\nworkers = [\n'
    for i in $(seq "$workers"); do printf '  { name = "w%d", command = "/bin/sleep", args = ["100000"] },\n' "$i"; done
    printf ']\n\n%b' "$extra"
  } >"$dir/vigil.toml"
  chmod 600 "$dir/vigil.toml"
  XDG_RUNTIME_DIR=$dir/rt XDG_STATE_HOME=$dir/state HOME=$dir DBUS_SESSION_BUS_ADDRESS= \
    "$VIGIL" up --config "$dir/vigil.toml" >"$dir/up.out" 2>&1 &
  pid=$!
  pids+=("$pid")
}

switches() { cat /proc/"$1"/task/*/status 2>/dev/null | awk '/ctxt_switches/ {s += $2} END {print s + 0}'; }

wait_http() {
  for _ in $(seq 200); do curl -sf "$1" >/dev/null 2>&1 && return 0; sleep 0.05; done
  echo "no answer from $1" >&2; exit 1
}

bench_header "metrics cost (bench/metrics.sh, vigil: $VIGIL)"

# Idle wakeups, metrics off vs on.
port=$(free_port)
start_host "$work/off" 1 ""
off=$pid
start_host "$work/on" 1 "[metrics]\ntextfile = \"$work/on/vigil.prom\"\nlisten = \"127.0.0.1:$port\"\n"
on=$pid
wait_http "http://127.0.0.1:$port/metrics"
sleep "$SETTLE_S"
[[ -s "$work/on/vigil.prom" ]] || { echo "no textfile written" >&2; exit 1; }
s_off=$(switches "$off"); s_on=$(switches "$on"); mtime0=$(stat -c %Y "$work/on/vigil.prom")
sleep "$IDLE_S"
d_off=$(($(switches "$off") - s_off)); d_on=$(($(switches "$on") - s_on))
rewritten=$([[ $(stat -c %Y "$work/on/vigil.prom") != "$mtime0" ]] && echo yes || echo no)
kill -TERM "$off" "$on"; wait "$off" "$on" 2>/dev/null || true
echo
printf '%-22s %12s %12s\n' "idle host (1 worker)" "switches" "per second"
awk -v d="$d_off" -v t="$IDLE_S" 'BEGIN { printf "%-22s %12d %12.3f\n", "metrics off", d, d / t }'
awk -v d="$d_on" -v t="$IDLE_S" 'BEGIN { printf "%-22s %12d %12.3f\n", "metrics on", d, d / t }'
awk -v a="$d_on" -v b="$d_off" -v t="$IDLE_S" 'BEGIN { printf "added by metrics: %.3f wakeups/s (target <= 0.05)\n", (a - b) / t }'
echo "textfile rewritten while idle: $rewritten"

# Scrape CPU with 50 workers.
port=$(free_port)
start_host "$work/fifty" 50 "[metrics]\nlisten = \"127.0.0.1:$port\"\n"
host=$pid
wait_http "http://127.0.0.1:$port/metrics"
for _ in $(seq 100); do
  [[ $(curl -s "http://127.0.0.1:$port/metrics" | grep -c 'vigil_worker_ready{.*} 1.0') == 50 ]] && break
  sleep 0.1
done
sleep "$SETTLE_S"
bytes=$(curl -s "http://127.0.0.1:$port/metrics" | wc -c)
series=$(curl -s "http://127.0.0.1:$port/metrics" | grep -vc '^#')
c0=$(cpu_ns "$host"); t0=$(date +%s%N)
for _ in $(seq "$SCRAPES"); do curl -s -o /dev/null "http://127.0.0.1:$port/metrics"; done
c1=$(cpu_ns "$host"); t1=$(date +%s%N)
# The same wall time without scrapes: the host's own background run time.
sleep "$(awk -v n=$((t1 - t0)) 'BEGIN { print n / 1e9 }')"
c2=$(cpu_ns "$host")
echo
echo "scrape of /metrics, 50 workers: $series series, $bytes bytes"
awk -v s=$((c1 - c0)) -v i=$((c2 - c1)) -v n="$SCRAPES" \
  'BEGIN { printf "host CPU per scrape: %.3f ms (%.3f ms with the idle run time not subtracted; target < 1 ms)\n", (s - i) / n / 1e6, s / n / 1e6 }'
