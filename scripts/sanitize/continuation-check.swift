// Shows where ThreadSanitizer loses a continuation's ordering in the Swift runtime (6.3, Linux),
// and that a value handed over through a Mutex (VigilBase's Handoff) is ordered on every path.
//
//   swiftc -sanitize=thread -g scripts/sanitize/continuation-check.swift -o /tmp/continuation-check
//   /tmp/continuation-check before    # 1 report: the box's value, written by the thread, read by the task
//   /tmp/continuation-check after     # no report
//   /tmp/continuation-check handoff   # no report (resumed before the await too)
//
// A thread writes a fresh object and resumes a continuation with it; the task reads it. `after`:
// the task has suspended long before the resume, the runtime enqueues it and tells ThreadSanitizer
// (`_swift_tsan_release` on resume, `_swift_tsan_acquire` when the job runs): no report. `before`:
// the thread resumes while the task is still inside `withCheckedContinuation`'s body (as a D-Bus
// reply can beat the `await` on a loaded machine); `swift_continuation_await` then finds the
// continuation already resumed and goes on without any `_swift_tsan_acquire`, so the release has
// no partner and ThreadSanitizer reports the read. The program is correct in all three modes (the
// runtime's status word is loaded with acquire ordering); only the annotation is missing.
// `handoff`: the same timing as `before`, the value stored and taken under a Mutex, which
// ThreadSanitizer sees: no report. That is why Vigil's D-Bus calls and DedicatedThread hand
// their results over that way.
import Glibc
import Synchronization

final class Box: @unchecked Sendable { var value = 0 }
final class Slot: Sendable { let box = Mutex<Box?>(nil) }

/// Runs `body` on a new thread after `delay` microseconds.
func onThread(after delay: UInt32, _ body: @escaping @Sendable () -> Void) {
    final class Start {
        let run: () -> Void
        init(_ run: @escaping () -> Void) { self.run = run }
    }
    let start = Start {
        usleep(delay)
        body()
    }
    var thread = pthread_t()
    _ = pthread_create(
        &thread, nil,
        { arg in
            Unmanaged<Start>.fromOpaque(arg!).takeRetainedValue().run()
            return nil
        }, Unmanaged.passRetained(start).toOpaque())
    pthread_detach(thread)
}

func made() -> Box {
    let box = Box()
    box.value = 42  // written on the resuming thread
    return box
}

let mode = CommandLine.arguments.dropFirst().first ?? "before"
let box: Box
switch mode {
case "before", "after":
    box = await withCheckedContinuation { continuation in
        onThread(after: mode == "before" ? 0 : 300_000) { continuation.resume(returning: made()) }
        // Not a synchronisation: `before` only gives the thread time to resume first.
        if mode == "before" { usleep(300_000) }
    }
case "handoff":
    let slot = Slot()
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
        onThread(after: 0) {
            slot.box.withLock { $0 = made() }
            continuation.resume()
        }
        usleep(300_000)
    }
    box = slot.box.withLock { $0! }
default:
    print("usage: continuation-check before|after|handoff")
    exit(64)
}
print("\(mode): \(box.value)")  // read on the awaiting task
