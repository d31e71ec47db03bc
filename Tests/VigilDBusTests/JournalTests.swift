import Foundation
import Logging
import Testing
import VigilBase
import VigilDBus
import VigilTestSupport

#if canImport(Glibc)
import Glibc
#endif

/// The journal handler's entries (fields, names, priorities, message ids), `JOURNAL_STREAM`'s
/// match on standard error, and the shipped catalog of the message ids. The entries as a real
/// systemd-journald stores them: VigilCLITests' JournalLogTests.
@Suite("journal: fields, JOURNAL_STREAM, catalog")
struct JournalTests {
    private static func event(
        _ level: Logger.Level, _ message: String, error: (any Error)? = nil, metadata: Logger.Metadata? = nil
    ) -> LogEvent {
        LogEvent(
            level: level, message: "\(message)", error: error, metadata: metadata, source: nil,
            file: "VigilSupervisorEngine/SupervisorLoop+Workers.swift", function: "restart(_:now:)", line: 154)
    }

    private static func fields(_ event: LogEvent, _ metadata: Logger.Metadata = [:]) -> [String: [String]] {
        Dictionary(
            grouping: JournalLogHandler.fields(for: event, metadata: metadata, identifier: "signer"), by: \.name
        ).mapValues { $0.map(\.value) }
    }

    @Test("an operator event has its MESSAGE_ID, the location, the priority, the identifier and VIGIL_* fields")
    func operatorEventEntry() {
        let metadata: Logger.Metadata = [
            "worker.name": "crash", "plugin.name": "supervisor",
            OperatorEvent.metadataKey: "\(OperatorEvent.workerGaveUp)",
        ]
        let fields = Self.fields(Self.event(.error, "worker failed: start limit hit"), metadata)
        #expect(fields["MESSAGE"] == ["worker failed: start limit hit"])
        #expect(fields["PRIORITY"] == ["3"])
        #expect(fields["SYSLOG_IDENTIFIER"] == ["signer"])
        #expect(fields["CODE_FILE"] == ["VigilSupervisorEngine/SupervisorLoop+Workers.swift"])
        #expect(fields["CODE_LINE"] == ["154"])
        #expect(fields["CODE_FUNC"] == ["restart(_:now:)"])
        #expect(fields["MESSAGE_ID"] == ["b109f69c695540149bdfb8356aae1fd6"])
        #expect(fields["VIGIL_EVENT"] == ["worker-gave-up"])
        #expect(fields["VIGIL_WORKER_NAME"] == ["crash"])
        #expect(fields["VIGIL_PLUGIN_NAME"] == ["supervisor"])
    }

    @Test("no MESSAGE_ID without a known event; an error becomes VIGIL_ERROR_MESSAGE and _TYPE")
    func plainEntry() {
        struct Refused: Error, CustomStringConvertible { var description: String { "refused" } }
        let fields = Self.fields(
            Self.event(.warning, "cannot take the lock", error: Refused()),
            ["vigil.sleep": "off", OperatorEvent.metadataKey: "not-an-event"])
        #expect(fields["MESSAGE_ID"] == nil)
        #expect(fields["PRIORITY"] == ["4"])
        #expect(fields["VIGIL_SLEEP"] == ["off"])
        #expect(fields["VIGIL_ERROR_MESSAGE"] == ["refused"])
        #expect(fields["VIGIL_ERROR_TYPE"]?.first?.hasSuffix("Refused") == true, "\(fields)")
    }

    @Test("the message and the metadata values go through the escape; the names are the journal's own")
    func escaping() {
        let entry = JournalLogHandler.fields(
            for: Self.event(.info, "a\u{1B}[2Jb"), metadata: ["peer": "x\u{1B}y"], identifier: "h",
            escape: { $0.replacingOccurrences(of: "\u{1B}", with: "\\e") })
        #expect(entry.first { $0.name == "MESSAGE" }?.value == "a\\e[2Jb")
        #expect(entry.first { $0.name == "VIGIL_PEER" }?.value == "x\\ey")
    }

    @Test("every level has syslog's priority")
    func priorities() {
        let expected: [(Logger.Level, Int)] = [
            (.critical, 2), (.error, 3), (.warning, 4), (.notice, 5), (.info, 6), (.debug, 7), (.trace, 7),
        ]
        for (level, priority) in expected { #expect(JournalLogHandler.priority(level) == priority, "\(level)") }
        #expect(Logger.Level.allCases.count == expected.count)
    }

    @Test(
        "metadata keys become valid journal field names",
        arguments: [
            ("worker.name", "VIGIL_WORKER_NAME"), ("vigil.sleep_locks", "VIGIL_SLEEP_LOCKS"),
            ("audio.sink", "VIGIL_AUDIO_SINK"), ("error-type", "VIGIL_ERROR_TYPE"), ("9lives", "VIGIL_9LIVES"),
            ("naïve key", "VIGIL_NA_VE_KEY"), ("", "VIGIL_"),
            (String(repeating: "k", count: 100), "VIGIL_" + String(repeating: "K", count: 58)),
        ])
    func fieldNames(key: String, field: String) {
        let name = JournalLogHandler.fieldName(key)
        #expect(name == field)
        // The journal's rule for a name a client sends: [A-Z0-9_], not starting with _, ≤ 64.
        #expect(name.count <= 64 && !name.hasPrefix("_"))
        #expect(name.unicodeScalars.allSatisfy { ("A"..."Z").contains($0) || ("0"..."9").contains($0) || $0 == "_" })
    }

    @Test("JOURNAL_STREAM matches only the descriptor it names (device and inode)")
    func journalStreamMatch() throws {
        let dir = try TestDirectory("vigil-journal-stream")
        defer { dir.remove() }
        let first = open(dir.path + "/a", O_CREAT | O_WRONLY | O_CLOEXEC, 0o600)
        let second = open(dir.path + "/b", O_CREAT | O_WRONLY | O_CLOEXEC, 0o600)
        defer {
            close(first)
            close(second)
        }
        var info = stat()
        #expect(fstat(first, &info) == 0)
        let named = "\(info.st_dev):\(info.st_ino)"
        #expect(Journal.isConnected(descriptor: first, environment: ["JOURNAL_STREAM": named]))
        // Inherited by a process whose output went elsewhere: another inode.
        #expect(!Journal.isConnected(descriptor: second, environment: ["JOURNAL_STREAM": named]))
        for value in ["", ":", "\(info.st_dev)", "\(info.st_dev):", "x:\(info.st_ino)", "\(named):1", " \(named)"] {
            #expect(!Journal.isConnected(descriptor: first, environment: ["JOURNAL_STREAM": value]), "\(value)")
        }
        #expect(!Journal.isConnected(descriptor: first, environment: [:]))
        #expect(!Journal.isConnected(descriptor: -1, environment: ["JOURNAL_STREAM": named]))
    }

    @Test("the message ids are fixed, 128-bit and distinct, and the shipped catalog explains each")
    func catalog() async throws {
        let ids = OperatorEvent.allCases.map(\.messageID)
        #expect(Set(ids).count == ids.count)
        for id in ids { #expect(id.count == 32 && id.allSatisfy { $0.isHexDigit && !$0.isUppercase }, "\(id)") }
        // journalctl builds its catalog database from the file as it does for an installed one.
        let root = try TestDirectory("vigil-catalog")
        defer { root.remove() }
        try FileManager.default.createDirectory(
            atPath: root.path + "/usr/lib/systemd/catalog", withIntermediateDirectories: true)
        try FileManager.default.copyItem(
            atPath: VigilExecutable.packageRoot + "/Examples/systemd/vigil.catalog",
            toPath: root.path + "/usr/lib/systemd/catalog/vigil.catalog")
        let update = try await RuntimeFixtures.run("/usr/bin/journalctl", ["--root", root.path, "--update-catalog"])
        #expect(update.status == 0, "\(update.stderr)")
        let list = try await RuntimeFixtures.run("/usr/bin/journalctl", ["--root", root.path, "--list-catalog"])
        #expect(list.status == 0, "\(list.stderr)")
        let listed = Set(
            list.stdout.split(separator: "\n").compactMap { $0.split(separator: " ").first.map(String.init) })
        #expect(listed == Set(ids), "\(list.stdout)")
        for event in OperatorEvent.allCases {
            let text = try await RuntimeFixtures.run(
                "/usr/bin/journalctl", ["--root", root.path, "--dump-catalog", event.messageID])
            #expect(text.stdout.contains("Defined-By: vigil"), "\(event): \(text.stdout)")
        }
    }
}
