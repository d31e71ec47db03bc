import FoundationEssentials
import VigilBase
public import VigilCore
public import VigilPlugin

#if canImport(Glibc)
import Glibc
#endif

/// What `vigil check` reads for a configuration, against the inputs a build declared for it.
///
/// SwiftPM re-runs the build check only when a declared input changes, and the inputs are fixed
/// when it plans the build. A file that appeared later (a new plugin directory, a new resource) is
/// read by the check but would not make it run again when it changes; ``unwatched(configuration:watched:)``
/// finds such files so that the build can fail rather than go silently stale.
public enum BuildInputs {
    /// The configuration file, and every directory and non-hidden regular file in each plugin
    /// path (the paths themselves included), that are not in `watched`. The same enumeration as
    /// the VigilBuildCheck plugin's.
    public static func unwatched(configuration: HostConfiguration, watched: Set<String>) -> [String] {
        let watched = Set(watched.map(normalized))
        var missing: [String] = []
        func note(_ path: String) {
            if !watched.contains(normalized(path)) { missing.append(path) }
        }
        note(configuration.path)
        for directory in configuration.pluginPaths {
            var info = stat()
            guard stat(directory, &info) == 0, info.st_mode & S_IFMT == S_IFDIR else { continue }
            note(directory)
            walk(directory, note)
        }
        return missing.sorted()
    }

    /// Calls `found` with every non-hidden directory and regular file under `directory`, hidden
    /// directories not entered and symbolic links not followed (as FileManager's enumerator with
    /// `.skipsHiddenFiles`, which the plugin uses).
    private static func walk(_ directory: String, _ found: (String) -> Void) {
        for name in (Directory.names(in: directory) ?? []).sorted() where !name.hasPrefix(".") {
            let path = directory.hasSuffix("/") ? directory + name : directory + "/" + name
            var info = stat()
            guard lstat(path, &info) == 0 else { continue }
            switch info.st_mode & S_IFMT {
            case S_IFREG: found(path)
            case S_IFDIR:
                found(path)
                walk(path, found)
            default: continue
            }
        }
    }

    /// Makes SwiftPM run the build check again on the next build, even a no-op one, so that its
    /// warnings are printed on every build while they hold (SwiftPM prints a command's output only
    /// when it runs the command): the plugin declares the list at `listPath` as one of the check's
    /// inputs, and this sets the list's modification time to now. Without warnings the list is left
    /// alone and a no-op build stays one; a check with errors fails, and SwiftPM runs a failed
    /// command again anyway.
    ///
    /// - Throws: ``SystemCallError`` when the time cannot be set (the list is gone or read-only).
    package static func runAgain(listPath: String) throws(SystemCallError) {
        try SystemCallError.check("utimensat") { utimensat(AT_FDCWD, listPath, nil, 0) }
    }

    /// Reads a list written by the plugin: one absolute path per line.
    public static func readList(at path: String) throws -> Set<String> {
        let text = try String(contentsOfFile: path, encoding: .utf8)
        return Set(text.split(separator: "\n").map(String.init).filter { !$0.isEmpty })
    }

    private static func normalized(_ path: String) -> String {
        URL(fileURLWithPath: path).standardizedFileURL.path
    }
}

extension HostCheck.Report {
    /// This report plus an error when the check reads files that are not in the build's input
    /// list at `listPath` (see ``BuildInputs``); unchanged when the configuration did not load.
    /// `environment` is the one the check ran in (for the first-party manifests directory).
    public func checkingBuildInputs(listPath: String, environment: HostEnvironment) -> HostCheck.Report {
        guard let configPath,
            let configuration = try? HostConfiguration.load(path: configPath, environment: environment)
        else { return self }
        let problem: String
        do {
            let unwatched = BuildInputs.unwatched(
                configuration: configuration, watched: try BuildInputs.readList(at: listPath))
            if unwatched.isEmpty { return self }
            let shown = unwatched.prefix(5).joined(separator: ", ") + (unwatched.count > 5 ? ", …" : "")
            problem =
                "the check reads \(unwatched.count) file\(unwatched.count == 1 ? "" : "s") that appeared after SwiftPM "
                + "planned this build (\(shown)), so it would not run again when they change — make SwiftPM plan the "
                + "build again (touch Package.swift), then build"
        } catch {
            problem =
                "the build's input list \(listPath) cannot be read (\(error)) — run `swift package clean`, then build"
        }
        return HostCheck.Report(
            configPath: configPath,
            diagnostics: diagnostics + [Diagnostic(severity: .error, location: nil, plugin: nil, message: problem)],
            unsafePlugins: unsafePlugins, plugins: plugins)
    }
}
