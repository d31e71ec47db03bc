#!/usr/bin/env bash
# Runs Vigil's main job on this machine: keeps the example host's plugins alive with `vigil up`.
#
#   scripts/up.sh            until Ctrl-C (SIGINT) or SIGTERM
#
# 1. Installs the Debian packages Vigil needs (scripts/install-deps.sh; idempotent).
# 2. Builds the `vigil` CLI in debug mode (the build `swift test` shares; a release build would
#    compile everything again for no visible gain here).
# 3. When no sound server is reachable (a CI box, a container), starts a PRIVATE PulseAudio server
#    with a null sink and module-suspend-on-idle (timeout 1 s) in a temporary XDG_RUNTIME_DIR, and
#    points vigil at it with PULSE_SERVER. Your own sound server, if any, is used and left alone.
# 4. Runs `vigil up --config Examples/ExampleHost/vigil.toml` (silent-engine + supervisor with one
#    worker) and, every few seconds, prints the sinks' state: a null sink that stays RUNNING rather
#    than SUSPENDED is the silent engine keeping the output awake.
# On exit (Ctrl-C, SIGTERM, or vigil exiting), everything this script started is stopped and the
# temporary directory is removed.
set -euo pipefail
cd "$(dirname "$0")/.."

config=Examples/ExampleHost/vigil.toml
private_dir=""
pulse_pid=""
monitor_pid=""
vigil_pid=""

say() { echo "up.sh: $*" >&2; }

cleanup() {
  trap - EXIT INT TERM
  if [[ -n "$vigil_pid" ]] && kill -0 "$vigil_pid" 2>/dev/null; then
    kill -TERM "$vigil_pid" 2>/dev/null || true
    wait "$vigil_pid" 2>/dev/null || true
  fi
  if [[ -n "$monitor_pid" ]]; then
    kill -TERM "$monitor_pid" 2>/dev/null || true
    wait "$monitor_pid" 2>/dev/null || true
  fi
  if [[ -n "$pulse_pid" ]]; then
    say "stopping the private PulseAudio server (pid $pulse_pid)"
    kill -TERM "$pulse_pid" 2>/dev/null || true
    wait "$pulse_pid" 2>/dev/null || true
  fi
  if [[ -n "$private_dir" ]]; then
    rm -rf "$private_dir"
  fi
}
trap cleanup EXIT
# Until vigil runs, a signal just ends the script (cleanup runs on EXIT).
trap 'exit 130' INT
trap 'exit 143' TERM

scripts/install-deps.sh

say "building vigil (debug; the first build compiles the dependencies: a few minutes)"
build_log=$(mktemp)
if ! swift build --product vigil >"$build_log" 2>&1; then
  grep -E 'error' "$build_log" | head -40 >&2 || tail -40 "$build_log" >&2
  rm -f "$build_log"
  say "the build failed (errors above)"
  exit 1
fi
rm -f "$build_log"
vigil="$(swift build --show-bin-path)/vigil"

sound_server_reachable() {
  [[ -n "${PULSE_SERVER:-}" ]] && return 0
  [[ -n "${XDG_RUNTIME_DIR:-}" && -S "${XDG_RUNTIME_DIR}/pulse/native" ]] && return 0
  return 1
}

if sound_server_reachable; then
  say "using your sound server (${PULSE_SERVER:-$XDG_RUNTIME_DIR/pulse/native})"
else
  private_dir=$(mktemp -d "${TMPDIR:-/tmp}/vigil-up-XXXXXX")
  chmod 700 "$private_dir"
  # HOME too, so the server reads and writes no file of yours (cookie, ~/.config/pulse).
  # In a session of its own: Ctrl-C reaches vigil only, which then stops its stream cleanly
  # while the server is still up; the server is stopped after vigil, on exit.
  XDG_RUNTIME_DIR="$private_dir" HOME="$private_dir" setsid pulseaudio \
    --daemonize=no --exit-idle-time=-1 --disallow-exit --use-pid-file=no --system=no -n \
    --load=module-native-protocol-unix \
    --load="module-null-sink sink_name=vigil_null sink_properties=device.description=Vigil-null-sink" \
    --load="module-suspend-on-idle timeout=1" \
    --log-target=stderr --log-level=error &
  pulse_pid=$!
  for _ in $(seq 1 100); do
    [[ -S "$private_dir/pulse/native" ]] && break
    kill -0 "$pulse_pid" 2>/dev/null || { say "the private PulseAudio server did not start"; exit 1; }
    sleep 0.1
  done
  [[ -S "$private_dir/pulse/native" ]] || { say "the private PulseAudio server did not open its socket"; exit 1; }
  export PULSE_SERVER="unix:$private_dir/pulse/native"
  say "no sound server was reachable (no PULSE_SERVER, no \$XDG_RUNTIME_DIR/pulse/native), so this script"
  say "started a PRIVATE PulseAudio server (pid $pulse_pid) with a null sink 'vigil_null' that suspends"
  say "after 1 s idle, in $private_dir; vigil uses it through PULSE_SERVER; it is stopped on exit"
fi

if command -v pactl >/dev/null; then
  # Give module-suspend-on-idle (1 s) time to suspend the idle private sink, for the contrast.
  [[ -n "$pulse_pid" ]] && sleep 2
  say "(a sink RUNNING is kept awake; SUSPENDED is idle) sink state before vigil: $(pactl list short sinks 2>/dev/null | awk '{print $2, $NF}' | paste -sd ',' -)"
  (
    sleep 3
    while true; do
      echo "up.sh: sinks (name, state): $(pactl list short sinks 2>/dev/null | awk '{print $2, $NF}' | paste -sd ',' -)" >&2
      for _ in 1 2 3 4 5; do sleep 1; done
    done
  ) &
  monitor_pid=$!
fi

say "running: vigil up --config $config   (Ctrl-C stops it)"
"$vigil" up --config "$config" &
vigil_pid=$!
# A background job ignores SIGINT in a non-interactive shell, so forward the signal as SIGTERM
# (vigil up stops its plugins on either).
trap 'kill -TERM "$vigil_pid" 2>/dev/null || true' INT TERM
status=0
while true; do
  status=0
  wait "$vigil_pid" || status=$?
  kill -0 "$vigil_pid" 2>/dev/null || break
done
vigil_pid=""
say "vigil exited with status $status"
exit "$status"
