internal import CVigilStartup
import Vigil

/// The `vigil` executable's start-up code: argument parsing, vigil.toml, manifest verification
/// and plugin start run once, and with the kernel's fault-around they leave most of the
/// executable's code mapped (about 15 MB of a static build) while a running host uses a few
/// dozen kilobytes of it. Shortly after every plugin has settled, `vigil up` drops those mappings; the
/// pages stay in the page cache (reclaimable like any file's), and code that runs later is mapped
/// again on first use.
enum StartupCode {
    /// How long after the plugins settled the mappings are dropped: what runs right after a start
    /// (status writes, the display, the first timers) would otherwise map most of it again.
    static let delay = Duration.seconds(5)

    /// True when no plugin in `status` is still idle or starting.
    static func settled(_ status: HostStatus) -> Bool {
        !status.plugins.isEmpty && status.plugins.allSatisfy { $0.state != .idle && $0.state != .starting }
    }

    /// Drops the mappings of the executable's code; returns the bytes released (0 when the
    /// executable's code was written to and must stay), or nil when madvise refused.
    static func release() -> Int? {
        let result = vigil_release_startup_code()
        return result < 0 ? nil : result
    }
}
