import Foundation
import Testing
import VigilCore
import VigilCrypto
import VigilTestSupport

/// k-of-n trust: several signature files over the exact manifest bytes, a threshold of distinct
/// raw keys, key sets in `vigil.toml`, co-signing with `PluginSigner` and trusting a key set.
@Suite struct ThresholdSignatureTests {
    let a = MinisignSecretKey.generate()
    let b = MinisignSecretKey.generate()
    let c = MinisignSecretKey.generate()

    func set(_ keys: [MinisignSecretKey], _ threshold: Int) throws -> TrustedKeys {
        try TrustedKeys(keys: keys.map(\.publicKey.fingerprint), threshold: threshold)
    }

    /// `alpha` signed by `a`, then co-signed by `b` (plugin.json.2.minisig, plugin.2.pub).
    func twoSigned(_ f: PluginFixture) throws {
        try f.makeSigned("alpha", key: a)
        let second = try PluginSigner.sign(directory: f.root.url("plugins/alpha"), with: b)
        #expect(second.cosigned && second.signatureFile == "plugin.json.2.minisig" && second.wrotePublicKey)
    }

    @Test func twoOfTwoLoadsWhenBothSignedAndIsRefusedWithOne() throws {
        let f = try PluginFixture()
        defer { f.remove() }
        try twoSigned(f)
        let keys = try set([a, b], 2)
        let plugin = try f.loader(keySets: ["alpha": keys]).load("alpha").get()
        #expect(plugin.trust == .trusted(keys))
        // The rollback record is kept under the key set.
        #expect(try f.store.entry(plugin: "alpha", keys: keys) != nil)

        try FileManager.default.removeItem(atPath: f.root.url("plugins/alpha/plugin.json.2.minisig"))
        let error = try #require(CoreError.of(f.loader(keySets: ["alpha": keys]).load("alpha")))
        #expect(error.code == .signatureThreshold)
        #expect(error.message.contains("2 of its 2 trusted keys"))
        // 1 of the same 2 keys is enough.
        #expect(f.errorCode("alpha", f.loader(keySets: ["alpha": try set([a, b], 1)], rollback: false)) == nil)
    }

    @Test func oneSignatureFileTwiceCountsOnce() throws {
        let f = try PluginFixture()
        defer { f.remove() }
        try f.makeSigned("alpha", key: a)
        let sig = try f.root.read("plugins/alpha/plugin.json.minisig")
        try f.root.write("plugins/alpha/plugin.json.2.minisig", sig)
        try f.root.write("plugins/alpha/plugin.json.3.minisig", sig)
        let keys = try set([a, b], 2)
        #expect(f.errorCode("alpha", f.loader(keySets: ["alpha": keys])) == .signatureThreshold)
    }

    @Test func oneRawKeyUnderTwoKeyIDsCountsOnce() throws {
        let f = try PluginFixture()
        defer { f.remove() }
        try f.makeSigned("alpha", key: a)
        // The same secret key with another minisign key id: the key id is not signed.
        let alias = MinisignSecretKey(keyID: [1, 2, 3, 4, 5, 6, 7, 8], secretKey: a.secretKey)
        let manifest = try f.root.read("plugins/alpha/plugin.json")
        let sig = try MinisignSignature.sign(manifest, with: alias, trustedComment: "alpha@1.0.0")
        try f.root.write("plugins/alpha/plugin.json.2.minisig", sig.fileContents())
        #expect(f.errorCode("alpha", f.loader(keySets: ["alpha": try set([a, b], 2)])) == .signatureThreshold)
        // A set cannot list one raw key twice either.
        #expect(throws: TrustedKeys.Problem.self) {
            try TrustedKeys(keys: [a.publicKey.fingerprint, alias.publicKey.fingerprint], threshold: 2)
        }
    }

    @Test func aSignatureByAKeyOutsideTheSetCountsForNothing() throws {
        let f = try PluginFixture()
        defer { f.remove() }
        try f.makeSigned("alpha", key: a)
        let manifest = try f.root.read("plugins/alpha/plugin.json")
        try f.root.write(
            "plugins/alpha/plugin.json.2.minisig",
            try MinisignSignature.sign(manifest, with: c, trustedComment: "x").fileContents())
        #expect(f.errorCode("alpha", f.loader(keySets: ["alpha": try set([a, b], 2)])) == .signatureThreshold)
        #expect(f.errorCode("alpha", f.loader(keySets: ["alpha": try set([a, b], 1)])) == nil)
    }

    @Test func aLegacyOrMalformedCoSignatureRefusesThePlugin() throws {
        let f = try PluginFixture()
        defer { f.remove() }
        try twoSigned(f)
        let keys = try set([a, b], 1)
        let path = "plugins/alpha/plugin.json.2.minisig"
        let original = try f.root.read(path)
        // Flip the algorithm id "ED" to the legacy "Ed" (the forgery of minisign#104).
        let signature = try MinisignSignature(fileContents: original)
        let lines = String(decoding: original, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
        let body = Array("Ed".utf8) + signature.keyID + signature.signature
        var edited = lines.map(String.init)
        edited[1] = Data(body).base64EncodedString()
        try f.root.write(path, edited.joined(separator: "\n"))
        #expect(
            f.errorCode("alpha", f.loader(keySets: ["alpha": keys], rollback: false)) == .unsupportedSignatureAlgorithm)
        try f.root.write(path, "not a signature\n")
        #expect(f.errorCode("alpha", f.loader(keySets: ["alpha": keys], rollback: false)) == .invalidSignature)
        try f.root.write(path, original)
        #expect(f.errorCode("alpha", f.loader(keySets: ["alpha": keys], rollback: false)) == nil)
    }

    @Test func aCoSignerKeyNotInTheTrustedSetIsAKeyRotation() throws {
        let f = try PluginFixture()
        defer { f.remove() }
        try twoSigned(f)
        // Trusting only `a`: the plugin offers `b` too (plugin.2.pub), which nobody reviewed.
        #expect(f.errorCode("alpha", f.loader(trusted: ["alpha": a.publicKey.fingerprint])) == .keyRotation)
    }

    @Test func signingAChangedManifestRemovesStaleCoSignatures() throws {
        let f = try PluginFixture()
        defer { f.remove() }
        try twoSigned(f)
        try f.root.write("plugins/alpha/plugin.json", PluginFixture.manifestText(name: "alpha", version: "1.1.0"))
        let resigned = try PluginSigner.sign(directory: f.root.url("plugins/alpha"), with: a)
        #expect(resigned.removedSignatures == ["plugin.json.2.minisig"])
        #expect(!resigned.cosigned && resigned.signatureFile == "plugin.json.minisig")
        #expect(f.errorCode("alpha", f.loader(keySets: ["alpha": try set([a, b], 2)])) == .signatureThreshold)
        // b signs again: 2 of 2 again, in the same numbered files.
        let again = try PluginSigner.sign(directory: f.root.url("plugins/alpha"), with: b)
        #expect(again.signatureFile == "plugin.json.2.minisig" && !again.wrotePublicKey)
        #expect(f.errorCode("alpha", f.loader(keySets: ["alpha": try set([a, b], 2)])) == nil)
    }

    @Test func aNewKeyCannotSignAChangedManifest() throws {
        let f = try PluginFixture()
        defer { f.remove() }
        try f.makeSigned("alpha", key: a)
        try f.root.write("plugins/alpha/plugin.json", PluginFixture.manifestText(name: "alpha", version: "2.0.0"))
        #expect(throws: CoreError.self) { try PluginSigner.sign(directory: f.root.url("plugins/alpha"), with: b) }
        #expect(try f.root.list("plugins/alpha").sorted() == ["plugin.json", "plugin.json.minisig", "plugin.pub"])
    }

    @Test func keySetsAreReadFromVigilToml() throws {
        let dir = try TestDirectory()
        defer { dir.remove() }
        let (x, y) = (a.publicKey.fingerprint, b.publicKey.fingerprint)
        let path = try dir.write(
            "vigil.toml",
            """
            [trusted_plugins]
            one = "\(x)"
            two = { keys = ["\(x)", "\(y)"], threshold = 2 }

            """)
        let config = try HostConfiguration.load(path: path, environment: dir.environment())
        #expect(config.trustedKeys["one"] == TrustedKeys(x))
        #expect(config.trustedKeys["two"] == (try TrustedKeys(keys: [x, y], threshold: 2)))
        #expect(config.trustedPlugins["two"] == nil && config.trustedPlugins["one"] == x)
    }

    @Test(arguments: [
        ("threshold = 0", "threshold 0 is not between 1 and the number of keys (2)"),
        ("threshold = 3", "threshold 3 is not between 1 and the number of keys (2)"),
        ("threshold = -1", "threshold -1"),
        ("threshold = \"2\"", "expected an integer"),
        ("", "has no `threshold`"),
        ("threshold = 1, extra = 1", "unknown key `extra`"),
    ])
    func badKeySetsAreRefusedWhenVigilTomlIsRead(tail: String, message: String) throws {
        let dir = try TestDirectory()
        defer { dir.remove() }
        let keys = "keys = [\"\(a.publicKey.fingerprint)\", \"\(b.publicKey.fingerprint)\"]"
        let path = try dir.write(
            "vigil.toml", "[trusted_plugins]\ntwo = { \(keys)\(tail.isEmpty ? "" : ", " + tail) }\n")
        let error = try #require(throws: CoreError.self) {
            try HostConfiguration.load(path: path, environment: dir.environment())
        }
        #expect(error.code == .configInvalid)
        #expect(error.location?.line == 2)
        #expect(error.message.contains(message), "\(error.message)")
    }

    @Test func aKeyListedTwiceOrNoKeysAreRefused() throws {
        let dir = try TestDirectory()
        defer { dir.remove() }
        let x = a.publicKey.fingerprint
        for value in ["{ keys = [\"\(x)\", \"\(x)\"], threshold = 1 }", "{ keys = [], threshold = 1 }", "3"] {
            let path = try dir.write("vigil.toml", "[trusted_plugins]\ntwo = \(value)\n")
            let error = try #require(throws: CoreError.self) {
                try HostConfiguration.load(path: path, environment: dir.environment())
            }
            #expect(error.code == .configInvalid, "\(value)")
        }
    }

    @Test func trustRecordsTheOfferedKeySetAndEditsItInPlace() throws {
        let f = try PluginFixture()
        defer { f.remove() }
        try twoSigned(f)
        let configPath = try f.root.write(
            "vigil.toml",
            "# hosts\nplugins = [\"alpha\"]\n\n[trusted_plugins]\nalpha = \"\(c.publicKey.fingerprint)\"\n")
        let config = try HostConfiguration.load(path: configPath, environment: f.root.environment())
        let configuration = HostConfiguration(
            path: configPath, plugins: config.plugins, trustedKeys: config.trustedKeys,
            pluginPaths: [f.pluginsDirectory], environment: f.root.environment())
        let review = try TrustTransaction.review(
            name: "alpha", configuration: configuration, pinned: [], store: f.store)
        let keys = try set([a, b], 2)
        #expect(review.keys == keys && review.isRotation)
        #expect(review.keyIDs == [a.publicKey.keyIDHex, b.publicKey.keyIDHex])
        #expect(try TrustTransaction.commit(review, store: f.store) != .unchanged)
        let text = String(decoding: try f.root.read("vigil.toml"), as: UTF8.self)
        #expect(
            text
                == "# hosts\nplugins = [\"alpha\"]\n\n[trusted_plugins]\nalpha = { keys = [\"\(a.publicKey.fingerprint)\", "
                + "\"\(b.publicKey.fingerprint)\"], threshold = 2 }\n")
        let reread = try HostConfiguration.load(path: configPath, environment: f.root.environment())
        #expect(reread.trustedKeys["alpha"] == keys)
        // Idempotent, and the set can be edited again (here to a 1-of-2 threshold).
        #expect(try TrustEditor.trust(plugin: "alpha", keys: keys, configPath: configPath) == .unchanged)
        let oneOfTwo = try set([a, b], 1)
        #expect(try TrustEditor.trust(plugin: "alpha", keys: oneOfTwo, configPath: configPath) != .unchanged)
        #expect(
            try HostConfiguration.load(path: configPath, environment: f.root.environment()).trustedKeys["alpha"]
                == oneOfTwo)
        // A threshold the offered keys do not meet is refused at review.
        #expect(throws: CoreError.self) {
            try TrustTransaction.review(
                name: "alpha", configuration: configuration, pinned: [], threshold: 3, store: f.store)
        }
    }
}
