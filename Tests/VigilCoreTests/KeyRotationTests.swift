import Foundation
import Testing
import VigilCore
import VigilCrypto
import VigilTestSupport

/// Key rotation signed by the old AND the new keys (`rotations/N.json`), followed by hosts without
/// a new review, and every way a rotation must be refused.
@Suite struct KeyRotationTests {
    let a = MinisignSecretKey.generate()
    let b = MinisignSecretKey.generate()
    let c = MinisignSecretKey.generate()
    let d = MinisignSecretKey.generate()

    var dir: String { "plugins/alpha" }

    /// `alpha` 1.0.0 signed by `a`, accepted once by a host trusting `a`.
    func acceptedWithA(_ f: PluginFixture) throws {
        try f.makeSigned("alpha", key: a)
        #expect(f.errorCode("alpha", f.loader(trusted: ["alpha": a.publicKey.fingerprint])) == nil)
    }

    /// Rotates `alpha` to `keys` (signed by `signers`), then signs a new version with `manifestSigners`.
    func rotate(
        _ f: PluginFixture, to keys: [MinisignSecretKey], threshold: Int? = nil, signers: [MinisignSecretKey],
        version: String, manifestSigners: [MinisignSecretKey]
    ) throws {
        let result = try PluginRotator.rotate(
            directory: f.root.url(dir), to: keys.map(\.publicKey), threshold: threshold, signers: signers)
        #expect(result.wroteSignatures.count == signers.count)
        try f.root.write("\(dir)/plugin.json", PluginFixture.manifestText(name: "alpha", version: version))
        for key in manifestSigners { try PluginSigner.sign(directory: f.root.url(dir), with: key) }
    }

    func loaderA(_ f: PluginFixture) -> PluginLoader { f.loader(trusted: ["alpha": a.publicKey.fingerprint]) }

    func stateBytes(_ f: PluginFixture) -> [UInt8]? { try? f.root.read("state/vigil/rollback.json") }

    @Test func aHostFollowsARotationSignedByBothSidesAndNeverGoesBack() throws {
        let f = try PluginFixture()
        defer { f.remove() }
        try acceptedWithA(f)
        try rotate(f, to: [b], signers: [a, b], version: "1.1.0", manifestSigners: [b])
        #expect(try f.root.list(dir).contains("rotations"))
        let plugin = try loaderA(f).load("alpha").get()
        #expect(plugin.trust == .trusted(TrustedKeys(b.publicKey.fingerprint)))
        #expect(plugin.rotation == RotationState(keys: TrustedKeys(b.publicKey.fingerprint), version: 1))
        // Recorded: with the statement gone the host still trusts only b.
        #expect(
            try f.store.rotation(plugin: "alpha", base: TrustedKeys(a.publicKey.fingerprint))
                == RotationState(keys: TrustedKeys(b.publicKey.fingerprint), version: 1))
        try FileManager.default.removeItem(atPath: f.root.url("\(dir)/rotations"))
        #expect(f.errorCode("alpha", loaderA(f)) == nil)
        // An old release signed by a (the rotated-out key) is refused now.
        try f.root.write("\(dir)/plugin.json", PluginFixture.manifestText(name: "alpha", version: "1.2.0"))
        try FileManager.default.removeItem(atPath: f.root.url("\(dir)/plugin.pub"))
        try FileManager.default.removeItem(atPath: f.root.url("\(dir)/plugin.json.minisig"))
        try PluginSigner.sign(directory: f.root.url(dir), with: a)
        #expect(f.errorCode("alpha", loaderA(f)) == .keyRotation)
    }

    @Test func aRotationToAKeySetNeedsTheNewThreshold() throws {
        let f = try PluginFixture()
        defer { f.remove() }
        try acceptedWithA(f)
        // a → 2 of {b, c}, but only a and b sign the statement.
        let result = try PluginRotator.rotate(
            directory: f.root.url(dir), to: [b.publicKey, c.publicKey], threshold: 2, signers: [a, b])
        #expect(!result.isComplete && result.oldSigners == 1 && result.newSigners == 1)
        try f.root.write("\(dir)/plugin.json", PluginFixture.manifestText(name: "alpha", version: "2.0.0"))
        try PluginSigner.sign(directory: f.root.url(dir), with: b)
        try PluginSigner.sign(directory: f.root.url(dir), with: c)
        let before = stateBytes(f)
        #expect(f.errorCode("alpha", loaderA(f)) == .rotationNotSigned)
        #expect(stateBytes(f) == before, "a refused rotation persists nothing")
        // Rotating again before this one is complete is refused too.
        #expect(throws: CoreError.self) {
            try PluginRotator.rotate(directory: f.root.url(dir), to: [d.publicKey], threshold: nil, signers: [b, c, d])
        }
        // c co-signs: complete, and the 2-of-2 manifest loads.
        #expect(try PluginRotator.cosign(directory: f.root.url(dir), signers: [c]).isComplete)
        let plugin = try loaderA(f).load("alpha").get()
        #expect(plugin.trust == .trusted(try TrustedKeys(keys: [b, c].map(\.publicKey.fingerprint), threshold: 2)))
    }

    @Test func signedOnlyByTheOldKeysIsRefused() throws {
        let f = try PluginFixture()
        defer { f.remove() }
        try acceptedWithA(f)
        try rotate(f, to: [b], signers: [a], version: "1.1.0", manifestSigners: [b])
        let before = stateBytes(f)
        let error = try #require(CoreError.of(loaderA(f).load("alpha")))
        #expect(error.code == .rotationNotSigned)
        #expect(error.message.contains("new keys"))
        #expect(stateBytes(f) == before)
    }

    @Test func signedOnlyByTheNewKeysIsTodaysKeyRotationRefusal() throws {
        let f = try PluginFixture()
        defer { f.remove() }
        try acceptedWithA(f)
        try rotate(f, to: [b], signers: [b], version: "1.1.0", manifestSigners: [b])
        #expect(f.errorCode("alpha", loaderA(f)) == .keyRotation)
        #expect(try f.store.rotation(plugin: "alpha", base: TrustedKeys(a.publicKey.fingerprint)) == nil)
    }

    @Test func aSkippedVersionIsNotFollowed() throws {
        let f = try PluginFixture()
        defer { f.remove() }
        try acceptedWithA(f)
        try rotate(f, to: [b], signers: [a, b], version: "1.1.0", manifestSigners: [b])
        // Renumber 1 → 2 (file and signatures): version 1 is missing.
        let fm = FileManager.default
        for name in try f.root.list("\(dir)/rotations") {
            try fm.moveItem(
                atPath: f.root.url("\(dir)/rotations/\(name)"),
                toPath: f.root.url("\(dir)/rotations/" + name.replacingOccurrences(of: "1.json", with: "2.json")))
        }
        #expect(f.errorCode("alpha", loaderA(f)) == .keyRotation)
    }

    /// A statement whose version is not its file's number (repeated or going back) is refused,
    /// although it is signed by both sides.
    @Test(arguments: [(2, 1), (2, 0), (1, 2)])
    func aVersionOtherThanTheFilesNumberIsRefused(fileVersion: Int, claimed: Int) throws {
        let f = try PluginFixture()
        defer { f.remove() }
        try acceptedWithA(f)
        if fileVersion == 2 {
            try rotate(f, to: [b], signers: [a, b], version: "1.1.0", manifestSigners: [b])
            #expect(f.errorCode("alpha", loaderA(f)) == nil)
        }
        let from = fileVersion == 2 ? b : a
        let text = """
            {"schema": "vigil.key-rotation/v1", "plugin": "alpha", "version": \(claimed),
             "from": {"keys": ["\(from.publicKey.fingerprint)"], "threshold": 1},
             "to": {"keys": ["\(c.publicKey.fingerprint)"], "threshold": 1}}
            """
        try f.root.makeDirectory("\(dir)/rotations")
        try f.root.write("\(dir)/rotations/\(fileVersion).json", text)
        for (i, key) in [from, c].enumerated() {
            let sig = try MinisignSignature.sign(Array(text.utf8), with: key, trustedComment: "x")
            try f.root.write(
                "\(dir)/\(KeyRotation.signatureFileName(fileVersion, i + 1))", sig.fileContents())
        }
        let before = stateBytes(f)
        let error = try #require(CoreError.of(loaderA(f).load("alpha")))
        #expect(error.code == .rotationInvalid, "\(error)")
        #expect(stateBytes(f) == before)
    }

    @Test func aRotationToNoKeysRevokesThePluginForGood() throws {
        let f = try PluginFixture()
        defer { f.remove() }
        try acceptedWithA(f)
        let result = try PluginRotator.rotate(directory: f.root.url(dir), to: [], threshold: nil, signers: [a])
        #expect(result.isComplete && result.rotation.to == nil)
        let error = try #require(CoreError.of(loaderA(f).load("alpha")))
        #expect(error.code == .revoked)
        // Recorded: removing the statement does not bring the plugin back.
        try FileManager.default.removeItem(atPath: f.root.url("\(dir)/rotations"))
        #expect(f.errorCode("alpha", loaderA(f)) == .revoked)
    }

    @Test func aHostThatPinnedTheNewKeyIsPlacedOnTheChain() throws {
        let f = try PluginFixture()
        defer { f.remove() }
        try acceptedWithA(f)
        try rotate(f, to: [b], signers: [a, b], version: "1.1.0", manifestSigners: [b])
        #expect(f.errorCode("alpha", f.loader(trusted: ["alpha": b.publicKey.fingerprint])) == nil)
        // …and follows the next rotation b → c.
        try rotate(f, to: [c], signers: [b, c], version: "1.2.0", manifestSigners: [c])
        let plugin = try f.loader(trusted: ["alpha": b.publicKey.fingerprint]).load("alpha").get()
        #expect(plugin.rotation?.version == 2)
        // The host that trusted a walks both.
        #expect(try loaderA(f).load("alpha").get().rotation?.version == 2)
    }

    @Test func aChainLongerThanTheCapIsRefused() throws {
        let f = try PluginFixture()
        defer { f.remove() }
        try acceptedWithA(f)
        try f.root.makeDirectory("\(dir)/rotations")
        for version in 1...(KeyRotation.maxChainLength + 1) {
            try f.root.write("\(dir)/rotations/\(version).json", "{}")
        }
        let error = try #require(CoreError.of(loaderA(f).load("alpha")))
        #expect(error.code == .rotationInvalid)
        #expect(error.message.contains("more than \(KeyRotation.maxChainLength)"))
    }

    @Test func aStatementOverItsCapIsRefusedUnread() throws {
        let f = try PluginFixture()
        defer { f.remove() }
        try acceptedWithA(f)
        try f.root.makeDirectory("\(dir)/rotations")
        try f.root.write("\(dir)/rotations/1.json", [UInt8](repeating: 0x20, count: KeyRotation.maxFileSize + 1))
        #expect(f.errorCode("alpha", loaderA(f)) == .fileTooLarge)
    }

    @Test func aLegacyEdSignatureOnAStatementIsRefused() throws {
        let f = try PluginFixture()
        defer { f.remove() }
        try acceptedWithA(f)
        try rotate(f, to: [b], signers: [a, b], version: "1.1.0", manifestSigners: [b])
        let path = "\(dir)/rotations/1.json.minisig"
        let signature = try MinisignSignature(fileContents: try f.root.read(path))
        var lines = String(decoding: try f.root.read(path), as: UTF8.self).components(separatedBy: "\n")
        lines[1] = Data(Array("Ed".utf8) + signature.keyID + signature.signature).base64EncodedString()
        try f.root.write(path, lines.joined(separator: "\n"))
        #expect(f.errorCode("alpha", loaderA(f)) == .unsupportedSignatureAlgorithm)
    }

    @Test func aStatementForAnotherPluginIsRefused() throws {
        let f = try PluginFixture()
        defer { f.remove() }
        try acceptedWithA(f)
        // Signed by both sides, but naming another plugin (a path never comes from it).
        let rotation = KeyRotation(
            plugin: "../beta", version: 1, from: TrustedKeys(a.publicKey.fingerprint),
            to: TrustedKeys(b.publicKey.fingerprint))
        try f.root.makeDirectory("\(dir)/rotations")
        try f.root.write("\(dir)/rotations/1.json", rotation.serialized())
        for (i, key) in [a, b].enumerated() {
            let sig = try MinisignSignature.sign(rotation.serialized(), with: key, trustedComment: "x")
            try f.root.write("\(dir)/\(KeyRotation.signatureFileName(1, i + 1))", sig.fileContents())
        }
        #expect(f.errorCode("alpha", loaderA(f)) == .rotationInvalid)
        #expect(try f.root.list("plugins") == ["alpha"])
    }
}
