/// Every exit status of every `vigil` command, in one table: the commands take their numbers
/// from here, `vigil --help` prints it, and docs/exit-codes.md is generated from it
/// (`ExitCodeTableTests` checks both, and runs each command's refusals against it). The numbers
/// above 63 are `sysexits.h`'s, so a service manager or a script can tell a configuration that
/// cannot work (78, which the shipped units do not restart) from a passing failure.
package enum ExitCodes {
    /// One status and what it means for the commands that use it.
    package struct Row: Sendable, Hashable {
        /// The exit status.
        package let code: Int32
        /// Its `sysexits.h` name, when it has one.
        package let name: String?
        /// The commands that exit with it (`all`: every command).
        package let commands: String
        /// What it means, and what to do.
        package let meaning: String
    }

    /// Done.
    package static let success: Int32 = 0
    /// `check`: problems found; other commands: the request was refused (the message says why).
    package static let failure: Int32 = 1
    /// `status`: a host runs but its status cannot be read; `soundscape`: the answer was not understood.
    package static let unknownState: Int32 = 2
    /// `soundscape`: no running host plays a soundscape; `reload`: the control socket is unreachable.
    package static let noSoundscape: Int32 = 3
    /// `soundscape`, `reload`: the host is busy.
    package static let busy: Int32 = 4
    /// `plugin install|update|outdated`: no usable `[repository]` in `vigil.toml`.
    package static let repositoryNotConfigured: Int32 = 5
    /// `plugin install|update|outdated`: no mirror could be reached.
    package static let repositoryUnreachable: Int32 = 6
    /// `plugin install|update|outdated`: the repository's metadata expired.
    package static let repositoryStale: Int32 = 7
    /// `plugin install|update`: the repository delegates the plugin to another key than the trusted one.
    package static let repositoryKeyMismatch: Int32 = 8
    /// `plugin install|update`: the repository offers an older version or older metadata.
    package static let repositoryRollback: Int32 = 9
    /// `plugin install|update`: the repository has no such plugin.
    package static let repositoryUnknownPlugin: Int32 = 10
    /// A usage error (swift-argument-parser's).
    package static let usage: Int32 = 64
    /// `announce`: an invalid prompt or setting; `reload`: the new configuration was refused.
    package static let dataError: Int32 = 65
    /// `announce`: the sound server (or the session bus) is unreachable; `up`, `reload`:
    /// `[metrics] listen` cannot be bound.
    package static let unavailable: Int32 = 69
    /// `announce`: speech synthesis failed.
    package static let software: Int32 = 70
    /// Any command: the process cannot read its own command line.
    package static let osError: Int32 = 71
    /// Any command: fewer descriptors are free at start than it needs (`VIGIL_STARTUP_NO_DESCRIPTORS_EXIT`).
    package static let noDescriptors: Int32 = 72
    /// `up`, `run`: the runtime directory cannot be created or used.
    package static let cannotCreate: Int32 = 73
    /// `announce`: the journal cannot be written.
    package static let ioError: Int32 = 74
    /// `up`, `run`: another host runs the same `vigil.toml`; `announce`: the lock stayed held.
    package static let temporaryFailure: Int32 = 75
    /// A file that decides trust or acts on other programs is unsafe.
    package static let noPermission: Int32 = 77
    /// A configuration that cannot work.
    package static let configuration: Int32 = 78
    /// `run`: CMD could not be started.
    package static let commandNotFound: Int32 = 127

    /// The table, by status.
    package static let table: [Row] = [
        Row(code: success, name: nil, commands: "all", meaning: "done; `check`: no errors (warnings may remain)"),
        Row(
            code: failure, name: nil, commands: "all",
            meaning: "`check`, `swift package vigil-check` and the build check: problems found, each printed as "
                + "a located diagnostic (a `vigil.toml` that does not parse is one of them: the check's job is "
                + "to list it, so it keeps 1); `plugin …`: the request was refused (signature, trust, a file "
                + "that exists); `status`: no host is running; `soundscape`: the host refused the request; "
                + "`run`: CMD's settings were refused; `reload`: no host is running"),
        Row(
            code: unknownState, name: nil, commands: "`status`, `soundscape`, `reload`",
            meaning: "`status`: a host runs (it holds its `vigil.toml`'s lock) but its status file is missing or "
                + "unreadable; `soundscape`: the host's answer was not understood; `reload`: several hosts run "
                + "(name one with `--config`)"),
        Row(
            code: noSoundscape, name: nil, commands: "`soundscape`, `reload`",
            meaning: "`soundscape`: no running host plays a soundscape; `reload`: the host's control socket "
                + "cannot be reached or its answer is not understood"),
        Row(
            code: busy, name: nil, commands: "`soundscape`, `reload`",
            meaning: "the host is busy (every control connection in use, or no answer within 5 s; `reload`: "
                + "within `--timeout`): try again"),
        Row(
            code: repositoryNotConfigured, name: nil, commands: "`plugin install`, `plugin update`, `plugin outdated`",
            meaning: "`vigil.toml` has no `[repository]`, or it is refused (`vigil check` says why): add one with "
                + "`root` or `root_sha256` and `mirrors`"),
        Row(
            code: repositoryUnreachable, name: nil,
            commands: "`plugin install`, `plugin update`, `plugin outdated`",
            meaning: "no mirror could be reached or served the files (each mirror's reason is printed); nothing "
                + "was changed"),
        Row(
            code: repositoryStale, name: nil, commands: "`plugin install`, `plugin update`, `plugin outdated`",
            meaning: "the repository's metadata expired (the role and since when are printed): the repository "
                + "must publish fresh metadata, or the clock is wrong; nothing was changed and running plugins "
                + "keep running"),
        Row(
            code: repositoryKeyMismatch, name: nil, commands: "`plugin install`, `plugin update`",
            meaning: "the repository delegates the plugin to a key other than the one `vigil.toml` trusts for it, "
                + "and no signed rotation of the plugin leads there: a key change needs the publisher's signed "
                + "rotation or a new `vigil plugin trust`"),
        Row(
            code: repositoryRollback, name: nil, commands: "`plugin install`, `plugin update`",
            meaning: "the repository offers an older version than the one installed or accepted, or older "
                + "metadata than this host has seen; nothing was changed"),
        Row(
            code: repositoryUnknownPlugin, name: nil, commands: "`plugin install`, `plugin update`",
            meaning: "the repository has no such plugin (no role NAME delegated `NAME/*` listing "
                + "`NAME/plugin.json`)"),
        Row(code: usage, name: "EX_USAGE", commands: "all", meaning: "usage error: an unknown option or a bad value"),
        Row(
            code: dataError, name: "EX_DATAERR", commands: "`announce`, `reload`, library hosts' `reload()`",
            meaning: "`announce`: an invalid prompt or setting; `reload`: the host refused the new `vigil.toml` "
                + "(the message says why: `reload-refused`, or `reload-needs-restart` naming each key only a "
                + "restart applies) and keeps running the previous one"),
        Row(
            code: unavailable, name: "EX_UNAVAILABLE", commands: "`announce`, `up`, `reload`",
            meaning: "`announce`: the sound server (for pause-spoken, the session bus) is unreachable or failed; "
                + "`up`: `listen` of `[metrics]` cannot be bound (in use, no such address: "
                + "`metrics-listen-failed`); `reload`: the new `listen` cannot be bound (`metrics-listen-failed`: "
                + "the host runs on, serving the previous one)"),
        Row(code: software, name: "EX_SOFTWARE", commands: "`announce`", meaning: "speech synthesis failed"),
        Row(
            code: osError, name: "EX_OSERR", commands: "all",
            meaning: "the process cannot read its own command line (no /proc): mount /proc"),
        Row(
            code: noDescriptors, name: "EX_OSFILE", commands: "all",
            meaning: "fewer than 16 descriptors are free at start (`ulimit -n`, systemd's `LimitNOFILE=`): "
                + "raise the limit"),
        Row(
            code: cannotCreate, name: "EX_CANTCREAT", commands: "`up`, `run`, library hosts",
            meaning: "the runtime directory for status and the host's lock cannot be created or is unsafe"),
        Row(
            code: ioError, name: "EX_IOERR", commands: "`announce`",
            meaning: "the journal cannot be written (nothing was lowered)"),
        Row(
            code: temporaryFailure, name: "EX_TEMPFAIL", commands: "`up`, `run`, library hosts, `announce`",
            meaning: "`up`, `run`, a library host: another host runs the same `vigil.toml` (one host per file: "
                + "stop it first); `announce`: another announcement held the lock past its deadline, or it was "
                + "cancelled"),
        Row(
            code: noPermission, name: "EX_NOPERM",
            commands: "`status`, `reload`, `plugin keygen`, `plugin sign`, `announce`",
            meaning: "a file or directory that decides trust is unsafe (a symbolic link, another user's, or "
                + "writable by others): the runtime directory (`status`, `reload`), a key or its directory, the "
                + "announcer's journal"),
        Row(
            code: configuration, name: "EX_CONFIG", commands: "`up`, `run`, library hosts",
            meaning: "a configuration that cannot work: no `vigil.toml`, one that does not parse or is "
                + "refused, or no activated plugin can run (each was refused — signature, trust, manifest, "
                + "entry, settings — or is blocked by a missing declaration); systemd is told why in `STATUS=`, and the shipped units do not restart it "
                + "(`RestartPreventExitStatus=78`)"),
        Row(
            code: commandNotFound, name: nil, commands: "`run`",
            meaning: "CMD could not be started (not found, not executable)"),
        Row(
            code: -1, name: nil, commands: "`run`",
            meaning: "otherwise `run` exits with CMD's own status, or 128 + the signal that killed it"),
    ]

    /// The table as Markdown: docs/exit-codes.md's table is exactly this.
    package static var markdown: String {
        var lines = ["| Status | Name | Commands | Meaning |", "|---|---|---|---|"]
        for row in table {
            let code = row.code < 0 ? "CMD's" : String(row.code)
            lines.append("| \(code) | \(row.name ?? "") | \(row.commands) | \(row.meaning) |")
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// The table as plain text for `vigil --help`.
    package static var help: String {
        var lines = ["Exit status (every command; docs/exit-codes.md):"]
        for row in table {
            let code = row.code < 0 ? "CMD's" : String(row.code)
            let name = row.name.map { " (\($0))" } ?? ""
            lines.append("  \(code)\(name) \(row.commands.filter { $0 != "`" }): " + row.meaning.filter { $0 != "`" })
        }
        return lines.joined(separator: "\n")
    }
}
