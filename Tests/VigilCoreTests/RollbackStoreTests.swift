import Foundation
import Testing
import VigilCore
import VigilCrypto
import VigilTestSupport

@Suite struct RollbackStoreTests {
    let fp = MinisignSecretKey.generate().publicKey.fingerprint
    let sha1 = String(repeating: "1", count: 64)
    let sha2 = String(repeating: "2", count: 64)

    func v(_ s: String) -> SemanticVersion { SemanticVersion(s)! }

    @Test func recordsAndRefusesLowerOrChangedVersions() throws {
        let dir = try TestDirectory()
        defer { dir.remove() }
        let store = RollbackStore(directory: dir.url("state/vigil"))
        try store.check(plugin: "a", fingerprint: fp, version: v("1.0.0"), manifestSHA256: sha1)
        try store.record(plugin: "a", fingerprint: fp, version: v("1.2.0"), manifestSHA256: sha1)
        #expect(try dir.mode("state/vigil") == 0o700)
        #expect(try dir.mode("state/vigil/rollback.json") == 0o600)
        #expect(throws: CoreError.self) {
            try store.check(plugin: "a", fingerprint: fp, version: v("1.1.9"), manifestSHA256: sha1)
        }
        #expect(throws: CoreError.self) {
            try store.check(plugin: "a", fingerprint: fp, version: v("1.2.0-rc.1"), manifestSHA256: sha1)
        }
        #expect(throws: CoreError.self) {
            try store.check(plugin: "a", fingerprint: fp, version: v("1.2.0"), manifestSHA256: sha2)
        }
        #expect(throws: CoreError.self) {
            try store.record(plugin: "a", fingerprint: fp, version: v("1.0.0"), manifestSHA256: sha2)
        }
        try store.check(plugin: "a", fingerprint: fp, version: v("1.2.0"), manifestSHA256: sha1)
        // Another key or plugin is independent.
        let other = MinisignSecretKey.generate().publicKey.fingerprint
        try store.check(plugin: "a", fingerprint: other, version: v("0.1.0"), manifestSHA256: sha2)
        try store.check(plugin: "b", fingerprint: fp, version: v("0.1.0"), manifestSHA256: sha2)
        // Higher versions raise the mark.
        try store.record(plugin: "a", fingerprint: fp, version: v("2.0.0"), manifestSHA256: sha2)
        let entry = try store.entry(plugin: "a", fingerprint: fp)
        #expect(entry?.version == v("2.0.0") && entry?.manifestSHA256 == sha2)
        // Reset accepts a downgrade.
        try store.reset(plugin: "a")
        #expect(try store.entry(plugin: "a", fingerprint: fp) == nil)
        try store.record(plugin: "a", fingerprint: fp, version: v("1.0.0"), manifestSHA256: sha1)
        #expect(try dir.list("state/vigil") == ["rollback.json", "rollback.lock"], "no temporary files left")
    }

    @Test(arguments: [
        "", "{}", "not json",
        "{\"schema\": \"vigil.rollback-state/v1\", \"plugins\": {\"a\": {\"k\": {\"version\": \"x\", \"manifest_sha256\": \"\"}}}}",
        "{\"schema\": \"other\", \"plugins\": {}}",
        "{\"schema\": \"vigil.rollback-state/v1\", \"plugins\": {}, \"plugins\": {}}",
    ])
    func corruptStateFailsClosed(contents: String) throws {
        let dir = try TestDirectory()
        defer { dir.remove() }
        let store = RollbackStore(directory: dir.url("s"))
        try dir.write("s/rollback.json", contents)
        #expect(chmod(dir.url("s/rollback.json"), 0o600) == 0)
        let result = Result { () throws(CoreError) in
            try store.check(plugin: "a", fingerprint: fp, version: v("1.0.0"), manifestSHA256: sha1)
        }
        guard case .failure(let error) = result else {
            Issue.record("accepted a corrupt state file")
            return
        }
        #expect(error.code == .stateInvalid)
        #expect(error.message.contains(store.statePath))
    }

    /// The bypass of the Version package's ordering: after `2.0.0--1`, `2.0.0-0` is older.
    @Test func preReleaseOrderingCannotBypassRollback() throws {
        let dir = try TestDirectory()
        defer { dir.remove() }
        let store = RollbackStore(directory: dir.url("state/vigil"))
        try store.record(plugin: "a", fingerprint: fp, version: v("2.0.0--1"), manifestSHA256: sha1)
        #expect(throws: CoreError.self) {
            try store.check(plugin: "a", fingerprint: fp, version: v("2.0.0-0"), manifestSHA256: sha2)
        }
        // Numeric identifiers longer than 64 bits still compare as numbers.
        try store.record(plugin: "b", fingerprint: fp, version: v("2.0.0-18446744073709551616"), manifestSHA256: sha2)
        #expect(throws: CoreError.self) {
            try store.check(plugin: "b", fingerprint: fp, version: v("2.0.0-9"), manifestSHA256: sha1)
        }
        // The same version with other build metadata is the same version: changed bytes are refused.
        #expect(throws: CoreError.self) {
            try store.check(
                plugin: "b", fingerprint: fp, version: v("2.0.0-18446744073709551616+b"), manifestSHA256: sha1)
        }
    }

    @Test func unsafePermissionsFailClosed() throws {
        let dir = try TestDirectory()
        defer { dir.remove() }
        let store = RollbackStore(directory: dir.url("s"))
        try store.record(plugin: "a", fingerprint: fp, version: v("1.0.0"), manifestSHA256: sha1)
        #expect(chmod(store.statePath, 0o666) == 0)
        #expect(throws: CoreError.self) {
            try store.check(plugin: "a", fingerprint: fp, version: v("1.0.0"), manifestSHA256: sha1)
        }
        #expect(chmod(store.statePath, 0o600) == 0)
        #expect(chmod(dir.url("s"), 0o777) == 0)
        #expect(throws: CoreError.self) {
            try store.record(plugin: "a", fingerprint: fp, version: v("2.0.0"), manifestSHA256: sha1)
        }
    }
}
