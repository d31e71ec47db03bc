import VigilCore
import VigilHostCheck

/// The plugin counts of `vigil check`'s summary line: what each activated plugin will do at start,
/// in the words of every other output (docs/states.md).
enum CheckSummary {
    /// `2 verified`, or `1 verified, 1 waiting for an audio output, 1 blocked by a missing declaration, 1 failed`.
    static func plugins(_ report: HostCheck.Report) -> String {
        var counts: [String: Int] = [:]
        for plugin in report.plugins { counts[plugin.phrase, default: 0] += 1 }
        var parts = ["\(counts["verified"] ?? 0) verified"]
        // Waiting, then blocked, then failed; within each, by what they wait for.
        for state in [PluginStateName.waiting, .blocked, .failed] {
            for (phrase, count) in counts.sorted(by: { $0.key < $1.key })
            where report.plugins.contains(where: { $0.phrase == phrase && $0.state == state }) {
                parts.append("\(count) \(phrase)")
            }
        }
        return parts.joined(separator: ", ")
    }
}

extension CheckSummary {
    /// One plugin's line under the summary: `  alpha: verified, from DIR; signature fresh for 3d 4h (until …)`.
    static func pluginLine(_ plugin: HostCheck.Plugin, _ report: HostCheck.Report) -> String {
        "  \(plugin.name): \(plugin.phrase)"
            + (plugin.directory.map { ", from \($0)" } ?? "")
            + (report.signatures[plugin.name].map { "; " + $0.summary(now: report.checkedAt) } ?? "")
    }
}
