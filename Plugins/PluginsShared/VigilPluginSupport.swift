import Foundation
import PackagePlugin

/// Code shared by Vigil's SwiftPM plugins (each plugin reaches this folder through a symlink,
/// because a plugin cannot depend on a library target).
enum VigilPluginSupport {
    /// The host configuration's file name.
    static let configFileName = "vigil.toml"

    /// The nearest `vigil.toml` in `directory` or one of its parents.
    static func findConfig(startingAt directory: URL) -> URL? {
        var current = directory.standardizedFileURL
        while true {
            let candidate = current.appendingPathComponent(configFileName)
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: candidate.path, isDirectory: &isDirectory), !isDirectory.boolValue
            {
                return candidate
            }
            let parent = current.deletingLastPathComponent()
            if parent.path == current.path { return nil }
            current = parent
        }
    }

    /// The directory of the package that declares the library or executable product `product`
    /// (Vigil's: `"Vigil"`), searched in `package` and its dependencies, breadth first. (Plugin
    /// products are not among a package's `products` here.)
    static func vigilPackageDirectory(in package: Package, product: String) -> URL? {
        packages(from: package).first { $0.products.contains { $0.name == product } }?.directoryURL
    }

    /// `package` and every package it depends on, directly or not, breadth first, each once.
    static func packages(from package: Package) -> [Package] {
        var queue = [package]
        var seen = Set<String>()
        var out: [Package] = []
        while !queue.isEmpty {
            let next = queue.removeFirst()
            guard seen.insert(next.id).inserted else { continue }
            out.append(next)
            queue.append(contentsOf: next.dependencies.map(\.package))
        }
        return out
    }

    /// The `plugin_paths` written at the top level of a `vigil.toml` (default `["manifests"]`).
    ///
    /// A deliberately small scan — plugins cannot link Vigil's TOML parser. It reads the
    /// `plugin_paths = [ "…", … ]` array before the first table header (it may span lines); the
    /// real parsing and every error message are `vigil check`'s job.
    static func pluginPaths(inConfig text: String) -> [String] {
        var collecting = false
        var buffer = ""
        for rawLine in text.split(separator: "\n", omittingEmptySubsequences: false) {
            let line = stripComment(String(rawLine)).trimmingCharacters(in: .whitespaces)
            if !collecting {
                if line.hasPrefix("[") { break }  // the first table ends the top level
                guard line.hasPrefix("plugin_paths"),
                    let equals = line.firstIndex(of: "="),
                    line[line.startIndex..<equals].trimmingCharacters(in: .whitespaces) == "plugin_paths"
                else { continue }
                collecting = true
                buffer = String(line[line.index(after: equals)...])
            } else {
                buffer += " " + line
            }
            if collecting, buffer.contains("]") { break }
        }
        guard collecting else { return ["manifests"] }
        return quotedStrings(in: buffer)
    }

    /// Every directory and non-hidden file in each of `pluginDirectories` (manifests, signatures,
    /// keys and resources, and the directories holding them), the directories themselves included:
    /// the inputs whose change must re-run the check. A directory changes when an entry in it is
    /// added, removed or renamed. `vigil check --build-inputs` enumerates the same way.
    static func watchedEntries(in pluginDirectories: [URL], limit: Int = 4_000) -> [URL] {
        var entries: [URL] = []
        let fm = FileManager.default
        for directory in pluginDirectories {
            var isDirectory: ObjCBool = false
            guard fm.fileExists(atPath: directory.path, isDirectory: &isDirectory), isDirectory.boolValue else {
                continue
            }
            entries.append(directory)
            guard
                let enumerator = fm.enumerator(
                    at: directory, includingPropertiesForKeys: [.isRegularFileKey, .isDirectoryKey],
                    options: [.skipsHiddenFiles])
            else { continue }
            for case let url as URL in enumerator {
                guard entries.count < limit else { return entries }
                let values = try? url.resourceValues(forKeys: [.isRegularFileKey, .isDirectoryKey])
                if values?.isRegularFile == true || values?.isDirectory == true { entries.append(url) }
            }
        }
        return entries.sorted { $0.path < $1.path }
    }

    /// `package` and each parent up to `configDirectory` (the directories where a nearer
    /// `vigil.toml` than the one found could appear), or just `configDirectory`.
    static func searchDirectories(from package: URL, to configDirectory: URL) -> [URL] {
        let end = configDirectory.standardizedFileURL.path
        var current = package.standardizedFileURL
        var out: [URL] = []
        while true {
            out.append(current)
            if current.path == end { return out }
            let parent = current.deletingLastPathComponent()
            if parent.path == current.path { return [configDirectory] }
            current = parent
        }
    }

    /// The name of the tool the plugins run: `vigil check` and `vigil plugin trust` without the
    /// runtime (Sources/VigilPluginTool).
    static let toolName = "vigil-plugin-tool"

    /// The file in the build check's work directory that records where SwiftPM built the tool.
    static let toolRecordName = "vigil-plugin-tool.path"

    /// Records where SwiftPM built the build check's `tool`, in the build check's `workDirectory`
    /// (under the build directory, never the package), for the command plugins (``builtTool``).
    /// Rewritten only when it changes.
    static func recordTool(_ tool: URL, in workDirectory: URL) {
        let record = workDirectory.appendingPathComponent(toolRecordName)
        let text = tool.standardizedFileURL.path + "\n"
        if (try? String(contentsOf: record, encoding: .utf8)) == text { return }
        try? FileManager.default.createDirectory(at: workDirectory, withIntermediateDirectories: true)
        try? Data(text.utf8).write(to: record, options: .atomic)
    }

    /// The plugins' tool for a command plugin: the build check's copy, which every `swift build` of
    /// a package that applies `VigilBuildCheck` brings up to date, when it is newer than every
    /// source file and source directory of the tool's modules; otherwise a copy built now.
    ///
    /// A command plugin that names the tool as a dependency, or asks `packageManager` to build it,
    /// makes every `swift package vigil-*` plan the whole build again, which compiles the build
    /// check's copy again (SwiftPM builds a build-tool plugin's tool in a database of its own,
    /// `plugin-tools.db`, and again in the main one, each seeing the other's outputs as changed);
    /// `packageManager.build` also builds the tool's dependencies with parameters of its own, so the
    /// next `swift build` recompiles the host's modules above them. Taking the copy the build
    /// already made plans and builds nothing.
    static func builtTool(context: PluginContext, packageManager: PackageManager) throws -> URL {
        if let tool = recordedTool(context: context) { return tool }
        // The first command before any `swift build` compiles the tool: a minute or more of
        // otherwise silent work, so say what is happening before it starts.
        Diagnostics.progress(
            "building Vigil's \(toolName) (the checks and the trust review, once: this can take a few minutes; "
                + "after a `swift build`, the vigil-* commands reuse the copy it made and start at once)…")
        let result = try packageManager.build(
            .product(toolName), parameters: .init(configuration: .debug, logging: .concise))
        guard result.succeeded, let tool = result.builtArtifacts.first(where: { $0.kind == .executable })?.url else {
            throw ToolBuildFailed(log: result.logText)
        }
        return tool
    }

    /// The tool a `swift build` recorded (``recordTool``) for this package's build directory, if it
    /// is at least as new as its sources.
    static func recordedTool(context: PluginContext) -> URL? {
        guard let product = toolProduct(in: context.package) else { return nil }
        // A command plugin works in <build>/plugins/<plugin>/outputs, the build check in
        // <build>/plugins/outputs/<package>/<target>/destination/VigilBuildCheck.
        let outputs = context.pluginWorkDirectoryURL.deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("outputs")
        let inputs = sourceEntries(of: product)
        return records(under: outputs).lazy.compactMap { record -> URL? in
            guard let text = try? String(contentsOf: record, encoding: .utf8) else { return nil }
            let tool = URL(fileURLWithPath: text.trimmingCharacters(in: .whitespacesAndNewlines))
            guard FileManager.default.isExecutableFile(atPath: tool.path) else { return nil }
            return isUpToDate(tool, with: inputs) ? tool : nil
        }.first
    }

    /// The tool's executable product in `package` or one of its dependencies.
    static func toolProduct(in package: Package) -> (any Product)? {
        packages(from: package).lazy.compactMap { $0.products.first { $0.name == toolName } }.first
    }

    /// The source files of `product`'s modules and of the modules they depend on, and the
    /// directories holding them (a directory changes when a file in it is added or removed).
    static func sourceEntries(of product: any Product) -> [URL] {
        var seen = Set<String>()
        var entries: [URL] = []
        var directories = Set<String>()
        for target in product.targets + product.targets.flatMap(\.recursiveTargetDependencies) {
            guard seen.insert(target.id).inserted, let module = target as? any SourceModuleTarget else { continue }
            for file in module.sourceFiles where file.type == .source {
                entries.append(file.url)
                let directory = file.url.deletingLastPathComponent()
                if directories.insert(directory.path).inserted { entries.append(directory) }
            }
        }
        return entries
    }

    /// Whether `tool` is at least as new as every one of `inputs` (a missing input is a change).
    static func isUpToDate(_ tool: URL, with inputs: [URL]) -> Bool {
        guard let built = modificationDate(tool) else { return false }
        return inputs.allSatisfy { input in modificationDate(input).map { $0 <= built } ?? false }
    }

    private static func modificationDate(_ url: URL) -> Date? {
        (try? FileManager.default.attributesOfItem(atPath: url.path))?[.modificationDate] as? Date
    }

    /// Every ``toolRecordName`` file within a few levels under `directory`.
    private static func records(under directory: URL) -> [URL] {
        guard
            let enumerator = FileManager.default.enumerator(
                at: directory, includingPropertiesForKeys: [.isDirectoryKey], options: [.skipsHiddenFiles])
        else { return [] }
        var found: [URL] = []
        for case let url as URL in enumerator {
            if url.lastPathComponent == toolRecordName { found.append(url) }
            if enumerator.level >= 5 { enumerator.skipDescendants() }
        }
        return found
    }

    /// Building the tool failed; the build log says why.
    struct ToolBuildFailed: Error, CustomStringConvertible {
        let log: String
        var description: String { "building Vigil's \(toolName) failed:\n\(log)" }
    }

    /// The command a package user runs to trust a plugin (what `vigil` shows in remedies instead of
    /// `vigil plugin trust`, a CLI they need not have).
    static let trustCommand = "swift package --allow-writing-to-package-directory vigil-trust"

    /// Runs `executable` with `arguments` and returns its exit status.
    ///
    /// A command plugin's standard output is SwiftPM's message channel and its free text goes to
    /// SwiftPM's *standard output*, while SwiftPM's own error lines go to standard error: when both
    /// are redirected to one file, the error lines land before the text they refer to. So the
    /// tool's lines are passed on as progress messages, which SwiftPM writes to standard error in
    /// order with its diagnostics — one stream, in order. With `jsonOnStdout` the tool's standard
    /// output (one JSON document) goes to SwiftPM's standard output unchanged instead.
    ///
    /// With `terminal: true` and a controlling terminal, the tool's standard input and output are
    /// `/dev/tty`, so its review and question reach the operator directly (the tool moves its
    /// process group to the terminal's foreground to read the answer).
    static func run(
        _ executable: URL, _ arguments: [String], environment: [String: String] = [:], terminal: Bool = false,
        jsonOnStdout: Bool = false
    ) throws -> Int32 {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        var env = ProcessInfo.processInfo.environment
        env[trustCommandVariable] = trustCommand
        for (key, value) in environment { env[key] = value }
        process.environment = env
        let lines = Pipe()
        process.standardError = lines
        if terminal, let tty = FileHandle(forUpdatingAtPath: "/dev/tty") {
            process.standardInput = tty
            process.standardOutput = tty
        } else {
            process.standardInput = FileHandle.nullDevice
            process.standardOutput = jsonOnStdout ? FileHandle.standardOutput : lines
        }
        try process.run()
        // The parent's copy of the write end must go, or the read below never sees end of file.
        try? lines.fileHandleForWriting.close()
        var pending = Data()
        let reader = lines.fileHandleForReading
        while true {
            let chunk = reader.availableData
            if chunk.isEmpty { break }
            pending.append(chunk)
            while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                Diagnostics.progress(String(decoding: pending[pending.startIndex..<newline], as: UTF8.self))
                pending.removeSubrange(pending.startIndex...newline)
            }
        }
        if !pending.isEmpty { Diagnostics.progress(String(decoding: pending, as: UTF8.self)) }
        process.waitUntilExit()
        return process.terminationStatus
    }

    /// The environment variable `vigil` reads ``trustCommand`` from (VigilCore's `TrustCommand`).
    static let trustCommandVariable = "VIGIL_TRUST_COMMAND"

    private static func stripComment(_ line: String) -> String {
        var inString = false
        var escaped = false
        for (i, c) in line.enumerated() {
            if escaped { escaped = false; continue }
            if c == "\\" && inString { escaped = true; continue }
            if c == "\"" || c == "'" { inString.toggle() }
            if c == "#" && !inString { return String(line.prefix(i)) }
        }
        return line
    }

    private static func quotedStrings(in text: String) -> [String] {
        var out: [String] = []
        var current: String?
        var quote: Character = "\""
        for c in text {
            if var s = current {
                if c == quote {
                    out.append(s)
                    current = nil
                } else {
                    s.append(c)
                    current = s
                }
            } else if c == "\"" || c == "'" {
                quote = c
                current = ""
            }
        }
        return out
    }
}
