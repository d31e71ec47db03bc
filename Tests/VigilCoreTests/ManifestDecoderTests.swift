import Foundation
import Testing
import VigilCore
import VigilPlugin

@Suite struct ManifestDecoderTests {
    static let valid = """
        {"schema": "vigil.plugin-manifest/v1", "name": "silent-engine", "version": "1.2.3-rc.1+b5",
         "description": "d", "entry": "silent-engine",
         "host_requirements": [{"kind": "background-mode", "value": "audio", "why": "w"}, {"kind": "dbus-session"},
                               {"kind": "service", "value": "supervisor"}, {"kind": "executable", "value": "pactl"},
                               {"kind": "audio-output"}],
         "resources": [{"path": "lib/x.so", "sha256": "\(String(repeating: "ab", count: 32))", "size": 10}],
         "settings": {"a": 1, "b": 1.5, "c": "s", "d": [true], "e": {"f": -2}}}
        """

    func decode(_ text: String) throws(CoreError) -> PluginManifest {
        try ManifestDecoder.decode(Array(text.utf8), plugin: "p")
    }

    /// The error's message for `text`, which must be a malformed manifest.
    func failure(_ text: String) -> String {
        do {
            _ = try decode(text)
            return "decoded"
        } catch {
            #expect(error.code == .malformedManifest)
            return error.message
        }
    }

    func replacing(_ old: String, _ new: String) -> String {
        precondition(Self.valid.contains(old))
        return Self.valid.replacingOccurrences(of: old, with: new)
    }

    @Test func decodesEveryField() throws {
        let m = try decode(Self.valid)
        #expect(m.name == "silent-engine")
        #expect("\(m.version)" == "1.2.3-rc.1+b5")
        #expect(m.entry == "silent-engine")
        #expect(
            m.hostRequirements.map(\.kind) == [
                .backgroundMode("audio"), .dbusSession, .service("supervisor"), .executable("pactl"), .audioOutput,
            ])
        #expect(m.hostRequirements[0].why == "w")
        #expect(m.resources == [.init(path: "lib/x.so", sha256: String(repeating: "ab", count: 32), size: 10)])
        #expect(
            m.settings == [
                "a": .integer(1), "b": .double(1.5), "c": .string("s"), "d": .array([.bool(true)]),
                "e": .table(["f": .integer(-2)]),
            ])
    }

    @Test func sharedLibraryEntry() throws {
        let m = try decode(
            replacing(
                #""entry": "silent-engine""#, #""entry": {"kind": "shared-library", "path": "lib/x.so", "abi": 1}"#))
        #expect(m.entry == "shared-library")
        #expect(m.sharedLibrary == PluginManifest.SharedLibraryEntry(path: "lib/x.so", abi: 1))
        #expect(try decode(Self.valid).sharedLibrary == nil)
        let cases: [(String, String)] = [
            (
                #"{"kind": "shared-library", "path": "lib/y.so", "abi": 1}"#,
                "$.entry: the shared library lib/y.so is not listed in \"resources\""
            ),
            (#"{"kind": "python", "path": "lib/x.so", "abi": 1}"#, "$.entry.kind: unknown entry kind \"python\""),
            (
                #"{"kind": "shared-library", "path": "../x.so", "abi": 1}"#,
                "$.entry.path: the path has a '..' component"
            ),
            (
                #"{"kind": "shared-library", "path": "lib/x.so", "abi": 0}"#,
                "$.entry.abi: expected the plugin ABI major version"
            ),
            (#"{"kind": "shared-library", "path": "lib/x.so"}"#, "$.entry: the required field \"abi\" is missing"),
            (#"{"kind": "shared-library", "path": "lib/x.so", "abi": 1, "x": 1}"#, "$.entry.x: unknown field"),
            ("[1]", "$.entry: expected a built-in implementation's name or a"),
        ]
        for (entry, expected) in cases {
            let message = failure(replacing(#""entry": "silent-engine""#, #""entry": \#(entry)"#))
            #expect(message.contains(expected), "\(entry): \(message)")
        }
    }

    @Test func errorsNameTheJSONPath() {
        #expect(
            failure(replacing(#"{"kind": "dbus-session"}"#, #"{"kind": "dbus"}"#)).contains(
                "$.host_requirements[1].kind"))
        #expect(
            failure(replacing(#""entry": "silent-engine","#, #""entry": "silent-engine", "extra": 1,"#)).contains(
                "$.extra"))
        #expect(failure(replacing(#""size": 10"#, #""size": -1"#)).contains("$.resources[0].size"))
        #expect(failure(replacing(#""f": -2"#, #""f": null"#)).contains("$.settings.e.f"))
        #expect(
            failure(replacing(#"{"kind": "dbus-session"}"#, #"{"kind": "dbus-session", "value": "x"}"#)).contains(
                "$.host_requirements[1].value"))
        #expect(failure(replacing(#""value": "supervisor""#, #""why": "no value""#)).contains("$.host_requirements[2]"))
    }

    @Test func schemaIsRequiredAndChecked() {
        #expect(failure(replacing(#""schema": "vigil.plugin-manifest/v1", "#, "")).contains("\"schema\" is missing"))
        #expect(failure(replacing("vigil.plugin-manifest/v1", "vigil.plugin-manifest/v3")).contains("unknown schema"))
        #expect(failure(replacing(#""schema": "vigil.plugin-manifest/v1""#, #""schema": 1"#)).contains("$.schema"))
    }

    @Test(arguments: [
        "1.0", "01.0.0", "1.0.0-", "1.0.0-01", "+1.0.0", "1.0.0+", "v1.0.0", "1.0.0.0", " 1.0.0", "1.-1.0",
        "1.0.0-a..b",
    ])
    func badVersionsAreRejected(version: String) {
        #expect(failure(replacing("1.2.3-rc.1+b5", version)).contains("$.version"))
    }

    @Test(arguments: ["", "Silent", "1abc", "host", "trusted_plugins", "a_b", "a b", String(repeating: "a", count: 65)])
    func badNamesAreRejected(name: String) {
        #expect(failure(replacing(#""name": "silent-engine""#, "\"name\": \"\(name)\"")).contains("$.name"))
    }

    @Test(arguments: [
        "/etc/passwd", "../x", "a/../../x", "a/./b", "", "a//b", "a/", "plugin.json", "plugin.pub", "a\\b", ".",
        "a\\u009bb", "evil\\u202etxt.so", "a\\u2066b",
    ])
    func escapingResourcePathsAreRejected(path: String) {
        #expect(failure(replacing("lib/x.so", path)).contains("$.resources[0].path"))
    }

    /// A size is digits only: "-0" parsed as the integer 0 and was accepted.
    @Test(arguments: ["-0", "-1", "1.0", "1e1", "10.0", "-10"])
    func resourceSizesAreDigitsOnly(size: String) {
        #expect(failure(replacing(#""size": 10"#, #""size": \#(size)"#)).contains("$.resources[0].size"))
    }

    @Test func badDigestsAndDuplicateResourcesAreRejected() {
        #expect(
            failure(replacing(String(repeating: "ab", count: 32), String(repeating: "AB", count: 32))).contains(
                "sha256"))
        let twice = replacing(
            #""size": 10}]"#,
            #""size": 10}, {"path": "lib/x.so", "sha256": "\#(String(repeating: "ab", count: 32))", "size": 10}]"#)
        #expect(failure(twice).contains("listed twice"))
    }

    @Test func minimalManifestUsesDefaults() throws {
        let m = try decode(#"{"schema": "vigil.plugin-manifest/v1", "name": "a", "version": "0.0.1", "entry": "a"}"#)
        #expect(m.description == "" && m.hostRequirements.isEmpty && m.resources.isEmpty && m.settings.isEmpty)
    }
}
