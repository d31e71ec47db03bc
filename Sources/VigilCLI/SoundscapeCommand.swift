import ArgumentParser
import FoundationEssentials
import VigilBase
import VigilCheckCommands
import VigilPlugin
import VigilSoundscape

#if canImport(Glibc)
import Glibc
#endif

/// `vigil soundscape …`: drives the soundscape of this user's running host through its local
/// control channel (a Unix socket only this user can open).
struct SoundscapeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "soundscape",
        abstract: "Control the soundscape of this user's running Vigil host.",
        discussion: """
            Talks to the host through $XDG_RUNTIME_DIR/vigil/plugins/soundscape/control.sock (without \
            XDG_RUNTIME_DIR, under $XDG_STATE_HOME/vigil/plugins/soundscape; a directory only you can \
            open; the host also checks the caller's user id). Exit codes: 0 done, 1 the host \
            refused (unknown soundscape, bad volume…), 2 the host's answer was not understood, 3 no running \
            host plays a soundscape, 4 the host is busy (every control connection in use, or no answer \
            within 5 s: try again), 64 usage error. Pause and stop keep the stream (and the keep-alive) \
            running, silent.
            """,
        subcommands: [
            Plain<Show>.self, Plain<List>.self, Plain<Play>.self, Plain<Pause>.self, Plain<Stop>.self,
            Plain<Next>.self, Plain<Previous>.self, Select.self, Volume.self, Preset.self, Sleep.self,
        ],
        defaultSubcommand: Plain<Show>.self)

    struct Options: ParsableArguments {
        @Option(name: .long, help: "The control socket (default: the soundscape plugin's, under XDG_RUNTIME_DIR).")
        var socket: String?

        @Flag(name: .long, help: "Print the host's answer as one JSON document.")
        var json = false
    }

    /// Sends `request` and prints the answer; exits as the discussion says.
    static func send(_ request: ControlRequest, _ options: Options) async throws {
        guard
            let path = options.socket ?? SoundscapeClient.defaultPath(environment: CLI.environment.variables)
        else {
            throw ValidationError(
                "cannot find the control socket: set XDG_RUNTIME_DIR (or HOME or XDG_STATE_HOME), or pass --socket")
        }
        let client = SoundscapeClient(path: path)
        let result: Result<ControlResponse, SoundscapeError> = await withCheckedContinuation { continuation in
            KernelThread.start(name: "vigil-control") {
                continuation.resume(returning: Result { () throws(SoundscapeError) in try client.send(request) })
            }
        }
        let response: ControlResponse
        switch result {
        case .success(let answer): response = answer
        case .failure(let error):
            let failure = ControlResponse(
                ok: false, state: nil, soundscapes: nil, error: .init(code: error.code, message: error.message))
            if options.json { printJSON(failure) } else { CLI.printErrorLine("error: \(error.message)") }
            throw ExitCode(exitCode(for: error.code))
        }
        if options.json {
            printJSON(response)
        } else if let error = response.error {
            CLI.printErrorLine("error: \(error.message)")
        } else {
            if let list = response.soundscapes {
                let playing = response.state?.soundscape
                for soundscape in list {
                    let mark = soundscape.id == playing ? "*" : " "
                    CLI.sayLine("\(mark) \(soundscape.id)  \(soundscape.title)  \(soundscape.path ?? "(generated)")")
                }
            } else if let state = response.state {
                CLI.sayLine(describe(state))
            }
        }
        // The host's refusal exits 1, unless it says it is busy.
        if !response.ok { throw ExitCode(response.error?.code == .busy ? exitCode(for: .busy) : 1) }
    }

    /// The exit status for a failure with `code`: 2 the answer was not understood, 3 no host, 4
    /// the host is busy (try again), 1 any refusal of the request itself.
    static func exitCode(for code: SoundscapeError.Code) -> Int32 {
        switch code {
        case .notRunning: ExitCodes.noSoundscape
        case .busy: ExitCodes.busy
        case .controlChannel: ExitCodes.unknownState
        case .unknownSoundscape, .invalidVolume, .invalidSleepTimer, .fileUnavailable: ExitCodes.failure
        }
    }

    /// The state as one line (printed escaped whole: title and soundscape are the host's words).
    static func describe(_ state: SoundscapeState) -> String {
        var line = "\(state.title) (\(state.soundscape)): \(state.playback.rawValue.lowercased())"
        line += ", volume \(TextFormat.fixed(state.volume, digits: 2))"
        if let preset = state.preset { line += " (\(preset.rawValue))" }
        if state.interrupted { line += ", interrupted by the sound server" }
        if state.asleep { line += ", asleep (sleep timer ended)" }
        if let remaining = state.sleepTimerRemaining {
            // The host's number: one no timer can hold (1e300, NaN) is shown, not converted into a trap.
            let seconds = Int(exactly: remaining.rounded()).map(String.init) ?? "\(remaining)"
            line += ", sleep timer \(seconds) s"
        }
        return line
    }

    static func printJSON(_ response: ControlResponse) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        let data = (try? encoder.encode(response)) ?? Data(#"{"ok":false}"#.utf8)
        print(String(decoding: data, as: UTF8.self))
    }

    /// A subcommand that sends one control request and prints the answer.
    protocol RequestCommand: AsyncParsableCommand {
        /// What it sends, from its arguments.
        var request: ControlRequest { get }
        var options: Options { get }
    }

    /// A subcommand that sends one control command, with no argument, named as the subcommand:
    /// `Plain<Show>` is `vigil soundscape status`.
    struct Plain<Verb: PlainVerb>: RequestCommand {
        static var configuration: CommandConfiguration {
            CommandConfiguration(commandName: Verb.command, abstract: Verb.abstract)
        }
        @OptionGroup var options: Options
        var request: ControlRequest { ControlRequest(command: Verb.command) }
    }

    /// A plain subcommand's name (the control command it sends) and one-line help.
    protocol PlainVerb {
        static var command: String { get }
        static var abstract: String { get }
    }

    enum Show: PlainVerb { static let command = "status", abstract = "Show what plays and how loud." }
    enum List: PlainVerb { static let command = "list", abstract = "List the soundscapes (* marks the one playing)." }
    enum Play: PlainVerb { static let command = "play", abstract = "Play (also after pause, stop or the sleep timer)." }
    enum Pause: PlainVerb { static let command = "pause", abstract = "Fade to silence; the stream keeps running." }
    enum Stop: PlainVerb { static let command = "stop", abstract = "Like pause, reported as stopped." }
    enum Next: PlainVerb { static let command = "next", abstract = "Crossfade to the next soundscape." }
    enum Previous: PlainVerb { static let command = "previous", abstract = "Crossfade to the previous soundscape." }

    struct Select: RequestCommand {
        static let configuration = CommandConfiguration(abstract: "Crossfade to the soundscape NAME.")
        @Argument(help: "A soundscape from `vigil soundscape list`.") var name: String
        @OptionGroup var options: Options
        var request: ControlRequest { ControlRequest(command: "select", soundscape: name) }
    }

    struct Volume: RequestCommand {
        static let configuration = CommandConfiguration(abstract: "Set the volume, 0 to 1 (ramped).")
        @Argument(help: "0 (silent, stream kept) to 1.") var value: Double
        @OptionGroup var options: Options
        func validate() throws { try requireFinite(value, in: 0...1, else: "VALUE must be from 0 to 1") }
        var request: ControlRequest { ControlRequest(command: "volume", volume: value) }
    }

    struct Preset: RequestCommand {
        static let configuration = CommandConfiguration(
            abstract: "Set a volume preset: off 0, low 0.1, med 0.3, high 0.5, max 0.75.")
        @Argument(help: "off, low, med, high or max.") var name: String
        @OptionGroup var options: Options
        func validate() throws {
            guard VolumePreset(rawValue: name) != nil else {
                throw ValidationError("NAME must be off, low, med, high or max")
            }
        }
        var request: ControlRequest { ControlRequest(command: "preset", preset: name) }
    }

    struct Sleep: RequestCommand {
        static let configuration = CommandConfiguration(
            abstract: "Fade out over the last 30 s of MINUTES, then stay silent (0 clears the timer).")
        @Argument(help: "0 to 1440.") var minutes: Double
        @OptionGroup var options: Options
        func validate() throws { try requireFinite(minutes, in: 0...1440, else: "MINUTES must be from 0 to 1440") }
        var request: ControlRequest { ControlRequest(command: "sleep", minutes: minutes) }
    }
}

extension SoundscapeCommand.RequestCommand {
    func run() async throws { try await SoundscapeCommand.send(request, options) }

    /// Refuses (a usage error, exit 64) a `value` that is not a finite number in `range`.
    func requireFinite(_ value: Double, in range: ClosedRange<Double>, else message: String) throws {
        guard value.isFinite, range.contains(value) else { throw ValidationError(message) }
    }
}
