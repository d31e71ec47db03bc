import Logging
import VigilCheckCommands
import VigilCore
import VigilDBus
import VigilPlugin

/// Where the `vigil` commands' logs go: to the journal, as structured entries
/// (``JournalLogHandler``), when standard error is the journal (a systemd service's); else as
/// today's text lines on standard error (``TerminalLogHandler``). docs/logs.md.
enum LogOutput {
    /// Whether standard error is the journal (`$JOURNAL_STREAM` names it).
    static let toJournal = Journal.isConnected(environment: CLI.environment.variables)

    /// The handler for loggers labelled `label`; `identifier` is the journal's
    /// `SYSLOG_IDENTIFIER` (the host's name, ``VigilHost/name(configPath:environment:)``).
    static func handler(label: String, identifier: String) -> any LogHandler {
        let terminal = TerminalLogHandler(label: label)
        guard toJournal else { return terminal }
        return JournalLogHandler(
            identifier: identifier, escape: { Sanitizer.display($0) }, fallback: terminal)
    }
}
