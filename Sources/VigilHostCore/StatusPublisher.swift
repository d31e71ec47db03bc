import FoundationEssentials
import Logging
import VigilBase
import VigilCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Publishes a host's status file off the host actor, on a thread of its own.
///
/// ``publish(_:)`` only records the latest status and returns; the writer thread writes it
/// through the core's ``StateFile`` (its directory checked as every state file's is, then a temp
/// file 0600 and a rename; not fsynced: the file means something
/// only while this process lives, so surviving a machine crash is worth nothing). Writes are at
/// most ``minimumInterval`` apart, the latest status wins and is always written, so a host whose
/// plugins change state very often costs a few writes a second, not one per change.
///
/// A write that fails (a full runtime directory) removes the old file — a status that is no
/// longer true is not left for `vigil status` to show; it shows the host from its lock instead —
/// warns once, and is retried with ``StatusRetry``'s backoff until it succeeds, whether or not the
/// host changes meanwhile.
final class StatusPublisher: Sendable {
    /// The shortest time between two writes of the file, in seconds.
    static let minimumInterval = 0.2

    let directory: RuntimeDirectory
    let file: String
    private let writer: Writer

    /// - Parameter onProblem: called on the writer's thread when the file cannot be written (with
    ///   the problem, once until it is written again) and when it is written again (with nil).
    init(
        directory: RuntimeDirectory, pid: Int32, logger: Logger,
        onProblem: (@Sendable (String?) -> Void)? = nil
    ) {
        self.directory = directory
        self.file = directory.statusFile(pid: pid)
        self.writer = Writer(file: file, logger: logger, onProblem: onProblem)
        let writer = self.writer
        KernelThread.start(name: "vigil-status") { writer.run() }
    }

    /// Records `status` as the one to write next; returns at once.
    func publish(_ status: HostStatus) { writer.publish(status) }

    /// Writes `status` now, past the rate limit, and returns once it is on disk (or the write
    /// failed): for the points where callers expect the file to be current, like the end of
    /// `keepAlive()`. The calling task waits; no thread blocks.
    func publishNow(_ status: HostStatus) async {
        await withCheckedContinuation { continuation in
            writer.publish(status, waiter: continuation)
        }
    }

    /// Drops what is pending, waits for a write in progress and removes the file; nothing is
    /// written again before the next ``publish(_:)``.
    func remove() { writer.remove() }

    /// Waits until nothing is pending or being written.
    func flush() { writer.flush() }

    /// How many times the file was written so far.
    var writeCount: Int { writer.writeCount }

    deinit { writer.finish() }

    /// The writer thread's state, shared with the publisher under one condition lock.
    private final class Writer: @unchecked Sendable {
        let file: String
        let logger: Logger
        private let condition = ConditionLock()
        // Guarded by `condition`.
        private var pending: HostStatus?
        /// Waiting for `pending` to be written (it is written without the rate-limit wait).
        private var waiters: [CheckedContinuation<Void, Never>] = []
        private var active = false
        private var writing = false
        private var finished = false
        private var lastWrite = -Double.infinity
        private var retry = StatusRetry()
        private var writes = 0
        let onProblem: (@Sendable (String?) -> Void)?

        init(file: String, logger: Logger, onProblem: (@Sendable (String?) -> Void)?) {
            self.file = file
            self.logger = logger
            self.onProblem = onProblem
        }

        func publish(_ status: HostStatus, waiter: CheckedContinuation<Void, Never>? = nil) {
            condition.withLock {
                pending = status
                active = true
                if let waiter { waiters.append(waiter) }
                condition.broadcast()
            }
        }

        func remove() { release(finishing: false) }

        func flush() {
            condition.withLock {
                while pending != nil || writing { condition.wait() }
            }
        }

        var writeCount: Int { condition.withLock { writes } }

        func finish() { release(finishing: true) }

        /// Drops the pending status, waits out a write in progress, deletes the file and lets every
        /// waiter go; when `finishing`, the thread ends too.
        private func release(finishing: Bool) {
            let released = condition.withLock {
                if finishing { finished = true }
                pending = nil
                active = false
                while writing { condition.wait() }
                unlink(file)
                condition.broadcast()
                defer { waiters = [] }
                return waiters
            }
            released.forEach { $0.resume() }
        }

        func run() {
            condition.lock()
            while true {
                while !finished && pending == nil { condition.wait() }
                if finished { break }
                let now = MonotonicClock.seconds()
                let wait = max(lastWrite + StatusPublisher.minimumInterval, retry.nextAttempt ?? 0) - now
                if wait > 0 && waiters.isEmpty {
                    // Later changes replace `pending` meanwhile: the latest wins.
                    condition.wait(seconds: wait)
                    continue
                }
                guard let status = pending else { continue }
                pending = nil
                let served = waiters
                waiters = []
                writing = true
                condition.unlock()
                let problem = write(status)
                served.forEach { $0.resume() }
                condition.lock()
                writing = false
                writes += 1
                lastWrite = MonotonicClock.seconds()
                if !active { unlink(file) }  // removed while it was being written
                let report = retry.record(success: problem == nil, at: lastWrite)
                if let problem {
                    // Written again at the next attempt, even when nothing changes meanwhile.
                    if active, pending == nil { pending = status }
                    unlink(file)  // the old status is no longer true
                    if report {
                        logger.warning(
                            "cannot publish status for `vigil status`: \(problem); retrying (1 s, then up to 30 s apart)"
                        )
                    }
                } else if report {
                    logger.notice("status for `vigil status` written again")
                }
                if report {
                    let hook = onProblem
                    condition.unlock()
                    hook?(problem)
                    condition.lock()
                }
                condition.broadcast()
            }
            condition.broadcast()
            condition.unlock()
        }

        private func write(_ status: HostStatus) -> String? {
            do {
                // The file describes this live process (readers drop files of dead ones), so an
                // fsync would only make keepAlive() wait on the disk; the rename keeps it atomic.
                try StateFile.write(Array(status.jsonData()), to: file, what: "the status file", durable: false)
                return nil
            } catch {
                return error.message
            }
        }
    }
}

/// The hosts currently publishing status for this user (what `vigil status` shows).
public enum PublishedHosts {
    /// Reads every live host's status from `directory`. Files of processes that no longer exist
    /// are stale (a host killed with SIGKILL) and are removed.
    public static func read(from directory: RuntimeDirectory) -> [Result<HostStatus, VigilError>] {
        let names = (Directory.names(in: directory.path) ?? []).filter {
            $0.hasPrefix("host-") && $0.hasSuffix(".json")
        }
        var results: [(Int32, Result<HostStatus, VigilError>)] = []
        for name in names {
            guard let pid = Int32(name.dropFirst(5).dropLast(5)) else { continue }
            let path = directory.path + "/" + name
            if kill(pid, 0) != 0, errno == ESRCH {
                unlink(path)
                unlink(directory.controlSocket(pid: pid))  // a killed host's control socket goes with it
                continue
            }
            let data: Data
            switch readCapped(path) {
            case nil: continue
            case .success(let bytes): data = bytes
            case .failure(let error):
                results.append((pid, .failure(error)))
                continue
            }
            do {
                results.append((pid, .success(try HostStatus(jsonData: data))))
            } catch {
                results.append(
                    (pid, .failure(VigilError(code: .statusUnreadable, message: "\(path): \(error.message)"))))
            }
        }
        return results.sorted { $0.0 < $1.0 }.map(\.1)
    }

    /// The most a status file may hold; a host's is a few KiB.
    public static let maximumFileSize = 1 << 20

    /// Reads a status file through the core's ``StateFile`` checks (a regular file owned by this
    /// user that group and others cannot write, no symbolic link to it or above it, never more
    /// than ``maximumFileSize`` bytes); `nil` when it is gone (its host just exited).
    static func readCapped(_ path: String) -> Result<Data, VigilError>? {
        do throws(CoreError) {
            return try StateFile.readIfPresent(path, cap: maximumFileSize, what: "the status file").map {
                .success(Data($0))
            }
        } catch {
            return .failure(VigilError(code: .statusUnreadable, message: error.message, cause: error))
        }
    }
}
