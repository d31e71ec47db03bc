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

/// Events plugins report from any thread, queued in order until the host actor handles them.
final class EventInbox: Sendable {
    struct Entry: Sendable {
        let slot: Int
        let instanceID: UInt64
        let event: PluginEvent
    }
    private let queue = Mutex<[Entry]>([])

    /// Queues `entry`; a `detailsChanged` right behind the same one is dropped (one refresh
    /// reads the latest details anyway), so a chatty plugin cannot grow the queue.
    func append(_ entry: Entry) {
        queue.withLock { queue in
            if entry.event == .detailsChanged, let last = queue.last, last.event == .detailsChanged,
                last.slot == entry.slot, last.instanceID == entry.instanceID
            {
                return
            }
            queue.append(entry)
        }
    }
    func takeAll() -> [Entry] {
        queue.withLock { q in
            defer { q = [] }; return q
        }
    }
}

/// `PrepareForSleep` signals from the bus thread, queued in order until the host actor handles them.
final class SleepSignalInbox: Sendable {
    private let queue = Mutex<[Bool]>([])

    func append(_ start: Bool) { queue.withLock { $0.append(start) } }

    func next() -> Bool? {
        queue.withLock { $0.isEmpty ? nil : $0.removeFirst() }
    }
}
