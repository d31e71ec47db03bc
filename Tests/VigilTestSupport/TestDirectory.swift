import Foundation

/// A private temporary directory for one test, removed by ``remove()`` (call it in `defer`).
public struct TestDirectory: Sendable {
    /// The directory's absolute path.
    public let path: String

    /// Creates a fresh directory under the system temporary directory.
    public init(_ label: String = "vigil-test") throws {
        let base = FileManager.default.temporaryDirectory.path
        var template = Array("\(base)/\(label)-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else {
            throw CocoaError(.fileWriteUnknown)
        }
        path = String(cString: made)
    }

    /// `path/relative`.
    public func url(_ relative: String) -> String { path + "/" + relative }

    /// Writes `bytes` to `relative`, creating parent directories.
    @discardableResult
    public func write(_ relative: String, _ bytes: [UInt8]) throws -> String {
        let full = url(relative)
        try FileManager.default.createDirectory(
            atPath: (full as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try Data(bytes).write(to: URL(fileURLWithPath: full))
        return full
    }

    /// Writes UTF-8 text to `relative`, with permission bits `mode` when given.
    @discardableResult
    public func write(_ relative: String, _ text: String, mode: Int? = nil) throws -> String {
        let full = try write(relative, Array(text.utf8))
        if let mode { try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: full) }
        return full
    }

    /// Reads `relative` (or an absolute path).
    public func read(_ relative: String) throws -> [UInt8] {
        let full = relative.hasPrefix("/") ? relative : url(relative)
        return try TextFile.bytes(full)
    }

    /// Creates a directory (and parents).
    @discardableResult
    public func makeDirectory(_ relative: String) throws -> String {
        try FileManager.default.createDirectory(atPath: url(relative), withIntermediateDirectories: true)
        return url(relative)
    }

    /// Names in the directory `relative` ("" for the root).
    public func list(_ relative: String = "") throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: relative.isEmpty ? path : url(relative)).sorted()
    }

    /// Permission bits of `relative`.
    public func mode(_ relative: String) throws -> Int {
        var st = stat()
        guard lstat(url(relative), &st) == 0 else { throw CocoaError(.fileReadNoSuchFile) }
        return Int(st.st_mode & 0o7777)
    }

    /// Deletes the directory and everything in it.
    public func remove() {
        try? FileManager.default.removeItem(atPath: path)
    }
}
