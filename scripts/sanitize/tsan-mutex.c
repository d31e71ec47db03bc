// Teaches ThreadSanitizer the Swift runtime's `Synchronization.Mutex` on Linux (preloaded by
// scripts/sanitize.sh into thread-sanitized runs only; never part of a Vigil build).
//
// Why: `Mutex.withLock` is inlined into Vigil's (instrumented) code, so an uncontended lock and
// unlock are atomic compare-exchanges ThreadSanitizer sees as acquire and release. A contended
// lock goes through `_MutexHandle._lockSlow` / `_unlockSlow` in libswiftSynchronization.so,
// which is not instrumented: it spins with plain compare-exchanges and hands the lock over in
// the kernel (FUTEX_LOCK_PI / FUTEX_UNLOCK_PI). ThreadSanitizer then sees no happens-before
// edge between the two critical sections and reports a data race between accesses that the
// mutex does order (first seen: PlaybackStream.stop() signalling the writer under the lock
// while the writer, woken, takes the same lock to finish). A suppression cannot name these:
// the runtime's frames are not in the reported stacks.
//
// How: both slow paths are called through the PLT, so this library's definitions of the same
// symbols take precedence. Each calls the runtime's own function and tells ThreadSanitizer what
// it did, on the mutex word's address — the address the inlined fast paths synchronise on.
// Processes without ThreadSanitizer (servers the tests start) find the hooks absent and are
// not affected.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>

void __tsan_acquire(void *addr) __attribute__((weak));
void __tsan_release(void *addr) __attribute__((weak));

// `borrowing func _lockSlow(_ selfId: UInt32)` and `borrowing func _unlockSlow()`: Swift calling
// convention, the mutex word's address as `self` (clang's swift_context is LLVM's swiftself).
typedef __attribute__((swiftcall)) void LockSlow(uint32_t self_id, __attribute__((swift_context)) void *word);
typedef __attribute__((swiftcall)) void UnlockSlow(__attribute__((swift_context)) void *word);

#define LOCK_SLOW "$s15Synchronization12_MutexHandleV9_lockSlowyys6UInt32VF"
#define UNLOCK_SLOW "$s15Synchronization12_MutexHandleV11_unlockSlowyyF"

__attribute__((swiftcall, visibility("default"))) void vigil_tsan_lock_slow(
    uint32_t self_id, __attribute__((swift_context)) void *word) __asm__(LOCK_SLOW);
__attribute__((swiftcall, visibility("default"))) void vigil_tsan_unlock_slow(
    __attribute__((swift_context)) void *word) __asm__(UNLOCK_SLOW);

__attribute__((swiftcall)) void vigil_tsan_lock_slow(uint32_t self_id, __attribute__((swift_context)) void *word) {
    static LockSlow *real;
    if (real == 0) real = (LockSlow *)dlsym(RTLD_NEXT, LOCK_SLOW);
    real(self_id, word);
    if (__tsan_acquire) __tsan_acquire(word);
}

__attribute__((swiftcall)) void vigil_tsan_unlock_slow(__attribute__((swift_context)) void *word) {
    static UnlockSlow *real;
    if (real == 0) real = (UnlockSlow *)dlsym(RTLD_NEXT, UNLOCK_SLOW);
    if (__tsan_release) __tsan_release(word);
    real(word);
}
