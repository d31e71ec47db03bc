public import ServiceLifecycle
import VigilBase

/// A keep-alive plugin implementation: the code behind a signed manifest's `entry`.
///
/// A plugin is a swift-service-lifecycle `Service`. The host creates one instance per start,
/// through a ``PluginImplementation``, only after the plugin's manifest verified against its
/// trusted key and its host requirements were met, and runs its ``run()`` as a child task:
///
/// - `run()` acquires what the plugin keeps alive, then reports ``PluginEvent/ready`` through
///   ``PluginContext/reporter`` (the host shows `running` from then on), then does its work —
///   reporting ``PluginEvent/interrupted(reason:)``, ``PluginEvent/resumed`` and
///   ``PluginEvent/detailsChanged`` as they happen — until its task is cancelled.
/// - **A start failure is `run()` throwing before it reported `ready`**: the host shows the
///   error as the plugin's `failed` status; other plugins are not affected.
/// - **Stop is the cancellation of that task.** `run()` then releases everything it acquired and
///   returns; the host drops the instance once `run()` returned. ``PluginLifetime/untilCancelled()``
///   is the wait for it, and ``PluginLifetime/uncancelled(_:)`` runs a release that awaits
///   cancellable work (a D-Bus call, a child process's exit) to its end.
/// - Giving up after an interruption is reporting ``PluginEvent/resumeFailed(reason:)`` (or
///   throwing after `ready`): the host cancels the task and shows `failed` until the next
///   `keepAlive()`.
///
/// The host runs `run()` once per instance and asks ``details()`` only between events, never
/// after `run()` returned. Blocking work (audio writes, waiting on child processes) must run on
/// threads the plugin owns, never on Swift's cooperative pool; long-lived helpers a plugin starts
/// are child tasks of `run()` (a task group), never unstructured `Task`s.
public protocol KeepAlivePlugin: Service, AnyObject {
    /// Keeps the host alive until the task is cancelled (see the protocol's contract).
    ///
    /// - Throws: before ``PluginEvent/ready``, an error whose description says what failed and
    ///   how to fix it (a ``PluginError``); after it, why the plugin gave up.
    func run() async throws

    /// Plugin-specific details for `vigil status`, such as `["device": "pulse", "mode": "zero"]`.
    func details() async -> [String: String]
}

/// A plugin that can take new settings while it runs, so that a reload (`vigil reload`,
/// `VigilHost.reload()`) that changes only its settings need not restart it.
///
/// The host calls ``reconfigure(_:)`` on the running instance (while its `run()` runs, never
/// before `ready` nor after `run()` returned) with the plugin's new settings: the manifest's
/// defaults overlaid by its new `vigil.toml` table, checked against the manifest's schema. A
/// plugin that does not conform is restarted (cancelled, then a new instance) instead.
public protocol ReconfigurablePlugin: KeepAlivePlugin {
    /// Applies `settings` to this running instance, changing only what they change (the
    /// supervisor restarts only the workers whose entry changed).
    ///
    /// - Returns: `true` when applied in place (the instance runs on with them from now on);
    ///   `false` when this change needs a restart (nothing was changed): the host then stops
    ///   this instance and starts a new one with `settings`.
    /// - Throws: a ``PluginError`` when `settings` are unusable; nothing was changed, and the
    ///   host restarts the plugin as for `false` (whose new instance then reports the error).
    func reconfigure(_ settings: PluginSettings) async throws -> Bool
}

/// How the host makes instances of one plugin implementation.
public struct PluginImplementation: Sendable {
    /// The manifest `entry` this implementation answers to, for example `"silent-engine"`.
    public let entry: String

    /// Makes an instance. Validate settings here and throw a ``PluginError`` for a bad one.
    public let make: @Sendable (PluginContext) throws -> any KeepAlivePlugin

    /// Creates an implementation for the manifest entry `entry`.
    public init(entry: String, make: @escaping @Sendable (PluginContext) throws -> any KeepAlivePlugin) {
        self.entry = entry
        self.make = make
    }
}

/// Waits that a plugin's ``KeepAlivePlugin/run()`` needs.
public enum PluginLifetime {
    /// Returns once the current task is cancelled (at once when it already is): the end of a
    /// plugin's `run()`, after which it releases what it holds.
    public static func untilCancelled() async {
        let (stream, continuation) = AsyncStream.makeStream(of: Void.self)
        await withTaskCancellationHandler {
            for await _ in stream {}
        } onCancel: {
            continuation.finish()
        }
    }

    /// The whole `run()` of a plugin whose work is a start and a stop (the shape of the former
    /// `start()`/`stop()` contract, and of the shared-library C ABI): `start`, then
    /// ``PluginReporter/ready()``, then the wait for cancellation, then `stop` (uncancelled). When
    /// `start` throws, `stop` runs too (it releases what a partial start left) and the error is
    /// the plugin's start failure.
    public static func run(
        reporting reporter: PluginReporter, start: () async throws -> Void,
        stop: @escaping @Sendable () async -> Void
    ) async throws {
        do {
            try await start()
        } catch {
            await uncancelled(stop)
            throw error
        }
        reporter.ready()
        await untilCancelled()
        await uncancelled(stop)
    }

    /// Runs `body` to its end even though the current task is cancelled, and returns then: the
    /// release at the end of a cancelled `run()` (closing a notification, giving a bus name back,
    /// stopping workers) must not be cut short by the cancellation that asked for it.
    public static func uncancelled(_ body: @escaping @Sendable () async -> Void) async {
        await runUncancelled(body)
    }
}
