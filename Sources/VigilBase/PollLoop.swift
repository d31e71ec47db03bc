import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The one event loop of Vigil's own threads: a thread it owns that runs queued jobs in order
/// and sleeps in `poll(2)` on its ``WakeDescriptor`` and on the descriptors registered with it,
/// until one is ready, a deadline comes or a job is queued. The D-Bus connection, the
/// supervisor and the soundscape's control channel each run on one.
///
/// Jobs (``enqueue(_:)``, ``run(_:)``) come from any thread. Everything else, registering
/// descriptors and timers and the ``Hooks``, runs on the loop's thread (or before ``start(_:)``),
/// so an owner keeps its state confined to that thread without locks. A descriptor handed over
/// as an ``OwnedDescriptor`` belongs to the loop: ``remove(_:)`` or the loop's end closes it.
///
/// One turn: the queued jobs run; ``Hooks/prepare`` returns the owner's nearest deadline;
/// `poll` waits for the wake descriptor, the registered descriptors and the nearest deadline;
/// the handlers of the ready descriptors run, then the due timers, then ``Hooks/afterPoll``.
/// ``close()`` (any thread) or ``stop()`` (the loop's thread) ends it: the jobs queued until
/// then run, every owned descriptor and the wake descriptor are closed, ``Hooks/shutdown`` runs
/// and ``closed()`` returns.
package final class PollLoop: @unchecked Sendable {
    package typealias Job = @Sendable (PollLoop) -> Void
    /// Called with the loop and what `poll` reported for the descriptor.
    package typealias Handler = (PollLoop, Ready) -> Void

    /// A watched descriptor `poll` reported: its registration, its number and its `revents`.
    package struct Ready {
        package let token: Token
        package let descriptor: Int32
        package let events: Int16
    }

    /// `POLLIN`.
    package static let readable = Int16(POLLIN)
    /// `POLLOUT`.
    package static let writable = Int16(POLLOUT)

    /// A registered descriptor or timer.
    package struct Token: Hashable, Sendable {
        fileprivate let id: UInt64
    }

    /// What the owner does at fixed points of each turn, on the loop's thread.
    package struct Hooks: @unchecked Sendable {
        /// Before `poll`: returns the owner's nearest deadline (a ``MonotonicClock`` time), if any.
        package var prepare: ((PollLoop) -> Double?)?
        /// After the ready descriptors' handlers and the due timers ran.
        package var afterPoll: ((PollLoop) -> Void)?
        /// Once, after the loop's descriptors are closed, as the thread ends.
        package var shutdown: ((PollLoop) -> Void)?

        package init(
            prepare: ((PollLoop) -> Double?)? = nil, afterPoll: ((PollLoop) -> Void)? = nil,
            shutdown: ((PollLoop) -> Void)? = nil
        ) {
            self.prepare = prepare
            self.afterPoll = afterPoll
            self.shutdown = shutdown
        }
    }

    private struct Shared: ~Copyable {
        var queue = JobQueue<Job>()
        /// nil once the loop has ended (closed under this lock, so no signal can hit a reused number).
        var wake: WakeDescriptor?
        var ended = false
        var endWaiters: [CheckedContinuation<Void, Never>] = []
    }

    private final class Watch {
        var owned: OwnedDescriptor?
        let fd: Int32
        var events: Int16
        let handler: Handler

        init(owned: consuming OwnedDescriptor?, fd: Int32, events: Int16, handler: @escaping Handler) {
            self.owned = owned
            self.fd = fd
            self.events = events
            self.handler = handler
        }
    }

    private let shared: Mutex<Shared>
    private let name: String
    /// The wake descriptor's number, for the loop's own thread (which alone closes it).
    private let wakeFD: Int32
    private let started = Atomic<Bool>(false)

    // Confined to the loop's thread (or to the creator before start()).
    private var hooks = Hooks()
    private var watches: [UInt64: Watch] = [:]
    /// Watched descriptors in the order they were added (poll order, handler order).
    private var order: [UInt64] = []
    private var timers: [UInt64: (deadline: Double, handler: (PollLoop) -> Void)] = [:]
    private var nextID: UInt64 = 1
    private var ended = false

    /// A loop whose thread the kernel will show as `name`; nothing runs until ``start(_:)``.
    /// - Throws: ``SystemCallError`` for `eventfd` when the wake descriptor cannot be created.
    package init(name: String) throws(SystemCallError) {
        let wake = try WakeDescriptor()
        wakeFD = wake.rawValue
        var state = Shared()
        state.wake = consume wake
        shared = Mutex(state)
        self.name = name
    }

    /// The wake descriptor's number (tests look for it in `/proc/self/fd` and in children).
    package var wakeDescriptorNumber: Int32 { wakeFD }

    /// Starts the thread with `hooks`. Call it once.
    package func start(_ hooks: Hooks = Hooks()) {
        precondition(!started.exchange(true, ordering: .relaxed), "PollLoop.start called twice")
        self.hooks = hooks
        KernelThread.start(name: name) { [self] in main() }
    }

    // MARK: From any thread

    /// Queues `job` for the loop's thread and wakes it; false once the loop is closed.
    @discardableResult
    package func enqueue(_ job: @escaping Job) -> Bool {
        shared.withLock { state in
            guard state.queue.append(job) else { return false }
            state.wake?.signal()
            return true
        }
    }

    /// Runs `body` on the loop's thread after the jobs queued before it and returns its result;
    /// `nil` once the loop is closed.
    package func run<T: Sendable>(_ body: @escaping @Sendable (PollLoop) -> T) async -> T? {
        await Handoff<T?>.value { handoff in
            if !enqueue({ handoff.deliver(body($0)) }) { handoff.deliver(nil) }
        }
    }

    /// Wakes the loop for one more turn (an owner whose state changed outside a job).
    package func wake() {
        shared.withLock { $0.wake?.signal() }
    }

    /// Ends the loop: no more jobs are taken, those queued run, then it closes its descriptors
    /// and its thread ends. Safe to call twice and from the loop's thread.
    package func close() {
        shared.withLock { state in
            if state.queue.close() { state.wake?.signal() }
        }
    }

    /// Returns once the loop's thread has closed everything and ended (at once if it has).
    /// Only for a started loop.
    package func closed() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = shared.withLock { state -> Bool in
                if state.ended { return true }
                state.endWaiters.append(continuation)
                return false
            }
            if now { continuation.resume() }
        }
    }

    // MARK: On the loop's thread

    /// Watches `descriptor`, which the loop now owns, for `events`; `handler` runs on each turn it
    /// is ready. ``remove(_:)`` or the loop's end closes it.
    @discardableResult
    package func add(_ descriptor: consuming OwnedDescriptor, events: Int16, _ handler: @escaping Handler) -> Token {
        let fd = descriptor.rawValue
        return register(Watch(owned: descriptor, fd: fd, events: events, handler: handler))
    }

    /// Watches `fd`, which someone else owns and closes (a C library's socket), for `events`.
    @discardableResult
    package func watch(_ fd: Int32, events: Int16, _ handler: @escaping Handler) -> Token {
        register(Watch(owned: nil, fd: fd, events: events, handler: handler))
    }

    private func register(_ watch: Watch) -> Token {
        // After the end nothing is watched: an owned descriptor closes as `watch` goes.
        guard !ended else { return Token(id: 0) }
        let id = newID()
        watches[id] = watch
        order.append(id)
        return Token(id: id)
    }

    /// Changes what a watched descriptor is watched for (0: nothing, for now).
    package func setEvents(_ token: Token, _ events: Int16) {
        watches[token.id]?.events = events
    }

    /// The number of a watched descriptor, lent for a call.
    package func descriptor(_ token: Token) -> Int32? {
        watches[token.id]?.fd
    }

    /// Runs `handler` once, on the first turn at or after `deadline` (a ``MonotonicClock`` time).
    @discardableResult
    package func schedule(at deadline: Double, _ handler: @escaping (PollLoop) -> Void) -> Token {
        guard !ended else { return Token(id: 0) }
        let id = newID()
        timers[id] = (deadline, handler)
        return Token(id: id)
    }

    /// Stops watching a descriptor (closing it if the loop owns it) or cancels a timer.
    package func remove(_ token: Token) {
        timers.removeValue(forKey: token.id)
        guard watches.removeValue(forKey: token.id) != nil else { return }
        order.removeAll { $0 == token.id }
    }

    /// Hands a watched descriptor's ownership back (nil for one the loop does not own).
    package func take(_ token: Token) -> OwnedDescriptor? {
        guard let watch = watches.removeValue(forKey: token.id) else { return nil }
        order.removeAll { $0 == token.id }
        return watch.owned.take()
    }

    /// Ends the loop after this turn, as ``close()``.
    package func stop() {
        close()
    }

    /// Waits, inside a job, for `fd` to be ready for `events`, for a wake-up (a job queued,
    /// ``wake()``, ``close()``) or until `deadline`; returns `fd`'s `revents` (0 when it was not
    /// what ended the wait). For a job that must wait for one descriptor yet stay interruptible.
    package func wait(for fd: Int32, events: Int16, until deadline: Double?) -> Int16 {
        var fds = [pollfd(fd: wakeFD, events: Self.readable, revents: 0), pollfd(fd: fd, events: events, revents: 0)]
        _ = poll(&fds, 2, Self.milliseconds(until: deadline))
        if fds[0].revents != 0 { drainWake() }
        return fds[1].revents
    }

    private func newID() -> UInt64 {
        defer { nextID += 1 }
        return nextID
    }

    // MARK: The thread

    private func main() {
        while true {
            let (jobs, closed) = shared.withLock { state in (state.queue.takeAll(), state.queue.closed) }
            for job in jobs { job(self) }
            if closed { break }
            var deadline = hooks.prepare?(self)
            for (_, timer) in timers { deadline = min(deadline ?? timer.deadline, timer.deadline) }
            var ids: [UInt64] = []
            var fds = [pollfd(fd: wakeFD, events: Self.readable, revents: 0)]
            for id in order {
                guard let watch = watches[id], watch.events != 0 else { continue }
                ids.append(id)
                fds.append(pollfd(fd: watch.fd, events: watch.events, revents: 0))
            }
            // A job (or a hook) may have queued more, or drained the wake descriptor: look again at once.
            let pending = shared.withLock { !$0.queue.isEmpty || $0.queue.closed }
            let rc = poll(&fds, nfds_t(fds.count), pending ? 0 : Self.milliseconds(until: deadline))
            if rc > 0 {
                if fds[0].revents != 0 { drainWake() }
                for (index, id) in ids.enumerated() where fds[index + 1].revents != 0 {
                    // A handler before this one may have removed it.
                    guard let watch = watches[id], watch.fd == fds[index + 1].fd else { continue }
                    watch.handler(
                        self, Ready(token: Token(id: id), descriptor: watch.fd, events: fds[index + 1].revents))
                }
            }
            fireTimers()
            hooks.afterPoll?(self)
        }
        end()
    }

    private func fireTimers() {
        guard !timers.isEmpty else { return }
        let now = MonotonicClock.seconds()
        let due = timers.filter { $0.value.deadline <= now }.sorted { $0.value.deadline < $1.value.deadline }
        for (id, timer) in due where timers.removeValue(forKey: id) != nil {
            timer.handler(self)
        }
    }

    private func drainWake() {
        var value: UInt64 = 0
        _ = withUnsafeMutableBytes(of: &value) { Glibc.read(wakeFD, $0.baseAddress, $0.count) }
    }

    /// Closes every owned descriptor and the wake descriptor, runs the shutdown hook, wakes
    /// ``closed()``.
    private func end() {
        ended = true
        watches.removeAll()
        order.removeAll()
        timers.removeAll()
        let wake = shared.withLock { state in state.wake.take() }
        _ = consume wake
        let shutdown = hooks.shutdown
        hooks = Hooks()
        shutdown?(self)
        let waiters = shared.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.ended = true
            defer { state.endWaiters.removeAll() }
            return state.endWaiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// `poll`'s timeout for `deadline`: -1 for none, else the milliseconds left, rounded up.
    static func milliseconds(until deadline: Double?) -> Int32 {
        guard let deadline else { return -1 }
        let left = ((deadline - MonotonicClock.seconds()) * 1000).rounded(.up)
        guard left.isFinite else { return left > 0 ? -1 : 0 }
        return Int32(max(0, min(left, 86_400_000)))
    }
}
