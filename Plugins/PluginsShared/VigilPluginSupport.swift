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
            if FileManager.default.fileExists(atPath: candidate.path, isDirectory: &isDirectory), !isDirectory.boolValue {
                return candidate
            }
            let parent = current.deletingLastPathComponent()
            if parent.path == current.path { return nil }
            current = parent
        }
    }

    /// The directory of the package that provides Vigil's plugins (the one declaring `product`),
    /// searched in `package` and its dependencies, breadth first.
    static func vigilPackageDirectory(in package: Package, product: String) -> URL? {
        var queue = [package]
        var seen = Set<String>()
        while !queue.isEmpty {
            let next = queue.removeFirst()
            guard seen.insert(next.id).inserted else { continue }
            if next.products.contains(where: { $0.name == product }) { return next.directoryURL }
            queue.append(contentsOf: next.dependencies.map(\.package))
        }
        return nil
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

    /// Every file under each `NAME/` directory of `pluginDirectories` (manifests, signatures, keys
    /// and resources): the inputs whose change must re-run the check.
    static func manifestFiles(in pluginDirectories: [URL], limit: Int = 2_000) -> [URL] {
        var files: [URL] = []
        let fm = FileManager.default
        for directory in pluginDirectories {
            guard let enumerator = fm.enumerator(
                at: directory, includingPropertiesForKeys: [.isRegularFileKey], options: [.skipsHiddenFiles])
            else { continue }
            for case let url as URL in enumerator {
                guard files.count < limit else { return files }
                if (try? url.resourceValues(forKeys: [.isRegularFileKey]))?.isRegularFile == true {
                    files.append(url)
                }
            }
        }
        return files.sorted { $0.path < $1.path }
    }

    /// Runs `executable` with `arguments` and returns its exit status.
    ///
    /// A command plugin's own stdin and stdout are SwiftPM's message channel, not the user's
    /// terminal. With `terminal: true` and a controlling terminal, the tool reads from and writes to
    /// `/dev/tty` (so it can ask a question); otherwise its stdin is `/dev/null` and its output goes
    /// to SwiftPM, which prints it.
    static func run(
        _ executable: URL, _ arguments: [String], environment: [String: String] = [:], terminal: Bool = false
    ) throws -> Int32 {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        var env = ProcessInfo.processInfo.environment
        for (key, value) in environment { env[key] = value }
        process.environment = env
        if terminal, let tty = FileHandle(forUpdatingAtPath: "/dev/tty") {
            process.standardInput = tty
            process.standardOutput = tty
        } else {
            process.standardInput = FileHandle.nullDevice
        }
        try process.run()
        process.waitUntilExit()
        return process.terminationStatus
    }

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
