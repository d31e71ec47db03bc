/// Runs `body` to its end even when the calling task is cancelled, and returns when it has.
///
/// For releases a stop must not cut short (closing a notification, giving a bus name back,
/// stopping workers): the cancellation that asked for the stop would otherwise reach their awaits.
/// The one unstructured task of this kind in Vigil: awaited at once, so it never outlives the
/// caller; it only shields `body` from the caller's cancellation. `body` bounds its own waits.
package func runUncancelled(_ body: @escaping @Sendable () async -> Void) async {
    await Task { await body() }.value
}
