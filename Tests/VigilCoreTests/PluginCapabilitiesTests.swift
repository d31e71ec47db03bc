import Testing
import VigilCore

/// The `"capabilities"` object of a signed manifest: the closed vocabulary, its one spelling of
/// each path, the plain words the review shows and what an update adds.
@Suite struct PluginCapabilitiesTests {
    static func manifest(capabilities: String) -> String {
        """
        {"schema": "vigil.plugin-manifest/v2", "name": "p", "version": "1.0.0", "entry": "silent-engine",
         "capabilities": \(capabilities)}
        """
    }

    func decode(_ capabilities: String) throws(CoreError) -> PluginCapabilities {
        try ManifestDecoder.decode(Array(Self.manifest(capabilities: capabilities).utf8), plugin: "p").capabilities
    }

    /// The refusal's message for a `capabilities` value, which must be a malformed manifest.
    func failure(_ capabilities: String) -> String {
        do {
            _ = try decode(capabilities)
            return "decoded"
        } catch {
            #expect(error.code == .malformedManifest)
            return error.message
        }
    }

    @Test func decodesEveryCapability() throws {
        let c = try decode(
            """
            {"files": [{"path": "heartbeat", "access": "read-write"}, {"path": "/etc//hostname", "access": "read"},
                       {"path": "/usr/share/./sounds/", "access": "read"}],
             "sound_server": true, "bus": ["system", "session"], "network": {"tcp_connect": [8080, 443]},
             "spawn": ["/usr/bin/aplay"]}
            """)
        #expect(
            c.files == [
                .init(path: "/etc/hostname", access: .read), .init(path: "/usr/share/sounds/", access: .read),
                .init(path: "heartbeat", access: .readWrite),
            ])
        #expect(c.soundServer)
        #expect(c.buses == [.session, .system])
        #expect(c.network == .tcpConnect([443, 8080]))
        #expect(c.spawn == ["/usr/bin/aplay"])
        #expect(
            c.plainWords == [
                "read /etc/hostname", "read /usr/share/sounds/ and everything in it",
                "read and write heartbeat in its state directory", "use the sound server (PulseAudio or PipeWire)",
                "talk on the session D-Bus", "talk on the system D-Bus", "connect to TCP ports 443 and 8080",
                "run /usr/bin/aplay",
            ])
    }

    @Test func absentMeansNothing() throws {
        let m = try ManifestDecoder.decode(
            Array(#"{"schema": "vigil.plugin-manifest/v2", "name": "p", "version": "1.0.0", "entry": "x"}"#.utf8))
        #expect(m.capabilities == .none)
        #expect(m.capabilities.plainWords == ["nothing beyond running its own code"])
        #expect(try decode("{}") == .none)
        #expect(try decode(#"{"network": "none", "sound_server": false}"#) == .none)
    }

    @Test func stateDirectoryHasOneSpelling() throws {
        for spelling in ["./", ".", "./.", ".//"] {
            let c = try decode(#"{"files": [{"path": "\#(spelling)", "access": "read-write"}]}"#)
            #expect(c.files.map(\.path) == ["./"], "\(spelling)")
            #expect(c.plainWords == ["read and write every file in its state directory"])
        }
        let sub = try decode(#"{"files": [{"path": "./cache//", "access": "read"}]}"#)
        #expect(sub.plainWords == ["read the directory cache/ (and everything in it) in its state directory"])
    }

    @Test(arguments: [
        (#"{"filez": []}"#, #"$.capabilities.filez: unknown field "filez"; did you mean "files"?"#),
        (#"{"sound-server": true}"#, #"did you mean "sound_server"?"#),
        (#"{"files": [{"path": "a", "acess": "read"}]}"#, #"$.capabilities.files[0].acess: unknown field"#),
        (#"{"files": [{"path": "a", "access": "write"}]}"#, #"$.capabilities.files[0].access: unknown access "write""#),
        (#"{"files": [{"path": "a", "access": "raed"}]}"#, #"did you mean "read"?"#),
        (#"{"bus": ["sesion"]}"#, #"$.capabilities.bus[0]: unknown bus "sesion"; did you mean "session"?"#),
        (#"{"network": "al"}"#, #"$.capabilities.network: unknown network "al""#),
        (#"{"network": "anyy"}"#, #"did you mean "any"?"#),
        (#"{"network": {"tcp": [1]}}"#, #"$.capabilities.network.tcp: unknown field"#),
        (#"{"network": true}"#, #"expected "none", "any" or {"tcp_connect": [PORT, …]}"#),
        (#"{"sound_server": "yes"}"#, #"$.capabilities.sound_server: expected true or false"#),
        (#"{"spawn": "/bin/x"}"#, #"$.capabilities.spawn: expected an array, found string"#),
        ("[]", "$.capabilities: expected an object"),
    ])
    func unknownKeysAndValuesAreLocated(_ example: (String, String)) {
        let message = failure(example.0)
        #expect(message.contains(example.1), "\(message)")
        #expect(message.contains("sign it again"), "the remedy: \(message)")
    }

    @Test(arguments: [
        ("0", "$.capabilities.network.tcp_connect[0]: expected a TCP port, a whole number from 1 to 65535"),
        ("65536", "$.capabilities.network.tcp_connect[0]: expected a TCP port"),
        ("-1", "expected a TCP port"), ("443.0", "expected a TCP port"), ("1e2", "expected a TCP port"),
        (#""443""#, "expected a TCP port"),
        ("443, 443", "$.capabilities.network.tcp_connect[1]: this entry is listed twice"),
    ])
    func portsAreOneTo65535(_ example: (String, String)) {
        let message = failure(#"{"network": {"tcp_connect": [\#(example.0)]}}"#)
        #expect(message.contains(example.1), "\(message)")
    }

    @Test func portBoundsAreAccepted() throws {
        #expect(try decode(#"{"network": {"tcp_connect": [65535, 1]}}"#).network == .tcpConnect([1, 65535]))
        #expect(try decode(#"{"network": "any"}"#).plainWords == ["connect to any network address"])
        #expect(try decode(#"{"network": {"tcp_connect": [53]}}"#).plainWords == ["connect to TCP port 53"])
        #expect(
            try decode(#"{"network": {"tcp_connect": [3, 2, 1]}}"#).plainWords == ["connect to TCP ports 1, 2 and 3"])
    }

    @Test(arguments: [
        ("", "the path is empty"), ("../x", "'..' component"), ("/etc/../root/.ssh/id_ed25519", "'..' component"),
        ("a/..", "'..' component"), ("*.txt", "glob character"), ("/var/log/?", "glob character"),
        ("/etc/[ab]", "glob character"), ("a\\u001b[2Jb", "control character"), ("a\\\\b", "backslash"),
        ("a\\u202eb", "bidirectional control"),
    ])
    func badPathsAreRefused(_ example: (String, String)) {
        let message = failure(#"{"files": [{"path": "\#(example.0)", "access": "read"}]}"#)
        #expect(message.contains("$.capabilities.files[0].path: "), "\(message)")
        #expect(message.contains(example.1), "\(message)")
        #expect(!message.unicodeScalars.contains { $0.value == 0x1B || $0.value == 0x202E }, "escaped: \(message)")
    }

    @Test func duplicatesAndEmptyListsAreRefused() {
        #expect(
            failure(#"{"files": [{"path": "/a", "access": "read"}, {"path": "//a", "access": "read-write"}]}"#)
                .contains("$.capabilities.files[1]: /a is listed twice"))
        #expect(failure(#"{"files": []}"#).contains("$.capabilities.files: the list is empty"))
        #expect(
            failure(#"{"bus": ["session", "session"]}"#).contains("$.capabilities.bus[1]: this entry is listed twice"))
        #expect(failure(#"{"network": {"tcp_connect": []}}"#).contains("the list is empty"))
        #expect(
            failure(#"{"spawn": ["/bin/a", "/bin//a"]}"#).contains(
                "$.capabilities.spawn[1]: this entry is listed twice"))
    }

    @Test(arguments: [
        ("aplay", "is not an absolute path"), ("./aplay", "is not an absolute path"),
        ("/usr/bin/", "is a directory"), ("/usr/../bin/sh", "'..' component"),
    ])
    func spawnPathsAreAbsoluteExecutables(_ example: (String, String)) {
        let message = failure(#"{"spawn": ["\#(example.0)"]}"#)
        #expect(message.contains("$.capabilities.spawn[0]: "), "\(message)")
        #expect(message.contains(example.1), "\(message)")
    }

    @Test func unknownTopLevelFieldsSuggestTheNearOne() {
        let text =
            #"{"schema": "vigil.plugin-manifest/v2", "name": "p", "version": "1.0.0", "entry": "x", "capabilites": {}}"#
        do {
            _ = try ManifestDecoder.decode(Array(text.utf8))
            Issue.record("decoded")
        } catch {
            #expect(
                error.message.contains(#"$.capabilites: unknown field "capabilites"; did you mean "capabilities"?"#))
        }
    }

    // MARK: - What an update adds

    static let trusted = PluginCapabilities(
        files: [.init(path: "heartbeat", access: .readWrite), .init(path: "/usr/share/sounds/", access: .read)],
        soundServer: true, buses: [.session], network: .tcpConnect([443]), spawn: ["/usr/bin/aplay"])

    @Test func fewerOrEqualAddsNothing() {
        #expect(Self.trusted.added(since: Self.trusted).isEmpty)
        #expect(PluginCapabilities.none.added(since: Self.trusted).isEmpty)
        #expect(PluginCapabilities.none.added(since: .none).isEmpty)
        let fewer = PluginCapabilities(
            files: [.init(path: "heartbeat", access: .read), .init(path: "/usr/share/sounds/x.wav", access: .read)],
            network: .tcpConnect([443]))
        #expect(fewer.added(since: Self.trusted).isEmpty, "read ⊂ read-write, a file inside a trusted tree")
        let anyNetwork = PluginCapabilities(network: .any)
        #expect(PluginCapabilities(network: .tcpConnect([1, 2])).added(since: anyNetwork).isEmpty)
        let everything = PluginCapabilities(files: [.init(path: "./", access: .readWrite)])
        #expect(PluginCapabilities(files: [.init(path: "a/b/", access: .readWrite)]).added(since: everything).isEmpty)
    }

    @Test func moreIsListedLineByLine() {
        let grown = PluginCapabilities(
            files: [
                .init(path: "heartbeat", access: .readWrite), .init(path: "/usr/share/sounds/", access: .readWrite),
                .init(path: "/home/u/.ssh/id_ed25519", access: .read), .init(path: "/usr/share/soundsX", access: .read),
            ],
            soundServer: true, buses: [.session, .system], network: .tcpConnect([443, 8080]),
            spawn: ["/usr/bin/aplay", "/bin/sh"])
        #expect(
            grown.added(since: Self.trusted) == [
                "read /home/u/.ssh/id_ed25519", "read and write /usr/share/sounds/ and everything in it",
                "read /usr/share/soundsX", "talk on the system D-Bus", "connect to TCP port 8080", "run /bin/sh",
            ])
        #expect(PluginCapabilities(network: .any).added(since: Self.trusted) == ["connect to any network address"])
        #expect(
            PluginCapabilities(soundServer: true).added(since: .none) == [
                "use the sound server (PulseAudio or PipeWire)"
            ])
        // A path in the state directory and the same path on the host are different files.
        #expect(
            PluginCapabilities(files: [.init(path: "/heartbeat", access: .read)]).added(since: Self.trusted)
                == ["read /heartbeat"])
        #expect(Self.trusted.added(since: .none) == Self.trusted.plainWords)
    }

    @Test func canonicalFormMakesEqualDeclarationsEqual() {
        let a = PluginCapabilities(
            files: [.init(path: "b", access: .read), .init(path: "a", access: .read)], network: .tcpConnect([2, 1]),
            spawn: ["/y", "/x"])
        let b = PluginCapabilities(
            files: [.init(path: "a", access: .read), .init(path: "b", access: .read)], network: .tcpConnect([1, 2]),
            spawn: ["/x", "/y"])
        #expect(a == b)
        #expect(a.hashValue == b.hashValue)
    }
}
