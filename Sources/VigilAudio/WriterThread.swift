internal import CALSA
import VigilBase

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
                KernelThread.nameCurrent("vigil-audio")
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
}
