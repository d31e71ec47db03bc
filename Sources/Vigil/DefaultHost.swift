public import Logging
import Synchronization
import VigilCore
import VigilHostCore

/// The process-wide host behind ``keepAlive(configPath:logger:)`` and ``stop()``.
private let defaultHost = Mutex<VigilHost?>(nil)

/// Starts keeping this process alive with the plugins of the nearest `vigil.toml` (or
/// `configPath`): the one-call form of ``VigilHost``, `try await Vigil.keepAlive()`.
///
/// The first call loads and verifies the configuration and creates one shared host; later calls
/// reuse it (so `vigil.toml` is read once per process) and are as idempotent and
/// concurrency-safe as ``VigilHost/keepAlive()``. Plugins that fail, do not verify or wait for
/// their requirements show in the returned host's ``VigilHost/status()``, as long as one of them
/// can run; when none can, this throws (and systemd, under `Type=notify`, gets `STATUS=` with why).
///
/// - Parameters:
///   - configPath: the `vigil.toml`; `nil` finds the nearest one from the working directory upward.
///   - logger: where the host and its plugins log (default: a `Logger` labelled with the host's
///     name: `[host] name`, else the executable's).
/// - Returns: the shared host, for `status()`, `events` or a `ServiceGroup`.
/// - Throws: ``VigilError`` — `configuration` when the configuration is missing or invalid, or
///   when a shared host already runs from another `vigil.toml`; `configInUse` when another process
///   runs a host on the same `vigil.toml`; `noPluginCanRun` (the host is stopped and forgotten) when
///   every activated plugin failed or is blocked by a missing declaration. Exit with its
///   ``VigilError/exitStatus`` (78 for a configuration that cannot work, 75 for a file in use).
@discardableResult
public func keepAlive(configPath: String? = nil, logger: Logger? = nil) async throws -> VigilHost {
    let host = try sharedHost(configPath: configPath, logger: logger)
    let status = await host.keepAlive()
    if let refusal = await host.reportStart(status) {
        await host.stop()
        defaultHost.withLock { if $0 === host { $0 = nil } }
        throw refusal
    }
    return host
}

/// Stops the plugins of the shared host started by ``keepAlive(configPath:logger:)``; does
/// nothing when there is none. Idempotent; a later `keepAlive()` starts them again.
public func stop() async {
    let host = defaultHost.withLock { $0 }
    await host?.stop()
}

/// The shared host, created on first use (under the lock, so concurrent first calls create one).
func sharedHost(
    configPath: String?, logger: Logger?, registry: PluginRegistry = .builtin,
    options: VigilHost.Options = VigilHost.Options()
) throws -> VigilHost {
    try defaultHost.withLock { (current: inout VigilHost?) throws -> VigilHost in
        if let current {
            if let configPath {
                let wanted = try VigilHost.resolveConfigPath(configPath, environment: options.environment)
                if let running = current.configPath,
                    HostConfiguration(path: wanted, environment: options.environment).path != running
                {
                    throw VigilError(
                        code: .configuration,
                        message: "the shared Vigil host already runs from \(running), not \(wanted) — call "
                            + "Vigil.stop() and use a VigilHost of your own for a second configuration")
                }
            }
            return current
        }
        let host = try VigilHost(configPath: configPath, registry: registry, options: options, label: logger)
        current = host
        return host
    }
}

/// Forgets the shared host (tests only; the caller stops it first).
func resetSharedHost() {
    defaultHost.withLock { $0 = nil }
}
