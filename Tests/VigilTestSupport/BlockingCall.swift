import Foundation

/// Runs a blocking `body` (a `poll`, a pipe read, `waitUntilExit`) on a thread of its own, so tests
/// never block Swift's cooperative pool, which the code under test may need meanwhile.
public func blockingCall<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        let thread = Thread { continuation.resume(returning: body()) }
        thread.start()
    }
}
