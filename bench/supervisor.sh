#!/usr/bin/env bash
# Restart latency and idle wakeups: vigil's supervisor vs runsv (runit), s6-supervise (s6) and
# supervisord (supervisor), over the same worker, each with its minimum restart-delay settings.
#
#   bench/supervisor.sh                 # needs: scripts/install-deps.sh --bench, gcc
#   VIGIL=.build/debug/vigil CYCLES=30 IDLE_S=20 bench/supervisor.sh   # default: a release build
#
# Method
# - The worker is a tiny static C program. At the top of main() it appends "start <ns>"
#   (CLOCK_MONOTONIC) to a log; it then runs RUN_MS (1100 ms: longer than the 1 s that runsv and
#   s6-supervise force between quick restarts, so every restart is a *first* restart after a stable
#   run, not a throttled crash-loop one), appends "exit <ns>" and calls _exit(1).
# - Restart latency = the replacement's "start" minus the previous run's "exit": the kernel's exit,
#   the supervisor's wake-up, reap, decision, fork and exec, and the new program's startup to main().
#   Reported as median and p90 over CYCLES restarts per tool.
# - Idle wakeups: with a worker that just sleeps (pause()), the supervisor process's context switches
#   over IDLE_S seconds, per second: `perf stat -e context-switches -p PID` (all threads, including
#   ones that exit meanwhile), else the sum over /proc/PID/task/*/status. For vigil, the epoll thread
#   that watches the workers is also shown on its own (/proc/PID/task/TID/status).
set -euo pipefail
source "$(dirname "$0")/lib.sh"

CYCLES=${CYCLES:-20}
IDLE_S=${IDLE_S:-15}
RUN_MS=${RUN_MS:-1100}
if [[ -z "${VIGIL:-}" ]]; then
  release_build -- vigil
  VIGIL=$bin/vigil
fi
for tool in runsv s6-supervise supervisord gcc python3; do
  command -v "$tool" >/dev/null || { echo "missing $tool: run scripts/install-deps.sh --bench" >&2; exit 1; }
done

bench_work
pids=()
stop_clients() {
  for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
}

cat > "$work/stamp.c" <<'C'
#include <fcntl.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>
static void record(const char *what) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    char line[64];
    int n = snprintf(line, sizeof line, "%s %lld\n", what, (long long)t.tv_sec * 1000000000LL + t.tv_nsec);
    int fd = open(STAMP_LOG, O_WRONLY | O_APPEND | O_CREAT, 0644);
    if (fd >= 0) { (void)!write(fd, line, (size_t)n); close(fd); }
}
int main(void) {
    record("start");
    if (RUN_MS < 0) for (;;) pause();
    struct timespec d = {RUN_MS / 1000, (RUN_MS % 1000) * 1000000L};
    nanosleep(&d, NULL);
    record("exit");
    _exit(1);
}
C

# $1 tool, $2 run_ms → prints the path of a stamp binary logging to $work/$1.log
make_stamp() {
  local bin="$work/stamp-$1-$2"
  gcc -O2 -static -DSTAMP_LOG="\"$work/$1.log\"" -DRUN_MS="$2" -o "$bin" "$work/stamp.c"
  echo "$bin"
}

# $1 tool, $2 stamp binary → starts the supervisor in the background, echoes its pid
start_tool() {
  local tool=$1 stamp=$2 dir="$work/svc-$1-$RANDOM"
  mkdir -p "$dir"
  case $tool in
    vigil)
      "$VIGIL" run --restart always --restart-delay-ms 0 --max-restart-delay-ms 0 --start-limit-burst 0 \
        -- "$stamp" >/dev/null 2>&1 &
      ;;
    runsv)
      printf '#!/bin/sh\nexec %s\n' "$stamp" > "$dir/run"; chmod +x "$dir/run"
      runsv "$dir" >/dev/null 2>&1 &
      ;;
    s6-supervise)
      printf '#!/bin/sh\nexec %s\n' "$stamp" > "$dir/run"; chmod +x "$dir/run"
      s6-supervise "$dir" >/dev/null 2>&1 &
      ;;
    supervisord)
      cat > "$dir/supervisord.conf" <<CONF
[supervisord]
nodaemon=true
logfile=$dir/supervisord.log
pidfile=$dir/supervisord.pid
childlogdir=$dir
[program:w]
command=$stamp
autorestart=true
startsecs=0
startretries=1000000
stdout_logfile=/dev/null
stderr_logfile=/dev/null
CONF
      supervisord -n -c "$dir/supervisord.conf" >/dev/null 2>&1 &
      ;;
  esac
  echo $!
}

kill_stamps() {  # every process running the stamp binary $1 (exact executable match), by pid
  local p
  for p in /proc/[0-9]*; do
    [[ "$(readlink "$p/exe" 2>/dev/null)" == "$1" ]] && kill -KILL "${p#/proc/}" 2>/dev/null || true
  done
}

thread_switches() {  # context switches of the threads of $1 named $2
  local t s=0
  for t in /proc/"$1"/task/*; do
    [[ "$(cat "$t/comm" 2>/dev/null)" == "$2" ]] || continue
    s=$((s + $(awk '/^(non)?voluntary_ctxt_switches/ {x += $2} END {print x+0}' "$t/status")))
  done
  echo "$s"
}

ctx_switches() {  # all threads of $1
  cat /proc/"$1"/task/*/status 2>/dev/null | awk '/^(non)?voluntary_ctxt_switches/ {s += $2} END {print s+0}'
}

tools=(vigil runsv s6-supervise supervisord)
bench_header "bench/supervisor.sh: $CYCLES restarts after $RUN_MS ms runs, $IDLE_S s idle per tool"
results="$work/results.txt"
: > "$results"
for tool in "${tools[@]}"; do
  echo "· $tool: $CYCLES restarts after ${RUN_MS} ms runs…" >&2
  rm -f "$work/$tool.log"
  stamp=$(make_stamp "$tool" "$RUN_MS")
  pid=$(start_tool "$tool" "$stamp"); pids+=("$pid")
  deadline=$((SECONDS + (CYCLES + 3) * (RUN_MS / 1000 + 2) + 10))
  while (( $(grep -c '^start' "$work/$tool.log" 2>/dev/null || echo 0) < CYCLES + 1 )) && (( SECONDS < deadline )); do
    sleep 0.5
  done
  kill -TERM "$pid" 2>/dev/null || true; sleep 0.3; kill -KILL "$pid" 2>/dev/null || true
  kill_stamps "$stamp"

  rm -f "$work/$tool.idle.log"
  idle_stamp=$(make_stamp "$tool.idle" -1)
  pid=$(start_tool "$tool" "$idle_stamp"); pids+=("$pid")
  sleep 2
  ta=$(thread_switches "$pid" vigil-supervise)
  if switches=$(perf stat -x, -e context-switches -p "$pid" -- sleep "$IDLE_S" 2>&1 >/dev/null | awk -F, '/context-switches/ {print $1}') \
     && [[ "$switches" =~ ^[0-9]+$ ]]; then
    a=0; b=$switches            # perf counts threads that come and go, too
  else
    a=$(ctx_switches "$pid"); sleep "$IDLE_S"; b=$(ctx_switches "$pid")
  fi
  tb=$(thread_switches "$pid" vigil-supervise)
  kill -TERM "$pid" 2>/dev/null || true; sleep 0.3; kill -KILL "$pid" 2>/dev/null || true
  kill_stamps "$idle_stamp"
  echo "$tool $work/$tool.log $a $b" >> "$results"
  [[ $tool == vigil ]] && echo "vigil-thread - $ta $tb" >> "$results"
done

python3 - "$results" "$IDLE_S" "$CYCLES" <<'PY'
import statistics, sys
results, idle_s, cycles = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
print(f"{'tool':<24} {'restarts':>8} {'median ms':>10} {'p90 ms':>8} {'min ms':>8} {'idle wakeups/s':>15}")
for line in open(results):
    tool, log, a, b = line.split()
    if tool == "vigil-thread":
        print(f"{'  its epoll thread':<24} {'':>8} {'':>10} {'':>8} {'':>8} {(int(b) - int(a)) / idle_s:>15.2f}")
        continue
    events = [l.split() for l in open(log)] if log else []
    lat, last_exit = [], None
    for kind, ns in events:
        ns = int(ns)
        if kind == "exit":
            last_exit = ns
        elif kind == "start" and last_exit is not None:
            lat.append((ns - last_exit) / 1e6)
            last_exit = None
    lat = lat[:cycles]
    wake = (int(b) - int(a)) / idle_s
    if lat:
        s = sorted(lat)
        p90 = s[min(len(s) - 1, int(round(0.9 * (len(s) - 1))))]
        print(f"{tool:<24} {len(lat):>8} {statistics.median(s):>10.2f} {p90:>8.2f} {s[0]:>8.2f} {wake:>15.2f}")
    else:
        print(f"{tool:<24} {0:>8} {'-':>10} {'-':>8} {'-':>8} {wake:>15.2f}")
PY
