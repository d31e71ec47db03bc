import Foundation
import Testing
import VigilAudio
import VigilBase
import VigilTestSupport

@testable import VigilAnnounce

/// The duck journal is read back after a crash: values Vigil never writes are refused as damage,
/// not handed to recovery (found while writing its fuzz target: `rampSteps` drove an allocation of
/// that many volumes).
@Suite struct DuckJournalTests {
    static let regressions = VigilExecutable.packageRoot + "/Fuzz/Regressions/duck-journal"

    /// A journal as Vigil writes it: `ducked` is the original volume (100 %) times the level.
    func journal(
        rampSteps: String = "8", level: String = "0.3", original: String = "[65536,65536]",
        ducked: [UInt32] = PulseMixer.scaled([65536, 65536], by: 0.3)
    ) -> [UInt8] {
        Array(
            """
            {"absentRestoreIDs":[],"level":\(level),"pid":1,"rampSteps":\(rampSteps),"server":null,"serverCookie":1,
             "streams":[{"ducked":\(ducked),"index":12,"original":\(original)}],"version":1}
            """.utf8)
    }

    @Test func aStateDirectoryThatCannotBeCreatedSaysWhereAndWhyWithTheCallAsCause() throws {
        let dir = try TestDirectory()
        defer { dir.remove() }
        let file = try dir.write("plain", "x")
        let error = #expect(throws: AnnounceError.self) {
            try DuckJournal.makeStateDirectory(file + "/state/vigil", consequence: "nothing was lowered")
        }
        #expect(
            error?.message
                == "cannot create the directory \(file)/state for the duck journal: Not a directory — check the "
                + "permissions of its parent; nothing was lowered")
        #expect(error?.cause?.systemCall == SystemCallError("mkdir", errno: ENOTDIR))
    }

    @Test func aJournalAsVigilWritesItIsRead() throws {
        let journal = try DuckJournal.decode(journal(), path: "j.json")
        #expect(journal.streams.count == 1)
        #expect(journal.volumesSet(for: journal.streams[0]).count == 9)
    }

    @Test(arguments: [
        ("1000000000000000", "0.3", "[65536,65536]", "ramp steps"),
        ("0", "0.3", "[65536,65536]", "ramp steps"),
        ("8", "1.5", "[65536,65536]", "duck level"),
        ("8", "-0.1", "[65536,65536]", "duck level"),
        ("8", "0.3", "[]", "channels"),
        ("8", "0.3", "[" + Array(repeating: "1", count: 33).joined(separator: ",") + "]", "channels"),
    ])
    func valuesVigilNeverWritesAreRefusedAsDamage(steps: String, level: String, original: String, what: String) {
        do {
            _ = try DuckJournal.decode(journal(rampSteps: steps, level: level, original: original), path: "j.json")
            Issue.record("accepted \(steps) \(level) \(original)")
        } catch {
            #expect(error.code == .journal)
            #expect(error.message.contains(what) && error.message.contains("delete the file"), "\(error.message)")
        }
    }

    @Test(
        "a restore is bounded: never above 153 %, and the lowered volume must be the original times the level",
        arguments: [
            ("[2147483647,2147483647]", PulseMixer.scaled([65536, 65536], by: 0.3), "above 99957"),
            ("[99958,99958]", PulseMixer.scaled([99958, 99958], by: 0.3), "above 99957"),
            ("[65536,65536]", [19661, 19661], "is not its volume"),
            ("[65536,65536]", [65536, 65536], "is not its volume"),
            ("[65536,65536]", PulseMixer.scaled([65536], by: 0.3), "is not its volume"),
        ] as [(String, [UInt32], String)])
    func restoresAreBounded(original: String, ducked: [UInt32], what: String) {
        do {
            _ = try DuckJournal.decode(journal(original: original, ducked: ducked), path: "j.json")
            Issue.record("accepted \(original) → \(ducked)")
        } catch {
            #expect(error.code == .journal)
            #expect(error.message.contains(what), "\(error.message)")
        }
    }

    @Test func theFuzzRegressionsAreRefused() throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: Self.regressions)
        #expect(!files.isEmpty)
        for file in files {
            let bytes = try TextFile.bytes(Self.regressions + "/" + file)
            #expect(throws: AnnounceError.self, "\(file)") { try DuckJournal.decode(Array(bytes), path: file) }
        }
    }
}
