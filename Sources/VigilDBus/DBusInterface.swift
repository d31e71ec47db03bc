/// One interface of an object exported with ``DBusConnection/export(path:interfaces:)``.
///
/// Handlers run on the connection's own thread, one at a time: they must answer quickly and
/// never block (read a snapshot, hand work to your own task). Every call is answered: a throw
/// becomes a D-Bus error reply, calls with the wrong argument types get `InvalidArgs`, unknown
/// members `UnknownMethod`, unknown properties `UnknownProperty`.
public struct DBusInterface: Sendable {
    public var name: String
    public var methods: [DBusMethod]
    public var properties: [DBusProperty]
    public var signals: [DBusSignal]

    public init(name: String, methods: [DBusMethod] = [], properties: [DBusProperty] = [], signals: [DBusSignal] = []) {
        self.name = name
        self.methods = methods
        self.properties = properties
        self.signals = signals
    }
}

/// A named, typed argument, for introspection.
public struct DBusArgument: Sendable, Hashable {
    public var name: String
    public var signature: String

    public init(_ name: String, _ signature: String) {
        self.name = name
        self.signature = signature
    }
}

/// A method call as an exported method sees it.
public struct DBusMethodCall: Sendable {
    /// The caller's unique bus name.
    public var sender: String?
    /// The arguments, already checked against the method's input signature.
    public var arguments: [DBusValue]
}

/// An exported method.
public struct DBusMethod: Sendable {
    public typealias Handler = @Sendable (DBusMethodCall) throws(DBusError) -> [DBusValue]

    public var name: String
    public var inputs: [DBusArgument]
    public var outputs: [DBusArgument]
    public var handler: Handler

    /// A method; the handler's return values must match `outputs`.
    public init(_ name: String, inputs: [DBusArgument] = [], outputs: [DBusArgument] = [], handler: @escaping Handler) {
        self.name = name
        self.inputs = inputs
        self.outputs = outputs
        self.handler = handler
    }
}

/// An exported property.
public struct DBusProperty: Sendable {
    /// What `org.freedesktop.DBus.Property.EmitsChangedSignal` says about it.
    public enum ChangeSignal: String, Sendable {
        /// PropertiesChanged carries the new value.
        case emits = "true"
        /// PropertiesChanged names it as invalidated, without the value.
        case invalidates
        /// It never changes.
        case const
        /// No signal (for example MPRIS `Position`).
        case none = "false"
    }

    public typealias Getter = @Sendable () -> DBusValue
    public typealias Setter = @Sendable (DBusValue) throws(DBusError) -> Void

    public var name: String
    public var signature: String
    public var changeSignal: ChangeSignal
    public var get: Getter
    /// `nil` for a read-only property.
    public var set: Setter?

    /// A property of type `signature`; the getter must return a value of exactly that type.
    public init(
        _ name: String, signature: String, changeSignal: ChangeSignal = .emits, get: @escaping Getter,
        set: Setter? = nil
    ) {
        self.name = name
        self.signature = signature
        self.changeSignal = changeSignal
        self.get = get
        self.set = set
    }
}

/// A signal an exported interface declares (for introspection; send it with ``DBusExportedObject/emit(interface:signal:arguments:)``).
public struct DBusSignal: Sendable {
    public var name: String
    public var arguments: [DBusArgument]

    public init(_ name: String, arguments: [DBusArgument] = []) {
        self.name = name
        self.arguments = arguments
    }
}
