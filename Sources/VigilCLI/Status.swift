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
            (not owned by you, or writable by others) or cannot be read; with --json the document is \
            then {"ok": false, "error": {"code", "message"}} instead of the array.
            """)

    @OptionGroup var options: ConfigOption

    @Flag(name: .long, help: "Print a JSON array of vigil.status/v1 documents, one per running host.")
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
        if let directory {
            for result in PublishedHosts.read(from: directory) {
                switch result {
                case .success(let status): hosts.append(status)
                case .failure(let error): CLI.printErrorLine("warning: \(error.message)")
                }
            }
        }
        if let config = options.config {
            let wanted = HostConfiguration(path: config, environment: CLI.environment).path
            hosts = hosts.filter { $0.configPath == wanted }
        }
        if json {
            let documents = hosts.map { String(decoding: $0.jsonData(pretty: true), as: UTF8.self) }
            print("[" + documents.joined(separator: ",\n") + "]")
        } else {
            for (index, host) in hosts.enumerated() {
                if index > 0 { CLI.say("") }
                CLI.say(Self.describe(host))
            }
        }
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
    static let refusedExitCode: Int32 = 77

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
            let details = plugin.details.sorted { $0.key < $1.key }.map { "\(safe($0.key))=\(safe($0.value))" }
            if !details.isEmpty { line += "\n    " + details.joined(separator: " ") }
            lines.append(line)
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

    static func duration(_ seconds: Double) -> String {
        let s = max(Int(seconds), 0)
        if s < 60 { return "\(s)s" }
        if s < 3600 { return "\(s / 60)m\(s % 60)s" }
        return "\(s / 3600)h\((s % 3600) / 60)m"
    }
}
