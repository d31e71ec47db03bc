/// A module's error codes: a closed set of stable, distinct strings for scripts, tests and exit codes.
///
/// Declare them as `enum Code: String, ErrorCode`; the raw value is the code's one spelling.
public protocol ErrorCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible where RawValue == String {}

extension ErrorCode {
    public var description: String { rawValue }
}
