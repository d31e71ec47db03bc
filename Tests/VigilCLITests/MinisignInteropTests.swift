import Foundation
import Testing
import VigilTestSupport

/// Interoperability with the real `minisign` (installed by scripts/install-deps.sh).
@Suite(.serialized) struct MinisignInteropTests {
    static let minisign = ["/usr/bin/minisign", "/usr/local/bin/minisign"].first {
        FileManager.default.isExecutableFile(atPath: $0)
    }

    /// Runs the real `minisign` with `arguments` in `directory`.
    static func minisign(_ arguments: [String], in directory: String, stdin: String? = nil) async throws
        -> VigilExecutable.Output
    {
        try await VigilExecutable.run(executable: try #require(minisign), arguments, in: directory, stdin: stdin)
    }

    @Test(.enabled(if: minisign != nil, "minisign is not installed"))
    func manifestSignedByMinisignVerifiesWithVigil() async throws {
        let s = try CLISandbox()
        defer { s.remove() }
        let gen = try await Self.minisign(["-G", "-W", "-p", "mk.pub", "-s", "mk.key"], in: s.work)
        #expect(gen.status == 0, "\(gen.stderr)")
        try s.dir.write(
            "work/manifests/beta/plugin.json",
            #"{"schema": "vigil.plugin-manifest/v1", "name": "beta", "version": "0.3.0", "entry": "beta"}"#)
        let sign = try await Self.minisign(
            ["-S", "-s", "../../mk.key", "-m", "plugin.json", "-t", "beta@0.3.0"], in: s.dir.url("work/manifests/beta"))
        #expect(sign.status == 0, "\(sign.stderr)")
        try FileManager.default.copyItem(
            atPath: s.dir.url("work/mk.pub"), toPath: s.dir.url("work/manifests/beta/plugin.pub"))
        // Trust by the offered key, then verify with the trusted key from vigil.toml.
        let trust = try await s.vigil("plugin", "trust", "beta", "--yes")
        #expect(trust.status == 0, "\(trust.stderr)")
        let verify = try await s.vigil("plugin", "verify", "manifests/beta")
        #expect(verify.status == 0, "\(verify.stderr)")
        // A minisign legacy (-l) signature is refused with its own error.
        let legacy = try await Self.minisign(
            ["-S", "-l", "-s", "../../mk.key", "-m", "plugin.json"],
            in: s.dir.url("work/manifests/beta"))
        if legacy.status == 0 {
            let refused = try await s.vigil("plugin", "verify", "manifests/beta")
            #expect(refused.status == 1)
            #expect(refused.stderr.contains("legacy"))
        }
    }

    @Test(.enabled(if: minisign != nil, "minisign is not installed"))
    func vigilSignatureVerifiesWithMinisignPrehashedOnly() async throws {
        let s = try CLISandbox()
        defer { s.remove() }
        let dir = try await s.makePlugin("alpha")
        let r = try await Self.minisign(["-V", "-H", "-p", "plugin.pub", "-m", "plugin.json"], in: dir)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.contains("alpha@1.0.0"))
        // And a flipped byte fails minisign too.
        var bytes = try s.dir.read(dir + "/plugin.json")
        bytes[10] ^= 1
        try s.dir.write("work/manifests/alpha/plugin.json", bytes)
        let bad = try await Self.minisign(["-V", "-H", "-p", "plugin.pub", "-m", "plugin.json"], in: dir)
        #expect(bad.status != 0)
    }

    @Test(.enabled(if: minisign != nil, "minisign is not installed"))
    func coSignaturesAndRotationStatementsVerifyWithMinisign() async throws {
        let s = try CLISandbox()
        defer { s.remove() }
        let dir = try await s.makePlugin("alpha")
        #expect(try await s.vigil("plugin", "keygen", "--name", "co", "--dir", "keys").status == 0)
        #expect(try await s.vigil("plugin", "sign", "manifests/alpha", "--key", "keys/co.key").status == 0)
        let co = try await Self.minisign(
            ["-V", "-H", "-p", "plugin.2.pub", "-m", "plugin.json", "-x", "plugin.json.2.minisig"], in: dir)
        #expect(co.status == 0, "\(co.stderr)")
        #expect(try await s.vigil("plugin", "keygen", "--name", "next", "--dir", "keys").status == 0)
        let rotate = try await s.vigil(
            "plugin", "rotate", "manifests/alpha", "--from", "keys/alpha.key", "--from", "keys/co.key", "--to",
            "keys/next.pub", "--cosign", "keys/next.key")
        #expect(rotate.status == 0, "\(rotate.stderr)")
        for (n, key) in ["alpha", "co", "next"].enumerated() {
            let suffix = n == 0 ? "" : ".\(n + 1)"
            let r = try await Self.minisign(
                [
                    "-V", "-H", "-p", "../../keys/\(key).pub", "-m", "rotations/1.json", "-x",
                    "rotations/1.json\(suffix).minisig",
                ],
                in: dir)
            #expect(r.status == 0, "\(key): \(r.stderr)")
            #expect(r.stdout.contains("alpha key rotation 1"))
        }
        // The revocation list, signed by the new key.
        let revoke = try await s.vigil(
            "plugin", "revoke", "manifests/alpha", "--key", "keys/next.key", "--floor", "0.9.0")
        #expect(revoke.status == 0, "\(revoke.stderr)")
        let list = try await Self.minisign(
            ["-V", "-H", "-p", "../../keys/next.pub", "-m", "revocations.json", "-x", "revocations.json.minisig"],
            in: dir)
        #expect(list.status == 0, "\(list.stderr)")
        #expect(list.stdout.contains("alpha revocations 1"))
    }

    @Test(.enabled(if: minisign != nil, "minisign is not installed"))
    func passwordProtectedMinisignKeySignsWithTheEnvironmentPassword() async throws {
        let s = try CLISandbox()
        defer { s.remove() }
        let gen = try await Self.minisign(
            ["-G", "-p", "pw.pub", "-s", "pw.key"], in: s.work, stdin: "secret\nsecret\n")
        #expect(gen.status == 0, "\(gen.stderr)")
        try s.dir.write(
            "work/manifests/zeta/plugin.json",
            #"{"schema": "vigil.plugin-manifest/v1", "name": "zeta", "version": "0.1.0", "entry": "zeta"}"#)
        // No password and no terminal: a clear refusal, nothing written.
        let noPassword = try await s.vigil("plugin", "sign", "manifests/zeta", "--key", "pw.key")
        #expect(noPassword.status == 1)
        #expect(noPassword.stderr.contains("VIGIL_KEY_PASSWORD"))
        #expect(try s.dir.list("work/manifests/zeta") == ["plugin.json"])
        let signed = try await VigilExecutable.run(
            ["plugin", "sign", "manifests/zeta", "--key", "pw.key"], in: s.work,
            environment: s.environment.merging(["VIGIL_KEY_PASSWORD": "secret"]) { $1 })
        #expect(signed.status == 0, "\(signed.stderr)")
        let verify = try await Self.minisign(
            ["-V", "-H", "-p", "../../pw.pub", "-m", "plugin.json"],
            in: s.dir.url("work/manifests/zeta"))
        #expect(verify.status == 0, "\(verify.stderr)")
    }
}
