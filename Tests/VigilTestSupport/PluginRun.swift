import Synchronization
public import VigilPlugin

/// Drives one plugin instance the way ``VigilHost`` does, for the plugins' own tests: ``start()``
/// runs its `run()` in a task and returns once it reported `ready` (or throws what `run()` threw
/// before that); ``stop()`` cancels that task and returns once `run()` returned.
///
/// Make the plugin's context with ``reporter``: it hands every event but `ready` on to the sink
/// the test gave (an ``EventRecorder``), so the tests see the same events as before.
public final class PluginRun: Sendable {
    private struct State {
        var plugin: (any KeepAlivePlugin)?
        var task: Task<Void, Never>?
        var ready: CheckedContinuation<Void, any Error>?
        var isReady = false
        var failure: (any Error)?
    }
    private let state = Mutex(State())

    /// The reporter to put in the plugin's ``PluginContext``.
    public let reporter: PluginReporter

    /// A run whose reports (other than `ready`) go to `sink`.
    public init(reportingTo sink: @escaping @Sendable (PluginEvent) -> Void = { _ in }) {
        let link = ReadyLink()
        reporter = PluginReporter { event in
            if event == .ready { link.run?.markReady() } else { sink(event) }
        }
        link.run = self
    }

    /// The instance this run drives (set by ``adopt(_:)``).
    public var plugin: (any KeepAlivePlugin)? { state.withLock { $0.plugin } }

    /// Takes the instance made with ``reporter``; returns `self`.
    @discardableResult
    public func adopt(_ plugin: any KeepAlivePlugin) -> PluginRun {
        state.withLock { $0.plugin = plugin }
        return self
    }

    /// Runs the plugin's `run()` and returns once it is ready.
    public func start() async throws {
        guard let plugin = state.withLock({ $0.plugin }) else { return }
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            state.withLock {
                $0.isReady = false
                $0.failure = nil
                $0.ready = continuation
                $0.task = Task {
                    do {
                        try await plugin.run()
                        self.ended(nil)
                    } catch {
                        self.ended(error)
                    }
                }
            }
        }
    }

    /// Cancels the plugin's `run()` and returns once it returned.
    public func stop() async {
        let task = state.withLock { state -> Task<Void, Never>? in
            defer { state.task = nil }
            return state.task
        }
        task?.cancel()
        await task?.value
    }

    /// The plugin's details.
    public func details() async -> [String: String] {
        await state.withLock { $0.plugin }?.details() ?? [:]
    }

    /// What `run()` threw after it was ready, if it ended on its own.
    public var failure: (any Error)? { state.withLock { $0.failure } }

    private func markReady() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, any Error>? in
            state.isReady = true
            defer { state.ready = nil }
            return state.ready
        }
        waiter?.resume()
    }

    private func ended(_ error: (any Error)?) {
        let waiter = state.withLock { state -> CheckedContinuation<Void, any Error>? in
            state.failure = error
            defer { state.ready = nil }
            return state.ready
        }
        waiter?.resume(throwing: error ?? CancellationError())
    }
}

/// The reporter's way back to its run, weak (the run holds the reporter).
private final class ReadyLink: @unchecked Sendable {
    // Set once, in `PluginRun.init`, before the reporter can be called.
    weak var run: PluginRun?
}
