#!/usr/bin/env bash
# Benchmark: silent-engine against aplay, through a private PulseAudio null sink.
#
#   bench/silent-engine.sh [SECONDS]      (default 60 s per client)
#
# For each client — the SilentEngineBench host running silent-engine (zero mode, 2 s buffer) on
# its default PulseAudio backend; the same with buffer_ms=10000; the same host on the ALSA
# backend (`device=default`, which reaches the server through the ALSA pulse plugin, like
# aplay); the same host idle (no plugin started: what any Swift host costs by itself);
# `aplay -D pulse` of /dev/zero at its defaults; and the same with --buffer-time=2000000 — it
# starts a FRESH PulseAudio server (so the server's CPU is attributable to that one client),
# lets the client settle for 3 s, then measures over the same window of SECONDS:
#   client CPU   sum of /proc/PID/task/*/schedstat run time (ns)
#   wakeups/s    voluntary context switches summed over /proc/PID/task/*/status
#   server CPU   the PulseAudio process's run time over the window (ns)
#   RSS          the client's VmRSS at the end
# and prints the RSS the plugin added to its host (VmRSS just before vs 1 s after start(), the
# host having awaited once before, as every host has), and vigil's RSS minus the idle host's.
# Needs: pulseaudio, aplay (alsa-utils), libasound2-plugins; builds SilentEngineBench (release).
set -euo pipefail
cd "$(dirname "$0")/.."
duration=${1:-60}

swift build -c release --product SilentEngineBench >/dev/null
host=$(swift build -c release --show-bin-path)/SilentEngineBench

work=$(mktemp -d)
chmod 700 "$work"
server_pid=""
client_pid=""
cleanup() {
  [[ -n "$client_pid" ]] && kill "$client_pid" 2>/dev/null && wait "$client_pid" 2>/dev/null
  [[ -n "$server_pid" ]] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

cpu_ns() { cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{s += $1} END {print s + 0}'; }
wakeups() { grep -h '^voluntary_ctxt_switches' /proc/"$1"/task/*/status 2>/dev/null | awk '{s += $2} END {print s + 0}'; }
rss_kb() { awk '/^VmRSS/ {print $2}' /proc/"$1"/status; }

start_server() {
  rm -rf "$work/rt"; mkdir -m 700 "$work/rt"
  XDG_RUNTIME_DIR=$work/rt HOME=$work/rt pulseaudio -n --daemonize=no --exit-idle-time=-1 \
    --use-pid-file=false -L module-native-protocol-unix \
    -L "module-null-sink sink_name=bench rate=48000 channels=2 format=s16le" \
    -L "module-suspend-on-idle timeout=1" >"$work/pa.log" 2>&1 &
  server_pid=$!
  for _ in $(seq 100); do
    PULSE_SERVER=unix:$work/rt/pulse/native pactl info >/dev/null 2>&1 && return 0
    sleep 0.05
  done
  echo "pulseaudio did not start:" >&2; cat "$work/pa.log" >&2; exit 1
}
stop_server() { kill "$server_pid"; wait "$server_pid" 2>/dev/null || true; server_pid=""; }

declare -A CPU WAKE SCPU RSS
measure() { # NAME COMMAND...
  local name=$1; shift
  start_server
  PULSE_SERVER=unix:$work/rt/pulse/native "$@" >"$work/$name.out" 2>&1 &
  client_pid=$!
  sleep 3
  local state; state=$(PULSE_SERVER=unix:$work/rt/pulse/native pactl list short sinks | awk -F'\t' '$2 == "bench" {print $5}')
  [[ "$state" == RUNNING || "$name" == host-idle ]] || { echo "$name: sink is $state, not RUNNING" >&2; cat "$work/$name.out" >&2; exit 1; }
  local c0 w0 s0 c1 w1 s1
  c0=$(cpu_ns "$client_pid"); w0=$(wakeups "$client_pid"); s0=$(cpu_ns "$server_pid")
  sleep "$duration"
  c1=$(cpu_ns "$client_pid"); w1=$(wakeups "$client_pid"); s1=$(cpu_ns "$server_pid")
  RSS[$name]=$(rss_kb "$client_pid")
  if [[ "$name" == vigil* ]]; then # per-thread wakeups over the whole run, to see who wakes
    for t in /proc/"$client_pid"/task/*; do
      printf '%s %s\n' "$(cat "$t/comm")" "$(awk '/^voluntary_ctxt_switches/ {print $2}' "$t/status")"
    done >"$work/threads-$name"
  fi
  CPU[$name]=$((c1 - c0)); WAKE[$name]=$((w1 - w0)); SCPU[$name]=$((s1 - s0))
  kill -TERM "$client_pid"; wait "$client_pid" 2>/dev/null || true; client_pid=""
  stop_server
}

echo "silent-engine benchmark: $duration s per client, $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
measure vigil "$host" "pulse_server=unix:$work/rt/pulse/native"
measure vigil-10s "$host" buffer_ms=10000
measure vigil-alsa "$host" device=default
measure host-idle "$host" --idle
measure aplay-default aplay -q -D pulse -f S16_LE -r 48000 -c 2 -t raw /dev/zero
measure aplay-2s aplay -q -D pulse -f S16_LE -r 48000 -c 2 -t raw --buffer-time=2000000 /dev/zero

printf '\n%-14s %14s %9s %10s %14s %9s %9s\n' client "client CPU ns" "CPU %" wakeups/s "server CPU ns" "server %" "RSS kB"
for n in vigil vigil-10s vigil-alsa host-idle aplay-default aplay-2s; do
  awk -v n="$n" -v c="${CPU[$n]}" -v w="${WAKE[$n]}" -v s="${SCPU[$n]}" -v r="${RSS[$n]}" -v d="$duration" \
    'BEGIN { printf "%-14s %14d %8.4f%% %10.2f %14d %8.4f%% %9d\n", n, c, c / (d * 1e7), w / d, s, s / (d * 1e7), r }'
done
before=$(sed -n 's/^rss_before_kb=//p' "$work/vigil.out"); after=$(sed -n 's/^rss_after_kb=//p' "$work/vigil.out")
added_wakeups=$((WAKE[vigil] - WAKE[host-idle]))
echo
echo "vigil = default PulseAudio backend (2 s buffer); vigil-10s = the same with buffer_ms=10000;"
echo "vigil-alsa = device=default through the ALSA pulse plugin;"
echo "host-idle = the same Swift host with no plugin started (libdispatch's 1 s pool monitor lives in"
echo "every Swift process that uses concurrency)."
echo "RSS added to the host by keepAlive(): $((after - before)) kB (host VmRSS $before kB just before start, $after kB 1 s after);"
echo "  at the end of the window, vigil's VmRSS is $((RSS[vigil] - RSS[host-idle])) kB above the idle host's"
awk -v w="$added_wakeups" -v d="$duration" 'BEGIN { printf "Wakeups added by keepAlive() (vigil - host-idle): %.2f/s\n", w / d }'
for n in vigil vigil-alsa; do
  echo "$n host threads, voluntary context switches over the whole run ($((duration + 3)) s):"
  sed 's/^/  /' "$work/threads-$n"
done
echo
check() { if eval "$2"; then echo "PASS  $1"; else echo "MISS  $1"; fi; }
check "client CPU <= 1/10 of default aplay" "(( ${CPU[vigil]} * 10 <= ${CPU[aplay-default]} ))"
check "client CPU <= 2 s-buffer aplay" "(( ${CPU[vigil]} <= ${CPU[aplay-2s]} ))"
check "<= 1 wakeup/s added by keepAlive() (vigil - host-idle)" "(( added_wakeups <= duration ))"
check "<= 1 wakeup/s for the whole host process, libdispatch included" "(( ${WAKE[vigil]} <= duration ))"
check "  ... with buffer_ms=10000" "(( ${WAKE[vigil-10s]} <= duration ))"
check "server CPU <= 2 s-buffer aplay's" "(( ${SCPU[vigil]} <= ${SCPU[aplay-2s]} ))"
check "added RSS <= 2 MB" "(( after - before <= 2048 ))"
