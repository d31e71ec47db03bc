#!/usr/bin/env bash
# Soak with fault injection: `vigil up` with silent-engine, soundscape and supervisor through a
# private PulseAudio null sink for SECONDS, while faults are injected on a schedule.
#
#   bench/soak.sh [SECONDS]        (default $SOAK_SECONDS, else 600; at least 60 — the drift
#                                   verdicts need 120; needs root for the tmpfs, pulseaudio, pactl;
#                                   VIGIL=PATH uses that binary instead of a release build)
#
# Faults (t = seconds since `vigil up` started):
#   sound server   SIGKILL to PulseAudio every 20 s (t ≡ 5 mod 20), restarted 1 s later on the
#                  same socket. Each kill must show up as exactly one interruption per audio
#                  plugin (the stream's context fails and is reopened); that is an interruption,
#                  not an underrun.
#   worker         SIGKILL to the supervisor's worker `crashy` every 2 s; each must be counted as
#                  a restart. 199 more workers (`/bin/sleep`) run beside it, 200 in all: none of
#                  them may be restarted (a fault of one worker stays its own), all run at the end.
#   session bus    The host's session bus (a private dbus-daemon) is killed every 120 s
#                  (t ≡ 35 mod 120) and started again 1 s later on the same address. The
#                  soundscape's MPRIS name org.mpris.MediaPlayer2.vigil.soak-host must be back on
#                  the new bus within 15 s each time (the soundscape reconnects with backoff).
#   host           SIGSTOP, 500 ms, SIGCONT every 60 s (t ≡ 45 mod 60). The stop is shorter than
#                  both streams' buffers (soundscape 1 s, silent-engine 2 s), so it must cost no
#                  underrun; a stop longer than a buffer starves the server by construction.
#   full disk      XDG_STATE_HOME is a 1 MiB tmpfs. At 30 % of the run preferences A are set
#                  through `vigil soundscape` (and must reach preferences.json); at 40 % a filler
#                  file takes every free block and preferences B are set: the write fails, the
#                  old file must stay A, and the plugin must report `preferences_error`; an
#                  announcement (`vigil announce`, which journals the volumes it lowers before
#                  lowering them) must be refused with exit 74 and lower nothing. At 70 % the
#                  filler is removed: B must reach the file without another change, and the
#                  error must clear.
#
# Every 10 s it prints the host's VmRSS, descriptor count (/proc/PID/fd), threads, and from
# `vigil status --json` each audio plugin's underruns and interruptions and the worker's restarts.
#
# Metrics, defined honestly:
#   underruns      the `underruns` detail of silent-engine and soundscape: PulseAudio's underflow
#                  notifications on the open stream (the server found the buffer empty). When
#                  the server is killed the stream is gone and reopened: that is counted in
#                  `interruptions` instead, and a new server's stream starts with a full buffer.
#                  Verdict: zero for both plugins over the whole run.
#   RSS / fd drift the mean of the last three samples minus the mean of the three samples after
#                  the first 60 s (warm-up: first connections, caches, first faults). Verdict:
#                  RSS drift ≤ 2048 kB, fd drift ≤ 2 (a reconnection may be in flight).
#   faults         injected vs reported: server kills vs interruptions per audio plugin (the
#                  count may trail by the kill still being recovered at the end); worker kills vs
#                  `restarts`; host stops vs the host still answering `vigil status` afterwards;
#                  and every fault named in the host's output (`vigil up --verbose`): one line per
#                  interruption and worker kill, one warning when the preference write starts
#                  failing and one notice when it is saved again.
set -euo pipefail
cd "$(dirname "$0")/.."
duration=${1:-${SOAK_SECONDS:-600}}
[[ "$duration" =~ ^[0-9]+$ ]] && ((duration >= 60)) || {
  echo "usage: bench/soak.sh [SECONDS ≥ 60] (or SOAK_SECONDS=…)" >&2
  exit 64
}
[[ $EUID == 0 ]] || {
  echo "bench/soak.sh mounts a tmpfs: run it as root" >&2
  exit 1
}
# Shared bench helpers, once they exist; nothing below depends on them.
[[ -f bench/lib.sh ]] && source bench/lib.sh

# VIGIL=path runs a binary built already (a quick check of this script); the figures are the
# release build's.
if [[ -n "${VIGIL:-}" ]]; then
  vigil=$VIGIL
else
  swift build -c release --product vigil >/dev/null
  vigil=$(swift build -c release --show-bin-path)/vigil
fi

work=$(mktemp -d /tmp/vigil-soak.XXXXXX)
chmod 700 "$work"
state=$work/state
mkdir -m 700 "$state" "$work/run" "$work/pulse" "$work/bus"
mount -t tmpfs -o size=1m,mode=0700 vigil-soak "$state"
export XDG_STATE_HOME=$state XDG_RUNTIME_DIR=$work/run
export PULSE_SERVER=unix:$work/pulse/pulse/native
export DBUS_SESSION_BUS_ADDRESS=unix:path=$work/bus/session
pulse_pid=""
bus_pid=""
host_pid=""
music_pid=""
soak_cleanup() {
  [[ -n "$music_pid" ]] && kill "$music_pid" 2>/dev/null
  [[ -n "$host_pid" ]] && kill -CONT "$host_pid" 2>/dev/null && kill -TERM "$host_pid" 2>/dev/null &&
    wait "$host_pid" 2>/dev/null
  [[ -n "$pulse_pid" ]] && kill "$pulse_pid" 2>/dev/null && wait "$pulse_pid" 2>/dev/null
  [[ -n "$bus_pid" ]] && kill "$bus_pid" 2>/dev/null && wait "$bus_pid" 2>/dev/null
  umount "$state" 2>/dev/null
  rm -rf "$work"
}
trap soak_cleanup EXIT

# The sound server keeps its socket path across restarts, so the host's streams find it again.
pulse_up() {
  XDG_RUNTIME_DIR=$work/pulse HOME=$work/pulse pulseaudio -n --daemonize=no --exit-idle-time=-1 \
    --use-pid-file=false -L module-native-protocol-unix \
    -L "module-null-sink sink_name=soak rate=48000 channels=2 format=s16le" \
    -L "module-suspend-on-idle timeout=1" >>"$work/pulse.log" 2>&1 &
  pulse_pid=$!
  local _
  for _ in $(seq 200); do
    pactl info >/dev/null 2>&1 && return 0
    sleep 0.05
  done
  echo "pulseaudio did not start:" >&2
  tail "$work/pulse.log" >&2
  exit 1
}

# The session bus, always on the same address, so that the host can find it again.
bus_up() {
  rm -f "$work/bus/session"
  dbus-daemon --session --nofork --nopidfile --address="$DBUS_SESSION_BUS_ADDRESS" >>"$work/bus.log" 2>&1 &
  bus_pid=$!
  local _
  for _ in $(seq 200); do
    dbus-send --session --dest=org.freedesktop.DBus --print-reply /org/freedesktop/DBus \
      org.freedesktop.DBus.GetId >/dev/null 2>&1 && return 0
    sleep 0.05
  done
  echo "dbus-daemon did not start:" >&2
  tail "$work/bus.log" >&2
  exit 1
}
# SIGKILL to the daemon $1, then its start function $2 one second later (same socket or address).
kill_restart() {
  kill -KILL "$1"
  wait "$1" 2>/dev/null || true
  sleep 1
  "$2"
}
mpris_name=org.mpris.MediaPlayer2.vigil.soak-host
mpris_present() {
  dbus-send --session --dest=org.freedesktop.DBus --print-reply /org/freedesktop/DBus \
    org.freedesktop.DBus.NameHasOwner "string:$mpris_name" 2>/dev/null | grep -q 'boolean true'
}

key() { sed -n "s/^$1 = \"\\(.*\\)\"\$/\\1/p" Examples/ExampleHost/vigil.toml; }
cat >"$work/vigil.toml" <<EOT
plugins = ["silent-engine", "soundscape", "supervisor"]
plugin_paths = ["$PWD/manifests"]

[trusted_plugins]
silent-engine = "$(key silent-engine)"
soundscape = "$(key soundscape)"
supervisor = "$(key supervisor)"

[host]
services = ["supervisor"]
background_modes = ["audio"]
name = "soak-host"

[silent-engine]
pulse_server = "$PULSE_SERVER"

[soundscape]
soundscape = "ocean-waves"
mpris = true
pulse_server = "$PULSE_SERVER"

# A crash every 2 s: a 1 s run counts as stable (no growing backoff), and the start limit
# allows the crashes the soak injects (10 starts in 10 s). 199 quiet workers beside it.
[supervisor]
notification = false
stable_after_s = 1
start_limit_burst = 10
start_limit_interval_s = 10
workers = [
  { name = "crashy", command = "/bin/sleep", args = ["3601"], restart = "always" },
$(for i in $(seq 0 198); do echo "  { name = \"bulk$i\", command = \"/bin/sleep\", args = [\"3600\"] },"; done)
]
EOT
chmod 600 "$work/vigil.toml"

# `vigil status --json` lists every host of the config; this one is the only one.
status_json() { "$vigil" status --config "$work/vigil.toml" --json 2>/dev/null | jq '.[0]' 2>/dev/null || true; }
# "underruns interruptions" of plugin $2 in status document $1, or "? ?".
audio_counts() {
  jq -r --arg p "$2" '[.plugins[]? | select(.name == $p) | .details] | first // {} |
    "\(.underruns // "?") \(.interruptions // "?")"' <<<"$1" 2>/dev/null || echo "? ?"
}
worker_restarts() {
  jq -r '[.plugins[]? | select(.name == "supervisor") | .details["worker.crashy.restarts"]] | first // "?"' \
    <<<"$1" 2>/dev/null || echo "?"
}
# "running restarted" over the 199 quiet workers: how many run, how many were ever restarted.
bulk_counts() {
  jq -r '[.plugins[]? | select(.name == "supervisor") | .details] | first // {} | to_entries |
    "\([.[] | select((.key | test("^worker\\.bulk[0-9]+\\.state$")) and .value == "running")] | length) \([.[] |
    select((.key | test("^worker\\.bulk[0-9]+\\.restarts$")) and ((.value | tostring) != "0"))] | length)"' \
    <<<"$1" 2>/dev/null || echo "? ?"
}
preference() { jq -r "$1" "$state/vigil/plugins/soundscape/preferences.json" 2>/dev/null || echo "?"; }
worker_pid() { pgrep -P "$host_pid" -xf "/bin/sleep 3601" | head -1; }

echo "soak: $duration s, $(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) CPUs, $(uname -m), uptime:$(uptime)"
pulse_up
bus_up
# --verbose: the host's log (plugin warnings such as a preference write that failed) goes to
# host.log beside the event lines `vigil up` always prints.
"$vigil" up --verbose --config "$work/vigil.toml" >"$work/host.log" 2>&1 &
host_pid=$!
for _ in $(seq 300); do
  [[ "$(status_json | jq -r '[.plugins[]?.state] | join(",")' 2>/dev/null)" == running,running,running ]] && break
  sleep 0.1
done

prefs_error() { jq -r '.plugins[]? | select(.name == "soundscape") | .details.preferences_error // empty' <<<"$1"; }
prefs_now() { echo "$(preference .soundscape) $(preference .volume)"; }
phase=before
soak_disk_phases() {
  case $phase in
    before)
      ((t >= duration * 3 / 10)) || return 0
      "$vigil" soundscape select brown-noise >/dev/null
      "$vigil" soundscape volume 0.4 >/dev/null
      phase=saving-a phase_t=$t ;;
    saving-a)
      [[ "$(prefs_now)" == "brown-noise 0.4" ]] && prefs_a_saved=yes
      ((t >= duration * 4 / 10)) || return 0
      dd if=/dev/zero of="$state/filler" bs=4k 2>/dev/null || true
      full_ok="$(df --output=avail -k "$state" | tail -1 | tr -d ' ') kB left"
      full_t=$t
      "$vigil" soundscape select pink-noise >/dev/null
      "$vigil" soundscape volume 0.55 >/dev/null
      soak_announce
      phase=full ;;
    full)
      [[ -z "$prefs_error_seen" && -n "$(prefs_error "$(status_json)")" ]] && prefs_error_seen=$((t - full_t))
      [[ "$(prefs_now)" == "brown-noise 0.4" ]] || prefs_a_lost="$(prefs_now)"
      ((t >= duration * 7 / 10)) || return 0
      rm -f "$state/filler"
      freed_t=$t
      phase=freed ;;
    freed)
      [[ -z "$prefs_b_saved" && "$(prefs_now)" == "pink-noise 0.55" ]] && prefs_b_saved=$((t - freed_t))
      [[ -n "$prefs_b_saved" && -z "$prefs_error_cleared" && -z "$(prefs_error "$(status_json)")" ]] &&
        prefs_error_cleared=$((t - freed_t))
      return 0 ;;
  esac
}
# An announcement over a music stream: it journals the volumes before lowering any, the journal
# cannot be written, so it must be refused (exit 74) with the music untouched.
soak_announce() {
  pacat --raw --property=media.role=music /dev/zero >/dev/null 2>&1 &
  music_pid=$!
  sleep 1
  announce_exit=0
  "$vigil" announce --config "$work/vigil.toml" --say "soak" --json >"$work/announce.json" 2>&1 || announce_exit=$?
  music_volume=$(pactl -f json list sink-inputs | jq -r '[.[] | select(.properties["application.process.binary"]
    == "pacat") | .volume | to_entries[0].value.value_percent] | first // "?"')
  kill "$music_pid" 2>/dev/null
  wait "$music_pid" 2>/dev/null || true
  music_pid=""
}
mpris_at_start=no
for _ in $(seq 100); do
  mpris_present && mpris_at_start=yes && break
  sleep 0.1
done
kills_server=0 kills_worker=0 stops=0 stops_answered=0 bus_restarts=0 bus_back=0 bus_back_times="" bus_t=""
full_ok="" full_t="" freed_t="" prefs_a_saved="" prefs_a_lost="" prefs_error_seen="" prefs_error_cleared=""
prefs_b_saved="" announce_exit="" music_volume=""
samples=$work/samples
printf '%6s %8s %5s %7s %10s %10s %10s %10s %8s\n' t RSS_kB fds threads se_under se_inter ss_under \
  ss_inter restarts | tee "$work/table"
start=$SECONDS
next_sample=10
t=0
while ((t < duration)); do
  sleep 0.25
  t=$((SECONDS - start))
  kill -0 "$host_pid" 2>/dev/null || {
    echo "the host died at t=$t:" >&2
    tail -20 "$work/host.log" >&2
    exit 1
  }
  if ((t % 2 == 1 && t != ${last_worker_t:--1})); then
    last_worker_t=$t
    if pid=$(worker_pid) && [[ -n "$pid" ]] && kill -KILL "$pid" 2>/dev/null; then
      kills_worker=$((kills_worker + 1))
    fi
  fi
  if ((t % 20 == 5 && t != ${last_server_t:--1} && t < duration - 15)); then
    last_server_t=$t
    kills_server=$((kills_server + 1))
    kill_restart "$pulse_pid" pulse_up
  fi
  if ((t % 120 == 35 && t != ${last_bus_t:--1} && t < duration - 20)); then
    last_bus_t=$t
    bus_restarts=$((bus_restarts + 1))
    kill_restart "$bus_pid" bus_up
    bus_t=$t
  fi
  # After a bus restart, the MPRIS name must come back within 15 s (checked once a second).
  if [[ -n "$bus_t" ]] && ((t != ${last_bus_check_t:--1})); then
    last_bus_check_t=$t
    if mpris_present; then
      bus_back=$((bus_back + 1))
      bus_back_times="$bus_back_times $((t - bus_t))s"
      bus_t=""
    elif ((t - bus_t > 15)); then
      bus_back_times="$bus_back_times never"
      bus_t=""
    fi
  fi
  if ((t % 60 == 45 && t != ${last_stop_t:--1})); then
    last_stop_t=$t
    kill -STOP "$host_pid"
    sleep 0.5
    kill -CONT "$host_pid"
    stops=$((stops + 1))
    status_json | jq -e '.plugins' >/dev/null 2>&1 && stops_answered=$((stops_answered + 1))
  fi
  # The full-disk phases: each starts once, and its expectation is checked once a second after.
  if ((t != ${last_phase_t:--1})); then
    last_phase_t=$t
    soak_disk_phases
  fi
  if ((t >= next_sample)); then
    next_sample=$((next_sample + 10))
    doc=$(status_json)
    read -r se_u se_i < <(audio_counts "$doc" silent-engine)
    read -r ss_u ss_i < <(audio_counts "$doc" soundscape)
    line=$(printf '%6d %8s %5s %7s %10s %10s %10s %10s %8s' "$t" \
      "$(awk '/^VmRSS/ {print $2}' /proc/"$host_pid"/status)" "$(ls /proc/"$host_pid"/fd | wc -l)" \
      "$(awk '/^Threads/ {print $2}' /proc/"$host_pid"/status)" "$se_u" "$se_i" "$ss_u" "$ss_i" \
      "$(worker_restarts "$doc")")
    echo "$line" | tee -a "$work/table"
    echo "$line" >>"$samples"
  fi
done

# Let the last server kill and worker kill be recovered before the final count.
sleep 3
doc=$(status_json)
read -r se_u se_i < <(audio_counts "$doc" silent-engine)
read -r ss_u ss_i < <(audio_counts "$doc" soundscape)
restarts=$(worker_restarts "$doc")
read -r bulk_running bulk_restarted < <(bulk_counts "$doc")
descriptors=$(jq -r '[.plugins[]? | select(.name == "supervisor") | .details.descriptors] | first // "?"' <<<"$doc")
states=$(jq -r '[.plugins[]? | "\(.name)=\(.state)"] | join(" ")' <<<"$doc")
kill -TERM "$host_pid"
host_exit=0
wait "$host_pid" || host_exit=$?
host_pid=""
final_prefs="$(preference .soundscape) $(preference .volume)"

drift() { # COLUMN → last three samples' mean minus the mean of the three after 60 s
  awk -v c="$1" '$1 > 60 { v[n++] = $c } END {
    if (n < 6) { print "?"; exit }
    printf "%.0f", (v[n-1] + v[n-2] + v[n-3]) / 3 - (v[0] + v[1] + v[2]) / 3 }' "$samples"
}
rss_drift=$(drift 2)
fd_drift=$(drift 3)
thread_drift=$(drift 4)
logged() { grep -cE "$1" "$work/host.log" || true; }
# `vigil up` prints each event on a line of its own ("plugin: …"); the log repeats them.
log_worker=$(logged '^supervisor: interrupted: worker crashy killed by signal 9')
log_se=$(logged '^silent-engine: interrupted')
log_ss=$(logged '^soundscape: interrupted')
log_prefs_failed=$(logged 'preferences are not saved')
log_prefs_again=$(logged 'preferences are saved again')

echo
echo "host states at the end: $states; exit on SIGTERM: $host_exit"
echo "injected: $kills_server server kills, $kills_worker worker kills, $stops host stops (500 ms), disk full from ${full_t:-?} s to ${freed_t:-?} s"
echo "in vigil status: interruptions silent-engine $se_i, soundscape $ss_i; worker restarts $restarts; answered after $stops_answered of $stops stops"
echo "in the host's log: $log_se silent-engine and $log_ss soundscape interruptions, $log_worker worker kills, preferences not saved $log_prefs_failed time(s) and saved again $log_prefs_again time(s)"
echo "workers: crashy restarts $restarts; $bulk_running of 199 others running, $bulk_restarted of them ever restarted; $descriptors"
echo "session bus: $bus_restarts restarts; MPRIS name at start: $mpris_at_start; back after:${bus_back_times:- -}"
echo "drift after warm-up: RSS $rss_drift kB, fds $fd_drift, threads $thread_drift"
verdict=0
check() {
  if eval "$2"; then echo "PASS  $1"; else
    echo "FAIL  $1"
    verdict=1
  fi
}
check "zero underruns (silent-engine $se_u, soundscape $ss_u)" "[[ '$se_u' == 0 && '$ss_u' == 0 ]]"
check "every plugin running at the end ($states)" "[[ '$states' == 'silent-engine=running soundscape=running supervisor=running' ]]"
check "RSS drift ≤ 2048 kB ($rss_drift)" "[[ '$rss_drift' != '?' ]] && (( rss_drift <= 2048 ))"
check "descriptor drift ≤ 2 ($fd_drift)" "[[ '$fd_drift' != '?' ]] && (( fd_drift <= 2 ))"
check "each server kill is one interruption per audio plugin ($kills_server kills; $se_i, $ss_i)" \
  "(( se_i == kills_server && ss_i == kills_server ))"
check "each worker kill is a restart ($kills_worker kills, $restarts restarts)" "(( restarts == kills_worker ))"
check "200 workers: the 199 quiet ones all run ($bulk_running) and none was restarted ($bulk_restarted)" \
  "[[ '$bulk_running' == 199 && '$bulk_restarted' == 0 ]]"
check "MPRIS name on the session bus at start ($mpris_at_start)" "[[ '$mpris_at_start' == yes ]]"
check "MPRIS name back within 15 s after each session-bus restart ($bus_back of $bus_restarts:${bus_back_times:- -})" \
  "(( bus_back == bus_restarts ))"
check "the host answers after each SIGSTOP/SIGCONT ($stops_answered of $stops)" "(( stops == stops_answered && stops > 0 ))"
check "preferences A saved before the disk filled" "[[ '$prefs_a_saved' == yes ]]"
check "full disk ($full_ok): the preference write failure shows in vigil status (after ${prefs_error_seen:-?} s)" \
  "[[ -n '$prefs_error_seen' ]]"
check "full disk: preferences.json stays A while the disk is full (${prefs_a_lost:-kept})" "[[ -z '$prefs_a_lost' ]]"
check "full disk: the announcement is refused (exit $announce_exit; 74 = journal) and the music stays at ${music_volume:-?}" \
  "[[ '$announce_exit' == 74 && '$music_volume' == 100% ]]"
check "disk freed: preferences B reach the file without another change (after ${prefs_b_saved:-never} s)" \
  "[[ -n '$prefs_b_saved' ]]"
check "disk freed: the preference error clears in vigil status (after ${prefs_error_cleared:-never} s)" \
  "[[ -n '$prefs_error_cleared' ]]"
check "after SIGTERM the saved preferences are B ($final_prefs)" "[[ '$final_prefs' == 'pink-noise 0.55' ]]"
check "the host's log names every fault (server $kills_server: $log_se, $log_ss; worker $kills_worker: $log_worker; disk: $log_prefs_failed, $log_prefs_again)" \
  "(( log_se == kills_server && log_ss == kills_server && log_worker == kills_worker && log_prefs_failed == 1 && log_prefs_again == 1 ))"
check "the host exits 0 on SIGTERM ($host_exit)" "[[ '$host_exit' == 0 ]]"
echo "uptime at the end:$(uptime)"
exit "$verdict"
