import VigilBase

#if canImport(Glibc)
import Glibc
#endif

/// The per-user announce lock (`announce.lock` in the state directory): one prompt at a time
/// across processes, and no lock held past the deadline of the work it protects.
///
/// - The file passes the ``StateFile`` checks before it is opened (created 0600).
/// - The holder writes its process id and its deadline (`CLOCK_MONOTONIC` nanoseconds, one
///   clock for every process of the machine) into the file, and moves the deadline once it
///   knows how long its prompt lasts.
/// - A waiter polls (never blocks in the kernel) and gives up with ``AnnounceErrorCode/busy``
///   once the holder's declared deadline has passed (plus ``graceSeconds``) — or, when no
///   deadline can be read, after the longest a prompt may take — naming the holder.
final class AnnounceLock {
    /// The budget for the work around a prompt: synthesis, connecting, ducking, restoring.
    static let setupSeconds = 30.0
    /// How far past its declared deadline a holder is still waited for.
    static let graceSeconds = 5.0
    /// The longest a waiter waits when the holder declared nothing it can read.
    static let fallbackSeconds = Announcement.maxFileSeconds + setupSeconds

    let path: String
    /// The lock file, closed with this object.
    private let file: OwnedDescriptor

    private init(path: String, file: consuming OwnedDescriptor) {
        self.path = path
        self.file = file
    }

    /// Waits (within the holder's deadline) for the lock in `directory` and takes it, declaring
    /// `budgetSeconds` for this turn.
    static func acquire(in directory: String, budgetSeconds: Double) throws(AnnounceError) -> AnnounceLock {
        let path = directory + "/announce.lock"
        let opened: Int32?
        do {
            opened = try StateFile.open(path, flags: O_RDWR | O_CREAT, what: "the announce lock")
        } catch {
            throw DuckJournal.failure(error, consequence: "nothing was lowered")
        }
        guard let opened else {
            throw AnnounceError(code: .journal, message: "cannot create the announce lock \(path)")
        }
        let file = OwnedDescriptor(adopting: opened)  // closed on every throw below
        let start = MonotonicClock.nanoseconds()
        var holder: Holder?
        do {
            let fd = file.rawValue  // `file` lives on: it is handed to the lock below
            try FileLock.acquire(fd: fd) {
                holder = Holder.read(fd) ?? holder
                let now = MonotonicClock.nanoseconds()
                if let deadline = holder?.deadline {
                    return now > deadline &+ UInt64(graceSeconds * 1e9)
                }
                return now > start &+ UInt64(fallbackSeconds * 1e9)
            }
        } catch {
            switch error {
            case .timedOut:
                let who = holder.map { "process \($0.pid)\(processName($0.pid).map { " (\($0))" } ?? "")" }
                throw AnnounceError(
                    code: .busy,
                    message: "another announcement (\(who ?? "holder unknown")) holds the announce lock \(path) past "
                        + "its own deadline; nothing was lowered — if that process is stopped or stuck, end it"
                        + (holder.map { " (`kill \($0.pid)`)" } ?? "") + " and try again")
            case .failed(let failure):
                throw AnnounceError(
                    code: .journal, message: "cannot lock \(path): \(failure.reason)", cause: ErrorCause(failure))
            }
        }
        let lock = AnnounceLock(path: path, file: file)
        lock.declare(budgetSeconds: budgetSeconds)
        return lock
    }

    /// Declares that this turn ends within `budgetSeconds` from now.
    func declare(budgetSeconds: Double) {
        let deadline = MonotonicClock.nanoseconds() &+ UInt64(max(0, min(budgetSeconds, 86_400)) * 1e9)
        let record = Array("\(getpid()) \(deadline)\n".utf8)
        _ = ftruncate(file.rawValue, 0)
        _ = record.withUnsafeBytes { pwrite(file.rawValue, $0.baseAddress, $0.count, 0) }
    }

    /// Clears the record and releases the lock (the descriptor closes with this object).
    func release() {
        _ = ftruncate(file.rawValue, 0)
        flock(file.rawValue, LOCK_UN)
    }

    /// What a holder declared: its process id and deadline.
    struct Holder: Equatable {
        var pid: Int32
        var deadline: UInt64

        /// The record in the lock file, if one is there.
        static func read(_ fd: Int32) -> Holder? {
            var buffer = [UInt8](repeating: 0, count: 64)
            let n = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, 0) }
            guard n > 0 else { return nil }
            let fields = String(decoding: buffer.prefix(n), as: UTF8.self).split(whereSeparator: \.isWhitespace)
            guard fields.count == 2, let pid = Int32(fields[0]), pid > 0, let deadline = UInt64(fields[1]) else {
                return nil
            }
            return Holder(pid: pid, deadline: deadline)
        }
    }

    /// The command name of process `pid` (letters, digits and `-_.` only), if it runs.
    static func processName(_ pid: Int32) -> String? {
        guard let bytes = FileIO.contents(ofFile: "/proc/\(pid)/comm", limit: 64) else { return nil }
        let name = String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: "\n")
        guard !name.isEmpty, name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "-_.".contains($0)) })
        else { return nil }
        return name
    }
}
