#!/usr/bin/env bash
# Benchmark: the example heartbeat plugin in its helper process against the same plugin in-process.
#
#   bench/confinement.sh [SECONDS] [ROUNDS]     (default: a 30 s idle window, 20 start rounds)
#
# Both peers are bench/confinement-driver.c, a minimal C host built here with cc, so that the only
# difference is the process boundary: `inprocess` maps the signed libVigilHeartbeatExample.so from a
# sealed memfd into itself and calls the C ABI (the route Vigil took before the helper process);
# `helper` starts the release build of vigil-plugin-helper with posix_spawn and drives it over the
# socket pair (the route VigilSharedLibrary takes, the same records). Each round alternates the two.
#   start        spawn (helper) + memfd + map + init + create + start, until start returned (µs):
#                median and maximum over ROUNDS
#   RSS          VmRSS of the driver plus the helper (kB), 2 s after start
#   wakeups      voluntary context switches of every thread of the driver and the helper over the
#                idle window (the heartbeat writes every hour here, so its own timer is quiet)
# Needs: cc; builds the vigil-plugin-helper product (release).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
bench_work
window=${1:-30}
rounds=${2:-20}

release_build -- vigil-plugin-helper
helper=$bin/vigil-plugin-helper
driver=$work/confinement-driver
cc -O2 -ISources/CVigilHelper/include -ISources/CVigilPluginABI/include bench/confinement-driver.c \
  Sources/CVigilHelper/vigil_helper.c -o "$driver"
library=$PWD/Examples/HeartbeatPlugin/heartbeat-example/libVigilHeartbeatExample.so
header=$("$driver" header "$library")
mkdir -p "$work/state"
settings=(file="$work/state/heartbeat" interval_ms=3600000)
# The policy the host sends for the example (its one declared file, in its state directory): the
# baseline of ConfinementPlan.baseline with the Swift runtime's directory, as ConfinementPlan.encoded
# writes it.
runtime=$(dirname "$(ldd "$library" | sed -n 's/.*=> \(.*libswiftCore\.so\) .*/\1/p')")
{
  echo "vigil-confine 1"
  echo "state $work/state"
  for path in /usr/lib/ /lib/ /usr/lib64/ /lib64/ /etc/ld.so.cache "$runtime/" /proc/self/ /sys/devices/system/cpu/ \
    /etc/localtime /usr/share/zoneinfo/ /dev/zero /dev/urandom; do echo "read $path"; done
  echo "write /dev/null"
  echo "write $work/state/heartbeat"
  echo "network none"
  echo "end"
} >"$work/policy"

run() { # MODE SECONDS: runs the driver (exec: in the background, $! is its PID)
  case $1 in
    inprocess) exec "$driver" inprocess "$library" "$header" "$2" "${settings[@]}" ;;
    helper) exec "$driver" helper "$helper" "$work/policy" "$library" "$header" "$2" "${settings[@]}" ;;
  esac
}

declare -A STARTS
for _ in $(seq "$rounds"); do
  for mode in inprocess helper; do
    STARTS[$mode]+="$(run $mode 0 | sed -n 's/^start_us=//p') "
  done
done
median() { tr ' ' '\n' | grep . | sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
maximum() { tr ' ' '\n' | grep . | sort -n | tail -1; }

switches() { cat /proc/"$1"/task/*/status 2>/dev/null | awk '/^voluntary_ctxt_switches/ {s += $2} END {print s + 0}'; }
declare -A RSS WAKE
for mode in inprocess helper; do
  run $mode $((window + 4)) >"$work/$mode.out" &
  pid=$!
  until grep -q '^ready' "$work/$mode.out" 2>/dev/null; do sleep 0.05; done
  child=$(sed -n 's/^helper_pid=//p' "$work/$mode.out")
  sleep 2
  both() { # FUNCTION: its value for the driver plus the helper (if any)
    local sum; sum=$("$1" "$pid")
    [[ -n "$child" ]] && sum=$((sum + $("$1" "$child")))
    echo "$sum"
  }
  RSS[$mode]=$(both rss_kb)
  before=$(both switches)
  sleep "$window"
  after=$(both switches)
  WAKE[$mode]=$((after - before))
  wait "$pid"
done

bench_header "bench/confinement.sh: heartbeat-example in vigil-plugin-helper vs in-process"
printf '%-10s %12s %12s %10s %16s\n' peer "start med µs" "start max µs" "RSS kB" "wakeups/${window}s"
for mode in inprocess helper; do
  printf '%-10s %12s %12s %10s %16s\n' "$mode" "$(median <<<"${STARTS[$mode]}")" "$(maximum <<<"${STARTS[$mode]}")" \
    "${RSS[$mode]}" "${WAKE[$mode]}"
done
echo "helper − in-process: start +$(( $(median <<<"${STARTS[helper]}") - $(median <<<"${STARTS[inprocess]}") )) µs (median)," \
  "RSS +$(( RSS[helper] - RSS[inprocess] )) kB, wakeups +$(( WAKE[helper] - WAKE[inprocess] ))"
