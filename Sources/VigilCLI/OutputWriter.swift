import FoundationEssentials
import VigilBase

#if canImport(Glibc)
import Glibc
#endif

/// Writes a long-running command's standard output on a thread of its own, so that output can
/// never hold up the control path: a full pipe (`vigil up | sleep 200`) blocks only this
/// thread, a closed one (`vigil up | head -2`) ends the output (EPIPE; SIGPIPE is ignored), and
/// at most ``limit`` bytes wait — older text is dropped first, and the drop is said.
final class OutputWriter: @unchecked Sendable {
    /// The most bytes that wait to be written.
    static let limit = 256 * 1024

    private let fd: Int32
    private let condition = ConditionLock()
    // Guarded by `condition`.
    private var queue: [[UInt8]] = []
    private var queued = 0
    private var dropped = 0
    private var closed = false
    private var writing = false
    private var finished = false

    init(fd: Int32 = 1) {
        self.fd = fd
        KernelThread.start(name: "vigil-output") { [self] in run() }
    }

    /// Queues `text`; returns at once.
    func write(_ text: String) {
        let bytes = Array(text.utf8)
        condition.withLock {
            guard !closed, !finished else { return }
            queue.append(bytes)
            queued += bytes.count
            while queued > Self.limit, queue.count > 1 {
                queued -= queue.removeFirst().count
                dropped += 1
            }
            condition.broadcast()
        }
    }

    /// Waits up to `timeout` seconds for what is queued to be written, then stops taking text.
    /// Returns whether everything was written.
    @discardableResult
    func finish(timeout: Double) -> Bool {
        condition.withLock {
            let deadline = MonotonicClock.seconds() + timeout
            while !closed, !queue.isEmpty || writing {
                if !condition.wait(seconds: deadline - MonotonicClock.seconds()) { break }
            }
            let done = queue.isEmpty && !writing
            finished = true
            condition.broadcast()
            return done
        }
    }

    private func run() {
        while true {
            let chunk: [UInt8] = condition.withLock {
                while queue.isEmpty && !finished { condition.wait() }
                if queue.isEmpty { return [] }
                var chunk: [UInt8] = []
                if dropped > 0 {
                    chunk += Array("… (\(dropped) line\(dropped == 1 ? "" : "s") dropped: output was not read)\n".utf8)
                    dropped = 0
                }
                for item in queue { chunk += item }
                queue.removeAll()
                queued = 0
                writing = true
                return chunk
            }
            if chunk.isEmpty { return }
            let ok = writeAll(chunk)
            condition.withLock {
                writing = false
                if !ok {
                    closed = true
                    queue.removeAll()
                    queued = 0
                }
                condition.broadcast()
            }
            if !ok { return }
        }
    }

    /// False once the reader is gone (EPIPE) or the descriptor is unusable.
    private func writeAll(_ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + offset, bytes.count - offset) }
            if n < 0 {
                if errno == EINTR { continue }
                if errno == EAGAIN {
                    var pfd = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
                    _ = poll(&pfd, 1, -1)
                    continue
                }
                return false
            }
            offset += n
        }
        return true
    }
}
