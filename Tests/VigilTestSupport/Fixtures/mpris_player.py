#!/usr/bin/env python3
"""A tiny MPRIS player for tests: mpris_player.py NAME STATUS (Playing|Paused|Stopped) [REFUSAL].

Owns org.mpris.MediaPlayer2.NAME on the session bus, answers Play/Pause/PlayPause/Stop and the
Player properties, and prints each new PlaybackStatus on a line of its own. With REFUSAL, Pause
fails with a D-Bus error whose message is REFUSAL (text another program sends Vigil).
"""
import sys

import dbus
import dbus.service

from dbus_service import serve

PLAYER = "org.mpris.MediaPlayer2.Player"
ROOT = "org.mpris.MediaPlayer2"


class Refused(dbus.exceptions.DBusException):
    _dbus_error_name = "org.mpris.MediaPlayer2.Error.Refused"


class Player(dbus.service.Object):
    def __init__(self, bus, name, status, refusal=None):
        super().__init__(bus, "/org/mpris/MediaPlayer2")
        self.name = name
        self.status = status
        self.refusal = refusal

    def set(self, status):
        self.status = status
        print(status, flush=True)
        self.PropertiesChanged(PLAYER, {"PlaybackStatus": status}, [])

    @dbus.service.method(PLAYER)
    def Play(self):
        self.set("Playing")

    @dbus.service.method(PLAYER)
    def Pause(self):
        if self.refusal is not None:
            raise Refused(self.refusal)
        if self.status == "Playing":
            self.set("Paused")

    @dbus.service.method(PLAYER)
    def PlayPause(self):
        self.set("Paused" if self.status == "Playing" else "Playing")

    @dbus.service.method(PLAYER)
    def Stop(self):
        self.set("Stopped")

    @dbus.service.method(dbus.PROPERTIES_IFACE, in_signature="ss", out_signature="v")
    def Get(self, interface, prop):
        values = self.GetAll(interface)
        if prop not in values:
            raise dbus.exceptions.DBusException("org.freedesktop.DBus.Error.UnknownProperty", prop)
        return values[prop]

    @dbus.service.method(dbus.PROPERTIES_IFACE, in_signature="s", out_signature="a{sv}")
    def GetAll(self, interface):
        if interface == PLAYER:
            return {
                "PlaybackStatus": self.status, "Rate": 1.0, "Volume": 1.0, "Position": dbus.Int64(0),
                "MinimumRate": 1.0, "MaximumRate": 1.0, "Metadata": dbus.Dictionary({}, signature="sv"),
                "CanGoNext": False, "CanGoPrevious": False, "CanPlay": True, "CanPause": True,
                "CanSeek": False, "CanControl": True,
            }
        if interface == ROOT:
            return {
                "CanQuit": False, "CanRaise": False, "HasTrackList": False, "Identity": self.name,
                "SupportedUriSchemes": dbus.Array([], signature="s"),
                "SupportedMimeTypes": dbus.Array([], signature="s"),
            }
        return {}

    @dbus.service.signal(dbus.PROPERTIES_IFACE, signature="sa{sv}as")
    def PropertiesChanged(self, interface, changed, invalidated):
        pass


def main():
    name, status = sys.argv[1], sys.argv[2]
    refusal = sys.argv[3] if len(sys.argv) > 3 else None
    serve(ROOT + "." + name, lambda bus: Player(bus, name, status, refusal))


if __name__ == "__main__":
    main()
