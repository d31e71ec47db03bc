import Foundation
import Logging
import ServiceLifecycle
import Vigil

// An example host: keeps the app alive and its audio output awake until SIGINT or SIGTERM.
//
// `Vigil.keepAlive()` reads the nearest vigil.toml (from the working directory upward), verifies
// each activated plugin's signature against [trusted_plugins], and starts every plugin whose host
// requirements are met. Run it from this directory: `swift run`.

/// One event as a short phrase.
func describe(_ kind: HostEvent.Kind) -> String {
    switch kind {
    case .started: "started"
    case .stopped: "stopped"
    case .failed(let failure): "failed: \(failure.message)"
    case .blocked: "blocked"
    case .interrupted(let reason): "interrupted: \(reason)"
    case .resumed: "resumed"
    case .resumeFailed(let reason): "gave up: \(reason)"
    case .detailsChanged: "details changed"
    case .revoked(let failure): "revoked: \(failure.message)"
    case .denied(let denial): "denied: \(denial)"
    }
}

let logger = Logger(label: "example-host")
let host: VigilHost
do {
    host = try await Vigil.keepAlive(logger: logger)
} catch {
    // No vigil.toml, one that does not parse, no plugin that can run, or another host on the same
    // file: the error says why and how to fix it; exit 78 or 75 (docs/exit-codes.md).
    FileHandle.standardError.write(Data("example-host: \(error)\n".utf8))
    exit((error as? VigilError)?.exitStatus ?? 1)
}

let status = await host.status()
print("\(status.hostName): keep-alive started (pid \(status.pid), config \(status.configPath ?? "none"))")
for plugin in status.plugins {
    print("  \(plugin.name) \(plugin.version ?? "?"): \(plugin.state)")
    for (key, value) in plugin.details.sorted(by: { $0.key < $1.key }) { print("    \(key): \(value)") }
}

// Print every state change while the app runs.
let events = host.events
let watcher = Task {
    for await event in events {
        print("event: \(event.plugin) \(describe(event.kind)) (now \(event.state.name))")
    }
}

// The host is a swift-service-lifecycle Service: in a ServiceGroup it keeps the plugins alive,
// re-probes plugins waiting for their environment (a sound server, a session bus), and on SIGINT
// or SIGTERM shuts down gracefully, which stops every plugin. Add your app's own services here.
let group = ServiceGroup(services: [host], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
try await group.run()
await Vigil.stop()  // already stopped by the graceful shutdown; idempotent
watcher.cancel()
print("\(status.hostName): stopped")
