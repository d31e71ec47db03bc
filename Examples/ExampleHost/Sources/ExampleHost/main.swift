import Dispatch
import Foundation
import Vigil

// An example host: keep the app alive and its audio output awake until SIGINT/SIGTERM.
//
// `Vigil.keepAlive()` reads the nearest vigil.toml (from the working directory upward), verifies
// each activated plugin's signature against [trusted_plugins], and starts every plugin whose host
// requirements are met. Run it from this directory: `swift run`.

/// SIGINT and SIGTERM as an async sequence (the default actions are turned off first).
func shutdownSignals() -> AsyncStream<Int32> {
    AsyncStream { continuation in
        let sources = [SIGINT, SIGTERM].map { signo in
            signal(signo, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: signo, queue: .global())
            source.setEventHandler { continuation.yield(signo) }
            source.resume()
            return source
        }
        continuation.onTermination = { _ in sources.forEach { $0.cancel() } }
    }
}

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
    }
}

let signals = shutdownSignals()
let host = try await Vigil.keepAlive()

let status = await host.status()
print("\(status.hostName): keep-alive requested (pid \(status.pid), config \(status.configPath ?? "none"))")
for plugin in status.plugins {
    print("  \(plugin.name) \(plugin.version ?? "?"): \(plugin.state)")
    for (key, value) in plugin.details.sorted(by: { $0.key < $1.key }) { print("    \(key): \(value)") }
}

// Print every state change until a signal arrives, then stop.
let watcher = Task {
    for await event in host.events {
        print("event: \(event.plugin) \(describe(event.kind)) (now \(event.state.name))")
    }
}
for await signo in signals {
    print("\(status.hostName): \(signo == SIGINT ? "SIGINT" : "SIGTERM") received, stopping")
    break
}
await Vigil.stop()
watcher.cancel()
print("\(status.hostName): stopped")
