import ArgumentParser
import Glibc
import VigilBase
import VigilCheckCommands
import VigilCore

/// The trust list's StrictModes rule (sshd's, as `vigil.toml` and its directory get it), for
/// signing keys: a secret key, and the directory that holds it or will, must be owned by you or
/// root and not writable by group or others (a directory with the sticky bit, as `/tmp` has, may
/// be). Whoever else controls either could read a new key, or swap the key you sign with for
/// theirs — and every host that trusts the plugin would then run what they signed.
enum KeyStrictModes {
    /// The exit status of `keygen` and `sign` when they refuse a key or key directory (EX_NOPERM).
    static let exitCode = ExitCodes.noPermission

    /// Runs `body` like ``CLI/run(_:)``, but a `key-unsafe` refusal exits ``exitCode``.
    static func run(_ body: () throws -> Void) throws {
        do {
            try body()
        } catch let error as CoreError {
            let failure = CLI.fail(error)
            throw error.code == .keyUnsafe ? ExitCode(exitCode) : failure
        }
    }

    /// Refuses `directory` (after resolving links) as the home of new keys.
    static func checkDirectory(_ directory: String) throws(CoreError) {
        try check(resolved(directory), what: "the key directory \(directory)", isDirectory: true)
    }

    /// Refuses the secret key at `path` when it, or the directory that holds it (after resolving
    /// links), is another user's or writable by others. The directory is checked first: once no
    /// one else can change it, no one else can swap the file between this check and its read.
    static func checkSecretKey(_ path: String) throws(CoreError) {
        let real = resolved(path)
        try check(Path.directory(of: real), what: "the directory of the secret key \(path)", isDirectory: true)
        try check(real, what: "the secret key \(path)", isDirectory: false)
    }

    private static func resolved(_ path: String) -> String {
        guard let real = realpath(path, nil) else { return path }
        defer { free(real) }
        return String(cString: real)
    }

    private static func check(_ path: String, what: String, isDirectory: Bool) throws(CoreError) {
        var st = stat()
        // Missing: nothing to refuse here (keygen creates it 0700; sign's read says what is missing).
        guard stat(path, &st) == 0 else { return }
        let me = geteuid()
        if st.st_uid != me && st.st_uid != 0 {
            throw CoreError(
                code: .keyUnsafe,
                message: "\(what) is owned by uid \(st.st_uid), not by you (uid \(me)) or root; whoever owns it can "
                    + (isDirectory
                        ? "read or replace the keys in it, so Vigil does not use it — pass --dir with a directory "
                            + "of your own, or `chown \(me) \(path)`"
                        : "choose what you sign with, so Vigil does not use it — make your own key with "
                            + "`vigil plugin keygen`, or `chown \(me) \(path)` after checking it is yours"))
        }
        let sticky = isDirectory && st.st_mode & S_ISVTX != 0
        if st.st_mode & 0o022 != 0 && !sticky {
            throw CoreError(
                code: .keyUnsafe,
                message: "\(what) is writable by group or others (mode \(String(st.st_mode & 0o7777, radix: 8))); "
                    + "they could replace the key, so Vigil does not use it — `chmod go-w \(path)`")
        }
    }
}
