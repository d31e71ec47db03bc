public import Logging
import VigilBase

/// A swift-log handler that writes structured entries to the systemd journal (``Journal``), for a
/// process whose standard error is the journal (``Journal/isConnected(descriptor:environment:)``).
///
/// Each entry has `MESSAGE`, `PRIORITY` (syslog's, from the level), `CODE_FILE`, `CODE_LINE`,
/// `CODE_FUNC` (the log call's), `SYSLOG_IDENTIFIER` (the host's name), the logger's metadata as
/// `VIGIL_*` fields (``fieldName(_:)``), and `MESSAGE_ID` when the metadata names an
/// ``OperatorEvent``. The message and the metadata values go through `escape` (the `vigil` CLI's
/// terminal escaping: `journalctl` prints them to terminals). An entry the journal does not take
/// is given to `fallback` (the text line).
///
/// The `vigil` CLI bootstraps it (`LogOutput`); libraries never do.
public struct JournalLogHandler: LogHandler {
    public var logLevel: Logger.Level = .info
    public var metadata: Logger.Metadata = [:]
    public var metadataProvider: Logger.MetadataProvider?
    private let identifier: String
    private let escape: @Sendable (String) -> String
    private let fallback: (any LogHandler)?

    /// A handler whose entries carry `SYSLOG_IDENTIFIER=identifier`, with the message and the
    /// metadata values passed through `escape`; `fallback` logs what the journal refuses
    /// (nothing when nil).
    public init(
        identifier: String, escape: @escaping @Sendable (String) -> String = { $0 }, fallback: (any LogHandler)? = nil
    ) {
        self.identifier = identifier
        self.escape = escape
        self.fallback = fallback
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        let fields = Self.fields(for: event, metadata: merged(event), identifier: identifier, escape: escape)
        do {
            try Journal.send(fields.map { Array("\($0.name)=".utf8) + Array($0.value.utf8) })
        } catch {
            guard var fallback else { return }
            fallback.logLevel = logLevel
            fallback.metadata = metadata
            fallback.metadataProvider = metadataProvider
            fallback.log(event: event)
        }
    }

    /// The handler's metadata, then its provider's, then the event's (the later wins).
    private func merged(_ event: LogEvent) -> Logger.Metadata {
        var all = metadata
        if let provided = metadataProvider?.get() { all.merge(provided) { _, new in new } }
        if let own = event.metadata { all.merge(own) { _, new in new } }
        return all
    }

    /// The journal fields of `event` with `metadata` (already merged), in order: `MESSAGE`,
    /// `PRIORITY`, `SYSLOG_IDENTIFIER`, `CODE_*`, `MESSAGE_ID` (for an ``OperatorEvent``), then
    /// the metadata sorted by key, and the event's error as `VIGIL_ERROR_MESSAGE`/`_TYPE`.
    package static func fields(
        for event: LogEvent, metadata: Logger.Metadata, identifier: String,
        escape: (String) -> String = { $0 }
    ) -> [(name: String, value: String)] {
        var fields: [(name: String, value: String)] = [
            ("MESSAGE", escape(event.message.description)), ("PRIORITY", "\(priority(event.level))"),
            ("SYSLOG_IDENTIFIER", identifier), ("CODE_FILE", event.file), ("CODE_LINE", "\(event.line)"),
            ("CODE_FUNC", event.function),
        ]
        var metadata = metadata
        if let error = event.error {
            metadata["error.message"] = "\(error)"
            metadata["error.type"] = "\(String(reflecting: type(of: error)))"
        }
        if let name = metadata[OperatorEvent.metadataKey], let known = OperatorEvent(rawValue: "\(name)") {
            fields.append(("MESSAGE_ID", known.messageID))
        }
        for (key, value) in metadata.sorted(by: { $0.key < $1.key }) {
            fields.append((fieldName(key), escape("\(value)")))
        }
        return fields
    }

    /// syslog's priority of `level` (journal `PRIORITY`): critical 2 (crit) … debug and trace 7.
    package static func priority(_ level: Logger.Level) -> Int {
        switch level {
        case .critical: 2
        case .error: 3
        case .warning: 4
        case .notice: 5
        case .info: 6
        case .debug, .trace: 7
        }
    }

    /// The journal field of metadata `key`: `VIGIL_` and the key in capitals, every character but
    /// ASCII letters and digits made `_`, at most 64 characters (the journal's rules for a name
    /// a client may send): `worker.name` is `VIGIL_WORKER_NAME`, and `vigil.event` (a key
    /// already in Vigil's own namespace) is `VIGIL_EVENT`.
    package static func fieldName(_ key: String) -> String {
        let own = key.hasPrefix("vigil.") ? key.dropFirst("vigil.".count) : Substring(key)
        let body = own.unicodeScalars.map { scalar -> Character in
            switch scalar {
            case "a"..."z": Character(String(scalar).uppercased())
            case "A"..."Z", "0"..."9": Character(scalar)
            default: "_"
            }
        }
        return String(("VIGIL_" + String(body)).prefix(64))
    }
}
