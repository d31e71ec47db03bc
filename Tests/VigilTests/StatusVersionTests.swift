import Foundation
import Testing
import Vigil
import VigilBase

/// The status file says which Vigil the host runs: the version (and revision) of VigilVersion, read
/// back by `vigil status`; a status file from a host older than 0.1.0 has none.
@Suite struct StatusVersionTests {
    @Test func statusFileCarriesTheHostsVigilVersion() throws {
        let status = HostStatus(pid: 42, hostName: "h", configPath: nil, plugins: [])
        #expect(status.vigilVersion == VigilVersion.version && status.vigilRevision == VigilVersion.revision)
        let data = status.jsonData()
        let document = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let vigil = try #require(document["vigil"] as? [String: Any], "\(String(decoding: data, as: UTF8.self))")
        #expect(vigil["version"] as? String == VigilVersion.version)
        // Every key present: a revision the build did not record is null, not missing.
        #expect(Set(vigil.keys) == ["version", "revision"])
        #expect(VigilVersion.revision != nil || vigil["revision"] is NSNull)
        let read = try HostStatus(jsonData: data)
        #expect(read.vigilVersion == VigilVersion.version && read.vigilRevision == VigilVersion.revision)
    }

    @Test func anotherHostsVersionIsReadAsWritten() throws {
        let older = #"{"schema":"vigil.status/v2","pid":7,"host":"h","plugins":[]}"#
        let read = try HostStatus(jsonData: Data(older.utf8))
        #expect(read.vigilVersion == nil && read.vigilRevision == nil)
        let other =
            #"{"schema":"vigil.status/v2","vigil":{"version":"9.8.7","revision":"0123456789ab"},"#
            + #""pid":7,"host":"h","plugins":[]}"#
        let parsed = try HostStatus(jsonData: Data(other.utf8))
        #expect(parsed.vigilVersion == "9.8.7" && parsed.vigilRevision == "0123456789ab")
        let again = try JSONSerialization.jsonObject(with: parsed.jsonData()) as? [String: Any]
        #expect((again?["vigil"] as? [String: Any])?["version"] as? String == "9.8.7")
    }
}
