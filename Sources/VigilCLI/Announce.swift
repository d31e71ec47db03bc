import ArgumentParser
import FoundationEssentials
import Logging
import VigilAnnounce
import VigilCheckCommands
import VigilCore
import VigilPlugin

#if canImport(Glibc)
import Glibc
#endif

/// `vigil announce FILE` / `vigil announce --say TEXT`: plays one prompt, ducking the other apps, and returns once it
/// has played and their volumes are back.
struct Announce: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "announce",
        abstract:
            "Play one prompt (a sound file or spoken text) over the keep-alive, lowering the other apps meanwhile.",
        discussion: """
            The policy and its settings come from [announce] in vigil.toml (used when one is found; \
            defaults otherwise) and can be overridden here. Prompts from several processes queue. Volumes \
            a killed announcer left lowered are restored first (--recover does only that). Exit codes: \
            0 played; 64 usage; 65 invalid prompt or settings; 69 sound server (or, for pause-spoken, the session bus) unreachable or failed; \
            70 speech synthesis failed; 74 journal not writable (nothing was lowered); 75 another announcement \
            held the lock past its deadline, or cancelled; 77 the journal, its lock or their directory is unsafe \
            (a symbolic link, another user's, or writable by others).
            """)

    enum PolicyOption: String, ExpressibleByArgument, CaseIterable {
        case duck
        case pauseSpoken = "pause-spoken"
        case mix
    }

    @OptionGroup var options: ConfigOption

    @Argument(
        help: "A sound file to play: WAV, FLAC, Ogg Vorbis, Opus or MP3, at most 10 minutes.", completion: .file())
    var file: String?

    @Option(help: ArgumentHelp("Text to speak with espeak-ng (instead of FILE).", valueName: "text"))
    var say: String?

    @Option(
        help:
            "duck (lower the other apps), pause-spoken (pause the MPRIS players in [announce] players) or mix (touch nothing). Default: [announce] policy, else duck."
    )
    var policy: PolicyOption?

    @Option(
        help:
            "The level the other apps are lowered to, 0 to 1 (linear amplitude). Default: [announce] duck_level, else 0.3."
    )
    var duckLevel: Double?

    @Option(help: "The espeak-ng voice (espeak-ng --voices lists them). Default: [announce] voice, else en.")
    var voice: String?

    @Flag(help: "Only restore volumes a killed announcer left lowered; play nothing.")
    var recover = false

    @Flag(help: "Print one JSON document (vigil.announce/v1) whatever happens.")
    var json = false

    func validate() throws {
        if recover {
            guard say == nil, file == nil else {
                throw ValidationError("--recover plays nothing; leave out FILE and --say.")
            }
        } else if let say {
            guard file == nil else { throw ValidationError("Give either FILE or --say TEXT, not both.") }
            guard !say.allSatisfy(\.isWhitespace) else { throw ValidationError("--say needs some words to speak.") }
        } else {
            guard let file, !file.isEmpty else {
                throw ValidationError("Give the prompt: FILE or --say TEXT (or --recover).")
            }
        }
        if let duckLevel, !(0...1).contains(duckLevel) {
            throw ValidationError("--duck-level must be from 0 to 1 (0.3 lowers the others to 30 %).")
        }
        if duckLevel != nil, policy == .mix || policy == .pauseSpoken {
            throw ValidationError("--duck-level applies to --policy duck only.")
        }
    }

    func run() async throws {
        var logger = Logger(label: "vigil.announce", factory: { TerminalLogHandler(label: $0) })
        logger.logLevel = json ? .critical : .warning
        let outcome = await perform(logger: logger)
        if case .failure(let error) = outcome { throw fail(error) }
    }

    /// Does the work; every failure comes back as an ``AnnounceError``.
    private func perform(logger: Logger) async -> Result<Void, AnnounceError> {
        let settings: AnnounceSettings
        do throws(AnnounceError) {
            // The sound server and session bus of the CLI's one environment, unless [announce] names them.
            settings = try loadSettings().filled(from: CLI.environment)
        } catch {
            return .failure(error)
        }
        guard let stateDirectory = Self.stateDirectory() else {
            return .failure(
                AnnounceError(
                    code: .journal,
                    message:
                        "neither XDG_STATE_HOME nor HOME is set, so there is nowhere to journal volumes — set one of them"
                ))
        }
        let announcer = Announcer(settings: settings, stateDirectory: stateDirectory, logger: logger)
        let result = await play(announcer, settings: settings)
        await announcer.close()
        return result
    }

    private func play(_ announcer: Announcer, settings: AnnounceSettings) async -> Result<Void, AnnounceError> {
        let recovery: RecoveryReport?
        do throws(AnnounceError) {
            recovery = try await announcer.recoverPending()
        } catch {
            return .failure(error)
        }
        if recover {
            if json {
                CLI.printJSON(Self.document(recovery: recovery))
            } else if let recovery {
                print(
                    "restored \(recovery.restored.count) stream(s) left lowered by process \(recovery.pid)"
                        + (recovery.keptUserChange.isEmpty
                            ? "" : "; \(recovery.keptUserChange.count) changed meanwhile, left as they are"))
            } else {
                print("nothing to restore")
            }
            return .success(())
        }
        var chosen: AnnouncementPolicy?
        switch policy {
        case .duck: chosen = .duck(level: duckLevel ?? settings.defaultDuckLevel)
        case .pauseSpoken: chosen = .pauseSpoken
        case .mix: chosen = .mix
        case nil: if let duckLevel { chosen = .duck(level: duckLevel) }
        }
        let report: AnnouncementReport
        do throws(AnnounceError) {
            if let file {
                report = try await announcer.announce(.file(file, policy: chosen))
            } else {
                report = try await announcer.announce(.say(say ?? "", policy: chosen))
            }
        } catch {
            return .failure(error)
        }
        if json {
            CLI.printJSON(Self.document(report: report))
        } else {
            print(Self.describe(report))
        }
        return .success(())
    }

    private func loadSettings() throws(AnnounceError) -> AnnounceSettings {
        var settings = AnnounceSettings()
        let found: HostConfiguration?
        do throws(CoreError) {
            found = try CLI.loadConfiguration(options)
        } catch {
            throw AnnounceError(code: .invalidSettings, message: error.description)
        }
        if let configuration = found {
            do throws(AnnounceError) {
                settings = try AnnounceSettings(table: configuration.pluginSettings["announce"])
            } catch {
                throw AnnounceError(code: error.code, message: "\(configuration.path): \(error.message)")
            }
        }
        if let voice { settings.voice = voice }
        return settings
    }

    /// `$XDG_STATE_HOME/vigil/announce`, else `$HOME/.local/state/vigil/announce`.
    static func stateDirectory() -> String? {
        CLI.environment.vigilStateDirectory.map { $0 + "/announce" }
    }

    private func fail(_ error: AnnounceError) -> ExitCode {
        if json {
            let document = JSONValue.object([
                ("schema", .string("vigil.announce/v1")), ("ok", .bool(false)),
                ("error", .object([("code", .string(error.code.rawValue)), ("message", .string(error.message))])),
            ])
            CLI.printJSON(document)
        } else {
            CLI.printErrorLine("error: \(error.message)")
        }
        return ExitCode(Self.exitCode(error.code))
    }

    static func exitCode(_ code: AnnounceError.Code) -> Int32 {
        switch code {
        case .invalidPrompt, .invalidSettings: ExitCodes.dataError
        case .soundServer, .sessionBus: ExitCodes.unavailable
        case .speechFailed: ExitCodes.software
        case .journal: ExitCodes.ioError
        case .busy, .cancelled: ExitCodes.temporaryFailure
        case .stateUnsafe: ExitCodes.noPermission
        }
    }

    static func describe(_ report: AnnouncementReport) -> String {
        var lines = [
            "played \(TextFormat.fixed(report.promptSeconds, digits: 1)) s (\(report.policy), ducked by \(report.method)); "
                + "first sample after \(TextFormat.fixed(report.firstSampleMilliseconds, digits: 1)) ms"
        ]
        for stream in report.ducked {
            let name = Sanitizer.display(stream.application ?? "?")
            let outcome =
                report.restored.contains(stream.index)
                ? "restored" : report.keptUserChange.contains(stream.index) ? "changed meanwhile, left as set" : "gone"
            lines.append(
                "  lowered #\(stream.index) \(name)\(stream.role.map { " (\(Sanitizer.display($0)))" } ?? ""): \(outcome)"
            )
        }
        for player in report.pausedPlayers { lines.append("  paused \(Sanitizer.display(player)) for the prompt") }
        return lines.joined(separator: "\n")
    }

    static func document(report: AnnouncementReport) -> JSONValue {
        func number(_ value: Double) -> JSONValue { .number(TextFormat.fixed(value, digits: 3)) }
        let ducked = report.ducked.map { stream -> JSONValue in
            .object([
                ("index", .number("\(stream.index)")),
                ("application", stream.application.map { .string($0) } ?? .null),
                ("role", stream.role.map { .string($0) } ?? .null),
                ("original_volume", .array(stream.originalVolume.map { .number("\($0)") })),
                ("ducked_volume", .array(stream.duckedVolume.map { .number("\($0)") })),
            ])
        }
        return .object([
            ("schema", .string("vigil.announce/v1")), ("ok", .bool(true)), ("id", .number("\(report.id)")),
            ("policy", .string(report.policy.name)), ("method", .string("\(report.method)")),
            ("ducked", .array(ducked)), ("restored", .array(report.restored.map { .number("\($0)") })),
            ("kept_user_change", .array(report.keptUserChange.map { .number("\($0)") })),
            ("gone", .array(report.gone.map { .number("\($0)") })),
            ("paused_players", .array(report.pausedPlayers.map { .string($0) })),
            ("first_sample_ms", number(report.firstSampleMilliseconds)), ("duck_ms", number(report.duckMilliseconds)),
            ("restore_ms", number(report.restoreMilliseconds)), ("prompt_seconds", number(report.promptSeconds)),
            ("underflows", .number("\(report.underflows)")),
        ])
    }

    static func document(recovery: RecoveryReport?) -> JSONValue {
        .object([
            ("schema", .string("vigil.announce/v1")), ("ok", .bool(true)),
            ("recovered", .bool(recovery != nil)),
            ("restored", .array((recovery?.restored ?? []).map { .number("\($0)") })),
            ("kept_user_change", .array((recovery?.keptUserChange ?? []).map { .number("\($0)") })),
            ("restore_entries", .array((recovery?.restoreEntries ?? []).map { .string($0) })),
        ])
    }
}
