import ArgumentParser
import FoundationEssentials
import Vigil
import VigilCheckCommands
import VigilCore
import VigilPlugin

#if canImport(Glibc)
import Glibc
#endif

/// `vigil status`: the status the running host(s) of this user publish under `$XDG_RUNTIME_DIR/vigil/`.
struct Status: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show the status of this user's running Vigil hosts.",
        discussion: """
            Reads the status files running hosts publish in $XDG_RUNTIME_DIR/vigil/ (0700; /tmp/vigil-UID \
            when XDG_RUNTIME_DIR is unset). Exits 1 when no host is running. With --config, only hosts \
            started from that vigil.toml are shown. Exits 77 when the runtime directory is refused \
            (not owned by you, writable by others, or under a symbolic link or a directory others may \
            write) or cannot be read; with --json the document is \
            then {"ok": false, "error": {"code", "message"}} instead of the array. Exits 2 when a host \
            runs (it holds its vigil.toml's lock) but its status file is missing (the runtime directory \
            is full) or unreadable; its --json entry then has "status": "unwritten" or "unreadable", \
            a "reason", and null for what is unknown. A status file that is a link, another user's or \
            writable by others is not shown; a warning says why.
            """)

    @OptionGroup var options: ConfigOption

    @Flag(name: .long, help: "Print a JSON array of vigil.status/v2 documents, one per running host.")
    var json = false

    func run() async throws {
        let directory: RuntimeDirectory?
        do {
            directory = try RuntimeDirectory.resolve(environment: CLI.environment.variables, create: false)
        } catch {
            // Not "no host": the directory hosts publish in was refused (unsafe) or unreadable.
            if json {
                CLI.printJSON(
                    .object([
                        ("ok", .bool(false)),
                        (
                            "error",
                            .object([("code", .string(error.code.rawValue)), ("message", .string(error.message))])
                        ),
                    ]))
            } else {
                CLI.printErrorLine("error: \(error.message)")
            }
            throw ExitCode(Self.refusedExitCode)
        }
        var hosts: [HostStatus] = []
        var problems: [String] = []
        var unseen: [UnseenHost] = []
        if let directory {
            for result in PublishedHosts.read(from: directory) {
                switch result {
                case .success(let status): hosts.append(status)
                case .failure(let error):
                    CLI.printErrorLine("warning: \(error.message)")
                    problems.append(error.message)
                }
            }
            // A host that holds its vigil.toml's lock but published no readable status: its file
            // could not be written (a full runtime directory) or cannot be read.
            let seen = Set(hosts.map(\.pid))
            unseen = ConfigLock.holders(in: directory).filter { !seen.contains($0.pid) }.map { holder in
                let file = directory.statusFile(pid: holder.pid)
                let problem = problems.first { $0.contains(file) }
                return UnseenHost(holder: holder, statusFile: file, directory: directory.path, problem: problem)
            }
        }
        if let config = options.config {
            let wanted = HostConfiguration(path: config, environment: CLI.environment).path
            hosts = hosts.filter { $0.configPath == wanted }
            // A lock whose holder could not write its configuration (a full directory) may be it.
            unseen = unseen.filter { $0.holder.configPath == nil || $0.holder.configPath == wanted }
        }
        if json {
            let documents =
                hosts.map { String(decoding: $0.jsonData(pretty: true), as: UTF8.self) }
                + unseen.map { String(decoding: $0.json.serialized(), as: UTF8.self) }
            print("[" + documents.joined(separator: ",\n") + "]")
        } else {
            for (index, host) in hosts.enumerated() {
                if index > 0 { CLI.say("") }
                CLI.say(Self.describe(host))
            }
            for host in unseen {
                if !hosts.isEmpty || host != unseen.first { CLI.say("") }
                CLI.sayLine(host.description)
            }
        }
        if !unseen.isEmpty { throw ExitCode(Self.unseenExitCode) }
        if hosts.isEmpty {
            CLI.printErrorLine(
                "no Vigil host is running"
                    + (options.config.map { " from \($0)" } ?? "")
                    + " — start one with `vigil up` or a host app that calls Vigil.keepAlive()")
            throw ExitCode.failure
        }
    }

    /// The exit code when the runtime directory is refused or unreadable (EX_NOPERM); 1 means
    /// that no host is running.
    static let refusedExitCode = ExitCodes.noPermission

    /// The exit code when a host runs (it holds its vigil.toml's lock) but its status file is
    /// missing or unreadable, so what it does is unknown.
    static let unseenExitCode = ExitCodes.unknownState

    /// A host known from its lock only: it runs, but its status could not be read.
    struct UnseenHost: Equatable {
        var holder: ConfigLock.Holder
        var statusFile: String
        var directory: String
        /// Why the file could not be read, when it is there; nil when it is missing.
        var problem: String?

        var state: String { problem == nil ? "unwritten" : "unreadable" }

        var reason: String {
            if let problem { return "its status file cannot be read (\(problem))" }
            return "its status file \(statusFile) is missing: the host could not write it (is \(directory) full? "
                + "`df \(directory)`); it retries by itself and says so on its output"
        }

        var description: String {
            "a host runs (pid \(holder.pid), config \(holder.configPath ?? "unknown")) but its status is "
                + "\(state): \(reason)"
        }

        /// The entry in `vigil status --json`: the schema's fields, unknown ones `null`, and why.
        var json: JSONValue {
            .object([
                ("schema", .string(HostStatus.schema)), ("pid", .number(String(holder.pid))), ("host", .null),
                ("config", holder.configPath.map(JSONValue.string) ?? .null), ("plugins", .null), ("sleep", .null),
                ("status", .string(state)), ("reason", .string(reason)),
            ])
        }
    }

    /// The host's status as text. Every field read from the status file is one line of the host's
    /// words: control characters (newlines too) and bidirectional overrides show as `?`.
    static func describe(_ host: HostStatus) -> String {
        let safe = { (text: String) in Sanitizer.display(text) }
        var lines = ["\(safe(host.hostName)) (pid \(host.pid), config \(safe(host.configPath ?? "-")))"]
        let width = host.plugins.map(\.name.count).max() ?? 0
        let now = Date().timeIntervalSince1970
        for plugin in host.plugins {
            var line = "  " + TextFormat.padded(safe(plugin.name), to: width)
            line += "  " + safe(plugin.state.description)
            line += "  (since \(Self.duration(now - plugin.since)) ago)"
            if let signature = plugin.signature { line += "\n    " + signature.summary(now: Int64(now)) }
            let (plain, tables) = Self.tables(in: plugin.details)
            let details = plain.sorted { $0.key < $1.key }.map { "\(safe($0.key))=\(safe($0.value))" }
            if !details.isEmpty { line += "\n    " + details.joined(separator: " ") }
            lines.append(line)
            for table in tables { lines += table.map { "    " + $0 } }
        }
        if host.plugins.isEmpty { lines.append("  no plugins activated") }
        if let sleep = host.sleep {
            if let off = sleep.off {
                lines.append("  sleep handling off: \(safe(off))")
            } else {
                let locks = sleep.locks.isEmpty ? "none" : sleep.locks.map(safe).joined(separator: ", ")
                lines.append("  sleep locks held: \(locks)")
            }
        }
        return lines.joined(separator: "\n")
    }

    /// A detail table: the group (`worker`), its rows in order (the names), and each row's fields.
    struct DetailTable {
        var group: String
        var rows: [String]
        var fields: [String: [String: String]]
    }

    /// The fields shown first in a detail table, in this order; any other follow by name.
    static let leadingColumns = ["state", "pid", "restarts", "last_exit", "status", "reason"]

    /// The longest cell of a table, in characters; a longer one (a worker's status text) is cut.
    static let maximumCellWidth = 60

    /// Splits `details` into plain ones and tables: every `GROUP.NAME.FIELD` key (the supervisor's
    /// `worker.web.state`) is a cell of the table GROUP, one NAME a line, in the order of the
    /// plain detail `GROUPs` (`workers`: the names, in order) when there is one — which the table
    /// then replaces — else by name. Every cell is escaped on its own.
    static func tables(in details: [String: String]) -> (plain: [String: String], tables: [[String]]) {
        var plain: [String: String] = [:]
        var groups: [String: [String: [String: String]]] = [:]
        for (key, value) in details {
            let parts = key.split(separator: ".", maxSplits: 1)
            guard parts.count == 2, let dot = parts[1].lastIndex(of: "."), dot != parts[1].startIndex,
                parts[1].index(after: dot) != parts[1].endIndex
            else {
                plain[key] = value
                continue
            }
            let name = String(parts[1][..<dot]), field = String(parts[1][parts[1].index(after: dot)...])
            groups[String(parts[0]), default: [:]][name, default: [:]][field] = value
        }
        var tables: [[String]] = []
        for (group, fields) in groups.sorted(by: { $0.key < $1.key }) {
            var rows = fields.keys.sorted()
            if let listed = plain[group + "s"] {
                let order = listed.split(separator: ",").map { String($0.drop { $0 == " " }) }
                if Set(order) == Set(rows) {
                    rows = order
                    plain[group + "s"] = nil
                }
            }
            tables.append(render(DetailTable(group: group, rows: rows, fields: fields)))
        }
        return (plain, tables)
    }

    /// A table as lines: a header, then one row per name, columns padded to their widest cell.
    static func render(_ table: DetailTable) -> [String] {
        let present = Set(table.fields.values.flatMap(\.keys))
        let columns =
            leadingColumns.filter(present.contains) + present.subtracting(leadingColumns).sorted()
        func cell(_ text: String) -> String {
            let safe = Sanitizer.display(text)
            return safe.utf16.count > maximumCellWidth ? TextFormat.padded(safe, to: maximumCellWidth - 1) + "…" : safe
        }
        let cells =
            [[cell(table.group)] + columns.map(cell)]
            + table.rows.map { row in [cell(row)] + columns.map { cell(table.fields[row]?[$0] ?? "-") } }
        let widths = (0...columns.count).map { column in cells.map { $0[column].utf16.count }.max() ?? 0 }
        return cells.map { line in
            line.indices.map { $0 == line.count - 1 ? line[$0] : TextFormat.padded(line[$0], to: widths[$0]) }
                .joined(separator: "  ")
        }
    }

    /// `seconds` as `42s`, `3m5s` or `2h7m`; a number no clock gives (negative, NaN, 1e300 from a
    /// file) is shown as `0s` or `?`, never converted into a trap.
    static func duration(_ seconds: Double) -> String {
        guard let whole = Int(exactly: seconds.rounded(.towardZero)) else { return seconds < 0 ? "0s" : "?" }
        let s = max(whole, 0)
        if s < 60 { return "\(s)s" }
        if s < 3600 { return "\(s / 60)m\(s % 60)s" }
        return "\(s / 3600)h\((s % 3600) / 60)m"
    }
}
