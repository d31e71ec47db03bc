import FoundationEssentials
import VigilBase

#if canImport(Glibc)
import Glibc
#endif

/// Writes a long-running command's standard output on a ``PollLoop`` of its own, so that output
/// can never hold up the control path: a full pipe (`vigil up | sleep 200`) blocks only that
/// thread, a closed one (`vigil up | head -2`) ends the output (EPIPE; SIGPIPE is ignored), and
/// at most ``limit`` bytes wait — older text is dropped first, and the drop is said.
final class OutputWriter: @unchecked Sendable {
    /// The most bytes that wait to be written.
    static let limit = 256 * 1024

    private let fd: Int32
    /// nil when no thread could be made (the process is out of descriptors): text is then
    /// written by the caller, at once.
    private let loop: PollLoop?
    private let condition = ConditionLock()
    // Guarded by `condition`.
    private var queue: [[UInt8]] = []
    private var queued = 0
    private var dropped = 0
    private var closed = false
    /// A flush job is queued or running.
    private var flushing = false
    private var finished = false

    init(fd: Int32 = 1) {
        self.fd = fd
        let loop = try? PollLoop(name: "vigil-output")
        self.loop = loop
        loop?.start()
    }

    deinit { loop?.close() }

    /// Queues `text`; returns at once.
    func write(_ text: String) {
        let bytes = Array(text.utf8)
        let schedule = condition.withLock { () -> Bool in
            guard !closed, !finished else { return false }
            queue.append(bytes)
            queued += bytes.count
            while queued > Self.limit, queue.count > 1 {
                queued -= queue.removeFirst().count
                dropped += 1
            }
            condition.broadcast()
            if flushing { return false }
            flushing = true
            return true
        }
        guard schedule else { return }
        if let loop {
            loop.enqueue { [self] loop in flush(loop) }
        } else {
            flush(nil)
        }
    }

    /// Waits up to `timeout` seconds for what is queued to be written, then stops taking text.
    /// Returns whether everything was written.
    @discardableResult
    func finish(timeout: Double) -> Bool {
        let done = condition.withLock {
            let deadline = MonotonicClock.seconds() + timeout
            while !closed, !queue.isEmpty || flushing {
                if !condition.wait(seconds: deadline - MonotonicClock.seconds()) { break }
            }
            let done = queue.isEmpty && !flushing
            finished = true
            condition.broadcast()
            return done
        }
        loop?.close()  // its thread ends once what is queued is written (or the reader is gone)
        return done
    }

    /// Writes what is queued until nothing is left or the reader is gone.
    private func flush(_ loop: PollLoop?) {
        while true {
            let chunk: [UInt8]? = condition.withLock {
                if queue.isEmpty {
                    flushing = false
                    condition.broadcast()
                    return nil
                }
                var chunk: [UInt8] = []
                if dropped > 0 {
                    chunk += Array("… (\(dropped) line\(dropped == 1 ? "" : "s") dropped: output was not read)\n".utf8)
                    dropped = 0
                }
                for item in queue { chunk += item }
                queue.removeAll()
                queued = 0
                return chunk
            }
            guard let chunk else { return }
            if !writeAll(chunk, loop) {
                condition.withLock {
                    closed = true
                    queue.removeAll()
                    queued = 0
                    flushing = false
                    condition.broadcast()
                }
                return
            }
        }
    }

    /// False once the reader is gone (EPIPE) or the descriptor is unusable.
    private func writeAll(_ bytes: [UInt8], _ loop: PollLoop?) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + offset, bytes.count - offset) }
            if n < 0 {
                let number = errno
                if number == EINTR { continue }
                if number == EAGAIN {
                    if let loop {
                        _ = loop.wait(for: fd, events: PollLoop.writable, until: nil)
                    } else {
                        var entry = pollfd(fd: fd, events: PollLoop.writable, revents: 0)
                        _ = poll(&entry, 1, -1)
                    }
                    continue
                }
                return false
            }
            offset += n
        }
        return true
    }
}
