import Foundation
import Logging
import VigilAudio
import VigilTestSupport

/// A logger that drops everything (tests never bootstrap logging).
let quietLogger = Logger(label: "vigil.test") { _ in SwiftLogNoOpLogHandler() }

/// Reads this process's resources from /proc.
enum ProcSelf {
    static var openFileDescriptors: Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? -1
    }

    static var threads: Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task").count) ?? -1
    }

    /// Resident memory in kB (VmRSS).
    static var residentKilobytes: Int {
        guard let status = try? TextFile.read("/proc/self/status") else { return -1 }
        for line in status.split(separator: "\n") where line.hasPrefix("VmRSS:") {
            return Int(line.split(separator: " ", omittingEmptySubsequences: true)[1]) ?? -1
        }
        return -1
    }

    /// CPU time (ns) a thread of this process has used, from /proc/self/task/TID/schedstat.
    static func threadCPUNanoseconds(_ tid: Int32) -> UInt64? {
        guard let text = try? TextFile.read("/proc/self/task/\(tid)/schedstat") else {
            return nil
        }
        return text.split(separator: " ").first.flatMap { UInt64($0) }
    }
}
