#!/usr/bin/env bash
# Benchmark: the soundscape plugin against other ways of playing ambient sound, each through a
# fresh private PulseAudio null sink.
#
#   bench/soundscape.sh [SECONDS]      (default 60 s per client)
#
# Clients: `vigil up` with the signed soundscape manifest playing ocean-waves, and brown-noise;
# the same Swift host idle (SilentEngineBench --idle: what any Swift host costs by itself);
# `play -n synth brownnoise` (sox, through ALSA's pulse plugin); a GStreamer pipeline of
# Blanket's shape (`audiotestsrc wave=pink-noise ! volume ! pulsesink`); and `paplay` in a loop
# of 20 s of vigil's ocean waves recorded from the monitor (mpv is not installed here).
# For each: the client settles 8 s, then over SECONDS:
#   client CPU   run time (ns) of every thread of every process in the client's process group
#   wakeups/s    their voluntary context switches
#   server CPU   PulseAudio's run time
#   RSS          the client's VmRSS at the end (the main process)
#   underruns    from the plugin's status (vigil rows)
# Processes or threads that end inside the window take their counts with them ("gone" column):
# the paplay loop's rows undercount by the paplay runs that ended in the window.
# Needs: pulseaudio, pulseaudio-utils, sox, gstreamer1.0-tools + -plugins-good + -pulseaudio.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
bench_work
duration=${1:-60}

release_build -- vigil SilentEngineBench
vigil=$bin/vigil
idle=$bin/SilentEngineBench

client_pid=""
stop_clients() {
  [[ -n "$client_pid" ]] && kill -- -"$client_pid" 2>/dev/null && wait "$client_pid" 2>/dev/null
  return 0
}
export PULSE_SERVER=$pulse_address

# One line per thread of every process in process group $1: PID/TID, run time (ns), voluntary switches.
snapshot() {
  local p t
  for p in /proc/[0-9]*; do
    [[ "$(awk '{print $5}' "$p/stat" 2>/dev/null)" == "$1" ]] || continue
    for t in "$p"/task/*; do
      printf '%s/%s %s %s\n' "${p##*/}" "${t##*/}" "$(cut -d' ' -f1 "$t/schedstat" 2>/dev/null)" \
        "$(awk '/^voluntary_ctxt_switches/ {print $2}' "$t/status" 2>/dev/null)"
    done
  done
}
# Per-thread deltas, summed: present at both ends count the difference, born in between count
# fully, ended count nothing. Prints "CPU WAKE GONE".
delta() {
  awk 'NR == FNR { c[$1] = $2; w[$1] = $3; seen[$1] = 1; next }
       { dc += $2 - c[$1]; dw += $3 - w[$1]; delete seen[$1] }
       END { n = 0; for (k in seen) n++; print dc + 0, dw + 0, n }' "$1" "$2"
}

config() { # SOUNDSCAPE
  { bench_config soundscape; printf '\n[soundscape]\nsoundscape = "%s"\nmpris = false\npulse_server = "%s"\n' "$1" "$PULSE_SERVER"; } \
    >"$work/vigil-$1.toml"
}

declare -A CPU WAKE SCPU RSS GONE UNDER
measure() { # NAME COMMAND...
  local name=$1; shift
  pulse_start
  rm -rf "$work/state"; mkdir -m 700 "$work/state"
  XDG_STATE_HOME=$work/state setsid "$@" >"$work/$name.out" 2>&1 &
  client_pid=$!
  sleep 3
  local state; state=$(pactl list short sinks | awk -F'\t' '$2 == "bench" {print $5}')
  [[ "$state" == RUNNING || "$name" == host-idle || "$name" == up-none ]] || { echo "$name: sink is $state, not RUNNING" >&2; cat "$work/$name.out" >&2; exit 1; }
  sleep 5
  local s0 s1
  snapshot "$client_pid" >"$work/before"; s0=$(cpu_ns "$server_pid")
  sleep "$duration"
  snapshot "$client_pid" >"$work/after"; s1=$(cpu_ns "$server_pid")
  RSS[$name]=$(rss_kb "$client_pid")
  UNDER[$name]=-
  if [[ "$name" == vigil* ]]; then
    UNDER[$name]=$(XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-} "$vigil" status --json 2>/dev/null |
      sed -n 's/.*"underruns" *: *"\{0,1\}\([0-9][0-9]*\).*/\1/p' | head -1)
    UNDER[$name]=${UNDER[$name]:-?}
  fi
  read -r "CPU[$name]" "WAKE[$name]" "GONE[$name]" < <(delta "$work/before" "$work/after")
  SCPU[$name]=$((s1 - s0))
  kill -TERM -- -"$client_pid" 2>/dev/null; wait "$client_pid" 2>/dev/null || true; client_pid=""
  pulse_stop
}

bench_header "bench/soundscape.sh: $duration s per client"
config ocean-waves
config brown-noise
# The same `vigil up` with no plugin: what the soundscape plugin adds to the process.
printf 'plugins = []\n' >"$work/vigil-none.toml"

# A 20 s recording of vigil's ocean waves, for the paplay loop.
pulse_start
rm -rf "$work/state"; mkdir -m 700 "$work/state"
XDG_STATE_HOME=$work/state setsid "$vigil" up --config "$work/vigil-ocean-waves.toml" >"$work/record.out" 2>&1 &
client_pid=$!
sleep 3
timeout -s INT 20 parec -d bench.monitor --raw --format=s16le --rate=48000 --channels=2 >"$work/ocean.raw" || true
sox -t raw -r 48000 -e signed -b 16 -c 2 "$work/ocean.raw" "$work/ocean.wav"
kill -TERM -- -"$client_pid"; wait "$client_pid" 2>/dev/null || true; client_pid=""
pulse_stop

measure vigil-ocean "$vigil" up --config "$work/vigil-ocean-waves.toml"
measure vigil-brown "$vigil" up --config "$work/vigil-brown-noise.toml"
measure up-none "$vigil" up --config "$work/vigil-none.toml"
measure host-idle "$idle" --idle
AUDIODRIVER=alsa AUDIODEV=pulse measure sox-brown play -q -n synth brownnoise vol 0.1
measure gst-pink gst-launch-1.0 -q audiotestsrc wave=pink-noise ! volume volume=0.3 ! pulsesink
measure paplay-loop sh -c "while :; do paplay '$work/ocean.wav'; done"

printf '\n%-12s %14s %9s %10s %14s %9s %9s %5s %9s\n' client "client CPU ns" "CPU %" wakeups/s "server CPU ns" "server %" "RSS kB" gone underruns
for n in vigil-ocean vigil-brown up-none host-idle sox-brown gst-pink paplay-loop; do
  awk -v n="$n" -v c="${CPU[$n]}" -v w="${WAKE[$n]}" -v s="${SCPU[$n]}" -v r="${RSS[$n]}" -v g="${GONE[$n]}" -v u="${UNDER[$n]}" -v d="$duration" \
    'BEGIN { printf "%-12s %14d %8.4f%% %10.2f %14d %8.4f%% %9d %5d %9s\n", n, c, c / (d * 1e7), w / d, s, s / (d * 1e7), r, g, u }'
done
added_wake=$((WAKE[vigil-ocean] - WAKE[host-idle]))
added_cpu=$((CPU[vigil-ocean] - CPU[host-idle]))
added_rss=$((RSS[vigil-ocean] - RSS[host-idle]))
best_cpu=${CPU[sox-brown]}; (( CPU[gst-pink] < best_cpu )) && best_cpu=${CPU[gst-pink]}
best_server=${SCPU[sox-brown]}; (( SCPU[gst-pink] < best_server )) && best_server=${SCPU[gst-pink]}
echo
awk -v w="$added_wake" -v c="$added_cpu" -v r="$added_rss" -v d="$duration" \
  'BEGIN { printf "Added by the soundscape (vigil-ocean - host-idle): %.2f wakeups/s, %.4f%% CPU, %d kB RSS (vigil up vs the minimal host)\n", w / d, c / (d * 1e7), r }'
plugin_rss=$((RSS[vigil-ocean] - RSS[up-none]))
echo "RSS added by the soundscape plugin to vigil up (vigil-ocean - up-none): $plugin_rss kB"
check "ocean-waves client CPU <= half the best generating peer (sox, gst)" "(( CPU[vigil-ocean] * 2 <= best_cpu ))"
check "ocean-waves client CPU <= 0.15 %" "(( CPU[vigil-ocean] <= duration * 1500000 ))"
check "<= 2 wakeups/s added by the plugin" "(( added_wake <= 2 * duration ))"
check "server CPU <= the best generating peer's" "(( SCPU[vigil-ocean] <= best_server ))"
check "RSS added by the plugin <= 4 MB" "(( plugin_rss <= 4096 ))"
check "zero underruns (vigil rows)" "[[ '${UNDER[vigil-ocean]}' == 0 && '${UNDER[vigil-brown]}' == 0 ]]"
