/// A request on the soundscape control channel (one JSON line).
public struct ControlRequest: Sendable, Hashable, Codable {
    /// `status`, `list`, `select`, `volume`, `preset`, `play`, `pause`, `stop`, `next`,
    /// `previous` or `sleep`.
    public var command: String
    /// For `select`.
    public var soundscape: String?
    /// For `volume` (0…1).
    public var volume: Double?
    /// For `preset` (`off`, `low`, `med`, `high`, `max`).
    public var preset: String?
    /// For `sleep` (0 clears the timer).
    public var minutes: Double?

    public init(
        command: String, soundscape: String? = nil, volume: Double? = nil, preset: String? = nil, minutes: Double? = nil
    ) {
        self.command = command
        self.soundscape = soundscape
        self.volume = volume
        self.preset = preset
        self.minutes = minutes
    }

    /// Every command the channel understands.
    public static let commands = [
        "status", "list", "select", "volume", "preset", "play", "pause", "stop", "next", "previous", "sleep",
    ]
}

/// The answer to a ``ControlRequest`` (one JSON line).
public struct ControlResponse: Sendable, Hashable, Codable {
    public struct Failure: Sendable, Hashable, Codable {
        public var code: SoundscapeError.Code
        public var message: String

        public init(code: SoundscapeError.Code, message: String) {
            self.code = code
            self.message = message
        }
    }

    public var ok: Bool
    /// The state after the command.
    public var state: SoundscapeState?
    /// For `list`.
    public var soundscapes: [Soundscape]?
    public var error: Failure?

    public init(ok: Bool, state: SoundscapeState?, soundscapes: [Soundscape]? = nil, error: Failure? = nil) {
        self.ok = ok
        self.state = state
        self.soundscapes = soundscapes
        self.error = error
    }
}

extension SoundscapeController {
    /// Carries out `request` (the control channel's and the CLI's entry point).
    public func handle(_ request: ControlRequest) -> ControlResponse {
        do throws(SoundscapeError) {
            switch request.command {
            case "status": break
            case "list": return ControlResponse(ok: true, state: current, soundscapes: soundscapes)
            case "select":
                guard let id = request.soundscape else {
                    throw SoundscapeError(code: .unknownSoundscape, message: "select needs a soundscape name")
                }
                try select(id)
            case "volume":
                guard let volume = request.volume else {
                    throw SoundscapeError(code: .invalidVolume, message: "volume needs a number from 0 to 1")
                }
                try setVolume(volume)
            case "preset":
                guard let name = request.preset, let preset = VolumePreset(rawValue: name) else {
                    throw SoundscapeError(
                        code: .invalidVolume,
                        message: "unknown preset \"\(request.preset ?? "")\"; use off, low, med, high or max")
                }
                setPreset(preset)
            case "play": play()
            case "pause": pause()
            case "stop": stop()
            case "next": try skip(1)
            case "previous": try skip(-1)
            case "sleep": try setSleepTimer(minutes: request.minutes)
            default:
                throw SoundscapeError(
                    code: .controlChannel,
                    message:
                        "unknown command \"\(request.command)\"; use \(ControlRequest.commands.joined(separator: ", "))"
                )
            }
            return ControlResponse(ok: true, state: current)
        } catch {
            return ControlResponse(ok: false, state: current, error: .init(code: error.code, message: error.message))
        }
    }
}
