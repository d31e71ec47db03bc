import Foundation
import Testing
import VigilPlugin
import VigilTestSupport

@testable import VigilSoundscape

/// Runs `playerctl ARGS` on `bus`.
private func playerctl(_ bus: DBusDaemon, _ arguments: [String]) throws -> String {
    try ChildProcess.run(
        "/usr/bin/playerctl", arguments,
        environment: ["DBUS_SESSION_BUS_ADDRESS": bus.address, "PATH": "/usr/bin:/bin", "HOME": "/tmp"]
    ).trimmingCharacters(in: .whitespacesAndNewlines)
}

private func startBus() async throws -> DBusDaemon {
    try await blockingCall { Result { try DBusDaemon() } }.get()
}

/// MPRIS 2.2 with the real playerctl and an introspection check, on a private dbus-daemon.
@Suite("soundscape MPRIS player", .serialized)
struct MPRISTests {
    @Test("playerctl lists it, reads status and metadata, and drives volume, next, pause and play")
    func playerctlDrivesIt() async throws {
        let bus = try await startBus()
        defer { bus.stop() }
        try await PulseAudioServer.with(directory: "vigil-soundscape") { server, state in
            let plugin = try makePlugin(
                server, state: state.path, bus: bus, ["soundscape": .string("pink-noise"), "volume": .double(1)])
            try await plugin.start()
            defer { Task { await plugin.stop() } }
            let controller = try #require(SoundscapeController.running)
            #expect(
                await details(of: plugin) { $0["mpris"] != nil }?["mpris"]
                    == "org.mpris.MediaPlayer2.vigil.plugin-tests")

            #expect(try playerctl(bus, ["-l"]).split(separator: "\n").contains("vigil.plugin-tests"))
            let player = ["-p", "vigil.plugin-tests"]
            #expect(try playerctl(bus, player + ["status"]) == "Playing")
            #expect(try playerctl(bus, player + ["metadata", "xesam:title"]) == "Pink noise")
            #expect(try playerctl(bus, player + ["metadata", "xesam:artist"]) == "plugin-tests")
            let trackID = try playerctl(bus, player + ["metadata", "mpris:trackid"])
            // playerctl quotes an object path ('…') and prints a string bare: this is type `o`.
            #expect(trackID == "'/org/vigil/soundscape/track/pink_noise'", "trackid \(trackID)")
            // Position 0 (playerctl adds the time since it read it while Playing); a wrong type would fail here.
            let position = try playerctl(bus, player + ["position"])
            #expect((Double(position) ?? 99) < 1, "position \(position)")

            #expect(await server.waitForSink(state: "RUNNING", timeout: 3))
            let full = rms(try await server.captureMonitor(seconds: 2.5))
            _ = try playerctl(bus, player + ["volume", "0.5"])
            #expect(controller.current.volume == 0.5)
            #expect(try playerctl(bus, player + ["volume"]) == "0.500000")
            try await Task.sleep(for: .milliseconds(1500))
            let half = rms(try await server.captureMonitor(seconds: 2.5))
            #expect(abs(half / full - 0.5) <= 0.05, "volume 0.5 gave \(half / full) of the level")

            let seen = try await sinkStates(server) {
                _ = try playerctl(bus, player + ["next"])
                #expect(
                    await eventually(5) {
                        (try? playerctl(bus, player + ["metadata", "xesam:title"])) == "Ocean waves"
                    })
                try await Task.sleep(for: .milliseconds(800))
            }
            #expect(controller.current.soundscape == "ocean-waves")
            #expect(seen == ["RUNNING"], "\(seen)")
            _ = try playerctl(bus, player + ["previous"])
            #expect(controller.current.soundscape == "pink-noise")

            _ = try playerctl(bus, player + ["pause"])
            #expect(try playerctl(bus, player + ["status"]) == "Paused")
            _ = try playerctl(bus, player + ["play"])
            #expect(try playerctl(bus, player + ["status"]) == "Playing")
            _ = try playerctl(bus, player + ["stop"])
            #expect(try playerctl(bus, player + ["status"]) == "Stopped")
            #expect(try server.sinkState() == "RUNNING")
            _ = try playerctl(bus, player + ["play-pause"])
            #expect(try playerctl(bus, player + ["status"]) == "Playing")

            // PropertiesChanged reaches a follower: playerctl --follow prints the new title.
            let followLog = state.url("follow.log")
            let follower = try ChildProcess(
                "/usr/bin/playerctl", player + ["--follow", "metadata", "xesam:title"],
                environment: ["DBUS_SESSION_BUS_ADDRESS": bus.address, "PATH": "/usr/bin:/bin", "HOME": "/tmp"],
                stdout: followLog)
            defer {
                follower.signal(SIGKILL)
                follower.wait()
            }
            #expect(
                await eventually(5) {
                    ((try? TextFile.read(followLog)) ?? "").contains("Pink noise")
                })
            try controller.select("rain")
            #expect(
                await eventually(5) {
                    ((try? TextFile.read(followLog)) ?? "").contains("Rain")
                })
            await plugin.stop()
            #expect(try playerctl(bus, ["-l"]).contains("vigil.plugin-tests") == false)
        }
    }

    @Test(
        "every mandatory MPRIS property is declared with the spec's type and access; GetAll agrees; unknown ones are refused"
    )
    func introspection() async throws {
        let bus = try await startBus()
        defer { bus.stop() }
        try await PulseAudioServer.with(directory: "vigil-soundscape") { server, state in
            let plugin = try makePlugin(server, state: state.path, bus: bus)
            try await plugin.start()
            let name = "org.mpris.MediaPlayer2.vigil.plugin-tests"
            #expect(await details(of: plugin) { $0["mpris"] != nil }?["mpris"] == name)
            func busctl(_ arguments: [String]) throws -> String {
                try ChildProcess.run("/usr/bin/busctl", ["--address=\(bus.address)"] + arguments)
            }
            let table = try busctl(["introspect", "--no-pager", name, "/org/mpris/MediaPlayer2"])
            // (interface, member, type, writable) per mpris-spec 2.2.
            let mandatory: [(String, String, String, Bool)] = [
                ("org.mpris.MediaPlayer2", "CanQuit", "b", false), ("org.mpris.MediaPlayer2", "CanRaise", "b", false),
                ("org.mpris.MediaPlayer2", "HasTrackList", "b", false),
                ("org.mpris.MediaPlayer2", "Identity", "s", false),
                ("org.mpris.MediaPlayer2", "SupportedUriSchemes", "as", false),
                ("org.mpris.MediaPlayer2", "SupportedMimeTypes", "as", false),
                ("org.mpris.MediaPlayer2.Player", "PlaybackStatus", "s", false),
                ("org.mpris.MediaPlayer2.Player", "Rate", "d", true),
                ("org.mpris.MediaPlayer2.Player", "Metadata", "a{sv}", false),
                ("org.mpris.MediaPlayer2.Player", "Volume", "d", true),
                ("org.mpris.MediaPlayer2.Player", "Position", "x", false),
                ("org.mpris.MediaPlayer2.Player", "MinimumRate", "d", false),
                ("org.mpris.MediaPlayer2.Player", "MaximumRate", "d", false),
                ("org.mpris.MediaPlayer2.Player", "CanGoNext", "b", false),
                ("org.mpris.MediaPlayer2.Player", "CanGoPrevious", "b", false),
                ("org.mpris.MediaPlayer2.Player", "CanPlay", "b", false),
                ("org.mpris.MediaPlayer2.Player", "CanPause", "b", false),
                ("org.mpris.MediaPlayer2.Player", "CanSeek", "b", false),
                ("org.mpris.MediaPlayer2.Player", "CanControl", "b", false),
            ]
            let rows: [[String]] = table.split(separator: "\n").map { line in
                line.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
            }
            func row(_ member: String, _ kind: String) -> [String]? {
                rows.first { (fields: [String]) -> Bool in
                    fields.count >= 2 && fields[0] == "." + member && fields[1] == kind
                }
            }
            for (interface, member, type, writable) in mandatory {
                let row = row(member, "property")
                #expect(row?[2] == type, "\(interface).\(member): \(row ?? [])")
                #expect(row?.contains("writable") == writable, "\(interface).\(member) writable: \(row ?? [])")
                // Each property answers Get with a value of that type.
                let value = try busctl(["get-property", name, "/org/mpris/MediaPlayer2", interface, member])
                #expect(value.hasPrefix(type + " "), "\(member) = \(value)")
            }
            for method in [
                "Next", "Previous", "Pause", "PlayPause", "Stop", "Play", "Seek", "SetPosition", "OpenUri", "Raise",
                "Quit",
            ] {
                #expect(row(method, "method") != nil, "no method \(method)")
            }
            #expect(row("Seeked", "signal") != nil)
            // Metadata: the trackid is an object path outside /org/mpris, the artist a string array.
            let metadata = try busctl([
                "get-property", name, "/org/mpris/MediaPlayer2", "org.mpris.MediaPlayer2.Player", "Metadata",
            ])
            #expect(metadata.contains("\"mpris:trackid\" o \"/org/vigil/soundscape/track/ocean_waves\""), "\(metadata)")
            #expect(metadata.contains("\"xesam:artist\" as 1 \"plugin-tests\""), "\(metadata)")
            #expect(metadata.contains("\"xesam:title\" s \"Ocean waves\""), "\(metadata)")
            // Unknown properties and bad values are refused with the standard errors, and answered.
            let unknown = try ChildProcess.run(
                "/bin/sh",
                [
                    "-c",
                    "dbus-send --bus=\"$0\" --print-reply --dest=\(name) /org/mpris/MediaPlayer2 "
                        + "org.freedesktop.DBus.Properties.Get string:org.mpris.MediaPlayer2.Player string:Shuffle 2>&1 || true",
                    bus.address,
                ])
            #expect(unknown.contains("Unknown property") || unknown.contains("UnknownProperty"), "\(unknown)")
            let seekable = try busctl([
                "call", name, "/org/mpris/MediaPlayer2", "org.mpris.MediaPlayer2.Player", "Seek", "x", "1000",
            ])
            #expect(seekable.isEmpty)
            _ = try busctl([
                "set-property", "--", name, "/org/mpris/MediaPlayer2", "org.mpris.MediaPlayer2.Player", "Volume", "d",
                "-0.5",
            ])
            #expect(SoundscapeController.running?.current.volume == 0)
            await plugin.stop()
        }
    }

    @Test("a taken name gets the .instance<pid> suffix")
    func instanceName() async throws {
        let bus = try await startBus()
        defer { bus.stop() }
        let squatter = try ChildProcess(
            "/usr/bin/python3",
            [
                "-c",
                "import dbus,time; b=dbus.SessionBus(); b.request_name('org.mpris.MediaPlayer2.vigil.plugin-tests'); print('ok',flush=True); time.sleep(60)",
            ],
            environment: ["DBUS_SESSION_BUS_ADDRESS": bus.address])
        defer {
            squatter.signal(SIGKILL)
            squatter.wait()
        }
        #expect(await eventually(10) { (try? playerctl(bus, ["-l"]))?.contains("vigil.plugin-tests") == true })
        try await PulseAudioServer.with(directory: "vigil-soundscape") { server, state in
            let plugin = try makePlugin(server, state: state.path, bus: bus)
            try await plugin.start()
            #expect(
                await details(of: plugin) { $0["mpris"] != nil }?["mpris"]
                    == "org.mpris.MediaPlayer2.vigil.plugin-tests.instance\(getpid())")
            await plugin.stop()
        }
    }
}
