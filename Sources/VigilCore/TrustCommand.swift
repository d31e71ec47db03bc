import Synchronization

/// The command that trusts a plugin, as the operator runs it where they are — for the remedies in
/// messages.
///
/// From a shell that is `vigil plugin trust NAME`. When one of Vigil's SwiftPM plugins runs Vigil
/// (`swift package vigil-check`, `vigil-trust`, the build check), the host developer may not have
/// the CLI at all; the plugin sets `VIGIL_TRUST_COMMAND` to the form that works there,
/// `swift package --allow-writing-to-package-directory vigil-trust`. The `vigil` tool hands its
/// environment over once, at start (``adopt(from:)``); nothing here reads the process environment.
public enum TrustCommand {
    /// The environment variable holding the command (without the plugin's name) to show instead
    /// of `vigil plugin trust`.
    public static let environmentVariable = "VIGIL_TRUST_COMMAND"

    private static let command = Mutex("vigil plugin trust")

    /// Uses the command named by ``environmentVariable`` in `environment`, when it names one.
    public static func adopt(from environment: [String: String]) {
        guard let value = environment[environmentVariable], !value.isEmpty else { return }
        command.withLock { $0 = value }
    }

    /// `vigil plugin trust NAME ARGUMENTS…`, or the form adopted from ``environmentVariable``.
    public static func display(_ plugin: String, _ arguments: String...) -> String {
        ([command.withLock { $0 }, plugin] + arguments).joined(separator: " ")
    }
}
