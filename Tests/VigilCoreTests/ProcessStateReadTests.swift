import Foundation
import Testing

/// Nothing below the entry points reads the process's own state: the environment variables and
/// the working directory come from the one `HostEnvironment` a host is given. This scans every
/// Swift file under `Sources/` (comments stripped) for such reads and fails on each one outside
/// the allow-list, naming it as `file:line`.
@Suite("Process state is read at the entry points only")
struct ProcessStateReadTests {
    /// A kind of read: its name (as the allow-list uses it) and the pattern that finds it.
    struct Read {
        let name: String
        let pattern: String
    }

    static let reads = [
        Read(name: "ProcessInfo", pattern: #"\bProcessInfo\b"#),
        Read(name: "getenv", pattern: #"\b(secure_)?getenv\b"#),
        Read(name: "environ", pattern: #"\benviron\b"#),
        Read(name: "currentDirectoryPath", pattern: #"\bcurrentDirectoryPath\b"#),
        Read(name: "getcwd", pattern: #"\bgetcwd\b"#),
        Read(name: "HostEnvironment.current", pattern: #"\bHostEnvironment\s*\.\s*current\b"#),
        // `.current` for an environment parameter or its default (`environment: .current`,
        // `RequirementChecker.Environment = .current`).
        Read(name: "environment .current", pattern: #"[Ee]nvironment\s*[:=]\s*\.current\b"#),
    ]

    /// Where reads are allowed (a path below `Sources/`, or a folder ending in `/`), which ones,
    /// and why.
    static let allowed: [(place: String, reads: Set<String>, why: String)] = [
        (
            "VigilPlugin/HostEnvironment.swift", ["environ", "getcwd"],
            "HostEnvironment.current: the one reader of the variables and the working directory"
        ),
        ("VigilCLI/", all, "the vigil command line: builds CLI.environment once and passes it down"),
        ("VigilCheckCommands/", all, "the CLI's shared commands: CLI.environment = HostEnvironment.current"),
        ("VigilPluginTool/", all, "the SwiftPM plugins' command-line tool"),
        (
            "VigilHostCore/VigilHost.swift", ["environment .current"],
            "VigilHost.Options: the documented entry point of a library host"
        ),
        (
            "Vigil/VigilHost+StandardParts.swift", ["environment .current"],
            "VigilHost.Options(…, announce:): the umbrella's form of the same entry point"
        ),
        (
            "VigilJournal/JournalBootstrap.swift", ["getenv"],
            "JournalLogHandler.standardError: the call a library host's main.swift makes to bootstrap logging "
                + "(an entry point); reads JOURNAL_STREAM only when the host passes no environment"
        ),
        (
            "VigilAudio/StreamIdentity.swift", ["environ"],
            "sets libpulse's PULSE_PROP* variables aside around a connection; nothing is read from them"
        ),
    ]

    static var all: Set<String> { Set(reads.map(\.name)) }

    /// The package's `Sources/` directory.
    static var sources: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Sources").path
    }

    /// Every read in the Swift files under `root`, as `(path below root, line, read name, line text)`.
    static func findReads(under root: String) throws -> [(file: String, line: Int, read: String, text: String)] {
        let patterns = try reads.map { ($0.name, try NSRegularExpression(pattern: $0.pattern)) }
        let files = try FileManager.default.subpathsOfDirectory(atPath: root).filter { $0.hasSuffix(".swift") }
        var found: [(String, Int, String, String)] = []
        for file in files.sorted() {
            let text = try String(contentsOfFile: root + "/" + file, encoding: .utf8)
            for (index, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                // Comments may name what they do not do; a `//` inside a string cuts the line short,
                // which only hides what follows it on that line.
                let code = String(line.range(of: "//").map { line[..<$0.lowerBound] } ?? line)
                let range = NSRange(code.startIndex..., in: code)
                for (name, regex) in patterns where regex.firstMatch(in: code, range: range) != nil {
                    found.append((file, index + 1, name, String(line)))
                }
            }
        }
        return found
    }

    static func isAllowed(file: String, read: String) -> Bool {
        allowed.contains { entry in
            (entry.place.hasSuffix("/") ? file.hasPrefix(entry.place) : file == entry.place)
                && entry.reads.contains(read)
        }
    }

    @Test("no Swift file under Sources/ reads the environment or the working directory outside the allow-list")
    func onlyTheEntryPointsReadProcessState() throws {
        let found = try Self.findReads(under: Self.sources)
        // The scan sees the reads that are there: HostEnvironment.current's own.
        #expect(found.contains { $0.file == "VigilPlugin/HostEnvironment.swift" && $0.read == "getcwd" })
        #expect(found.contains { $0.file == "VigilCheckCommands/CLI.swift" && $0.read == "HostEnvironment.current" })
        for read in found where !Self.isAllowed(file: read.file, read: read.read) {
            let message =
                "Sources/\(read.file):\(read.line): reads process state (\(read.read)) below the entry points — "
                + "take it from the HostEnvironment you are given: \(read.text.trimmingCharacters(in: .whitespaces))"
            Issue.record(Comment(rawValue: message))
        }
    }

    @Test("the scan finds every kind of read, in code and not in comments")
    func theScanFindsEachRead() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("vigil-state-scan-\(getpid())").path
        try FileManager.default.createDirectory(atPath: dir + "/VigilCore", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let lines = [
            "let a = ProcessInfo.processInfo.environment",
            "let b = getenv(\"HOME\")", "let c = secure_getenv(\"HOME\")", "var d = environ",
            "let e = FileManager.default.currentDirectoryPath", "_ = getcwd(&buffer, 10)",
            "let f = HostEnvironment.current", "init(environment: RequirementChecker.Environment = .current) {}",
            "run(environment: .current)",
            "// ProcessInfo getenv environ getcwd in a comment", "let g = environment.variables  // not a read",
            "let h = controller.current",
        ]
        try lines.joined(separator: "\n").write(
            toFile: dir + "/VigilCore/Sample.swift", atomically: true, encoding: .utf8)
        let found = try Self.findReads(under: dir)
        #expect(found.map(\.line) == [1, 2, 3, 4, 5, 6, 7, 8, 9])
        #expect(Set(found.map(\.read)) == Self.all)
        #expect(found.allSatisfy { !Self.isAllowed(file: $0.file, read: $0.read) }, "VigilCore is not allowed any")
        #expect(Self.isAllowed(file: "VigilCLI/Run.swift", read: "currentDirectoryPath"))
        #expect(!Self.isAllowed(file: "VigilHostCore/VigilHost.swift", read: "getenv"))
    }
}
