import Foundation
import Testing
import VigilCrypto
import VigilTestSupport

/// Where the tests find their files, from this source file's location (no resource bundles).
enum TestPaths {
    /// Tests/VigilCryptoTests
    static let testsDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    /// The package root, two levels above this directory.
    static let packageRoot = testsDirectory.deletingLastPathComponent().deletingLastPathComponent()
    /// Committed golden files.
    static let fixtures = testsDirectory.appendingPathComponent("Fixtures")

    static func fixture(_ name: String) throws -> [UInt8] {
        Array(try Data(contentsOf: fixtures.appendingPathComponent(name)))
    }

    static func fixtureText(_ name: String) throws -> String {
        String(decoding: try fixture(name), as: UTF8.self)
    }
}

/// Hex to bytes, for test vectors.
func bytes(hex: String) -> [UInt8] {
    let digits = Array(hex.utf8)
    precondition(digits.count % 2 == 0, "odd-length hex")
    return stride(from: 0, to: digits.count, by: 2).map { index in
        UInt8(String(decoding: digits[index..<index + 2], as: UTF8.self), radix: 16)!
    }
}

/// The minisign golden files committed under Fixtures: made once by the real minisign 0.11 with a
/// throwaway key (`minisign -G -W`, then `minisign -S` and `minisign -S -l`) that was then deleted.
enum Golden {
    static let keyIDHex = "4A1D7B23BCE4A1D4"
    static func publicKeyText() throws -> String { try TestPaths.fixtureText("golden.pub") }
    static func publicKey() throws -> MinisignPublicKey { try MinisignPublicKey(fileContents: publicKeyText()) }
    static func message() throws -> [UInt8] { try TestPaths.fixture("golden-message.txt") }
    /// Prehashed ("ED"), trusted comment "golden@1.0.0<TAB>file:golden-message.txt".
    static func signatureFile() throws -> [UInt8] { try TestPaths.fixture("golden-message.txt.minisig") }
    /// Legacy ("Ed", made with -l), trusted comment "golden@1.0.0 legacy".
    static func legacySignatureFile() throws -> [UInt8] { try TestPaths.fixture("golden-message.txt.legacy.minisig") }
}

/// A private temporary directory (a ``TestDirectory``, 0700), removed when the body returns or throws.
func withTemporaryDirectory<R>(_ body: (URL) throws -> R) throws -> R {
    let dir = try TestDirectory("vigil-crypto-tests")
    defer { dir.remove() }
    return try body(URL(fileURLWithPath: dir.path, isDirectory: true))
}

/// The same for an async body.
func withTemporaryDirectory<R>(_ body: (URL) async throws -> R) async throws -> R {
    try await RuntimeFixtures.withTempDirectory("vigil-crypto-tests") {
        try await body(URL(fileURLWithPath: $0.path, isDirectory: true))
    }
}

/// Writes `text` to a new file with mode 0600 (secret keys are written here too).
func write(_ text: String, to url: URL) throws {
    try write(Array(text.utf8), to: url)
}

func write(_ bytes: [UInt8], to url: URL) throws {
    guard
        FileManager.default.createFile(atPath: url.path, contents: Data(bytes), attributes: [.posixPermissions: 0o600])
    else {
        throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: url.path])
    }
}

/// The real `minisign` executable, run with `Process`.
struct Minisign {
    struct Result {
        var status: Int32
        var output: String
    }

    let executable: URL

    /// Finds `minisign` on PATH; `nil` if it is not installed.
    static func find() -> Minisign? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        for directory in path.split(separator: ":") {
            let candidate = URL(fileURLWithPath: String(directory)).appendingPathComponent("minisign")
            if FileManager.default.isExecutableFile(atPath: candidate.path) {
                return Minisign(executable: candidate)
            }
        }
        return nil
    }

    /// The installed one, or a test failure that says how to install it.
    static func required(sourceLocation: SourceLocation = #_sourceLocation) throws -> Minisign {
        try #require(
            find(), "the real `minisign` is not on PATH — run scripts/install-deps.sh (Debian package minisign)",
            sourceLocation: sourceLocation)
    }

    /// Runs minisign with `arguments` in `directory`, feeding `input` on stdin (then EOF), and
    /// returns its exit status and combined output. `memoryLimitKiB` sets `ulimit -v` for it.
    /// The wait happens on a dedicated thread so parallel tests never park Swift's cooperative pool.
    func run(
        _ arguments: [String], in directory: URL, input: String = "", memoryLimitKiB: Int? = nil
    ) async throws -> Result {
        let executable = self.executable
        return try await blockingCall {
            Swift.Result {
                try Self.runBlocking(
                    executable: executable, arguments, in: directory, input: input, memoryLimitKiB: memoryLimitKiB)
            }
        }.get()
    }

    private static func runBlocking(
        executable: URL, _ arguments: [String], in directory: URL, input: String, memoryLimitKiB: Int?
    ) throws -> Result {
        let process = Process()
        if let memoryLimitKiB {
            process.executableURL = URL(fileURLWithPath: "/bin/sh")
            process.arguments =
                ["-c", "ulimit -v \(memoryLimitKiB) && exec \"$0\" \"$@\"", executable.path] + arguments
        } else {
            process.executableURL = executable
            process.arguments = arguments
        }
        process.currentDirectoryURL = directory
        let stdin = Pipe()
        let stdout = Pipe()
        process.standardInput = stdin
        process.standardOutput = stdout
        process.standardError = stdout
        try process.run()
        stdin.fileHandleForWriting.write(Data(input.utf8))
        try stdin.fileHandleForWriting.close()
        let output = stdout.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Result(status: process.terminationStatus, output: String(decoding: output, as: UTF8.self))
    }
}

extension Array where Element == UInt8 {
    /// A copy with one byte XORed with `mask`.
    func flipping(_ index: Int, mask: UInt8 = 0x01) -> [UInt8] {
        var copy = self
        copy[index] ^= mask
        return copy
    }
}

/// The four lines of a signature file, to rebuild it with one field changed.
struct SignatureLines {
    var untrusted: String
    var body: [UInt8]
    var trusted: String
    var global: [UInt8]

    init(_ file: [UInt8]) {
        let lines = String(decoding: file, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
        untrusted = String(lines[0].dropFirst("untrusted comment: ".count))
        body = Array(Data(base64Encoded: String(lines[1]))!)
        trusted = String(lines[2].dropFirst("trusted comment: ".count))
        global = Array(Data(base64Encoded: String(lines[3]))!)
    }

    var file: [UInt8] {
        let text =
            "untrusted comment: \(untrusted)\n\(Data(body).base64EncodedString())\n"
            + "trusted comment: \(trusted)\n\(Data(global).base64EncodedString())\n"
        return Array(text.utf8)
    }
}

/// Expects `body` to throw a `CryptoError` with `code`, and returns the error for further checks.
@discardableResult
func expectError<R>(
    _ code: CryptoError.Code, _ comment: Comment? = nil, sourceLocation: SourceLocation = #_sourceLocation,
    performing body: () throws -> R
) -> CryptoError? {
    let error = #expect(throws: CryptoError.self, comment, sourceLocation: sourceLocation, performing: body)
    if let error {
        #expect(
            error.code == code, "\(comment.map { "\($0): " } ?? "")got \(error.code): \(error)",
            sourceLocation: sourceLocation)
    }
    return error
}
