internal import CVigilSpawn
import Logging
import VigilBase

#if canImport(Glibc)
import Glibc
#endif

/// Reads one worker's `NOTIFY_SOCKET` and decides which datagrams count (systemd's
/// `NotifyAccess=main`): only those whose kernel-attached sender (SCM_CREDENTIALS) has the
/// supervisor's uid (or is root) and is the worker's main process or one of its descendants.
///
/// Reads are bounded per wake-up so that one flooding worker cannot starve the others; what is
/// left stays in the socket's kernel queue (itself bounded) for the next wake-up.
struct NotifyReader {
    /// Datagrams read from one socket per wake-up.
    static let readsPerWake = 256
    /// More datagrams than this within one second make a worker `flooding`.
    static let floodThreshold = 200

    let uid: uid_t
    let logger: Logger

    /// Reads what is queued for `worker` (at most ``readsPerWake`` datagrams) and passes each
    /// accepted message to `apply`. Returns true when more datagrams may be queued.
    func drain(_ worker: WorkerRuntime, now: Double, apply: (NotifyMessage) -> Void) -> Bool {
        guard worker.notifyFD >= 0 else { return false }
        var buffer = [CChar](repeating: 0, count: 4097)
        for _ in 0..<Self.readsPerWake {
            var pid: Int32 = -1
            var senderUID: Int32 = -1
            var gid: Int32 = -1
            let n = buffer.withUnsafeMutableBufferPointer {
                vigil_notify_receive(worker.notifyFD, $0.baseAddress, $0.count, &pid, &senderUID, &gid)
            }
            if n == -Int(EAGAIN) { return false }
            if n == -Int(EMSGSIZE) {
                count(worker, now: now)
                logger.warning("dropped an oversized notify datagram", metadata: ["worker.name": "\(worker.spec.name)"])
                continue
            }
            if n < 0 {
                logger.error(
                    "notify socket receive failed",
                    metadata: ["error": "\(SystemCallError("recvmsg", errno: Int32(n)))"])
                return false
            }
            count(worker, now: now)
            guard let root = worker.pid else {
                logger.debug(
                    "ignored a notify datagram for a stopped worker", metadata: ["worker.name": "\(worker.spec.name)"])
                continue
            }
            guard senderUID >= 0, UInt32(senderUID) == uid || senderUID == 0 else {
                logger.warning(
                    "rejected a notify datagram: the sender runs as uid \(senderUID), not as the supervisor's uid \(uid)",
                    metadata: [
                        "worker.name": "\(worker.spec.name)", "sender.pid": "\(pid)", "sender.uid": "\(senderUID)",
                    ])
                continue
            }
            guard pid > 0, ProcessTree.belongs(pid, toWorker: root) else {
                logger.warning(
                    "rejected a notify datagram: the sender is neither the worker's main process nor one of its descendants",
                    metadata: ["worker.name": "\(worker.spec.name)", "sender.pid": "\(pid)", "process.pid": "\(root)"])
                continue
            }
            let text = buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
            apply(NotifyMessage(text))
        }
        return true
    }

    /// Counts one datagram in the worker's one-second window and updates ``WorkerRuntime/flooding``.
    private func count(_ worker: WorkerRuntime, now: Double) {
        if now - worker.notifyWindowStart >= 1 {
            worker.notifyWindowStart = now
            worker.notifyCount = 0
        }
        worker.notifyCount += 1
    }
}
