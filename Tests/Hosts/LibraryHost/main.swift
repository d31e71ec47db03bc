import Foundation
import Logging
import ServiceLifecycle
import Vigil
import VigilJournal

// Under systemd, logs are journal entries (MESSAGE_ID, VIGIL_* fields: docs/logs.md); text lines elsewhere.
LoggingSystem.bootstrap { JournalLogHandler.standardError(label: $0, identifier: "my-app") }
let host: VigilHost
do {
    host = try await Vigil.keepAlive()  // nearest vigil.toml; verified, trusted plugins only
} catch {
    // No vigil.toml, no plugin that can run, another host on that file: why, and how to fix it.
    FileHandle.standardError.write(Data("my-app: \(error)\n".utf8))
    exit((error as? VigilError)?.exitStatus ?? 1)  // 78 (a configuration that cannot work) or 75
}
// Your app's work runs beside the host; SIGINT or SIGTERM stops every plugin, then the program ends.
let group = ServiceGroup(
    services: [host /*, your own services */], gracefulShutdownSignals: [.sigterm, .sigint],
    logger: Logger(label: "my-app"))
try await group.run()
