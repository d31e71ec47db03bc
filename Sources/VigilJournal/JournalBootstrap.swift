public import Logging

@_exported public import enum VigilDBus.Journal
@_exported public import struct VigilDBus.JournalLogHandler

#if canImport(Glibc)
import Glibc
#endif

extension JournalLogHandler {
    /// The log handler for a host app's `LoggingSystem.bootstrap`, as the `vigil` commands choose
    /// theirs (docs/logs.md): structured journal entries (``JournalLogHandler``, with
    /// `SYSLOG_IDENTIFIER=identifier`) when standard error is the journal — `$JOURNAL_STREAM`
    /// names it, as systemd sets it for a service whose output goes to the journal — else
    /// `otherwise` (swift-log's text lines on standard error by default), which also takes any
    /// entry the journal refuses.
    ///
    /// ```swift
    /// LoggingSystem.bootstrap { JournalLogHandler.standardError(label: $0, identifier: "my-app") }
    /// ```
    ///
    /// - Parameters:
    ///   - environment: where `JOURNAL_STREAM` is read (`nil`: this process's).
    ///   - escape: applied to the message and the metadata values of each entry (`journalctl`
    ///     prints them to terminals).
    public static func standardError(
        label: String, identifier: String, environment: [String: String]? = nil,
        escape: @escaping @Sendable (String) -> String = { $0 }, otherwise: (any LogHandler)? = nil
    ) -> any LogHandler {
        let text = otherwise ?? StreamLogHandler.standardError(label: label)
        let variables = environment ?? getenv("JOURNAL_STREAM").map { ["JOURNAL_STREAM": String(cString: $0)] } ?? [:]
        guard Journal.isConnected(environment: variables) else { return text }
        return JournalLogHandler(identifier: identifier, escape: escape, fallback: text)
    }
}
