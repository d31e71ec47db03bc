#!/usr/bin/env bash
# Benchmark: announcements through a private PulseAudio null sink.
#
#   bench/announce.sh [PROMPTS]      (default 20 prompts per row)
#
# Rows, each on a FRESH PulseAudio server with module-suspend-on-idle at 1 s:
#   keep-alive running   the AnnounceBench host runs silent-engine's stream (native backend,
#                        2 s buffer), so the sink stays RUNNING between prompts
#   no keep-alive        nothing plays between prompts, so the sink is SUSPENDED when each one starts
#   duck, music playing  keep-alive running and a `paplay` music stream (media.role=music) that
#                        every prompt ducks to 0.3 and restores
# For each it plays PROMPTS prompts of 300 ms (a quiet 660 Hz tone), 1.5 s apart (longer than the
# suspend timeout), and prints, from each announcement's report:
#   first-sample   call to announce() → the server reports the prompt started playing
#                  (its first sample mixed into the sink; libpulse's "started" notification)
#   duck           journal written (fsynced) and every other stream lowered (ramp included)
#   restore        every lowered stream back (ramp included), stream-restore entries put back
# A null sink resumes from suspend almost at once; a real sound card takes far longer (ALSA
# device open and start), so "no keep-alive" understates the clipped-start problem on hardware.
# Needs: pulseaudio, paplay (pulseaudio-utils), sox; builds AnnounceBench (release).
set -euo pipefail
cd "$(dirname "$0")/.."
prompts=${1:-20}

swift build -c release --product AnnounceBench >/dev/null
bench=$(swift build -c release --show-bin-path)/AnnounceBench

work=$(mktemp -d)
chmod 700 "$work"
server_pid=""
music_pid=""
cleanup() {
  [[ -n "$music_pid" ]] && kill "$music_pid" 2>/dev/null && wait "$music_pid" 2>/dev/null
  [[ -n "$server_pid" ]] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

start_server() {
  rm -rf "$work/rt"; mkdir -m 700 "$work/rt"
  XDG_RUNTIME_DIR=$work/rt HOME=$work/rt pulseaudio -n --daemonize=no --exit-idle-time=-1 \
    --use-pid-file=false -L module-native-protocol-unix \
    -L "module-null-sink sink_name=bench rate=48000 channels=2 format=s16le" \
    -L "module-suspend-on-idle timeout=1" -L "module-stream-restore restore_device=false" >"$work/pa.log" 2>&1 &
  server_pid=$!
  for _ in $(seq 100); do
    PULSE_SERVER=unix:$work/rt/pulse/native pactl info >/dev/null 2>&1 && return 0
    sleep 0.05
  done
  echo "pulseaudio did not start:" >&2; cat "$work/pa.log" >&2; exit 1
}
stop_server() { kill "$server_pid"; wait "$server_pid" 2>/dev/null || true; server_pid=""; }

run_row() { # NAME KEEPALIVE MUSIC
  start_server
  local address=unix:$work/rt/pulse/native
  if [[ "$3" == yes ]]; then
    sox -n -r 48000 -c 2 -b 16 "$work/music.wav" synth 600 sine 440 vol 0.5
    PULSE_SERVER=$address paplay --client-name=music-player --property=media.role=music -d bench "$work/music.wav" &
    music_pid=$!
  fi
  sleep 2
  echo "== $1"
  PULSE_SERVER=$address "$bench" "$address" "$work/state" "$prompts" "$2" 1500 | sed 's/^/  /'
  if [[ -n "$music_pid" ]]; then kill "$music_pid"; wait "$music_pid" 2>/dev/null || true; music_pid=""; fi
  stop_server
}

echo "bench/announce.sh — $(date -u '+%Y-%m-%d %H:%M UTC') — $(uname -n), $(nproc) CPUs, $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "$prompts prompts of 300 ms per row, 1.5 s apart"
run_row "keep-alive running (sink RUNNING)" yes no
run_row "no keep-alive (sink SUSPENDED at each prompt)" no no
run_row "duck: keep-alive running, one music stream" yes yes
