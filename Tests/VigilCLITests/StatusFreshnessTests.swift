import Foundation
import Testing
import VigilTestSupport

#if canImport(Glibc)
import Glibc
#endif

/// `vigil status` shows how long each plugin's signature stays fresh, from the host's status file
/// (the signed `expires` and the host's `[freshness] grace`), in text and in `--json`.
@Suite("vigil status: signature freshness", .timeLimit(.minutes(1)))
struct StatusFreshnessTests {
    static func stamp(_ seconds: Int) -> String {
        let formatter = ISO8601DateFormatter()
        return formatter.string(from: Date(timeIntervalSince1970: Double(seconds)))
    }

    @Test("fresh, within the grace (a warning) and expired; none for a plugin without expires")
    func freshnessIsShownPerPlugin() async throws {
        let s = try CLISandbox()
        defer { s.remove() }
        try s.dir.makeDirectory("run")
        let directory = s.dir.url("run") + "/vigil"
        try FileManager.default.createDirectory(
            atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let now = Int(Date().timeIntervalSince1970)
        func plugin(_ name: String, expires: Int?) -> String {
            let signature = expires.map { #", "signature": {"expires": "\#(Self.stamp($0))", "grace": 604800}"# } ?? ""
            return #"{"name": "\#(name)", "state": "running", "since": \#(now), "details": {}\#(signature)}"#
        }
        let text = """
            {"schema": "vigil.status/v2", "pid": \(getpid()), "host": "planted", "config": null,
             "plugins": [\(plugin("fresh", expires: now + 30 * 86400 - 30)), \(plugin("soon", expires: now + 2 * 86400 - 30)),
                         \(plugin("old", expires: now - 86400)), \(plugin("plain", expires: nil))]}
            """
        try Data(text.utf8).write(to: URL(fileURLWithPath: directory + "/host-\(getpid()).json"))
        let environment = s.environment.merging(["XDG_RUNTIME_DIR": s.dir.url("run")]) { $1 }

        let r = try await VigilExecutable.run(["status"], in: s.work, environment: environment)
        #expect(r.status == 0, "\(r.stderr)")
        let lines = r.stdout.components(separatedBy: "\n")
        func after(_ name: String) -> String {
            guard let index = lines.firstIndex(where: { $0.hasPrefix("  \(name) ") }), index + 1 < lines.count else {
                return ""
            }
            return lines[index + 1]
        }
        #expect(after("fresh").contains("signature fresh for 29d 23h"), "\(r.stdout)")
        #expect(!after("fresh").contains("warning"))
        #expect(after("soon").contains("signature fresh for 1d 23h"), "\(r.stdout)")
        #expect(after("soon").contains("warning: within [freshness] grace (7d 0h)"))
        #expect(after("old").contains("signature expired at \(Self.stamp(now - 86400))"), "\(r.stdout)")
        #expect(after("old").contains("it keeps running"))
        #expect(!after("plain").contains("signature"))

        let json = try await VigilExecutable.run(["status", "--json"], in: s.work, environment: environment)
        #expect(json.status == 0, "\(json.stderr)")
        let hosts = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [[String: Any]])
        let plugins = try #require(hosts.first?["plugins"] as? [[String: Any]])
        let soon = try #require(plugins[1]["signature"] as? [String: Any])
        #expect(soon["grace"] as? Int == 604800)
        #expect((soon["expires"] as? String)?.hasPrefix(String(Self.stamp(now + 2 * 86400 - 30).dropLast())) == true)
        #expect(plugins[3]["signature"] == nil)
    }
}
