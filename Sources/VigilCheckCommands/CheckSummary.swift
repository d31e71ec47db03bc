import VigilCore
import VigilHostCheck

/// The plugin counts of `vigil check`'s summary line: what each activated plugin will do at start.
enum CheckSummary {
    /// `2 ready`, or `1 ready, 1 waiting for an audio output, 1 blocked by a missing declaration, 1 failed`.
    static func plugins(_ report: HostCheck.Report) -> String {
        var ready = 0
        var failed = 0
        var blocked = 0
        var waiting: [String: Int] = [:]
        for plugin in report.plugins {
            if !plugin.ready {
                failed += 1
            } else if report.blocked.contains(plugin.name) {
                blocked += 1
            } else if let noun = report.waiting[plugin.name] {
                waiting[noun, default: 0] += 1
            } else {
                ready += 1
            }
        }
        var parts = ["\(ready) ready"]
        for (noun, count) in waiting.sorted(by: { $0.key < $1.key }) { parts.append("\(count) waiting for \(noun)") }
        if blocked > 0 { parts.append("\(blocked) blocked by a missing declaration") }
        if failed > 0 { parts.append("\(failed) failed") }
        return parts.joined(separator: ", ")
    }
}

extension CheckSummary {
    /// One plugin's line under the summary: `  alpha: ready, from DIR; signature fresh for 3d 4h (until …)`.
    static func pluginLine(_ plugin: (name: String, ready: Bool, directory: String?), _ report: HostCheck.Report)
        -> String
    {
        "  \(plugin.name): \(plugin.ready ? "ready" : "not ready")"
            + (plugin.directory.map { ", from \($0)" } ?? "")
            + (report.signatures[plugin.name].map { "; " + $0.summary(now: report.checkedAt) } ?? "")
    }
}
