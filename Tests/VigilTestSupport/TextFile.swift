import SystemPackage

/// Whole-file reads for tests, through swift-system's `FileDescriptor`.
///
/// Foundation's `String(contentsOfFile:)` and `Data(contentsOf:)` (swift-corelibs-foundation
/// 6.3.1, `readBytesFromFile`) leak a 4 KiB buffer each time they read an empty file, which
/// LeakSanitizer reports; the test support reads child output, logs and markers that are often
/// still empty, so it reads them here instead.
public enum TextFile {
    /// The bytes of the file at `path`, read to its end.
    /// - Throws: `Errno` when it cannot be opened or read.
    public static func bytes(_ path: String) throws -> [UInt8] {
        let fd = try FileDescriptor.open(FilePath(path), .readOnly, options: .closeOnExec)
        return try fd.closeAfter {
            var bytes: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 16_384)
            while true {
                let count = try chunk.withUnsafeMutableBytes { try fd.read(into: $0) }
                if count == 0 { return bytes }
                bytes += chunk[..<count]
            }
        }
    }

    /// The file at `path` as UTF-8 text (invalid sequences become U+FFFD).
    /// - Throws: `Errno` when it cannot be opened or read.
    public static func read(_ path: String) throws -> String {
        String(decoding: try bytes(path), as: UTF8.self)
    }
}
