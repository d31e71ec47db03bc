import Glibc
import VigilBase
import VigilLibraryCheck

/// Where `vigil-plugin-helper` is and what it inherits.
enum HelperExecutable {
    static let name = "vigil-plugin-helper"
    /// Where `make install` and the Debian package put it.
    static let installedDirectory = "/usr/libexec/vigil"

    /// The helper beside the running executable, else in `../libexec/vigil/` from there (the layout
    /// of `make install` under any prefix), else in `/usr/libexec/vigil/`, checked as sshd's
    /// StrictModes checks what decides trust: the file and its directory are owned by this user
    /// or root and writable by nobody else (whoever can replace it runs every plugin's code).
    static func locate(plugin: String, executable: String = SystemCall.executablePath(fallback: ""))
        throws(SharedLibraryError) -> String
    {
        let directory = executable.isEmpty ? nil : Path.directory(of: executable)
        let candidates =
            (directory.map { [$0 + "/" + name, Path.directory(of: $0) + "/libexec/vigil/" + name] } ?? [])
            + [installedDirectory + "/" + name]
        guard let found = candidates.first(where: { access($0, F_OK) == 0 }) else {
            throw SharedLibraryError(
                code: .helperMissing, plugin: plugin,
                message: "shared-library plugins run in the helper process \(name), found neither beside this program, "
                    + "nor in ../libexec/vigil/ from there, nor in \(installedDirectory)/ — install Vigil's package (or `make install`), or build the "
                    + "`\(name)` product next to your host")
        }
        try check(found, isDirectory: false, plugin: plugin)
        try check(Path.directory(of: found), isDirectory: true, plugin: plugin)
        return found
    }

    private static func check(_ path: String, isDirectory: Bool, plugin: String) throws(SharedLibraryError) {
        var st = stat()
        guard stat(path, &st) == 0 else {
            throw SharedLibraryError(
                code: .helperMissing, plugin: plugin,
                message: "cannot read \(path): \(SystemCallError.current("stat").reason) — reinstall Vigil")
        }
        let me = geteuid()
        let problem: String? =
            if st.st_uid != me && st.st_uid != 0 {
                "is owned by uid \(st.st_uid), not by you (uid \(me)) or root — `chown root \(path)`"
            } else if st.st_mode & 0o022 != 0 {
                "is writable by group or others (mode \(String(st.st_mode & 0o7777, radix: 8))) — `chmod go-w \(path)`"
            } else if !isDirectory && (st.st_mode & S_IFMT != S_IFREG || st.st_mode & 0o100 == 0) {
                "is not an executable regular file — reinstall Vigil"
            } else {
                nil
            }
        if let problem {
            throw SharedLibraryError(
                code: .helperUnsafe, plugin: plugin,
                message: "\(isDirectory ? "the directory " : "the plugin helper ")\(path) \(problem); whoever can "
                    + "replace the helper runs every shared-library plugin's code, so Vigil does not start it")
        }
    }

    /// The variables a plugin may need (locale, its user's directories, the sound server and the
    /// buses), and nothing else of the host's environment (which may hold secrets).
    static func environment(_ variables: [String: String]) -> [String] {
        let kept: Set<String> = [
            "PATH", "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "TZ", "TMPDIR", "XDG_RUNTIME_DIR",
            "XDG_STATE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "PULSE_SERVER", "PIPEWIRE_REMOTE",
            "DBUS_SESSION_BUS_ADDRESS", "DBUS_SYSTEM_BUS_ADDRESS",
        ]
        return variables.filter { kept.contains($0.key) || $0.key.hasPrefix("LC_") }.sorted { $0.key < $1.key }.map {
            "\($0.key)=\($0.value)"
        }
    }
}
