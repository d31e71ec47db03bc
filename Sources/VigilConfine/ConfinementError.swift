public import VigilBase

/// Why a plugin's confinement could not be planned or applied.
public typealias ConfinementError = CodedError<ConfinementErrorCode>

/// The kind of a ``ConfinementError``, stable for scripts and tests.
public enum ConfinementErrorCode: String, ErrorCode {
    /// A declared path cannot travel in the policy (a line break or NUL in it), or is not absolute
    /// once resolved against the state directory.
    case pathUnencodable = "confinement-path-unencodable"
    /// This kernel cannot enforce the plugin's declared confinement, and the operator has not
    /// acknowledged it (`[confinement] acknowledge_unenforced`).
    case unenforceable = "confinement-unenforceable"
}
