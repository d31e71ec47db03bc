#!/bin/sh
# A private systemd-journald with a command whose standard output and error are its stream, as a
# systemd service's are: PrivateJournal (Tests/VigilTestSupport/PrivateJournal.swift) runs this
# under `unshare -m` (a mount namespace of its own), so the tmpfs over /run hides the machine's
# journal sockets from journald and the command alone.
#
#   private-journald.sh JOURNAL_DIR COMMAND [ARG...]
#
# journald keeps its files in JOURNAL_DIR (bound over /run/log/journal; Storage=volatile) for
# `journalctl --directory`. SIGTERM stops the command, then journald, and exits 0.
set -eu
dir=$1
shift
mount -t tmpfs -o mode=0755 tmpfs /run
mkdir -p /run/systemd/journal /run/systemd/journald.conf.d /run/log/journal
cat >/run/systemd/journald.conf.d/private.conf <<'CONF'
[Journal]
Storage=volatile
ReadKMsg=no
RateLimitIntervalSec=0
ForwardToSyslog=no
ForwardToKMsg=no
ForwardToConsole=no
ForwardToWall=no
CONF
mount --bind "$dir" /run/log/journal
if [ ! -s /etc/machine-id ]; then
    # journald names its directory after the machine id; a container may have none.
    od -An -N16 -tx1 /dev/urandom | tr -d ' \n' >"$dir/machine-id"
    mount --bind "$dir/machine-id" /etc/machine-id
fi
/lib/systemd/systemd-journald &
journald=$!
tries=0
until [ -S /run/systemd/journal/stdout ] && [ -S /run/systemd/journal/socket ]; do
    tries=$((tries + 1))
    if [ "$tries" -gt 200 ] || ! kill -0 "$journald" 2>/dev/null; then
        echo "private-journald.sh: systemd-journald did not start" >&2
        exit 70
    fi
    sleep 0.05
done
# systemd-cat connects the command's standard output and error to the journal's stream socket;
# JOURNAL_STREAM names that socket (device:inode), as systemd sets it for a service.
systemd-cat -t vigil-stream sh -c 'JOURNAL_STREAM=$(stat -L -c %d:%i /proc/self/fd/2) exec "$@"' sh "$@" &
child=$!
stop() {
    kill -TERM "$child" 2>/dev/null || true
    wait "$child" || true
    kill -TERM "$journald"
    wait "$journald" || true
    exit 0
}
trap stop TERM
wait "$child" || true
# The command ended by itself: journald keeps running until SIGTERM.
while :; do sleep 1; done
