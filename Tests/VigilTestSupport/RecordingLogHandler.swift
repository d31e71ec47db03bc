import Logging
import Synchronization

/// A log handler that keeps the messages at or above a level, to check what is reported (and how often).
public final class RecordingLogHandler: LogHandler, @unchecked Sendable {
    public let messages = Mutex<[String]>([])
    public var metadata: Logger.Metadata = [:]
    public var logLevel: Logger.Level = .debug
    private let minimumLevel: Logger.Level

    /// Records messages at `minimumLevel` and above (default: warnings).
    public init(minimumLevel: Logger.Level = .warning) {
        self.minimumLevel = minimumLevel
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        if event.level >= minimumLevel {
            messages.withLock { $0.append("\(event.message) \(event.metadata ?? [:])") }
        }
    }

    /// The recorded messages, oldest first.
    public var warnings: [String] { messages.withLock { $0 } }
}
