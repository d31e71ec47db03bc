internal import CVigilBase

#if canImport(Glibc)
import Glibc
#endif

/// Whole directory trees: swapped atomically, mirrored with hard links, removed. What
/// `vigil plugin update` builds its all-or-nothing switch of a plugin directory from.
package enum DirectoryTree {
    /// Swaps the paths `a` and `b` in one `renameat2(RENAME_EXCHANGE)`: a reader of either path
    /// sees the old tree or the new one, never a mix, and a crash leaves one or the other.
    package static func exchange(_ a: String, _ b: String) throws(SystemCallError) {
        guard vigil_base_exchange(a, b) == 0 else { throw .current("renameat2") }
    }

    /// Creates `destination` (mode `mode`) holding what `source` holds, without copying bytes:
    /// files are hard-linked, directories created again, symbolic links copied as links, and the
    /// entries named in `skipping` left out of the top level.
    package static func linkCopy(
        from source: String, to destination: String, mode: mode_t, skipping: Set<String> = []
    ) throws(SystemCallError) {
        guard mkdir(destination, mode) == 0 else { throw .current("mkdir") }
        _ = chmod(destination, mode)
        guard let names = Directory.names(in: source) else { throw .current("opendir") }
        for name in names where !skipping.contains(name) {
            let from = source + "/" + name
            let to = destination + "/" + name
            var st = stat()
            guard lstat(from, &st) == 0 else { throw .current("lstat") }
            switch st.st_mode & S_IFMT {
            case S_IFDIR:
                try linkCopy(from: from, to: to, mode: st.st_mode & 0o7777)
            case S_IFLNK:
                var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
                let count = readlink(from, &buffer, buffer.count - 1)
                guard count >= 0 else { throw .current("readlink") }
                let target = String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
                guard symlink(target, to) == 0 else { throw .current("symlink") }
            default:
                guard link(from, to) == 0 else { throw .current("link") }
            }
        }
    }

    /// Removes `path` and everything under it, without following symbolic links; a missing path
    /// is not an error.
    package static func remove(_ path: String) {
        var st = stat()
        guard lstat(path, &st) == 0 else { return }
        if st.st_mode & S_IFMT == S_IFDIR {
            for name in Directory.names(in: path) ?? [] { remove(path + "/" + name) }
            _ = rmdir(path)
        } else {
            _ = unlink(path)
        }
    }
}
