// A correctly locked program that contends one `Mutex` from four threads. scripts/sanitize.sh
// builds it with ThreadSanitizer and runs it with tsan-mutex.c preloaded: any report means the
// preload no longer matches this toolchain's Mutex (and the suite's reports cannot be trusted).
// Without the preload it reports races on Linux (Swift 6.3), which is why the preload exists.
import Foundation
import Synchronization

final class Counter: @unchecked Sendable { var value = 0 }

let counter = Counter()
let mutex = Mutex(())
let threads = (0..<4).map { _ in
    Thread { for _ in 0..<100_000 { mutex.withLock { _ in counter.value += 1 } } }
}
for thread in threads { thread.start() }
while mutex.withLock({ _ in counter.value }) < 400_000 { usleep(1000) }
print("mutex-check: \(mutex.withLock { _ in counter.value }) increments")
