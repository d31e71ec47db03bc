import Logging
import VigilBase
import VigilCore

/// The `vigil` commands' log handler: swift-log's standard-error stream handler, with every
/// message and metadata value (keys too) escaped by ``Sanitizer/display(_:keepingNewlines:)``,
/// newlines included, before it is formatted.
///
/// Log lines quote manifests, worker exits and their commands, other apps' stream names, D-Bus
/// peers and errors; escaped, none of that can move the cursor, recolour the terminal, reorder
/// the text or start a log line of its own.
///
/// The ``OperatorEvent`` tag (`vigil.event`, the journal's `MESSAGE_ID`) is left out of the line.
struct TerminalLogHandler: LogHandler {
    private var stream: StreamLogHandler

    /// A handler writing to standard error for loggers labelled `label`.
    init(label: String) {
        stream = StreamLogHandler.standardError(label: label, metadataProvider: nil)
    }

    var logLevel: Logger.Level {
        get { stream.logLevel }
        set { stream.logLevel = newValue }
    }

    var metadata: Logger.Metadata {
        get { stream.metadata }
        set { stream.metadata = Self.escaped(newValue) }
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { stream[metadataKey: key] }
        set { stream[metadataKey: Sanitizer.display(key)] = newValue.map(Self.escaped) }
    }

    var metadataProvider: Logger.MetadataProvider? {
        get { stream.metadataProvider }
        set { stream.metadataProvider = newValue.map { provider in .init { Self.escaped(provider.get()) } } }
    }

    func log(event: LogEvent) {
        var event = event
        event.message = "\(Sanitizer.display(event.message.description))"
        var metadata = event.metadata ?? [:]
        metadata[OperatorEvent.metadataKey] = nil
        if let error = event.error {
            // The stream handler would print the error's text as it is.
            metadata["error.message"] = "\(error)"
            metadata["error.type"] = "\(String(reflecting: type(of: error)))"
            event.error = nil
        }
        event.metadata = metadata.isEmpty ? nil : Self.escaped(metadata)
        stream.log(event: event)
    }

    static func escaped(_ metadata: Logger.Metadata) -> Logger.Metadata {
        Dictionary(metadata.map { (Sanitizer.display($0.key), escaped($0.value)) }) { first, _ in first }
    }

    static func escaped(_ value: Logger.Metadata.Value) -> Logger.Metadata.Value {
        switch value {
        case .string(let text): .string(Sanitizer.display(text))
        case .stringConvertible(let item): .string(Sanitizer.display(item.description))
        case .dictionary(let metadata): .dictionary(escaped(metadata))
        case .array(let list): .array(list.map(escaped))
        }
    }
}
