import Foundation

/// One playing stream (sink input) as `pactl --format=json list sink-inputs` shows it.
public struct SinkInputSnapshot: Sendable, Hashable {
    /// The server's index.
    public let index: UInt32
    /// Raw volume per channel, in channel-map order (65536 = 100 %).
    public let volume: [UInt32]
    /// Whether the client paused it.
    public let corked: Bool
    /// Its properties (`application.name`, `media.role`, `module-stream-restore.id`…).
    public let properties: [String: String]

    /// `media.role`.
    public var role: String? { properties["media.role"] }
    /// `application.name`.
    public var applicationName: String? { properties["application.name"] }
}

extension SoundServerFixture {
    /// Every sink input, read with `pactl --format=json`.
    public func sinkInputSnapshots() throws -> [SinkInputSnapshot] {
        let text = try pactl(["--format=json", "list", "sink-inputs"])
        guard let array = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [[String: Any]] else {
            throw FixtureError("pactl printed no JSON array: \(text)")
        }
        return array.compactMap { object in
            guard let index = (object["index"] as? NSNumber)?.uint32Value else { return nil }
            let channels = (object["channel_map"] as? String)?.split(separator: ",").map(String.init) ?? []
            let volumes = object["volume"] as? [String: Any] ?? [:]
            let volume = channels.compactMap { channel -> UInt32? in
                ((volumes[channel] as? [String: Any])?["value"] as? NSNumber)?.uint32Value
            }
            var properties: [String: String] = [:]
            for (key, value) in object["properties"] as? [String: Any] ?? [:] {
                if let string = value as? String { properties[key] = string }
            }
            return SinkInputSnapshot(
                index: index, volume: volume, corked: (object["corked"] as? Bool) ?? false, properties: properties)
        }
    }

    /// Waits up to `timeout` seconds for a sink input matching `predicate`; returns it.
    public func waitForSinkInput(
        timeout: Double = 10, _ predicate: (SinkInputSnapshot) -> Bool
    ) async throws -> SinkInputSnapshot {
        let deadline = Date().addingTimeInterval(timeout)
        repeat {
            if let found = try sinkInputSnapshots().first(where: predicate) { return found }
            try await Task.sleep(nanoseconds: 50_000_000)
        } while Date() < deadline
        throw FixtureError("no matching sink input within \(timeout) s; now: \(try sinkInputSnapshots())")
    }

    /// Plays a sine tone from another process (`paplay`, made with `sox`), as a music player
    /// would: `role` becomes `media.role`, `client` the `application.name`.
    public func playTone(
        frequency: Int = 440, seconds: Int = 60, amplitude: Double = 0.5, role: String?, client: String = "tone-player"
    ) throws -> ChildProcess {
        let file = directory.appendingPathComponent("tone-\(frequency)-\(seconds)-\(amplitude).wav").path
        if !FileManager.default.fileExists(atPath: file) {
            _ = try ChildProcess.run(
                "/usr/bin/sox",
                [
                    "-n", "-r", "48000", "-c", "2", "-b", "16", file, "synth", "\(seconds)", "sine", "\(frequency)",
                    "vol", "\(amplitude)",
                ])
        }
        var arguments = ["--client-name=\(client)", "-d", sinkName]
        if let role { arguments.append("--property=media.role=\(role)") }
        return try launch("/usr/bin/paplay", arguments + [file])
    }
}
