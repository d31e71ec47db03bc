#!/usr/bin/env bash
# Benchmark: silent-engine against aplay, through a private PulseAudio null sink.
#
#   bench/silent-engine.sh [SECONDS]      (default 60 s per client)
#
# For each client — the SilentEngineBench host running silent-engine (zero mode, 2 s buffer) on
# its default PulseAudio backend; the same with buffer_ms=10000; the same host on the ALSA
# backend (`device=default`, which reaches the server through the ALSA pulse plugin, like
# aplay); `vigil up` itself, with the signed silent-engine manifest; the same with
# buffer_ms = 10000 in vigil.toml; the same host idle (no plugin started: what any Swift host
# on the default executor costs by itself);
# `aplay -D pulse` of /dev/zero at its defaults; and the same with --buffer-time=2000000 — it
# starts a FRESH PulseAudio server (so the server's CPU is attributable to that one client),
# lets the client settle for 8 s, then measures over the same window of SECONDS:
#   client CPU   run time (ns) from /proc/PID/task/*/schedstat, per-thread deltas summed
#   wakeups/s    voluntary context switches from /proc/PID/task/*/status, per-thread deltas summed
#   server CPU   the PulseAudio process's run time over the window (ns)
#   RSS, PSS     the client's VmRSS and its proportional set size (smaps_rollup) at the end
# and prints the RSS the plugin added to its host (VmRSS just before vs 1 s after start(), the
# host having awaited once before, as every host has), and vigil's RSS minus the idle host's.
# Both Swift executables are release builds with the Swift runtime linked statically
# (--static-swift-stdlib), as docs/host-runtime.md recommends for `vigil`; `vigil` runs its tasks
# on one event loop thread (VigilExecutor), the bench host on the default executor.
# Needs: pulseaudio, aplay (alsa-utils), libasound2-plugins; builds SilentEngineBench (release).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
bench_work
duration=${1:-60}

release_build --static-swift-stdlib -- SilentEngineBench vigil
host=$bin/SilentEngineBench
vigil=$bin/vigil

client_pid=""
stop_clients() {
  [[ -n "$client_pid" ]] && kill "$client_pid" 2>/dev/null && wait "$client_pid" 2>/dev/null
  return 0
}

tids() { ls /proc/"$1"/task 2>/dev/null | sort; }
# One line per thread: TID, run time (ns), voluntary context switches.
snapshot() {
  local t
  for t in /proc/"$1"/task/*; do
    printf '%s %s %s\n' "${t##*/}" "$(cut -d' ' -f1 "$t/schedstat" 2>/dev/null)" \
      "$(awk '/^voluntary_ctxt_switches/ {print $2}' "$t/status" 2>/dev/null)"
  done
}
# Per-thread deltas between two snapshots, summed: threads present at both ends count their
# difference, threads born in between count fully, threads that ended count nothing (their
# switches inside the window are lost: the "threads gone" column says how many). Prints "CPU WAKE".
delta() {
  awk 'NR == FNR { c[$1] = $2; w[$1] = $3; next } { dc += $2 - c[$1]; dw += $3 - w[$1] } END { print dc + 0, dw + 0 }' "$1" "$2"
}

declare -A CPU WAKE SCPU RSS PSS GONE
measure() { # NAME COMMAND...
  local name=$1; shift
  pulse_start
  PULSE_SERVER=$pulse_address "$@" >"$work/$name.out" 2>&1 &
  client_pid=$!
  sleep 3
  local state; state=$(PULSE_SERVER=$pulse_address pactl list short sinks | awk -F'\t' '$2 == "bench" {print $5}')
  [[ "$state" == RUNNING || "$name" == host-idle ]] || { echo "$name: sink is $state, not RUNNING" >&2; cat "$work/$name.out" >&2; exit 1; }
  # Let start-up settle: libdispatch retires its start-up workers after a few idle seconds.
  sleep 5
  local s0 s1 t0 t1
  t0=$(tids "$client_pid")
  snapshot "$client_pid" >"$work/before"; s0=$(cpu_ns "$server_pid")
  sleep "$duration"
  snapshot "$client_pid" >"$work/after"; s1=$(cpu_ns "$server_pid")
  t1=$(tids "$client_pid")
  # Threads that ended inside the window take their counts with them (the sums undercount then).
  GONE[$name]=$(comm -23 <(echo "$t0") <(echo "$t1") | grep -c . || true)
  RSS[$name]=$(rss_kb "$client_pid")
  PSS[$name]=$(pss_kb "$client_pid")
  if [[ "$name" == vigil* ]]; then # per-thread wakeups over the whole run, to see who wakes
    for t in /proc/"$client_pid"/task/*; do
      printf '%s %s\n' "$(cat "$t/comm")" "$(awk '/^voluntary_ctxt_switches/ {print $2}' "$t/status")"
    done >"$work/threads-$name"
  fi
  read -r "CPU[$name]" "WAKE[$name]" < <(delta "$work/before" "$work/after")
  SCPU[$name]=$((s1 - s0))
  kill -TERM "$client_pid"; wait "$client_pid" 2>/dev/null || true; client_pid=""
  pulse_stop
}

bench_header "bench/silent-engine.sh: $duration s per client"
measure vigil "$host" "pulse_server=$pulse_address"
measure vigil-10s "$host" buffer_ms=10000
measure vigil-alsa "$host" device=default
measure host-idle "$host" --idle
# The real CLI host: `vigil up` with the signed, trusted silent-engine manifest from manifests/.
bench_config silent-engine >"$work/vigil.toml"
XDG_STATE_HOME=$work/state measure vigil-up "$vigil" up --config "$work/vigil.toml"
{ cat "$work/vigil.toml"; printf '\n[silent-engine]\nbuffer_ms = 10000\n'; } >"$work/vigil-10s.toml"
XDG_STATE_HOME=$work/state measure vigil-up-10s "$vigil" up --config "$work/vigil-10s.toml"
measure aplay-default aplay -q -D pulse -f S16_LE -r 48000 -c 2 -t raw /dev/zero
measure aplay-2s aplay -q -D pulse -f S16_LE -r 48000 -c 2 -t raw --buffer-time=2000000 /dev/zero

printf '\n%-14s %14s %9s %10s %14s %9s %9s %9s %s\n' client "client CPU ns" "CPU %" wakeups/s "server CPU ns" "server %" "RSS kB" "PSS kB" "threads gone"
for n in vigil vigil-10s vigil-alsa vigil-up vigil-up-10s host-idle aplay-default aplay-2s; do
  awk -v n="$n" -v c="${CPU[$n]}" -v w="${WAKE[$n]}" -v s="${SCPU[$n]}" -v r="${RSS[$n]}" -v p="${PSS[$n]}" -v g="${GONE[$n]}" -v d="$duration" \
    'BEGIN { printf "%-14s %14d %8.4f%% %10.2f %14d %8.4f%% %9d %9d %d\n", n, c, c / (d * 1e7), w / d, s, s / (d * 1e7), r, p, g }'
done
before=$(sed -n 's/^rss_before_kb=//p' "$work/vigil.out"); after=$(sed -n 's/^rss_after_kb=//p' "$work/vigil.out")
added_wakeups=$((WAKE[vigil] - WAKE[host-idle]))
added_cpu=$((CPU[vigil] - CPU[host-idle]))
echo
echo "vigil = default PulseAudio backend (2 s buffer); vigil-10s = the same with buffer_ms=10000;"
echo "vigil-alsa = device=default through the ALSA pulse plugin; vigil-up = the vigil CLI (vigil up) with the"
echo "signed silent-engine manifest on its event loop executor (vigil-up-10s: buffer_ms = 10000); threads gone = threads that ended inside the window (their"
echo "switches and CPU in it are not counted, so that row undercounts);"
echo "host-idle = the same Swift host with no plugin started (libdispatch's 1 s pool monitor lives in"
echo "every Swift process that uses concurrency)."
echo "RSS added to the host by keepAlive(): $((after - before)) kB (host VmRSS $before kB just before start, $after kB 1 s after);"
echo "  at the end of the window, vigil's VmRSS is $((RSS[vigil] - RSS[host-idle])) kB above the idle host's"
awk -v w="$added_wakeups" -v c="$added_cpu" -v d="$duration" \
  'BEGIN { printf "Added by keepAlive() (vigil - host-idle): %.2f wakeups/s, %d ns CPU (%.4f%%)\n", w / d, c, c / (d * 1e7) }'
for n in vigil vigil-alsa vigil-up vigil-up-10s; do
  echo "$n host threads, voluntary context switches over the whole run ($((duration + 8)) s):"
  sed 's/^/  /' "$work/threads-$n"
done
echo
check "client CPU <= 1/10 of default aplay, whole host process" "(( ${CPU[vigil]} * 10 <= ${CPU[aplay-default]} ))"
check "  ... CPU added by keepAlive() (vigil - host-idle)" "(( added_cpu * 10 <= ${CPU[aplay-default]} ))"
check "client CPU <= 2 s-buffer aplay, whole host process" "(( ${CPU[vigil]} <= ${CPU[aplay-2s]} ))"
check "<= 1 wakeup/s, whole host process (libdispatch included)" "(( ${WAKE[vigil]} <= duration ))"
check "  ... with buffer_ms=10000" "(( ${WAKE[vigil-10s]} <= duration ))"
check "  ... added by keepAlive() (vigil - host-idle)" "(( added_wakeups <= duration ))"
check "server CPU <= 2 s-buffer aplay's" "(( ${SCPU[vigil]} <= ${SCPU[aplay-2s]} ))"
check "added RSS <= 2 MB" "(( after - before <= 2048 ))"
check "vigil up: <= 1 wakeup/s, whole process" "(( ${WAKE[vigil-up]} <= duration ))"
check "vigil up: client CPU <= 1/20 of default aplay, whole process" "(( ${CPU[vigil-up]} * 20 <= ${CPU[aplay-default]} ))"
check "vigil up, buffer_ms = 10000: <= 0.3 wakeups/s, whole process" "(( ${WAKE[vigil-up-10s]} * 10 <= duration * 3 ))"
check "vigil up: RSS <= 18 MB" "(( ${RSS[vigil-up]} <= 18432 ))"
check "vigil contains no CoreFoundation (its constructor __CFInitialize)" "! nm \"$vigil\" | grep -q __CFInitialize"
