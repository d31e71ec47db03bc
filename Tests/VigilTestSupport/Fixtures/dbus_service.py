"""What the D-Bus service stand-ins of the tests share: a JSON-lines log and the run loop.

Each stand-in (logind_standin.py, mpris_player.py, notification_server.py) imports this module
from its own directory, owns one well-known name, prints "ready" once it does, and runs until
the test kills it.
"""
import json

import dbus
import dbus.service
from dbus.mainloop.glib import DBusGMainLoop
from gi.repository import GLib


def append_json_line(path, entry):
    """Appends `entry` to the file at `path` as one JSON line."""
    with open(path, "a") as f:
        f.write(json.dumps(entry) + "\n")


def serve(name, make_service, connect=dbus.SessionBus):
    """Connects with `connect()`, owns `name` (refused, not queued, when another process has it),
    exports `make_service(bus)`, prints "ready" and runs the GLib main loop until killed."""
    DBusGMainLoop(set_as_default=True)
    bus = connect()
    owned = dbus.service.BusName(name, bus, do_not_queue=True)
    service = make_service(bus)
    print("ready", flush=True)
    GLib.MainLoop().run()
    del owned, service
