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
source "$(dirname "$0")/lib.sh"
bench_work
prompts=${1:-20}

release_build -- AnnounceBench
bench=$bin/AnnounceBench

music_pid=""
stop_clients() {
  [[ -n "$music_pid" ]] && kill "$music_pid" 2>/dev/null && wait "$music_pid" 2>/dev/null
  return 0
}

run_row() { # NAME KEEPALIVE MUSIC
  pulse_start -L "module-stream-restore restore_device=false"
  local address=$pulse_address
  if [[ "$3" == yes ]]; then
    sox -n -r 48000 -c 2 -b 16 "$work/music.wav" synth 600 sine 440 vol 0.5
    PULSE_SERVER=$address paplay --client-name=music-player --property=media.role=music -d bench "$work/music.wav" &
    music_pid=$!
  fi
  sleep 2
  echo "== $1"
  PULSE_SERVER=$address "$bench" "$address" "$work/state" "$prompts" "$2" 1500 | sed 's/^/  /'
  if [[ -n "$music_pid" ]]; then kill "$music_pid"; wait "$music_pid" 2>/dev/null || true; music_pid=""; fi
  pulse_stop
}

bench_header "bench/announce.sh"
echo "$prompts prompts of 300 ms per row, 1.5 s apart"
run_row "keep-alive running (sink RUNNING)" yes no
run_row "no keep-alive (sink SUSPENDED at each prompt)" no no
run_row "duck: keep-alive running, one music stream" yes yes
