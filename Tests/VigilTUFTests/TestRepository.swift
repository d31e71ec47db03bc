import Crypto
import Testing
import VigilCrypto
import VigilTUF

/// A signing key for test metadata: Ed25519 through VigilCrypto or ECDSA P-256 through swift-crypto.
struct TestKey {
    enum Secret {
        case ed25519(Ed25519SecretKey)
        case p256(P256.Signing.PrivateKey)
    }

    let secret: Secret
    let id: String

    static func ed25519() -> TestKey { TestKey(secret: .ed25519(.generate())) }
    static func p256() -> TestKey { TestKey(secret: .p256(.init())) }

    init(secret: Secret, id: String? = nil) {
        self.secret = secret
        self.id = id ?? Self.hex(Array(SHA256.hash(data: Self.keyObject(secret).canonicalBytes)))
    }

    /// The same key under another key id.
    func withID(_ id: String) -> TestKey { TestKey(secret: secret, id: id) }

    static func keyObject(_ secret: Secret) -> JSONValue {
        switch secret {
        case .ed25519(let k):
            return .object([
                "keytype": .string("ed25519"), "scheme": .string("ed25519"),
                "keyval": .object(["public": .string(hex(k.publicKey.rawRepresentation))]),
            ])
        case .p256(let k):
            return .object([
                "keytype": .string("ecdsa"), "scheme": .string("ecdsa-sha2-nistp256"),
                "keyval": .object(["public": .string(k.publicKey.pemRepresentation)]),
            ])
        }
    }

    var keyObject: JSONValue { Self.keyObject(secret) }

    func sign(_ message: [UInt8]) -> String {
        switch secret {
        case .ed25519(let k): return Self.hex(k.signature(for: message))
        case .p256(let k):
            return Self.hex(Array(try! k.signature(for: message).derRepresentation))
        }
    }

    static func hex(_ bytes: some Sequence<UInt8>) -> String {
        bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
    }
}

/// Builds signed metadata for tests, like the suite's RepositorySimulator (much smaller).
enum Meta {
    static let future = "2099-01-01T00:00:00Z"
    static let past = "2000-01-01T00:00:00Z"
    /// 2026-01-01T00:00:00Z: the tests' fixed "now".
    static let now: Int64 = 1_767_225_600

    static func sign(_ signed: JSONValue, _ keys: [TestKey]) -> [UInt8] {
        let message = signed.canonicalBytes
        let sigs = keys.map { JSONValue.object(["keyid": .string($0.id), "sig": .string($0.sign(message))]) }
        let document = JSONValue.object(["signed": signed, "signatures": .array(sigs)])
        return Array(text(document).utf8)
    }

    /// Ordinary JSON, as python-tuf writes files (control characters escaped, unlike canonical
    /// JSON, which is only what signatures cover), with spaces so the bytes differ from the canonical form.
    static func text(_ value: JSONValue) -> String {
        switch value {
        case .null: return "null"
        case .bool(let b): return b ? "true" : "false"
        case .integer(let i): return String(i)
        case .string(let s):
            var out = "\""
            for scalar in s.unicodeScalars {
                switch scalar {
                case "\"", "\\": out += "\\" + String(scalar)
                case _ where scalar.value < 0x20:
                    let hex = String(scalar.value, radix: 16)
                    out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                default: out.unicodeScalars.append(scalar)
                }
            }
            return out + "\""
        case .array(let items): return "[" + items.map(text).joined(separator: ", ") + "]"
        case .object(let members):
            return "{" + members.map { text(.string($0.key)) + ": " + text($0.value) }.joined(separator: ", ") + "}"
        }
    }

    static func common(_ type: String, version: Int, expires: String = future) -> [String: JSONValue] {
        [
            "_type": .string(type), "spec_version": .string("1.0.31"), "version": .integer(Int64(version)),
            "expires": .string(expires),
        ]
    }

    /// A root whose roles are given as (keys, threshold); missing roles use `other`.
    static func root(
        version: Int, root: [TestKey], rootThreshold: Int = 1, timestamp: [TestKey], snapshot: [TestKey],
        targets: [TestKey], consistent: Bool = true, expires: String = future
    ) -> JSONValue {
        var keys: [String: JSONValue] = [:]
        for k in root + timestamp + snapshot + targets { keys[k.id] = k.keyObject }
        func role(_ ks: [TestKey], _ threshold: Int) -> JSONValue {
            .object(["keyids": .array(ks.map { .string($0.id) }), "threshold": .integer(Int64(threshold))])
        }
        var s = common("root", version: version, expires: expires)
        s["consistent_snapshot"] = .bool(consistent)
        s["keys"] = .object(keys)
        s["roles"] = .object([
            "root": role(root, rootThreshold), "timestamp": role(timestamp, 1), "snapshot": role(snapshot, 1),
            "targets": role(targets, 1),
        ])
        return .object(s)
    }

    static func metaFile(version: Int, bytes: [UInt8]? = nil) -> JSONValue {
        var m: [String: JSONValue] = ["version": .integer(Int64(version))]
        if let bytes {
            m["length"] = .integer(Int64(bytes.count))
            m["hashes"] = .object(["sha256": .string(TestKey.hex(SHA256.hash(data: bytes)))])
        }
        return .object(m)
    }

    static func timestamp(version: Int, snapshot: JSONValue, expires: String = future) -> JSONValue {
        var s = common("timestamp", version: version, expires: expires)
        s["meta"] = .object(["snapshot.json": snapshot])
        return .object(s)
    }

    static func snapshot(version: Int, meta: [String: JSONValue], expires: String = future) -> JSONValue {
        var s = common("snapshot", version: version, expires: expires)
        s["meta"] = .object(meta)
        return .object(s)
    }

    static func target(_ content: [UInt8]) -> JSONValue {
        .object([
            "length": .integer(Int64(content.count)),
            "hashes": .object(["sha256": .string(TestKey.hex(SHA256.hash(data: content)))]),
        ])
    }

    struct Delegation {
        var name: String
        var keys: [TestKey]
        var threshold = 1
        var paths = ["*"]
        var terminating = false
    }

    static func targets(
        version: Int, targets: [String: JSONValue] = [:], delegations: [Delegation]? = nil, expires: String = future
    ) -> JSONValue {
        var s = common("targets", version: version, expires: expires)
        s["targets"] = .object(targets)
        if let delegations {
            var keys: [String: JSONValue] = [:]
            for d in delegations { for k in d.keys { keys[k.id] = k.keyObject } }
            s["delegations"] = .object([
                "keys": .object(keys),
                "roles": .array(
                    delegations.map { d in
                        .object([
                            "name": .string(d.name), "keyids": .array(d.keys.map { .string($0.id) }),
                            "threshold": .integer(Int64(d.threshold)), "paths": .array(d.paths.map { .string($0) }),
                            "terminating": .bool(d.terminating),
                        ])
                    }),
            ])
        }
        return .object(s)
    }
}

/// A repository held in memory and served through ``TUFFetcher``; it records every request.
final class MemoryRepository: TUFFetcher, @unchecked Sendable {
    // @unchecked: the tests drive one updater at a time, from one task.
    var files: [String: [UInt8]] = [:]
    var requests: [String] = []
    var caps: [String: Int] = [:]
    /// Served instead of a file's bytes, to simulate hostile mirrors.
    var override: [String: [UInt8]] = [:]

    func fetch(_ url: String, maxLength: Int) async throws(TUFError) -> [UInt8] {
        let name = String(url.dropFirst("mem://repo/".count))
        requests.append(name)
        caps[name] = maxLength
        guard let bytes = override[name] ?? files[name] else {
            throw TUFError(code: .notFound, message: "\(name) not found")
        }
        guard bytes.count <= maxLength else { throw TUFError(code: .tooLarge, message: "\(name) over its cap") }
        return bytes
    }
}

enum CryptoDigest {
    static func sha256(_ bytes: [UInt8]) -> [UInt8] { Array(SHA256.hash(data: bytes)) }
}

/// The code of the ``TUFError`` `body` throws; nil when it returns (any other error is an issue).
func tufErrorCode(_ body: () async throws -> Void) async -> TUFErrorCode? {
    do {
        try await body()
        return nil
    } catch let error as TUFError {
        return error.code
    } catch {
        Issue.record("not a TUFError: \(error)")
        return nil
    }
}

/// ``tufErrorCode(_:)`` for synchronous code.
func tufErrorCode(_ body: () throws -> Void) -> TUFErrorCode? {
    do {
        try body()
        return nil
    } catch let error as TUFError {
        return error.code
    } catch {
        Issue.record("not a TUFError: \(error)")
        return nil
    }
}
