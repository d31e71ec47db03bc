import Synchronization
import VigilPlugin

/// Fans host events out to any number of subscribers, each with its own stream.
final class EventHub: Sendable {
    /// Events a subscriber has not consumed yet beyond this are dropped (oldest first).
    static let bufferLimit = 1024

    private struct State: ~Copyable {
        var nextID = 0
        var subscribers: [Int: AsyncStream<HostEvent>.Continuation] = [:]
    }
    private let state = Mutex(State())

    func subscribe() -> AsyncStream<HostEvent> {
        let (stream, continuation) = AsyncStream.makeStream(
            of: HostEvent.self, bufferingPolicy: .bufferingNewest(Self.bufferLimit))
        let id = state.withLock { state in
            let id = state.nextID
            state.nextID += 1
            state.subscribers[id] = continuation
            return id
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.subscribers.removeValue(forKey: id) }
        }
        return stream
    }

    func publish(_ event: HostEvent) {
        let subscribers = state.withLock { Array($0.subscribers.values) }
        for continuation in subscribers { continuation.yield(event) }
    }

    var subscriberCount: Int { state.withLock { $0.subscribers.count } }

    deinit {
        let subscribers = state.withLock { Array($0.subscribers.values) }
        for continuation in subscribers { continuation.finish() }
    }
}

/// The host's one event stream: requests, plugin reports, plugin and sleep-handling children
/// ending, from any thread, in order, drained by the host's loop (``VigilHost``'s `serve`).
final class HostInbox: Sendable {
    enum Input: Sendable {
        /// `keepAlive()` / `stop()` (`nil`: reconcile again); resumed once the host settled on it.
        case request(up: Bool?, CheckedContinuation<Void, Never>)
        /// An event for the state machine (sleep handling, a shutdown, a re-probe).
        case machine(HostStateMachine.Event)
        /// A plugin instance's report.
        case plugin(instance: UInt64, PluginEvent)
        /// A plugin instance's `run()` returned.
        case ended(instance: UInt64, failure: PluginFailure?)
        /// Reload `vigil.toml` (``VigilHost/reload()``); `completion` gets the outcome once settled.
        case reload(@Sendable (Result<ReloadReport, VigilError>) -> Void)
        /// Read the running instances' details, then resume.
        case refreshDetails(CheckedContinuation<Void, Never>)
        /// Publish the status (sleep handling's locks changed).
        case publishStatus
        /// The revocation watch re-checked the plugins: stop the revoked ones.
        case revocations(VigilHost.RevocationFindings)
        /// Nothing: the loop checks whether it may end.
        case wake
    }

    private struct State: ~Copyable {
        var queue: [Input] = []
        var waiter: CheckedContinuation<Input, Never>?
    }
    private let state = Mutex(State())

    /// Queues `input`; a `detailsChanged` right behind the same one is dropped (one refresh
    /// reads the latest details anyway), so a chatty plugin cannot grow the queue.
    func send(_ input: Input) {
        let waiter = state.withLock { state -> CheckedContinuation<Input, Never>? in
            if let waiter = state.waiter {
                state.waiter = nil
                return waiter
            }
            if case .plugin(let instance, .detailsChanged) = input,
                case .plugin(instance, .detailsChanged)? = state.queue.last
            {
                return nil
            }
            state.queue.append(input)
            return nil
        }
        waiter?.resume(returning: input)
    }

    /// The next input, waiting for one (not cancellable: the loop ends only when it decides to).
    func next() async -> Input {
        await withCheckedContinuation { continuation in
            let ready = state.withLock { state -> Input? in
                if state.queue.isEmpty {
                    state.waiter = continuation
                    return nil
                }
                return state.queue.removeFirst()
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }

    var isEmpty: Bool { state.withLock { $0.queue.isEmpty } }
}
