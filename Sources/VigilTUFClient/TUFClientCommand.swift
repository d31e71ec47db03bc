import ArgumentParser
import VigilBase
import VigilTUF
import VigilTUFHTTP

#if canImport(Glibc)
import Glibc
#endif

/// The tuf-conformance client-under-test CLI (its CLIENT-CLI.md): `init`, `refresh`, `download`.
/// Exit 0 on success, 1 on any refusal or failure (the protocol's codes), 64 on a usage error.
@main
struct TUFClientCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "vigil-tuf-client",
        abstract: "A TUF client: trust a root, refresh a repository's metadata, download verified targets.",
        discussion: """
            vigil-tuf-client --metadata-dir DIR init ROOT.json
            vigil-tuf-client --metadata-dir DIR --metadata-url URL refresh
            vigil-tuf-client --metadata-dir DIR --metadata-url URL --target-name PATH [--target-name PATH…] \\
                --target-base-url URL --target-dir DIR download
            Repeat --metadata-url (and --target-base-url, in the same order) to give mirrors: each is
            tried in turn, and a mirror that fails is named in a warning. URLs are http:// or https://
            (the system's CA store, or only --ca-file's certificates).
            """)

    enum Action: String, ExpressibleByArgument, CaseIterable {
        case `init`, refresh, download
    }

    @Option(help: "The directory of the trusted metadata.") var metadataDir: String
    @Option(help: "The repository's metadata URL (http[s]://…; repeat for mirrors, tried in order).")
    var metadataUrl: [String] = []
    @Option(help: "A target path to download (repeatable; processed in order).") var targetName: [String] = []
    @Option(help: "The repository's targets URL (http[s]://…; one per --metadata-url, in the same order).")
    var targetBaseUrl: [String] = []
    @Option(help: "PEM certificates to trust for https:// instead of the system's store (a private CA).")
    var caFile: String?
    @Option(help: "Where downloaded targets are stored.") var targetDir: String?
    @Flag(name: .short, help: "More output.") var verbose: Int
    @Argument(help: "init, refresh or download.") var action: Action
    @Argument(help: "For init: the trusted root file.") var trustedRoot: String?

    func validate() throws {
        switch action {
        case .`init`:
            guard trustedRoot != nil else { throw ValidationError("init needs the trusted root file") }
        case .refresh:
            guard !metadataUrl.isEmpty else { throw ValidationError("refresh needs --metadata-url") }
        case .download:
            guard !metadataUrl.isEmpty, !targetBaseUrl.isEmpty, targetDir != nil, !targetName.isEmpty else {
                throw ValidationError(
                    "download needs --metadata-url, --target-name, --target-base-url and --target-dir")
            }
            guard targetBaseUrl.count == metadataUrl.count else {
                throw ValidationError("give one --target-base-url for each --metadata-url, in the same order")
            }
        }
        if action != .`init` && trustedRoot != nil { throw ValidationError("only init takes a file argument") }
    }

    func run() async throws {
        do {
            try await perform()
        } catch {
            let line = "vigil-tuf-client: error [\(error.code)]: \(error.message)"
            FileHandleOutput.standardError(escape(line) + "\n")
            throw ExitCode(1)
        }
    }

    func perform() async throws(TUFError) {
        let now = Int64(time(nil))
        switch action {
        case .`init`:
            let path = trustedRoot ?? ""
            let bytes = try readFile(path)
            // Refuse a root that is not self-signed now, rather than at the first refresh.
            _ = try TrustedSet(rootBytes: bytes, now: now)
            try FileStore(directory: metadataDir).write("root.json", bytes)
            note("initialized \(metadataDir) with \(path)")
        case .refresh:
            let updater = makeUpdater(now: now)
            try await updater.refresh()
            warnAboutMirrors(updater)
            note("refreshed \(metadataDir)")
        case .download:
            let updater = makeUpdater(now: now)
            try await updater.refresh()
            warnAboutMirrors(updater)
            let directory = targetDir ?? ""
            for name in targetName {
                let target = try await updater.targetInfo(name)
                if updater.isCached(target, in: directory) {
                    note("\(name) is already downloaded")
                    continue
                }
                let path = try await updater.download(target, into: directory)
                warnAboutMirrors(updater)
                note("downloaded \(name) to \(path)")
            }
        }
    }

    func makeUpdater(now: Int64) -> Updater {
        let mirrors = metadataUrl.enumerated().map { index, url in
            Mirror(metadataURL: url, targetsURL: index < targetBaseUrl.count ? targetBaseUrl[index] : nil)
        }
        return Updater(metadataDirectory: metadataDir, mirrors: mirrors, fetcher: HTTPFetcher(caFile: caFile), now: now)
    }

    /// A warning for each mirror skipped since the last call, so an operator learns a mirror is
    /// stale or hostile.
    func warnAboutMirrors(_ updater: Updater) {
        for failure in updater.takeMirrorFailures() {
            FileHandleOutput.standardError(
                escape("vigil-tuf-client: warning [\(failure.code)]: \(failure.message)") + "\n")
        }
    }

    func note(_ text: String) {
        if verbose > 0 { FileHandleOutput.standardError(escape("vigil-tuf-client: " + text) + "\n") }
    }

    func readFile(_ path: String) throws(TUFError) -> [UInt8] {
        let file: OwnedDescriptor
        do { file = try OwnedDescriptor("open") { open(path, O_RDONLY | O_CLOEXEC) } } catch {
            throw .storage("open \(path)", error)
        }
        let limit = UpdaterConfig().rootMaxLength
        let bytes: [UInt8]
        do { bytes = try FileIO.read(file.rawValue, limit: limit + 1) } catch { throw .storage("read \(path)", error) }
        guard bytes.count <= limit else {
            throw TUFError(code: .tooLarge, message: "\(path) is more than \(limit) bytes: not a TUF root")
        }
        return bytes
    }

    /// Control characters (from a repository's names or a server's answer) as `\u{…}`.
    func escape(_ text: String) -> String {
        var out = ""
        for scalar in text.unicodeScalars {
            if scalar.value < 0x20 && scalar != "\n" || (0x7F...0x9F).contains(scalar.value) {
                out += "\\u{\(String(scalar.value, radix: 16))}"
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
        return out
    }
}

enum FileHandleOutput {
    static func standardError(_ text: String) {
        var bytes = Array(text.utf8)
        _ = bytes.withUnsafeMutableBytes { write(2, $0.baseAddress, $0.count) }
    }
}
