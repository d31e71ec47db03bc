// Manifest verification throughput, for bench/verify.sh.
//
//   VerifyBench SECONDS PLUGIN_DIR...
//
// For each plugin directory (a signed manifest with its plugin.pub), three loops of SECONDS of CPU
// time each, every iteration checked (a failure stops the benchmark, exit 1):
//   verify+parse   the exact bytes already in memory: the minisign signature parsed and verified
//                  (BLAKE2b-512 of the manifest, then two Ed25519 verifications: the signature and
//                  the global signature over the trusted comment), then the manifest parsed (strict
//                  JSON and schema) — what PluginLoader does between reading and the rollback check
//   from disk      PluginLoader.verify on the directory with the key pinned and no rollback store:
//                  capped reads of the three files, the trust decision, verify+parse, every resource
//   ed25519 raw    one libsodium Ed25519 verification (crypto_sign_verify_detached, through
//                  VigilCrypto) of the same manifest's global signature: the reference
// Prints one line per plugin and loop: `NAME LOOP N ops in MS ms = R/s`, where the time is this
// thread's CPU time (CLOCK_THREAD_CPUTIME_ID): rates per CPU-second.
import VigilCore
import VigilCrypto

#if canImport(Glibc)
import Glibc
#endif

/// This thread's CPU time: the rates are per CPU-second, so that a machine loaded by other work
/// (which steals wall-clock time, not CPU time) does not lower them.
func now() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
    return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
}

func fail(_ message: String, code: Int32 = 1) -> Never {
    let line = Array("VerifyBench: \(message)\n".utf8)
    _ = line.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
    exit(code)
}

/// Runs `body` in batches for `seconds` of CPU time and prints its rate.
func measure(_ plugin: String, _ loop: String, seconds: Double, _ body: () throws -> Void) {
    let budget = UInt64(seconds * 1e9)
    var count = 0
    let start = now()
    var elapsed: UInt64 = 0
    repeat {
        for _ in 0..<64 {
            do { try body() } catch { fail("\(plugin) \(loop): \(error)") }
        }
        count += 64
        elapsed = now() - start
    } while elapsed < budget
    let rate = Double(count) / (Double(elapsed) / 1e9)
    print("\(plugin) \(loop) \(count) ops in \(elapsed / 1_000_000) ms = \(Int(rate.rounded()))/s")
}

let arguments = Array(CommandLine.arguments.dropFirst())
guard arguments.count >= 2, let seconds = Double(arguments[0]), seconds > 0 else {
    fail("usage: VerifyBench SECONDS PLUGIN_DIR...", code: 64)
}

struct RawCheckFailed: Error {}

for directory in arguments.dropFirst() {
    let name = PluginLoader.name(ofDirectory: directory)
    do {
        let files = try PluginLoader.readFiles(directory: directory, name: name)
        guard let signatureBytes = files.signature, let publicKeyBytes = files.publicKey else {
            fail("\(directory) needs plugin.json.minisig and plugin.pub")
        }
        let key = try MinisignPublicKey(fileContents: String(decoding: publicKeyBytes, as: UTF8.self))
        let fingerprint = key.fingerprint
        let signature = try MinisignSignature(fileContents: signatureBytes)
        let globalMessage = signature.signature + Array(signature.trustedComment.utf8)
        measure(name, "verify+parse", seconds: seconds) {
            try PluginLoader.verifySignature(
                signatureBytes, over: files.manifest, with: fingerprint, name: name, keyID: key.keyID)
            _ = try ManifestDecoder.decode(files.manifest, plugin: name)
        }
        measure(name, "from-disk", seconds: seconds) {
            _ = try PluginLoader.verify(
                directory: directory, name: name, policy: .pinned(TrustedKeys(fingerprint)), rollback: nil,
                record: false)
        }
        measure(name, "ed25519-raw", seconds: seconds) {
            guard key.key.isValidSignature(signature.globalSignature, for: globalMessage) else {
                throw RawCheckFailed()
            }
        }
    } catch {
        fail("\(directory): \(error)")
    }
}
