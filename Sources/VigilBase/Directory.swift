#if canImport(Glibc)
import Glibc
#endif

/// Directory calls on POSIX paths, without FileManager (which would link full Foundation).
package enum Directory {
    /// The names in `path` except `.` and `..`, in no order; nil when it cannot be opened.
    package static func names(in path: String) -> [String]? {
        guard let dir = opendir(path) else { return nil }
        return names(dir)
    }

    /// The names in the open directory `fd` (which stays open: it is listed through a descriptor
    /// of its own), or `nil` when it cannot be listed.
    package static func names(ofOpen fd: Int32) -> [String]? {
        let own = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard own >= 0 else { return nil }
        guard let dir = fdopendir(own) else {
            close(own)
            return nil
        }
        return names(dir)
    }

    /// Reads and closes `dir`.
    private static func names(_ dir: OpaquePointer) -> [String] {
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
