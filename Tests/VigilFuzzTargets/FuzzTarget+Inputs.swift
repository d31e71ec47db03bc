import Foundation

extension FuzzTarget {
    /// The files under `paths` (each a file or a directory, not descending further), sorted.
    public static func inputs(_ paths: [String]) throws -> [String] {
        var files: [String] = []
        for path in paths {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
                throw CocoaError(.fileNoSuchFile, userInfo: [NSFilePathErrorKey: path])
            }
            if isDirectory.boolValue {
                files += try FileManager.default.contentsOfDirectory(atPath: path).sorted().map { path + "/" + $0 }
            } else {
                files.append(path)
            }
        }
        return files
    }
}
