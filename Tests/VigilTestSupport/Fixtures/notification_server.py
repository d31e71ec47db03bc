#!/usr/bin/python3
"""A test notification server: owns org.freedesktop.Notifications on the bus in
DBUS_SESSION_BUS_ADDRESS and appends one JSON line per call to the log file.

usage: notification_server.py LOG_FILE [CAPABILITY ...]
Prints "ready" on stdout once the name is owned.
"""
import sys

import dbus
import dbus.service

from dbus_service import append_json_line, serve

IFACE = "org.freedesktop.Notifications"


class Server(dbus.service.Object):
    def __init__(self, bus, log, capabilities):
        super().__init__(bus, "/org/freedesktop/Notifications")
        self.log = log
        self.capabilities = capabilities
        self.next_id = 1

    def record(self, entry):
        append_json_line(self.log, entry)

    @dbus.service.method(IFACE, in_signature="", out_signature="as")
    def GetCapabilities(self):
        self.record({"call": "GetCapabilities"})
        return self.capabilities

    @dbus.service.method(IFACE, in_signature="susssasa{sv}i", out_signature="u")
    def Notify(self, app_name, replaces_id, app_icon, summary, body, actions, hints, expire_timeout):
        if replaces_id == 0:
            nid = self.next_id
            self.next_id += 1
        else:
            nid = int(replaces_id)
        hint_types = {str(k): type(v).__name__ for k, v in hints.items()}
        self.record({
            "call": "Notify", "app_name": str(app_name), "replaces_id": int(replaces_id), "id": nid,
            "summary": str(summary), "body": str(body), "actions": [str(a) for a in actions],
            "hints": {str(k): (bool(v) if isinstance(v, dbus.Boolean) else int(v) if isinstance(v, (dbus.Byte, dbus.Int32, dbus.UInt32)) else str(v)) for k, v in hints.items()},
            "hint_types": hint_types, "expire_timeout": int(expire_timeout),
        })
        return dbus.UInt32(nid)

    @dbus.service.method(IFACE, in_signature="u", out_signature="")
    def CloseNotification(self, nid):
        self.record({"call": "CloseNotification", "id": int(nid)})
        self.NotificationClosed(nid, dbus.UInt32(3))

    @dbus.service.method(IFACE, in_signature="", out_signature="ssss")
    def GetServerInformation(self):
        return ("vigil-test", "vigil", "1.0", "1.2")

    @dbus.service.signal(IFACE, signature="uu")
    def NotificationClosed(self, nid, reason):
        pass


def main():
    log = sys.argv[1]
    capabilities = sys.argv[2:]
    serve(IFACE, lambda bus: Server(bus, log, capabilities))


if __name__ == "__main__":
    main()
