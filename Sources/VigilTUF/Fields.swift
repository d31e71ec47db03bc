import VigilBase

/// Typed reads of a parsed metadata object, each refusal naming the field.
struct Fields {
    let members: [String: JSONValue]
    let path: String
    let what: String

    init(_ value: JSONValue, path: String, what: String) throws(TUFError) {
        guard case .object(let members) = value else { throw .malformed(what, "\(path) is not an object") }
        self.members = members
        self.path = path
        self.what = what
    }

    func fail(_ field: String, _ reason: String) -> TUFError { .malformed(what, "\(path).\(field) \(reason)") }

    func value(_ field: String) throws(TUFError) -> JSONValue {
        guard let v = members[field] else { throw fail(field, "is missing") }
        return v
    }

    func string(_ field: String) throws(TUFError) -> String {
        guard case .string(let s) = try value(field) else { throw fail(field, "is not a string") }
        return s
    }

    func integer(_ field: String) throws(TUFError) -> Int64 {
        guard case .integer(let i) = try value(field) else { throw fail(field, "is not an integer") }
        return i
    }

    func positive(_ field: String) throws(TUFError) -> Int64 {
        let i = try integer(field)
        guard i >= 1 else { throw fail(field, "is \(i), not at least 1") }
        return i
    }

    func bool(_ field: String) throws(TUFError) -> Bool {
        guard case .bool(let b) = try value(field) else { throw fail(field, "is not a boolean") }
        return b
    }

    func object(_ field: String) throws(TUFError) -> Fields {
        try Fields(value(field), path: "\(path).\(field)", what: what)
    }

    func objectMembers(_ field: String) throws(TUFError) -> [String: JSONValue] {
        try object(field).members
    }

    func strings(_ field: String) throws(TUFError) -> [String] {
        guard case .array(let items) = try value(field) else { throw fail(field, "is not an array") }
        var out: [String] = []
        for item in items {
            guard case .string(let s) = item else { throw fail(field, "holds a non-string") }
            out.append(s)
        }
        return out
    }

    func has(_ field: String) -> Bool { members[field] != nil }
}
