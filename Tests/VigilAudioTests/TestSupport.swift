import Foundation
import Logging
import Synchronization
import VigilAudio
import VigilTestSupport

/// Collects a stream's or plugin's events so tests can wait for them.
final class EventRecorder<Event: Sendable>: Sendable {
    private let events = Mutex<[Event]>([])

    func record(_ event: Event) { events.withLock { $0.append(event) } }

    var all: [Event] { events.withLock { $0 } }

    /// Waits up to `timeout` seconds until `predicate` holds for the recorded events.
    func wait(timeout: Double, until predicate: ([Event]) -> Bool) async -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        repeat {
            if predicate(all) { return true }
            try? await Task.sleep(nanoseconds: 20_000_000)
        } while Date() < deadline
        return predicate(all)
    }
}

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
