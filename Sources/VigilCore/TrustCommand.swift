#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The command that trusts a plugin, as the operator runs it where they are — for the remedies in
/// messages.
///
/// From a shell that is `vigil plugin trust NAME`. When one of Vigil's SwiftPM plugins runs Vigil
/// (`swift package vigil-check`, `vigil-trust`, the build check), the host developer may not have
/// the CLI at all; the plugin sets `VIGIL_TRUST_COMMAND` to the form that works there,
/// `swift package --allow-writing-to-package-directory vigil-trust`.
public enum TrustCommand {
    /// The environment variable holding the command (without the plugin's name) to show instead
    /// of `vigil plugin trust`.
    public static let environmentVariable = "VIGIL_TRUST_COMMAND"

    /// `vigil plugin trust NAME ARGUMENTS…`, or the form set in ``environmentVariable``.
    public static func display(_ plugin: String, _ arguments: String...) -> String {
        var command = "vigil plugin trust"
        if let value = getenv(environmentVariable).map({ String(cString: $0) }), !value.isEmpty {
            command = value
        }
        return ([command, plugin] + arguments).joined(separator: " ")
    }
}
