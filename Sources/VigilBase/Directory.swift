#if canImport(Glibc)
import Glibc
#endif

/// Directory calls on POSIX paths, without FileManager (which would link full Foundation).
package enum Directory {
    /// The names in `path` except `.` and `..`, in no order; nil when it cannot be opened.
    package static func names(in path: String) -> [String]? {
        guard let dir = opendir(path) else { return nil }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            if name != ".", name != ".." { names.append(name) }
        }
        return names
    }

    /// Creates `path` and its missing parents with `mode` (mkdir -p); on failure, the directory
    /// that could not be created and the failed `mkdir`.
    package static func create(_ path: String, mode: mode_t) -> (path: String, error: SystemCallError)? {
        var prefix = path.hasPrefix("/") ? "" : "."
        for component in path.split(separator: "/") {
            prefix += "/" + component
            if mkdir(prefix, mode) != 0 && errno != EEXIST { return (prefix, .current("mkdir")) }
        }
        return nil
    }
}
