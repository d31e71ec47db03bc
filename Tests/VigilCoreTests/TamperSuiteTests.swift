import Foundation
import Testing
import VigilCore
import VigilCrypto
import VigilPlugin
import VigilTestSupport

/// Every refusal of the verification pipeline, and proof that nothing from a refused plugin is parsed.
@Suite struct TamperSuiteTests {
    let key = MinisignSecretKey.generate()
    var fp: Fingerprint { key.publicKey.fingerprint }

    /// Flips each byte of the signed plugin `alpha`'s file at `path` in turn and hands `check` the
    /// byte's index, whether it lies in the text of the first line's `untrusted comment: ` (not
    /// signed, by minisign's design) and the loader's error code; then restores the file.
    private func forEachFlippedByte(
        of path: String, in f: PluginFixture, _ check: (_ index: Int, _ inComment: Bool, CoreError.Code?) -> Void
    ) throws {
        let original = try f.root.read(path)
        let firstLineEnd = original.firstIndex(of: 0x0A) ?? original.count
        let loader = f.loader(trusted: ["alpha": fp], rollback: false)
        for i in original.indices {
            var bytes = original
            bytes[i] ^= 0x01
            try f.root.write(path, bytes)
            check(i, i >= "untrusted comment: ".utf8.count && i < firstLineEnd, f.errorCode("alpha", loader))
        }
        try f.root.write(path, original)
        #expect(f.errorCode("alpha", loader) == nil, "the restored \(path) loads again")
    }

    @Test func signedTrustedPluginLoadsWithVerifiedResources() throws {
        let f = try PluginFixture()
        defer { f.remove() }
        try f.makeSigned("alpha", key: key, resources: ["lib/data.bin": [1, 2, 3], "x.txt": Array("hi".utf8)])
        let plugin = try f.loader(trusted: ["alpha": fp]).load("alpha").get()
        #expect(plugin.trust == .trusted(TrustedKeys(fp)))
        #expect(plugin.manifest.name == "alpha")
        #expect("\(plugin.manifest.version)" == "1.0.0")
        #expect(plugin.manifest.hostRequirements.map(\.kindTag) == ["background-mode", "audio-output"])
        #expect(plugin.manifest.settings["level"] == .double(0.5))
        #expect(plugin.manifest.settings["nested"] == .table(["x": .integer(1)]))
        #expect(plugin.resourceContents["lib/data.bin"] == [1, 2, 3])
        #expect(plugin.manifest.resources.first { $0.path == "x.txt" }?.size == 2)
        // The accepted version was recorded.
        #expect(try f.store.entry(plugin: "alpha", fingerprint: fp).map { "\($0.version)" } == "1.0.0")
    }

    @Test func missingSignatureIsNotSigned() throws {
        let f = try PluginFixture()
        defer { f.remove() }
        try f.root.write("plugins/alpha/plugin.json", PluginFixture.manifestText(name: "alpha"))
        let error = try #require(CoreError.of(f.loader().load("alpha")))
        #expect(error.code == .notSigned)
        #expect(error.plugin == "alpha")
        #expect(error.message.contains("acknowledge_unsafe_plugins"))
    }

    @Test func acknowledgementAdmitsOnlyAMissingSignature() throws {
        let f = try PluginFixture()
        defer { f.remove() }
        try f.root.write("plugins/alpha/plugin.json", PluginFixture.manifestText(name: "alpha"))
        let plugin = try f.loader(acknowledged: ["alpha"]).load("alpha").get()
        #expect(plugin.trust == .acknowledgedUnsigned)
        #expect(CoreBanner.unsafePlugins(["alpha"]).contains("UNSIGNED PLUGINS ENABLED: alpha"))

        // An invalid signature is never acknowledgeable.
        try f.makeSigned("beta", key: key)
        try f.root.write("plugins/beta/plugin.json", PluginFixture.manifestText(name: "beta", version: "9.0.0"))
        #expect(f.errorCode("beta", f.loader(trusted: ["beta": fp], acknowledged: ["beta"])) == .invalidSignature)
        // A signature without plugin.pub and without trust: no public key, even when acknowledged.
        try f.makeSigned("gamma", key: key)
        try FileManager.default.removeItem(atPath: f.root.url("plugins/gamma/plugin.pub"))
        #expect(f.errorCode("gamma", f.loader(acknowledged: ["gamma"])) == .noPublicKey)
        // A signed but untrusted plugin: acknowledgement does not apply.
        #expect(f.errorCode("beta", f.loader(acknowledged: ["beta"])) == .untrustedKey)
        // A stripped signature of a trusted plugin is refused even when acknowledged.
        try FileManager.default.removeItem(atPath: f.root.url("plugins/gamma/plugin.json.minisig"))
        #expect(f.errorCode("gamma", f.loader(trusted: ["gamma": fp], acknowledged: ["gamma"])) == .notSigned)
    }

    @Test func signedWithoutPublicKeyAndUntrustedIsNoPublicKey() throws {
        let f = try PluginFixture()
        defer { f.remove() }
        try f.makeSigned("alpha", key: key)
        try FileManager.default.removeItem(atPath: f.root.url("plugins/alpha/plugin.pub"))
        let error = try #require(CoreError.of(f.loader().load("alpha")))
        #expect(error.code == .noPublicKey)
        #expect(error.message.contains("--fingerprint"))
        // With the key trusted, plugin.pub is not needed.
        #expect(f.errorCode("alpha", f.loader(trusted: ["alpha": fp])) == nil)
    }

    @Test func untrustedKeyNamesTheRemedy() throws {
        let f = try PluginFixture()
        defer { f.remove() }
        try f.makeSigned("alpha", key: key)
        let error = try #require(CoreError.of(f.loader().load("alpha")))
        #expect(error.code == .untrustedKey)
        #expect(error.message.contains("vigil plugin trust alpha"))
        #expect(error.message.contains(fp.description))
    }

    @Test func keyRotationShowsBothFingerprintsAndCannotBeAcknowledged() throws {
        let f = try PluginFixture()
        defer { f.remove() }
        let newKey = MinisignSecretKey.generate()
        try f.makeSigned("alpha", key: newKey)
        let error = try #require(CoreError.of(f.loader(trusted: ["alpha": fp], acknowledged: ["alpha"]).load("alpha")))
        #expect(error.code == .keyRotation)
        #expect(error.message.contains(fp.description))
        #expect(error.message.contains(newKey.publicKey.fingerprint.description))
    }

    @Test func legacyEdAlgorithmIsRefused() throws {
        let f = try PluginFixture()
        defer { f.remove() }
        try f.makeSigned("alpha", key: key)
        let path = "plugins/alpha/plugin.json.minisig"
        var lines = String(decoding: try f.root.read(path), as: UTF8.self).split(separator: "\n").map(String.init)
        var blob = [UInt8](Data(base64Encoded: lines[1])!)
        #expect(blob[0] == UInt8(ascii: "E") && blob[1] == UInt8(ascii: "D"))
        blob[1] = UInt8(ascii: "d")
        lines[1] = Data(blob).base64EncodedString()
        try f.root.write(path, lines.joined(separator: "\n") + "\n")
        #expect(f.errorCode("alpha", f.loader(trusted: ["alpha": fp])) == .unsupportedSignatureAlgorithm)
    }

    @Test func everyFlippedManifestByteIsATamperedSignature() throws {
        let f = try PluginFixture()
        defer { f.remove() }
        try f.makeSigned("alpha", key: key)
        try forEachFlippedByte(of: "plugins/alpha/plugin.json", in: f) { i, _, code in
            #expect(code == .invalidSignature, "flipped manifest byte \(i)")
        }
    }

    @Test func everyFlippedSignatureByteOutsideTheUntrustedCommentIsRefused() throws {
        let f = try PluginFixture()
        defer { f.remove() }
        try f.makeSigned("alpha", key: key)
        try forEachFlippedByte(of: "plugins/alpha/plugin.json.minisig", in: f) { i, inComment, code in
            if inComment {
                // The untrusted comment is not signed (minisign's design): editing it may verify.
                #expect(code == nil || code == .invalidSignature, "flipped untrusted-comment byte \(i)")
            } else {
                #expect(
                    code == .invalidSignature || code == .unsupportedSignatureAlgorithm,
                    "flipped signature byte \(i) gave \(String(describing: code))")
            }
        }
    }

    @Test func everyFlippedTrustedKeyByteIsRefused() throws {
        let f = try PluginFixture()
        defer { f.remove() }
        try f.makeSigned("alpha", key: key)
        try FileManager.default.removeItem(atPath: f.root.url("plugins/alpha/plugin.pub"))
        let raw = fp.publicKey.rawRepresentation
        for i in raw.indices {
            var bytes = raw
            bytes[i] ^= 0x01
            guard let flipped = try? Ed25519PublicKey(rawRepresentation: bytes) else { continue }
            let code = f.errorCode(
                "alpha", f.loader(trusted: ["alpha": Fingerprint(publicKey: flipped)], rollback: false))
            #expect(code == .invalidSignature, "flipped key byte \(i)")
        }
    }

    @Test func everyFlippedOfferedKeyByteIsRefusedOrIgnoredOnlyInTheComment() throws {
        let f = try PluginFixture()
        defer { f.remove() }
        try f.makeSigned("alpha", key: key)
        try forEachFlippedByte(of: "plugins/alpha/plugin.pub", in: f) { i, inComment, code in
            if inComment {
                #expect(code == nil || code == .keyInvalid, "flipped public key comment byte \(i)")
            } else {
                // The key changed (rotation), the file broke (invalid key), or only its key id changed
                // (the signature's key id no longer matches: invalid signature).
                #expect(
                    code == .keyRotation || code == .keyInvalid || code == .invalidSignature,
                    "flipped public key byte \(i): \(String(describing: code))")
            }
        }
    }

    @Test func resourceSwappedAfterSigningIsRefused() throws {
        let f = try PluginFixture()
        defer { f.remove() }
        try f.makeSigned("alpha", key: key, resources: ["lib/a.bin": [1, 2, 3, 4]])
        let loader = f.loader(trusted: ["alpha": fp], rollback: false)
        // Same size, other bytes.
        try f.root.write("plugins/alpha/lib/a.bin", [1, 2, 3, 5])
        var error = try #require(CoreError.of(loader.load("alpha")))
        #expect(error.code == .resourceMismatch)
        #expect(error.message.contains("SHA-256"))
        // Other size.
        try f.root.write("plugins/alpha/lib/a.bin", [1, 2, 3, 4, 5])
        error = try #require(CoreError.of(loader.load("alpha")))
        #expect(error.code == .resourceMismatch)
        try f.root.write("plugins/alpha/lib/a.bin", [1, 2, 3])
        #expect(f.errorCode("alpha", loader) == .resourceMismatch)
        // Missing.
        try FileManager.default.removeItem(atPath: f.root.url("plugins/alpha/lib/a.bin"))
        #expect(f.errorCode("alpha", loader) == .resourceMismatch)
        // Replaced by a symbolic link to a file with the right bytes.
        try f.root.write("elsewhere/a.bin", [1, 2, 3, 4])
        try FileManager.default.createSymbolicLink(
            atPath: f.root.url("plugins/alpha/lib/a.bin"), withDestinationPath: f.root.url("elsewhere/a.bin"))
        #expect(f.errorCode("alpha", loader) == .notRegularFile)
        // A directory component replaced by a symbolic link.
        try FileManager.default.removeItem(atPath: f.root.url("plugins/alpha/lib"))
        try FileManager.default.createSymbolicLink(
            atPath: f.root.url("plugins/alpha/lib"), withDestinationPath: f.root.url("elsewhere"))
        error = try #require(CoreError.of(loader.load("alpha")))
        #expect(error.code == .notRegularFile)
        #expect(error.message.contains("plugins/alpha/lib, which is a symbolic link"), "\(error.message)")
    }

    @Test func manifestCopiedToAnotherPluginsDirectoryIsANameMismatch() throws {
        let f = try PluginFixture()
        defer { f.remove() }
        // One publisher key for both plugins, so only the name check can catch the copy.
        try f.makeSigned("alpha", key: key)
        try f.makeSigned("beta", key: key)
        for file in ["plugin.json", "plugin.json.minisig", "plugin.pub"] {
            try f.root.write("plugins/beta/\(file)", try f.root.read("plugins/alpha/\(file)"))
        }
        let error = try #require(CoreError.of(f.loader(trusted: ["alpha": fp, "beta": fp]).load("beta")))
        #expect(error.code == .nameMismatch)
        #expect(error.message.contains("\"alpha\""))
        // With per-plugin keys the copy already fails the trust check.
        let betaKey = MinisignSecretKey.generate()
        #expect(f.errorCode("beta", f.loader(trusted: ["beta": betaKey.publicKey.fingerprint])) == .keyRotation)
    }

    @Test func downgradeAndSameVersionWithOtherBytesAreRollbacks() throws {
        let f = try PluginFixture()
        defer { f.remove() }
        let loader = f.loader(trusted: ["alpha": fp])
        try f.makeSigned("alpha", key: key, version: "1.1.0")
        #expect(f.errorCode("alpha", loader) == nil)
        try f.makeSigned("alpha", key: key, version: "1.0.0")
        let error = try #require(CoreError.of(loader.load("alpha")))
        #expect(error.code == .rollback)
        #expect(error.message.contains("vigil plugin trust alpha"))
        // Same version, different (validly signed) bytes.
        try f.makeSigned(
            "alpha", key: key,
            manifest: PluginFixture.manifestText(name: "alpha", version: "1.1.0").replacingOccurrences(
                of: "test plugin", with: "changed plugin"))
        #expect(f.errorCode("alpha", loader) == .rollback)
        // A higher version is accepted and raises the mark.
        try f.makeSigned("alpha", key: key, version: "2.0.0-beta.1")
        #expect(f.errorCode("alpha", loader) == nil)
        // The reviewed reset (what `vigil plugin trust` does) accepts the downgrade.
        try f.makeSigned("alpha", key: key, version: "1.0.0")
        #expect(f.errorCode("alpha", loader) == .rollback)
        try f.store.reset(plugin: "alpha")
        #expect(f.errorCode("alpha", loader) == nil)
    }

    @Test func oversizedFilesAreRefused() throws {
        let f = try PluginFixture()
        defer { f.remove() }
        try f.makeSigned("alpha", key: key)
        let loader = f.loader(trusted: ["alpha": fp])
        let original = try f.root.read("plugins/alpha/plugin.json")
        try f.root.write("plugins/alpha/plugin.json", original + [UInt8](repeating: 0x20, count: 64 * 1024))
        #expect(f.errorCode("alpha", loader) == .fileTooLarge)
        try f.root.write("plugins/alpha/plugin.json", original)
        let signature = try f.root.read("plugins/alpha/plugin.json.minisig")
        try f.root.write("plugins/alpha/plugin.json.minisig", signature + [UInt8](repeating: 0x41, count: 10 * 1024))
        #expect(f.errorCode("alpha", loader) == .fileTooLarge)
    }

    @Test(arguments: ["plugin.json", "plugin.json.minisig", "plugin.pub"])
    func nonRegularFilesAreRefused(file: String) throws {
        let f = try PluginFixture()
        defer { f.remove() }
        try f.makeSigned("alpha", key: key)
        let loader = f.loader(trusted: ["alpha": fp])
        let path = f.root.url("plugins/alpha/\(file)")
        let saved = try f.root.read(path)
        // FIFO: must be refused without blocking.
        try FileManager.default.removeItem(atPath: path)
        #expect(mkfifo(path, 0o600) == 0)
        #expect(f.errorCode("alpha", loader) == .notRegularFile)
        // Symbolic link to the real bytes.
        try FileManager.default.removeItem(atPath: path)
        try f.root.write("saved", saved)
        try FileManager.default.createSymbolicLink(atPath: path, withDestinationPath: f.root.url("saved"))
        #expect(f.errorCode("alpha", loader) == .notRegularFile)
        // Directory.
        try FileManager.default.removeItem(atPath: path)
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        #expect(f.errorCode("alpha", loader) == .notRegularFile)
    }

    @Test func symlinkedPluginDirectoryIsRefused() throws {
        let f = try PluginFixture()
        defer { f.remove() }
        try f.makeSigned("alpha", key: key)
        try FileManager.default.moveItem(atPath: f.root.url("plugins/alpha"), toPath: f.root.url("real-alpha"))
        try FileManager.default.createSymbolicLink(
            atPath: f.root.url("plugins/alpha"), withDestinationPath: f.root.url("real-alpha"))
        #expect(f.errorCode("alpha", f.loader(trusted: ["alpha": fp])) == .notRegularFile)
    }

    @Test func signedDuplicateKeysAndUnknownFieldsAreMalformed() throws {
        let f = try PluginFixture()
        defer { f.remove() }
        let dup = PluginFixture.manifestText(name: "alpha").replacingOccurrences(
            of: "\"entry\": \"alpha\",", with: "\"entry\": \"alpha\", \"entry\": \"evil\",")
        try f.writeRawSigned("alpha", manifest: Array(dup.utf8), key: key)
        var error = try #require(CoreError.of(f.loader(trusted: ["alpha": fp]).load("alpha")))
        #expect(error.code == .malformedManifest)
        #expect(error.message.contains("$.entry"))
        #expect(error.message.contains("duplicate key"))

        let unknown = PluginFixture.manifestText(name: "alpha").replacingOccurrences(
            of: "{\"kind\": \"audio-output\"}", with: "{\"kind\": \"audio-output\", \"sandbox\": false}")
        try f.writeRawSigned("alpha", manifest: Array(unknown.utf8), key: key)
        error = try #require(CoreError.of(f.loader(trusted: ["alpha": fp], rollback: false).load("alpha")))
        #expect(error.code == .malformedManifest)
        #expect(error.message.contains("$.host_requirements[1].sandbox"))
    }

    @Test func nameMismatchInsideTheManifest() throws {
        let f = try PluginFixture()
        defer { f.remove() }
        try f.writeRawSigned("alpha", manifest: Array(PluginFixture.manifestText(name: "beta").utf8), key: key)
        #expect(f.errorCode("alpha", f.loader(trusted: ["alpha": fp])) == .nameMismatch)
    }

    @Test func unknownPluginIsNotFound() throws {
        let f = try PluginFixture()
        defer { f.remove() }
        let error = try #require(CoreError.of(f.loader().load("missing")))
        #expect(error.code == .pluginNotFound)
        #expect(error.message.contains(f.pluginsDirectory))
    }

    /// A manifest that would fail parsing if it were parsed: every refusal before parsing must win.
    @Test func nothingFromARefusedPluginIsParsed() throws {
        let f = try PluginFixture()
        defer { f.remove() }
        let garbage = Array("this is not JSON {{{ \"a\": 1, \"a\": 2".utf8)
        // Signed by a key other than the trusted one.
        let other = MinisignSecretKey.generate()
        try f.writeRawSigned("alpha", manifest: garbage, key: other)
        #expect(f.errorCode("alpha", f.loader(trusted: ["alpha": fp])) == .keyRotation)
        try FileManager.default.removeItem(atPath: f.root.url("plugins/alpha/plugin.pub"))
        #expect(f.errorCode("alpha", f.loader(trusted: ["alpha": fp])) == .invalidSignature)
        // Untrusted.
        try f.writeRawSigned("alpha", manifest: garbage, key: other)
        #expect(f.errorCode("alpha", f.loader()) == .untrustedKey)
        // Unsigned, not acknowledged.
        try FileManager.default.removeItem(atPath: f.root.url("plugins/alpha/plugin.json.minisig"))
        #expect(f.errorCode("alpha", f.loader()) == .notSigned)
        // Tampered: a valid trusted signature over other bytes.
        try f.makeSigned("beta", key: key)
        try f.root.write("plugins/beta/plugin.json", garbage)
        #expect(f.errorCode("beta", f.loader(trusted: ["beta": fp])) == .invalidSignature)
        // Control: the same garbage, validly signed by the trusted key, does reach the parser.
        try f.writeRawSigned("gamma", manifest: garbage, key: key)
        #expect(f.errorCode("gamma", f.loader(trusted: ["gamma": fp])) == .malformedManifest)
    }
}
