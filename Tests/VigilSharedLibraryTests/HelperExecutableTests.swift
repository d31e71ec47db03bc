import Foundation
import Testing
import VigilLibraryCheck
import VigilTestSupport

@testable import VigilSharedLibrary

/// Where the host finds `vigil-plugin-helper`, and the StrictModes rule that protects it: whoever
/// can replace the helper runs every shared-library plugin's code.
@Suite("The plugin helper's location and protection")
struct HelperExecutableTests {
    private func install(_ path: String, mode: Int) throws {
        try FileManager.default.createDirectory(
            atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        #expect(FileManager.default.createFile(atPath: path, contents: Data("#!/bin/sh\n".utf8)))
        #expect(chmod(path, mode_t(mode)) == 0)
    }

    private func code(_ executable: String) -> SharedLibraryErrorCode? {
        do throws(SharedLibraryError) {
            _ = try HelperExecutable.locate(plugin: "alpha", executable: executable)
            return nil
        } catch {
            return error.code
        }
    }

    @Test("beside the executable, else ../libexec/vigil/ from it; missing: plugin-helper-missing")
    func located() throws {
        let dir = try TestDirectory("vigil-helper-location")
        defer { dir.remove() }
        let executable = dir.path + "/bin/host"
        try FileManager.default.createDirectory(atPath: dir.path + "/bin", withIntermediateDirectories: true)
        #expect(code(executable) == .helperMissing)
        try install(dir.path + "/libexec/vigil/vigil-plugin-helper", mode: 0o755)
        #expect(
            try HelperExecutable.locate(plugin: "alpha", executable: executable)
                == dir.path + "/libexec/vigil/vigil-plugin-helper")
        try install(dir.path + "/bin/vigil-plugin-helper", mode: 0o755)
        #expect(
            try HelperExecutable.locate(plugin: "alpha", executable: executable) == dir.path
                + "/bin/vigil-plugin-helper")
    }

    @Test("a helper or directory writable by group or others, or a helper that is no executable: plugin-helper-unsafe")
    func unsafe() throws {
        let dir = try TestDirectory("vigil-helper-unsafe")
        defer { dir.remove() }
        let executable = dir.path + "/bin/host"
        let helper = dir.path + "/bin/vigil-plugin-helper"
        for mode in [0o775, 0o757, 0o644] {
            try install(helper, mode: mode)
            #expect(code(executable) == .helperUnsafe, "mode \(String(mode, radix: 8))")
        }
        try install(helper, mode: 0o755)
        #expect(code(executable) == nil)
        #expect(chmod(dir.path + "/bin", 0o777) == 0)
        #expect(code(executable) == .helperUnsafe, "a directory others can write to")
        #expect(chmod(dir.path + "/bin", 0o1777) == 0)
        #expect(code(executable) == .helperUnsafe, "even with the sticky bit: others could add their own")
    }
}
