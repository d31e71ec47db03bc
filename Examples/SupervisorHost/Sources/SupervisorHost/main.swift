import Logging
import ServiceLifecycle
import VigilHostCore
import VigilSupervisor

#if canImport(Glibc)
import Glibc
#endif

// A supervisor-only host: keeps its workers alive until SIGINT or SIGTERM.
//
// The host core runs only the plugins it is given: here the supervisor (no desktop notification,
// no sleep handling, no announcer). It reads the nearest vigil.toml (from the working directory
// upward, or the path given as the one argument), verifies each activated plugin's signature
// against [trusted_plugins] and starts the supervisor's workers. Run it from this directory:
// `swift run`.

let logger = Logger(label: "supervisor-host")
let registry = PluginRegistry([SupervisorPlugin.implementation])
let host: VigilHost
do {
    host = try VigilHost(configPath: CommandLine.arguments.dropFirst().first, running: registry, logger: logger)
} catch {
    // No vigil.toml, or one that does not parse: the error says why and how to fix it.
    let message = "supervisor-host: \(error)\n"
    _ = message.utf8CString.withUnsafeBufferPointer { write(2, $0.baseAddress, $0.count - 1) }
    exit(1)
}

// The host is a swift-service-lifecycle Service: `run()` starts the plugins (keepAlive()), and a
// graceful shutdown on SIGINT or SIGTERM stops them.
let events = host.events
let group = ServiceGroup(services: [host], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
try await withThrowingDiscardingTaskGroup { tasks in
    tasks.addTask {
        for await event in events {
            print("\(event.plugin): now \(event.state.name)")
        }
    }
    try await group.run()
    tasks.cancelAll()
}
print("\(host.hostName): stopped")
