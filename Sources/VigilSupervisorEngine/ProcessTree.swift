import VigilBase

#if canImport(Glibc)
import Glibc
#endif

/// Reads `/proc/PID/stat` to attribute a notify datagram to a worker.
enum ProcessTree {
    struct Stat: Equatable {
        var state: Character
        var parent: Int32
        var processGroup: Int32
    }

    /// The state, parent and process group of `pid`, or `nil` when it no longer exists.
    static func stat(of pid: Int32) -> Stat? {
        guard let text = readSmallFile("/proc/\(pid)/stat") else { return nil }
        return parseStat(text)
    }

    /// Parses a `/proc/PID/stat` line; the command name may contain spaces and parentheses.
    static func parseStat(_ text: String) -> Stat? {
        guard let close = text.lastIndex(of: ")") else { return nil }
        let fields = text[text.index(after: close)...].split(separator: " ", omittingEmptySubsequences: true)
        guard fields.count >= 3, let state = fields[0].first, let ppid = Int32(fields[1]), let pgrp = Int32(fields[2])
        else { return nil }
        return Stat(state: state, parent: ppid, processGroup: pgrp)
    }

    /// Whether `pid` is `root` or a descendant of `root`, by the parent links in `/proc`. Being
    /// in `root`'s process group is not enough: any process of the session can join a group
    /// with `setpgid(0, root)`.
    static func belongs(_ pid: Int32, toWorker root: Int32) -> Bool {
        if pid == root { return true }
        var current = pid
        for _ in 0..<64 {
            guard let info = stat(of: current) else { return false }
            if info.parent == root { return true }
            if info.parent <= 1 { return false }
            current = info.parent
        }
        return false
    }

    /// The first KiB of a small file (a procfs entry), or nil.
    static func readSmallFile(_ path: String) -> String? {
        guard let bytes = FileIO.contents(ofFile: path, limit: 1024), !bytes.isEmpty else { return nil }
        return String(decoding: bytes, as: UTF8.self)
    }
}
