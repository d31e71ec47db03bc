/// A signal received through a ``DBusConnection/subscribe(matchRule:_:)`` subscription.
public struct DBusSignalMessage: Sendable, Hashable {
    /// The sender's unique name (`:1.42`), if the bus told.
    public var sender: String?
    /// The object path that emitted it.
    public var path: String
    /// The interface, for example `org.freedesktop.login1.Manager`.
    public var interface: String
    /// The signal name, for example `PrepareForSleep`.
    public var member: String
    /// The signal's arguments.
    public var arguments: [DBusValue]
}

/// A match-rule subscription; ``cancel()`` removes it (also done when the connection closes).
public final class DBusSubscription: Sendable {
    private let cancelAction: @Sendable () async -> Void

    init(cancel: @escaping @Sendable () async -> Void) {
        self.cancelAction = cancel
    }

    /// Removes the match rule; no handler call starts after this returns. Safe to call twice.
    public func cancel() async {
        await cancelAction()
    }
}

/// How ``DBusConnection/requestName(_:flags:)`` ended (the bus's `RequestName` reply).
public enum DBusNameReply: UInt32, Sendable, Hashable {
    /// This connection now owns the name.
    case primaryOwner = 1
    /// Someone else owns it; this connection waits in the queue.
    case inQueue = 2
    /// Someone else owns it and this connection did not queue.
    case exists = 3
    /// This connection already owned it.
    case alreadyOwner = 4

    /// True when this connection owns the name.
    public var owns: Bool { self == .primaryOwner || self == .alreadyOwner }
}

/// `RequestName` flags.
public struct DBusNameFlags: OptionSet, Sendable, Hashable {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    /// Let another connection that asks with ``replaceExisting`` take the name.
    public static let allowReplacement = DBusNameFlags(rawValue: 1)
    /// Take the name from its owner if the owner allowed replacement.
    public static let replaceExisting = DBusNameFlags(rawValue: 2)
    /// Fail rather than wait in the queue.
    public static let doNotQueue = DBusNameFlags(rawValue: 4)
}
