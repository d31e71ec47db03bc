internal import CSystemd
import Dispatch
import Logging
import Synchronization
import VigilBase

#if canImport(Glibc)
import Glibc
#endif

/// The sd-bus connection of a ``DBusConnection`` and everything confined to its thread: a
/// ``PollLoop`` whose turns process the bus (`sd_bus_process`) and sleep in `poll` on the bus's
/// socket, the loop's wake descriptor and sd-bus's next timeout.
final class BusLoop: @unchecked Sendable {
    typealias Job = @Sendable (BusLoop) -> Void

    private let loop: PollLoop
    private let connected = Atomic<Bool>(true)
    /// Set (from any thread) to end ``open(bus:address:usec:)`` early.
    private let openAborted = Atomic<Bool>(false)
    private let callIDs = Atomic<UInt64>(1)
    /// Tasks waiting in ``disconnection()``, by id; `lost` once the connection is gone for good.
    private let lossWaiters = Mutex<(lost: Bool, next: UInt64, waiting: [UInt64: CheckedContinuation<Void, Never>])>(
        (false, 0, [:]))
    let logger: Logger

    // Confined to the thread.
    var bus: OpaquePointer?
    /// The bus's socket as the loop watches it (sd-bus owns and closes it).
    private var busWatch: PollLoop.Token?
    private var pending: [UInt64: PendingCall] = [:]
    private var registrations: [UInt64: (slot: OpaquePointer?, box: AnyObject)] = [:]
    private var nextID: UInt64 = 1

    /// Starts the connection's thread, named `name`.
    /// - Throws: ``SystemCallError`` when its wake descriptor cannot be created.
    init(name: String, logger: Logger) throws(SystemCallError) {
        loop = try PollLoop(name: name)
        self.logger = logger
        loop.start(.init(prepare: { [self] loop in processBus(loop) }, shutdown: { [self] _ in shutdown() }))
    }

    var isConnected: Bool { connected.load(ordering: .relaxed) }

    /// `duration` in microseconds (at least 1), as sd-bus takes timeouts.
    static func microseconds(_ duration: Duration) -> UInt64 {
        let (seconds, attoseconds) = duration.components
        guard seconds >= 0 else { return 1 }
        let whole = UInt64(clamping: seconds).multipliedReportingOverflow(by: 1_000_000)
        if whole.overflow { return UInt64.max / 2 }
        return max(1, whole.partialValue &+ UInt64(clamping: attoseconds / 1_000_000_000_000))
    }

    func newCallID() -> UInt64 { callIDs.add(1, ordering: .relaxed).oldValue }

    // MARK: Opening

    /// Connects the bus thread's connection to `address` and waits, polling on this thread, until the
    /// bus has authenticated it and answered `Hello`, at most `usec` microseconds or until
    /// ``abortOpen()``. Returns the unique name. sd-bus would otherwise wait up to 90 s for
    /// authentication (its own timeout) with nothing able to end the wait.
    func open(bus name: DBusBus, address: String, usec: UInt64) -> Result<String, DBusError> {
        var handle: OpaquePointer?
        var r = sd_bus_new(&handle)
        if r >= 0 { r = sd_bus_set_address(handle, address) }
        if r >= 0 { r = sd_bus_set_bus_client(handle, 1) }
        if r >= 0 { r = sd_bus_negotiate_fds(handle, 1) }
        // Bounds the calls sd-bus makes synchronously for us (AddMatch) as well.
        if r >= 0 { r = sd_bus_set_method_call_timeout(handle, usec) }
        if r >= 0 { r = sd_bus_start(handle) }
        guard r >= 0, let handle else {
            if let handle { sd_bus_flush_close_unref(handle) }
            return .failure(
                .failed(.connectFailed, call: "sd_bus_start", result: r, "cannot connect to the \(name) at \(address)"))
        }
        let start = MonotonicClock.nanoseconds() / 1000
        let deadline = start &+ usec
        var failure: DBusError?
        while failure == nil {
            var p: Int32
            repeat { p = sd_bus_process(handle, nil) } while p > 0
            if p < 0 || sd_bus_is_open(handle) <= 0 {
                failure = .failed(
                    .connectFailed, call: "sd_bus_process", result: p < 0 ? p : -ECONNRESET,
                    "the \(name) at \(address) closed the connection before it was ready")
                break
            }
            if sd_bus_is_ready(handle) > 0 { break }
            if openAborted.load(ordering: .relaxed) {
                failure = DBusError(
                    code: .cancelled, message: "connecting to the \(name) at \(address) was cancelled")
                break
            }
            let now = MonotonicClock.nanoseconds() / 1000
            if now >= deadline {
                failure = DBusError(
                    code: .timedOut,
                    message:
                        "the \(name) at \(address) accepted the connection but did not answer within "
                        + "\(Self.secondsText(usec)) (a hung or overloaded dbus-daemon?)")
                break
            }
            var until = deadline
            var busTimeout: UInt64 = 0
            if sd_bus_get_timeout(handle, &busTimeout) >= 0 && busTimeout < until { until = busTimeout }
            // Jobs queued meanwhile (and a wake-up) end the wait; they run after this one.
            _ = loop.wait(
                for: sd_bus_get_fd(handle), events: Int16(truncatingIfNeeded: sd_bus_get_events(handle)),
                until: Double(until) / 1e6)
        }
        var unique: UnsafePointer<CChar>?
        if failure == nil {
            let u = sd_bus_get_unique_name(handle, &unique)
            if u < 0 || unique == nil {
                failure = .failed(
                    .connectFailed, call: "sd_bus_get_unique_name", result: u < 0 ? u : -EINVAL,
                    "the \(name) at \(address) gave no unique name")
            }
        }
        if let failure {
            sd_bus_close(handle)
            sd_bus_unref(handle)
            return .failure(failure)
        }
        bus = handle
        return .success(String(cString: unique!))
    }

    /// Ends a running ``open(bus:address:usec:)`` (from any thread) with ``DBusError/Code/cancelled``.
    func abortOpen() {
        openAborted.store(true, ordering: .relaxed)
        loop.wake()
    }

    private static func secondsText(_ usec: UInt64) -> String {
        usec % 1_000_000 == 0 ? "\(usec / 1_000_000) s" : "\(usec / 1000) ms"
    }

    // MARK: Disconnection

    func disconnection() async {
        let id = lossWaiters.withLock { state -> UInt64 in
            defer { state.next += 1 }
            return state.next
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now = lossWaiters.withLock { state -> Bool in
                    if state.lost { return true }
                    state.waiting[id] = continuation
                    return false
                }
                if now {
                    continuation.resume()
                } else if Task.isCancelled {
                    lossWaiters.withLock { $0.waiting.removeValue(forKey: id) }?.resume()
                }
            }
        } onCancel: {
            lossWaiters.withLock { $0.waiting.removeValue(forKey: id) }?.resume()
        }
    }

    /// Marks the connection gone for good and wakes every ``disconnection()`` waiter.
    private func markLost() {
        connected.store(false, ordering: .relaxed)
        let waiting = lossWaiters.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.lost = true
            defer { state.waiting.removeAll() }
            return Array(state.waiting.values)
        }
        for continuation in waiting { continuation.resume() }
    }

    @discardableResult
    func enqueue(_ job: @escaping Job) -> Bool {
        loop.enqueue { [self] _ in job(self) }
    }

    func run<T: Sendable>(_ body: @escaping @Sendable (BusLoop) -> T) async -> T? {
        await loop.run { [self] _ in body(self) }
    }

    /// Runs `body` on the loop's thread and returns its value; fails as
    /// ``DBusError/Code/disconnected``, naming `operation`, when the connection is closed.
    func perform<T: Sendable>(
        _ operation: String, function: String = #function,
        _ body: @escaping @Sendable (BusLoop) -> Result<T, DBusError>
    ) async throws(DBusError) -> T {
        let result =
            await run(body)
            ?? .failure(
                DBusError(
                    code: .disconnected, message: "\(operation): the connection is closed", function: function))
        return try result.get()
    }

    /// Lets the thread run what is queued, close the bus and exit.
    func close() {
        loop.close()
    }

    /// A turn of the loop: processes what the bus has for us, then returns sd-bus's next
    /// timeout and has the loop watch its socket for what sd-bus waits for.
    private func processBus(_ loop: PollLoop) -> Double? {
        guard let bus, connected.load(ordering: .relaxed) else { return nil }
        var r: Int32
        repeat { r = sd_bus_process(bus, nil) } while r > 0
        if r < 0 || sd_bus_is_open(bus) <= 0 {
            markLost()
            logger.info(
                "D-Bus connection lost", metadata: ["dbus.error": "\(SystemCallError("sd_bus_process", errno: r))"])
            failPending(DBusError(code: .disconnected, message: "the bus closed the connection"))
            unwatchBus()
            return nil
        }
        let events = Int16(truncatingIfNeeded: sd_bus_get_events(bus))
        if let busWatch {
            loop.setEvents(busWatch, events)
        } else {
            busWatch = loop.watch(sd_bus_get_fd(bus), events: events) { _, _ in }
        }
        var until: UInt64 = 0
        guard sd_bus_get_timeout(bus, &until) >= 0, until != UInt64.max else { return nil }
        return Double(until) / 1e6  // CLOCK_MONOTONIC microseconds, as MonotonicClock
    }

    private func unwatchBus() {
        if let busWatch { loop.remove(busWatch) }
        busWatch = nil
    }

    /// Closes the bus and fails or releases everything on it. Idempotent.
    func shutdown() {
        markLost()
        unwatchBus()
        for (_, registration) in registrations { if let slot = registration.slot { sd_bus_slot_unref(slot) } }
        registrations.removeAll()
        if let bus { sd_bus_flush_close_unref(bus) }
        bus = nil
        failPending(DBusError(code: .disconnected, message: "the connection was closed"))
    }

    private func failPending(_ error: DBusError) {
        let calls = pending
        pending.removeAll()
        for (_, call) in calls { call.finish(.failure(error)) }
    }

    private func newID() -> UInt64 {
        defer { nextID += 1 }
        return nextID
    }

    // MARK: Calls

    final class PendingCall {
        let id: UInt64
        let member: String
        let loop: BusLoop
        private var handoff: Handoff<Result<[DBusValue], DBusError>>?

        init(id: UInt64, member: String, loop: BusLoop, handoff: Handoff<Result<[DBusValue], DBusError>>) {
            self.id = id
            self.member = member
            self.loop = loop
            self.handoff = handoff
        }

        func finish(_ result: Result<[DBusValue], DBusError>) {
            handoff?.deliver(result)
            handoff = nil
        }
    }

    func startCall(
        id: UInt64, destination: String?, path: String, interface: String?, member: String, arguments: [DBusValue],
        usec: UInt64, handoff: Handoff<Result<[DBusValue], DBusError>>
    ) {
        guard let bus, connected.load(ordering: .relaxed) else {
            handoff.deliver(.failure(DBusError(code: .disconnected, message: "\(member): the connection is closed")))
            return
        }
        var message: OpaquePointer?
        var r = sd_bus_message_new_method_call(bus, &message, destination, path, interface, member)
        if r >= 0 { r = MessageCoding.append(arguments, to: message) }
        guard r >= 0 else {
            if let message { sd_bus_message_unref(message) }
            handoff.deliver(
                .failure(
                    .failed(
                        .invalidMessage, call: "sd_bus_message_append", result: r,
                        "cannot build the call \(member)(\(arguments.map(\.signature).joined())) to \(path)")))
            return
        }
        let call = PendingCall(id: id, member: member, loop: self, handoff: handoff)
        pending[call.id] = call
        r = sd_bus_call_async(
            bus, nil, message,
            { reply, userdata, _ in
                let call = Unmanaged<PendingCall>.fromOpaque(userdata!).takeUnretainedValue()
                call.loop.complete(call, reply: reply)
                return 1
            }, Unmanaged.passUnretained(call).toOpaque(), usec)
        sd_bus_message_unref(message)
        if r < 0 {
            pending[call.id] = nil
            call.finish(
                .failure(.failed(.disconnected, call: "sd_bus_call_async", result: r, "cannot send \(member)")))
        }
    }

    /// Answers the call `id` with ``DBusError/Code/cancelled`` now; it stays registered (sd-bus
    /// holds its address) until its reply or timeout comes, which then finds it answered.
    func cancelCall(_ id: UInt64) {
        guard let call = pending[id] else { return }
        call.finish(.failure(DBusError(code: .cancelled, message: "\(call.member): cancelled")))
    }

    private func complete(_ call: PendingCall, reply: OpaquePointer?) {
        guard pending.removeValue(forKey: call.id) != nil else { return }
        if let error = MessageCoding.replyError(reply, member: call.member) {
            call.finish(.failure(error))
        } else {
            call.finish(MessageCoding.readAll(reply))
        }
    }

    // MARK: Signals

    final class MatchBox {
        let handler: @Sendable (DBusSignalMessage) -> Void
        init(handler: @escaping @Sendable (DBusSignalMessage) -> Void) { self.handler = handler }
    }

    func addMatch(_ rule: String, handler: @escaping @Sendable (DBusSignalMessage) -> Void) -> Result<UInt64, DBusError>
    {
        guard let bus, connected.load(ordering: .relaxed) else {
            return .failure(DBusError(code: .disconnected, message: "subscribe: the connection is closed"))
        }
        let box = MatchBox(handler: handler)
        var slot: OpaquePointer?
        let r = sd_bus_add_match(
            bus, &slot, rule,
            { m, userdata, _ in
                let box = Unmanaged<MatchBox>.fromOpaque(userdata!).takeUnretainedValue()
                func text(_ p: UnsafePointer<CChar>?) -> String { p.map { String(cString: $0) } ?? "" }
                guard case .success(let arguments) = MessageCoding.readAll(m) else { return 0 }
                box.handler(
                    DBusSignalMessage(
                        sender: sd_bus_message_get_sender(m).map { String(cString: $0) },
                        path: text(sd_bus_message_get_path(m)), interface: text(sd_bus_message_get_interface(m)),
                        member: text(sd_bus_message_get_member(m)), arguments: arguments))
                return 0
            }, Unmanaged.passUnretained(box).toOpaque())
        return register(r, "sd_bus_add_match", slot: slot, box: box, "the bus refused the match rule \(rule)")
    }

    /// Keeps the registration `slot` (and `box`, its callback's userdata) that `call` made and
    /// returns its id; a negative `r` is a failure saying `what` could not be registered.
    private func register(
        _ r: Int32, _ call: String, slot: OpaquePointer?, box: AnyObject, _ what: String, function: String = #function
    ) -> Result<UInt64, DBusError> {
        guard r >= 0 else {
            return .failure(.failed(.registrationFailed, call: call, result: r, what, function: function))
        }
        let id = newID()
        registrations[id] = (slot, box)
        return .success(id)
    }

    func removeRegistration(_ id: UInt64) {
        guard let registration = registrations.removeValue(forKey: id) else { return }
        if let slot = registration.slot { sd_bus_slot_unref(slot) }
    }

    // MARK: Objects

    func addObject(_ object: ExportedObject) -> Result<UInt64, DBusError> {
        guard let bus, connected.load(ordering: .relaxed) else {
            return .failure(DBusError(code: .disconnected, message: "export: the connection is closed"))
        }
        var slot: OpaquePointer?
        let r = sd_bus_add_object(
            bus, &slot, object.path,
            { m, userdata, _ in
                Unmanaged<ExportedObject>.fromOpaque(userdata!).takeUnretainedValue().handle(m)
            }, Unmanaged.passUnretained(object).toOpaque())
        return register(r, "sd_bus_add_object", slot: slot, box: object, "cannot export an object at \(object.path)")
    }

    func sendSignal(path: String, interface: String, member: String, arguments: [DBusValue]) -> Result<Void, DBusError>
    {
        guard let bus, connected.load(ordering: .relaxed) else {
            return .failure(DBusError(code: .disconnected, message: "\(member): the connection is closed"))
        }
        var message: OpaquePointer?
        var r = sd_bus_message_new_signal(bus, &message, path, interface, member)
        if r >= 0 { r = MessageCoding.append(arguments, to: message) }
        if r >= 0 { r = sd_bus_send(bus, message, nil) }
        if let message { sd_bus_message_unref(message) }
        guard r >= 0 else {
            return .failure(
                .failed(
                    .invalidMessage, call: "sd_bus_send", result: r, "cannot send the signal \(interface).\(member)"))
        }
        return .success(())
    }
}
