#!/usr/bin/python3
"""A STAND-IN for systemd-logind, for tests only (logind itself cannot run in the test machine).

It owns org.freedesktop.login1 on the bus in DBUS_SYSTEM_BUS_ADDRESS and implements the part of
org.freedesktop.login1.Manager that sleep handling uses: Inhibit (handing out a real file
descriptor: the write end of a pipe whose read end it watches, so closing the descriptor releases
the lock, as with logind), ListInhibitors and the PrepareForSleep signal, which the test asks for
with EmitPrepareForSleep(b) on the interface org.vigil.test.LogindStandIn.

Every step is appended as one JSON line to LOG_FILE. When a lock is released, the line also holds
the sink inputs of the PulseAudio server in PULSE_SERVER at that moment (`pactl`), so a test can
tell whether the audio streams were gone BEFORE the lock was released.

usage: logind_standin.py LOG_FILE
Prints "ready" on stdout once the name is owned.
"""
import os
import subprocess
import sys

import dbus
import dbus.bus
import dbus.service
from gi.repository import GLib

from dbus_service import append_json_line, serve

MANAGER = "org.freedesktop.login1.Manager"
CONTROL = "org.vigil.test.LogindStandIn"


def sink_inputs():
    if not os.environ.get("PULSE_SERVER"):
        return None
    out = subprocess.run(["pactl", "list", "short", "sink-inputs"], capture_output=True, text=True)
    return len([line for line in out.stdout.splitlines() if line.strip()])


class Manager(dbus.service.Object):
    def __init__(self, bus, log):
        super().__init__(bus, "/org/freedesktop/login1")
        self.log = log
        self.inhibitors = {}  # read fd -> (what, who, why, mode, uid, pid)

    def record(self, entry):
        append_json_line(self.log, entry)

    @dbus.service.method(MANAGER, in_signature="ssss", out_signature="h", sender_keyword="sender")
    def Inhibit(self, what, who, why, mode, sender=None):
        if str(mode) not in ("block", "delay"):
            raise dbus.exceptions.DBusException("invalid mode", name="org.freedesktop.DBus.Error.InvalidArgs")
        r, w = os.pipe()
        self.inhibitors[r] = (str(what), str(who), str(why), str(mode), 0, 0)
        GLib.io_add_watch(r, GLib.IO_HUP | GLib.IO_ERR, self.released)
        self.record({"event": "inhibit", "what": str(what), "who": str(who), "why": str(why), "mode": str(mode)})
        fd = dbus.types.UnixFd(w)
        os.close(w)
        return fd

    def released(self, r, condition):
        what, who, why, mode, _, _ = self.inhibitors.pop(r)
        os.close(r)
        self.record({"event": "released", "what": what, "who": who, "mode": mode, "sink_inputs": sink_inputs()})
        return False

    @dbus.service.method(MANAGER, in_signature="", out_signature="a(ssssuu)")
    def ListInhibitors(self):
        return dbus.Array(
            [dbus.Struct(v, signature="ssssuu") for v in self.inhibitors.values()], signature="(ssssuu)")

    @dbus.service.signal(MANAGER, signature="b")
    def PrepareForSleep(self, start):
        pass

    @dbus.service.method(CONTROL, in_signature="b", out_signature="")
    def EmitPrepareForSleep(self, start):
        self.record({"event": "prepare-for-sleep", "start": bool(start), "sink_inputs": sink_inputs()})
        self.PrepareForSleep(start)


def main():
    log = sys.argv[1]
    serve(
        "org.freedesktop.login1", lambda bus: Manager(bus, log),
        connect=lambda: dbus.bus.BusConnection(os.environ["DBUS_SYSTEM_BUS_ADDRESS"]))


if __name__ == "__main__":
    main()
