internal import CVigilBase

#if canImport(Glibc)
import Glibc
#endif

/// Threads as the kernel sees them. Foundation's `Thread.name` never reaches the kernel on Linux,
/// and a new thread inherits its creator's name, so `top -H`, `ps -L` and
/// `/proc/self/task/TID/comm` would show the wrong one: a thread names itself here.
package enum KernelThread {
    /// Names the calling thread (`PR_SET_NAME`; the kernel keeps at most 15 bytes). Opens no
    /// file, so it cannot take a descriptor number another thread is about to get.
    package static func nameCurrent(_ name: String) {
        vigil_set_thread_name(name)
    }

    /// The calling thread's Linux thread id (as in `/proc/self/task/TID`).
    package static func currentID() -> Int32? {
        var buffer = [CChar](repeating: 0, count: 64)
        let length = readlink("/proc/thread-self", &buffer, buffer.count - 1)
        guard length > 0 else { return nil }
        let text = String(decoding: buffer[0..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        guard let slash = text.lastIndex(of: "/") else { return nil }
        return Int32(text[text.index(after: slash)...])
    }

    /// Starts `body` on a new detached POSIX thread that first gives itself `name` (plain
    /// pthreads: Foundation's `Thread` would link full Foundation into every executable).
    package static func start(name: String, _ body: @escaping @Sendable () -> Void) {
        let start = Unmanaged.passRetained(Start(name: name, body: body)).toOpaque()
        var thread = pthread_t()
        let result = pthread_create(
            &thread, nil,
            { argument in
                let start = Unmanaged<Start>.fromOpaque(argument!).takeRetainedValue()
                KernelThread.nameCurrent(start.name)
                start.body()
                return nil
            }, start)
        // Out of threads or memory: as Foundation's `Thread.start()`, nothing to recover.
        precondition(result == 0, "pthread_create failed: \(result)")
        pthread_detach(thread)
    }

    private final class Start: Sendable {
        let name: String
        let body: @Sendable () -> Void
        init(name: String, body: @escaping @Sendable () -> Void) {
            self.name = name
            self.body = body
        }
    }
}
