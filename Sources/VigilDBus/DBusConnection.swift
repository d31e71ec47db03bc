internal import CSystemd
import Dispatch
import FoundationEssentials
public import Logging
import Synchronization
import VigilBase

#if canImport(Glibc)
import Glibc
#endif

/// A connection to a D-Bus bus through sd-bus (libsystemd), served by a thread it owns.
///
/// sd-bus connections are not thread-safe, so every sd-bus call runs on the connection's own
/// thread, which sleeps in `poll` between messages; the async methods queue their work there
/// and return when the reply arrives. Handlers (signals, exported methods and properties) run
/// on that thread too and must not block.
///
/// Call ``close()`` when done; the connection then answers every pending call with
/// ``DBusError/Code/disconnected`` and its thread ends.
public final class DBusConnection: Sendable {
    /// The bus this connection was opened to.
    public let bus: DBusBus
    /// The address it resolved to.
    public let address: String
    /// This connection's unique name on the bus (`:1.42`).
    public let uniqueName: String

    let loop: BusLoop

    private init(bus: DBusBus, address: String, uniqueName: String, loop: BusLoop) {
        self.bus = bus
        self.address = address
        self.uniqueName = uniqueName
        self.loop = loop
    }

    deinit { loop.close() }

    /// How long ``connect(to:environment:timeout:logger:)`` waits by default for a bus to accept
    /// the connection, authenticate it and answer `Hello`: a bus that accepts and never answers
    /// costs at most this, never sd-bus's own 90 s authentication timeout.
    public static let defaultConnectTimeout: Duration = .seconds(5)

    /// Connects to `bus` (its address resolved in `environment`, the host's variables: nothing here
    /// reads the process environment, so `.session` needs `environment` to name one) and says hello,
    /// within `timeout` and on the connection's own thread. Cancelling the calling task ends the
    /// wait at once.
    ///
    /// sd-bus's calls made while connected (`AddMatch` among them) are bounded by `timeout` too.
    /// - Throws: ``DBusError/Code/noBus`` when there is no such bus, ``DBusError/Code/connectFailed``
    ///   when it cannot be reached, ``DBusError/Code/timedOut`` when it does not answer within
    ///   `timeout`, ``DBusError/Code/cancelled`` when the calling task is cancelled.
    public static func connect(
        to bus: DBusBus, environment: [String: String] = [:], timeout: Duration = defaultConnectTimeout,
        logger: Logger
    ) async throws(DBusError) -> DBusConnection {
        guard let address = bus.resolve(environment: environment) else {
            throw DBusError(
                code: .noBus,
                message: "there is no \(bus): set DBUS_SESSION_BUS_ADDRESS or start a session (dbus-run-session)")
        }
        guard let loop = BusLoop(name: "vigil-dbus", logger: logger) else {
            throw DBusError(
                code: .connectFailed, cause: .current("pipe"), message: "cannot create the bus thread's wake-up pipe")
        }
        let usec = BusLoop.microseconds(timeout)
        let result: Result<String, DBusError> = await withTaskCancellationHandler {
            await loop.run { loop in loop.open(bus: bus, address: address, usec: usec) }
                ?? .failure(DBusError(code: .disconnected, message: "the bus thread ended"))
        } onCancel: {
            loop.abortOpen()
        }
        switch result {
        case .success(let unique):
            return DBusConnection(bus: bus, address: address, uniqueName: unique, loop: loop)
        case .failure(let error):
            loop.close()
            throw error
        }
    }

    /// True until the bus hangs up or ``close()`` is called.
    public var isConnected: Bool { loop.isConnected }

    /// Returns once the bus hangs up or ``close()`` is called (at once when that happened already),
    /// or when the calling task is cancelled. Watch a connection with it to reconnect after the
    /// bus restarts.
    public func disconnection() async {
        await loop.disconnection()
    }

    /// Calls `interface.member` on `path` at `destination` and returns the reply's values.
    /// - Throws: ``DBusError/Code/callFailed`` with the peer's error ``DBusError/name``,
    ///   ``DBusError/Code/timedOut``, ``DBusError/Code/disconnected``, or
    ///   ``DBusError/Code/invalidMessage`` when an argument does not match its declared type.
    public func call(
        destination: String?, path: String, interface: String?, member: String, arguments: [DBusValue] = [],
        timeout: Duration = .seconds(25)
    ) async throws(DBusError) -> [DBusValue] {
        let usec = BusLoop.microseconds(timeout)
        let id = loop.newCallID()
        let loop = self.loop
        let result: Result<[DBusValue], DBusError> = await withTaskCancellationHandler {
            await Handoff.value { handoff in
                // Cancelled before the call was queued: its cancellation job would run too early.
                if Task.isCancelled {
                    handoff.deliver(.failure(DBusError(code: .cancelled, message: "\(member): cancelled")))
                    return
                }
                let queued = loop.enqueue { loop in
                    loop.startCall(
                        id: id, destination: destination, path: path, interface: interface, member: member,
                        arguments: arguments, usec: usec, handoff: handoff)
                }
                if !queued {
                    handoff.deliver(
                        .failure(DBusError(code: .disconnected, message: "\(member): the connection is closed")))
                }
            }
        } onCancel: {
            loop.enqueue { loop in loop.cancelCall(id) }
        }
        return try result.get()
    }

    /// Asks the bus for `name`; returns what the bus answered (check ``DBusNameReply/owns``).
    public func requestName(_ name: String, flags: DBusNameFlags = [.doNotQueue]) async throws(DBusError)
        -> DBusNameReply
    {
        let reply = try await callBus("RequestName", [.string(name), .uint32(flags.rawValue)])
        guard case .uint32(let raw)? = reply.first, let answer = DBusNameReply(rawValue: raw) else {
            throw DBusError(code: .invalidMessage, message: "RequestName: unexpected reply \(reply)")
        }
        return answer
    }

    /// Gives `name` back to the bus. Returns false when this connection did not own it.
    @discardableResult
    public func releaseName(_ name: String, timeout: Duration = .seconds(25)) async throws(DBusError) -> Bool {
        let reply = try await callBus("ReleaseName", [.string(name)], timeout: timeout)
        return reply.first == .uint32(1)
    }

    /// Whether anyone owns `name` on the bus.
    public func nameHasOwner(_ name: String, timeout: Duration = .seconds(25)) async throws(DBusError) -> Bool {
        let reply = try await callBus("NameHasOwner", [.string(name)], timeout: timeout)
        return reply.first == .bool(true)
    }

    /// Calls `member` of the bus itself (`org.freedesktop.DBus`).
    private func callBus(_ member: String, _ arguments: [DBusValue], timeout: Duration = .seconds(25))
        async throws(DBusError) -> [DBusValue]
    {
        try await call(
            destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
            member: member, arguments: arguments, timeout: timeout)
    }

    /// Calls `handler` on the connection's thread for every message matching `matchRule`
    /// (for example `type='signal',interface='org.freedesktop.login1.Manager',member='PrepareForSleep'`).
    /// The rule is installed on the bus before this returns.
    public func subscribe(
        matchRule: String, _ handler: @escaping @Sendable (DBusSignalMessage) -> Void
    ) async throws(DBusError) -> DBusSubscription {
        let id = try await loop.perform("subscribe") { loop in loop.addMatch(matchRule, handler: handler) }
        return DBusSubscription { [loop] in _ = await loop.run { $0.removeRegistration(id) } }
    }

    /// Serves `interfaces` (plus Introspectable and Properties) on the object `path` until the
    /// returned object is ``DBusExportedObject/unexport()``ed or the connection closes.
    public func export(path: String, interfaces: [DBusInterface]) async throws(DBusError) -> DBusExportedObject {
        let object = ExportedObject(path: path, interfaces: interfaces, logger: loop.logger)
        let id = try await loop.perform("export") { loop in loop.addObject(object) }
        return DBusExportedObject(loop: loop, object: object, registration: id)
    }

    /// Sends the signal `interface.member` from `path`.
    public func emit(path: String, interface: String, member: String, arguments: [DBusValue] = [])
        async throws(DBusError)
    {
        try await loop.perform(member) { loop in
            loop.sendSignal(path: path, interface: interface, member: member, arguments: arguments)
        }
    }

    /// Closes the connection: pending calls fail with ``DBusError/Code/disconnected``,
    /// subscriptions and exports end, the thread exits. Safe to call twice.
    public func close() async {
        _ = await loop.run { $0.shutdown() }
        loop.close()
    }
}

/// An object served by ``DBusConnection/export(path:interfaces:)``.
public final class DBusExportedObject: Sendable {
    /// The object path.
    public var path: String { object.path }
    private let loop: BusLoop
    private let object: ExportedObject
    private let registration: UInt64

    init(loop: BusLoop, object: ExportedObject, registration: UInt64) {
        self.loop = loop
        self.object = object
        self.registration = registration
    }

    /// Sends `org.freedesktop.DBus.Properties.PropertiesChanged` for `names` of `interface`,
    /// with their current values (or as invalidated, per their ``DBusProperty/ChangeSignal``).
    /// Properties declared ``DBusProperty/ChangeSignal/none`` or `const` are left out.
    public func propertiesChanged(interface: String, _ names: [String]) async throws(DBusError) {
        let object = self.object
        try await loop.perform("PropertiesChanged") { loop in
            guard let arguments = object.propertiesChangedArguments(interface: interface, names: names) else {
                return .success(())
            }
            return loop.sendSignal(
                path: object.path, interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged",
                arguments: arguments)
        }
    }

    /// Sends the signal `interface.signal` from this object.
    public func emit(interface: String, signal: String, arguments: [DBusValue] = []) async throws(DBusError) {
        let path = object.path
        try await loop.perform(signal) { loop in
            loop.sendSignal(path: path, interface: interface, member: signal, arguments: arguments)
        }
    }

    /// Stops serving the object. Safe to call twice.
    public func unexport() async {
        let id = registration
        _ = await loop.run { $0.removeRegistration(id) }
    }
}

/// The thread that owns an sd-bus connection, and everything confined to it.
final class BusLoop: @unchecked Sendable {
    typealias Job = @Sendable (BusLoop) -> Void

    private struct Queue {
        var jobs: [Job] = []
        var closed = false
    }
    private let queue = Mutex(Queue())
    private let connected = Atomic<Bool>(true)
    /// Set (from any thread) to end ``open(bus:address:usec:)`` early.
    private let openAborted = Atomic<Bool>(false)
    private let callIDs = Atomic<UInt64>(1)
    /// Tasks waiting in ``disconnection()``, by id; `lost` once the connection is gone for good.
    private let lossWaiters = Mutex<(lost: Bool, next: UInt64, waiting: [UInt64: CheckedContinuation<Void, Never>])>(
        (false, 0, [:]))
    private let wakeRead: Int32
    private let wakeWrite: Int32
    let logger: Logger

    // Confined to the thread.
    var bus: OpaquePointer?
    private var pending: [UInt64: PendingCall] = [:]
    private var registrations: [UInt64: (slot: OpaquePointer?, box: AnyObject)] = [:]
    private var nextID: UInt64 = 1

    init?(name: String, logger: Logger) {
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else { return nil }
        for fd in fds {
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        }
        wakeRead = fds[0]
        wakeWrite = fds[1]
        self.logger = logger
        KernelThread.start(name: name) { [self] in main() }
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
            let wait = until <= now ? 0 : Int32(min((until - now + 999) / 1000, 60_000))
            var fds = [
                pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0),
                pollfd(
                    fd: sd_bus_get_fd(handle), events: Int16(truncatingIfNeeded: sd_bus_get_events(handle)),
                    revents: 0),
            ]
            _ = poll(&fds, nfds_t(fds.count), wait)
            // The jobs queued meanwhile run after this one: the loop takes its queue afresh.
            var drain = [UInt8](repeating: 0, count: 64)
            while Glibc.read(wakeRead, &drain, drain.count) > 0 {}
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
        wake()
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
        let accepted = queue.withLock { q in
            guard !q.closed else { return false }
            q.jobs.append(job)
            return true
        }
        if accepted { wake() }
        return accepted
    }

    func run<T: Sendable>(_ body: @escaping @Sendable (BusLoop) -> T) async -> T? {
        await Handoff<T?>.value { handoff in
            if !enqueue({ handoff.deliver(body($0)) }) { handoff.deliver(nil) }
        }
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
        let first = queue.withLock { q -> Bool in
            defer { q.closed = true }
            return !q.closed
        }
        if first { wake() }
    }

    private func wake() {
        var byte: UInt8 = 1
        _ = Glibc.write(wakeWrite, &byte, 1)
    }

    private func main() {
        while true {
            let (jobs, closed) = queue.withLock { q -> ([Job], Bool) in
                defer { q.jobs.removeAll() }
                return (q.jobs, q.closed)
            }
            for job in jobs { job(self) }
            if closed {
                shutdown()
                Glibc.close(wakeRead)
                Glibc.close(wakeWrite)
                return
            }
            var fds = [pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0)]
            var timeout: Int32 = -1
            if let bus, connected.load(ordering: .relaxed) {
                var r: Int32
                repeat { r = sd_bus_process(bus, nil) } while r > 0
                if r < 0 || sd_bus_is_open(bus) <= 0 {
                    markLost()
                    logger.info(
                        "D-Bus connection lost",
                        metadata: ["dbus.error": "\(SystemCallError("sd_bus_process", errno: r))"])
                    failPending(DBusError(code: .disconnected, message: "the bus closed the connection"))
                } else {
                    fds.append(
                        pollfd(
                            fd: sd_bus_get_fd(bus), events: Int16(truncatingIfNeeded: sd_bus_get_events(bus)),
                            revents: 0))
                    var until: UInt64 = 0
                    if sd_bus_get_timeout(bus, &until) >= 0 && until != UInt64.max {
                        let nowUsec = MonotonicClock.nanoseconds() / 1000
                        timeout = until <= nowUsec ? 0 : Int32(min((until - nowUsec + 999) / 1000, 60_000))
                    }
                }
            }
            // A job may have drained the wake-up pipe (``open(bus:address:usec:)`` does): look again.
            if queue.withLock({ !$0.jobs.isEmpty || $0.closed }) { timeout = 0 }
            _ = poll(&fds, nfds_t(fds.count), timeout)
            var drain = [UInt8](repeating: 0, count: 64)
            while Glibc.read(wakeRead, &drain, drain.count) > 0 {}
        }
    }

    /// Closes the bus and fails or releases everything on it. Idempotent.
    func shutdown() {
        markLost()
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
