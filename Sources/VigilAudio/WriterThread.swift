internal import CALSA

#if canImport(Glibc)
import Glibc
#endif

/// A detached POSIX thread for blocking ALSA work, off Swift's cooperative pool.
enum WriterThread {
    private final class Body {
        let run: () -> Void
        init(_ run: @escaping () -> Void) { self.run = run }
    }

    /// Starts `body` on a new detached thread. Returns false if the thread could not be created.
    static func spawn(_ body: @escaping @Sendable () -> Void) -> Bool {
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        defer { pthread_attr_destroy(&attributes) }
        pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
        pthread_attr_setstacksize(&attributes, 1 << 20)
        let context = Unmanaged.passRetained(
            Body {
                nameCurrentThread("vigil-audio")
                body()
            }
        ).toOpaque()
        var thread = pthread_t()
        let rc = pthread_create(
            &thread, &attributes,
            { raw in
                let body = Unmanaged<Body>.fromOpaque(raw!).takeRetainedValue()
                body.run()
                return nil
            }, context)
        if rc != 0 {
            Unmanaged<Body>.fromOpaque(context).release()
            return false
        }
        return true
    }

    /// The calling thread's Linux thread id (as in `/proc/self/task/TID`).
    static func currentID() -> Int32? {
        var buffer = [CChar](repeating: 0, count: 64)
        let length = readlink("/proc/thread-self", &buffer, buffer.count - 1)
        guard length > 0 else { return nil }
        let text = String(decoding: buffer[0..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        guard let slash = text.lastIndex(of: "/") else { return nil }
        return Int32(text[text.index(after: slash)...])
    }

    /// Names the calling thread (as `top -H` and `/proc/self/task/TID/comm` show it).
    static func nameCurrentThread(_ name: String) {
        let fd = open("/proc/thread-self/comm", O_WRONLY)
        guard fd >= 0 else { return }
        let bytes = Array(name.utf8.prefix(15))
        _ = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
        close(fd)
    }
}
