import Logging
import VigilCheckCommands
import VigilCore
import VigilJournal
import VigilPlugin

/// Where the `vigil` commands' logs go: to the journal, as structured entries
/// (``JournalLogHandler``), when standard error is the journal (a systemd service's); else as
/// today's text lines on standard error (``TerminalLogHandler``). docs/logs.md. The choice is
/// VigilJournal's, the one a host app makes with the same call.
enum LogOutput {
    /// Whether standard error is the journal (`$JOURNAL_STREAM` names it).
    static let toJournal = Journal.isConnected(environment: CLI.environment.variables)

    /// The handler for loggers labelled `label`; `identifier` is the journal's
    /// `SYSLOG_IDENTIFIER` (the host's name, ``VigilHost/name(configPath:environment:)``).
    static func handler(label: String, identifier: String) -> any LogHandler {
        JournalLogHandler.standardError(
            label: label, identifier: identifier, environment: CLI.environment.variables,
            escape: { Sanitizer.display($0) }, otherwise: TerminalLogHandler(label: label))
    }
}
