@_exported public import VigilBase

/// A D-Bus failure: what went wrong (``code``), the D-Bus error name when the bus or the peer
/// sent one, the failed sd-bus or system call with its errno (``cause``), and where it happened.
public struct DBusError: StructuredError, Hashable {
    /// What kind of failure this is.
    public enum Code: String, ErrorCode {
        /// The bus address is missing or malformed.
        case noBus = "dbus-no-bus"
        /// Connecting or authenticating to the bus failed.
        case connectFailed = "dbus-connect-failed"
        /// The connection is closed (by ``DBusConnection/close()`` or by the bus).
        case disconnected = "dbus-disconnected"
        /// A method call was answered with an error (see ``name``).
        case callFailed = "dbus-call-failed"
        /// No reply came within the timeout (or the bus did not answer a new connection in time).
        case timedOut = "dbus-timed-out"
        /// The task waiting for the bus was cancelled (a stop).
        case cancelled = "dbus-cancelled"
        /// A value could not be encoded or a reply could not be decoded.
        case invalidMessage = "dbus-invalid-message"
        /// A well-known name could not be requested or is owned by someone else.
        case nameNotAcquired = "dbus-name-not-acquired"
        /// An object path, match rule or export could not be registered.
        case registrationFailed = "dbus-registration-failed"
        /// An exported method or property refused a call (sent back as the error ``name``).
        case refused = "dbus-refused"
    }

    public var code: Code
    /// The D-Bus error name (for example `org.freedesktop.DBus.Error.ServiceUnknown`), if any.
    public var name: String?
    /// The failed sd-bus or system call and its `Errno` (a ``SystemCallError``), if any.
    public var cause: ErrorCause?
    /// What happened and, where possible, how to fix it.
    public var message: String
    /// Where the failure was detected.
    public var function: String

    public init(
        code: Code, name: String? = nil, cause: SystemCallError? = nil, message: String,
        function: String = #function
    ) {
        self.code = code
        self.name = name
        self.cause = cause.map(ErrorCause.init)
        self.message = message
        self.function = function
    }

    /// The error an exported method or property sends back: `name` must be a valid D-Bus error
    /// name such as `org.freedesktop.DBus.Error.InvalidArgs`.
    public static func refusal(_ name: String, _ message: String, function: String = #function) -> DBusError {
        DBusError(code: .refused, name: name, message: message, function: function)
    }

    /// `call` returned `result` (a negative errno, as sd-bus reports one) while doing `what`; the
    /// message is `what: reason`, the cause the call and its errno.
    static func failed(
        _ code: Code, call: String, result: Int32, _ what: String, function: String = #function
    ) -> DBusError {
        let failure = SystemCallError(call, errno: result)
        return DBusError(code: code, cause: failure, message: "\(what): \(failure.reason)", function: function)
    }

    /// The failed call, when a system or sd-bus call is the cause.
    public var systemCall: SystemCallError? { cause?.systemCall }

    public var description: String {
        var text = "[\(code)] \(message)"
        if let name { text += " (\(name))" }
        return text
    }
}

/// Well-known D-Bus error names.
public enum DBusErrorName {
    public static let failed = "org.freedesktop.DBus.Error.Failed"
    public static let invalidArgs = "org.freedesktop.DBus.Error.InvalidArgs"
    public static let unknownMethod = "org.freedesktop.DBus.Error.UnknownMethod"
    public static let unknownInterface = "org.freedesktop.DBus.Error.UnknownInterface"
    public static let unknownProperty = "org.freedesktop.DBus.Error.UnknownProperty"
    public static let propertyReadOnly = "org.freedesktop.DBus.Error.PropertyReadOnly"
    public static let notSupported = "org.freedesktop.DBus.Error.NotSupported"
    public static let serviceUnknown = "org.freedesktop.DBus.Error.ServiceUnknown"
    public static let noReply = "org.freedesktop.DBus.Error.NoReply"
}
