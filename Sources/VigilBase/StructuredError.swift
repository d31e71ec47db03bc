/// What every Vigil error carries: a stable code, the plugin concerned, where in a text file the
/// problem is, and a message with the cause and the remedy.
///
/// The description is rendered once, here, from the fields (`PATH:LINE:COLUMN: [plugin] message`);
/// nothing parses it back. Each type keeps its typed underlying error in a `cause` of its own.
public protocol StructuredError: Error, Sendable, CustomStringConvertible {
    associatedtype Code: Hashable, Sendable, CustomStringConvertible
    /// The kind of failure.
    var code: Code { get }
    /// The cause and the remedy, without the location or the plugin (which are fields).
    var message: String { get }
    /// The plugin concerned, if any.
    var plugin: String? { get }
    /// Where in a text file the problem is, if anywhere.
    var location: TextLocation? { get }
}

extension StructuredError {
    public var plugin: String? { nil }
    public var location: TextLocation? { nil }

    /// `PATH:LINE:COLUMN: [plugin] message`, each part when present.
    public var description: String {
        var text = location.map { "\($0): " } ?? ""
        if let plugin { text += "[\(plugin)] " }
        return text + message
    }
}

/// A position in a text file, for compiler-style diagnostics (`path:line:column`).
public struct TextLocation: Sendable, Hashable, CustomStringConvertible {
    /// The file.
    public let path: String
    /// 1-based line.
    public let line: Int
    /// 1-based column, in Unicode scalars.
    public let column: Int

    /// Creates a location.
    public init(path: String, line: Int, column: Int) {
        self.path = path
        self.line = line
        self.column = column
    }

    public var description: String { "\(path):\(line):\(column)" }
}
