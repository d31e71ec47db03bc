import Foundation
import Testing
import VigilCrypto
import VigilTestSupport

@testable import VigilCore

/// Every state file Vigil acts on goes through one StrictModes check (``StateFile``): the rollback
/// records here, the duck journal and soundscape preferences in their suites.
@Suite("state files: one StrictModes rule")
struct StateFileTests {
    enum Exposure: String, CaseIterable, CustomTestStringConvertible {
        case fileWorldWritable, fileOtherOwner, fileIsLink, directoryGroupWritable, directoryIsLink, parentIsLink
        case parentOtherOwner
        var testDescription: String { rawValue }
    }

    /// Lays out `dir/state/vigil/rollback.json` exposed as `exposure` says; returns the state
    /// directory as callers name it.
    static func expose(_ exposure: Exposure, in dir: TestDirectory, file: String = "rollback.json") throws -> String {
        let real = try dir.makeDirectory("real/vigil")
        #expect(chmod(dir.url("real"), 0o700) == 0 && chmod(real, 0o700) == 0)
        let contents = #"{"schema":"vigil.rollback-state/v1","plugins":{}}"#
        try dir.write("real/vigil/" + file, contents, mode: 0o600)
        _ = try dir.makeDirectory("state")
        var named = dir.url("state/vigil")
        switch exposure {
        case .directoryIsLink:
            #expect(symlink(real, named) == 0)
        case .parentIsLink:
            #expect(symlink(dir.url("real"), dir.url("state/home")) == 0)
            named = dir.url("state/home/vigil")
        default:
            #expect(rename(real, named) == 0)
        }
        let path = named + "/" + file
        switch exposure {
        case .fileWorldWritable: #expect(chmod(path, 0o666) == 0)
        case .fileOtherOwner: #expect(chown(path, 65534, 65534) == 0)
        case .fileIsLink:
            try dir.write("elsewhere.json", contents, mode: 0o600)
            #expect(unlink(path) == 0 && symlink(dir.url("elsewhere.json"), path) == 0)
        case .directoryGroupWritable: #expect(chmod(named, 0o770) == 0)
        case .parentOtherOwner: #expect(chown(dir.url("state"), 65534, 65534) == 0)
        default: break
        }
        return named
    }

    @Test("the rollback records are refused with state-unsafe, naming the path", arguments: Exposure.allCases)
    func rollbackState(_ exposure: Exposure) throws {
        let dir = try TestDirectory()
        defer { dir.remove() }
        let directory = try Self.expose(exposure, in: dir)
        let store = RollbackStore(directory: directory)
        let error = #expect(throws: CoreError.self) { _ = try store.read() }
        #expect(error?.code == .stateUnsafe, "\(String(describing: error))")
        #expect(error?.message.contains(dir.path) == true, "\(String(describing: error))")
    }

    @Test("a safe layout reads, and a missing directory is simply empty")
    func safeLayout() throws {
        let dir = try TestDirectory()
        defer { dir.remove() }
        #expect(try StateFile.readIfPresent(dir.url("none/x.json"), what: "x") == nil)
        _ = try dir.makeDirectory("ok")
        #expect(chmod(dir.url("ok"), 0o700) == 0)
        try dir.write("ok/x.json", "{}", mode: 0o600)
        #expect(try StateFile.readIfPresent(dir.url("ok/x.json"), what: "x") == Array("{}".utf8))
    }
}
