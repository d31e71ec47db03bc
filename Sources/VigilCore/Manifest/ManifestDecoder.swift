import VigilPlugin

/// Decodes `plugin.json` strictly: ``StrictJSON`` syntax, no unknown fields, a known `"schema"`,
/// SemVer versions, valid names and resource paths that stay inside the plugin directory.
///
/// Errors are ``CoreError/Code/malformedManifest`` and name the JSON path of the bad value
/// (for example `$.host_requirements[1].kind`).
public enum ManifestDecoder {
    /// The largest manifest accepted, in bytes.
    public static let maxManifestSize = 64 * 1024
    /// The largest resource size a manifest may declare, in bytes.
    public static let maxResourceSize = 1 << 30
    /// File names inside a plugin directory that are not resources.
    public static let reservedFileNames: Set<String> = ["plugin.json", "plugin.json.minisig", "plugin.pub"]

    /// Parses and decodes manifest bytes.
    ///
    /// - Parameters:
    ///   - bytes: The exact bytes of `plugin.json` (already verified, when loading).
    ///   - plugin: The plugin's name, for error messages.
    /// - Throws: ``CoreError`` `.malformedManifest`.
    public static func decode(_ bytes: [UInt8], plugin: String? = nil) throws(CoreError) -> PluginManifest {
        let value: JSONValue
        do {
            value = try StrictJSON.parse(bytes, maxSize: maxManifestSize)
        } catch {
            throw malformed(plugin, path: error.path, "\(error.reason) (line \(error.line), column \(error.column))")
        }
        return try decode(value, plugin: plugin)
    }

    /// Decodes an already-parsed manifest document.
    public static func decode(_ value: JSONValue, plugin: String? = nil) throws(CoreError) -> PluginManifest {
        var reader = Reader(plugin: plugin)
        return try reader.manifest(value)
    }

    /// Decodes a `"capabilities"` object on its own (as recorded in the rollback state), with the
    /// manifest's rules and messages.
    public static func capabilities(_ value: JSONValue, plugin: String? = nil) throws(CoreError) -> PluginCapabilities {
        var reader = Reader(plugin: plugin)
        return try reader.at(.key("capabilities")) { r throws(CoreError) in try r.capabilities(value) }
    }

    static func malformed(_ plugin: String?, path: String, _ reason: String) -> CoreError {
        CoreError(
            code: .malformedManifest, plugin: plugin,
            message: "plugin.json is malformed at \(path): \(reason) — fix the manifest and sign it again "
                + "(vigil plugin sign), or ask the plugin's publisher for a corrected release")
    }

    /// Checks a resource path: relative, no `.`/`..`/empty components, no control characters and
    /// not one of the plugin's own signature files. Returns the problem, or `nil`.
    public static func resourcePathProblem(_ path: String) -> String? {
        if path.isEmpty { return "the path is empty" }
        if path.utf8.count > 1024 { return "the path is longer than 1024 bytes" }
        if path.hasPrefix("/") { return "the path is absolute; resource paths are relative to the plugin directory" }
        if path.unicodeScalars.contains(where: { Sanitizer.isUnsafe($0) || $0 == "\\" }) {
            return "the path contains a control character (C0, C1), a bidirectional control or a backslash"
        }
        for component in path.split(separator: "/", omittingEmptySubsequences: false) {
            if component.isEmpty { return "the path has an empty component ('//' or a trailing '/')" }
            if component == "." || component == ".." {
                return "the path has a '\(component)' component; resource paths may not leave the plugin directory"
            }
        }
        if reservedFileNames.contains(path) { return "\(path) is the plugin's own signed file, not a resource" }
        return nil
    }

    private struct Reader {
        let plugin: String?
        var path: [StrictJSON.PathComponent] = []

        init(plugin: String?) { self.plugin = plugin }

        var pathString: String { StrictJSON.format(path: path) }

        func fail(_ reason: String) -> CoreError { ManifestDecoder.malformed(plugin, path: pathString, reason) }

        func fail(at component: StrictJSON.PathComponent, _ reason: String) -> CoreError {
            ManifestDecoder.malformed(plugin, path: StrictJSON.format(path: path + [component]), reason)
        }

        mutating func at<T>(_ component: StrictJSON.PathComponent, _ body: (inout Reader) throws(CoreError) -> T)
            throws(CoreError) -> T
        {
            path.append(component)
            defer { path.removeLast() }
            return try body(&self)
        }

        func members(_ value: JSONValue, allowed: [String], required: [String]) throws(CoreError) -> [String: JSONValue]
        {
            guard case .object(let list) = value else { throw fail("expected an object, found \(value.kindName)") }
            var out: [String: JSONValue] = [:]
            for member in list {
                guard allowed.contains(member.key) else {
                    var p = self
                    p.path.append(.key(member.key))
                    var reason = "unknown field \(JSONValue.quote(Sanitizer.display(member.key)))"
                    if let near = NearName.closest(to: member.key, among: allowed) {
                        reason += "; did you mean \"\(near)\"?"
                    }
                    throw p.fail(reason + " (allowed: \(allowed.joined(separator: ", ")))")
                }
                out[member.key] = member.value
            }
            for key in required where out[key] == nil {
                throw fail("the required field \"\(key)\" is missing")
            }
            return out
        }

        func string(_ value: JSONValue) throws(CoreError) -> String {
            guard case .string(let s) = value else { throw fail("expected a string, found \(value.kindName)") }
            return s
        }

        /// The string member `key` of `fields` (a required one), refused with what `problem` says
        /// is wrong with it, if anything.
        mutating func stringMember(
            _ fields: [String: JSONValue], _ key: String, problem: (String) -> String? = { _ in nil }
        ) throws(CoreError) -> String {
            try at(.key(key)) { r throws(CoreError) in
                let s = try r.string(fields[key]!)
                if let problem = problem(s) { throw r.fail(problem) }
                return s
            }
        }

        func plainText(_ value: JSONValue, max: Int, allowEmpty: Bool = false) throws(CoreError) -> String {
            let s = try string(value)
            if !allowEmpty && s.isEmpty { throw fail("the string is empty") }
            if s.utf8.count > max { throw fail("the string is longer than \(max) bytes") }
            if s.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) {
                throw fail("the string contains a control character")
            }
            return s
        }

        mutating func manifest(_ value: JSONValue) throws(CoreError) -> PluginManifest {
            let fields = try members(
                value,
                allowed: [
                    "schema", "name", "version", "description", "entry", "host_requirements", "resources", "settings",
                    "expires", "capabilities",
                ],
                required: ["schema", "name", "version", "entry"])
            let schema = try stringMember(fields, "schema")
            guard PluginManifest.schemas.contains(schema) else {
                throw fail(
                    at: .key("schema"),
                    "unknown schema \(JSONValue.quote(Sanitizer.display(schema))); this version of Vigil reads "
                        + PluginManifest.schemas.map { "\"\($0)\"" }.joined(separator: " and ")
                        + " — update Vigil or ask for a manifest in one of those schemas")
            }
            let name = try stringMember(fields, "name", problem: PluginName.problem)
            let version = try at(.key("version")) { r throws(CoreError) in
                let s = try r.string(fields["version"]!)
                guard let v = SemanticVersion(s) else {
                    throw r.fail(
                        "\(JSONValue.quote(Sanitizer.display(s))) is not a semantic version (MAJOR.MINOR.PATCH, "
                            + "for example \"1.2.0\")")
                }
                return v
            }
            let description = try at(.key("description")) { r throws(CoreError) in
                try fields["description"].map { v throws(CoreError) in try r.plainText(v, max: 1024, allowEmpty: true) }
                    ?? ""
            }
            let (entry, sharedLibrary) = try at(.key("entry")) { r throws(CoreError) in try r.entry(fields["entry"]!) }
            let requirements = try at(.key("host_requirements")) { r throws(CoreError) in
                try r.requirements(fields["host_requirements"] ?? .array([]))
            }
            let resources = try at(.key("resources")) { r throws(CoreError) in
                try r.resources(fields["resources"] ?? .array([]))
            }
            var settingsSchema: SettingsSchema?
            let settings = try at(.key("settings")) { r throws(CoreError) -> [String: SettingValue] in
                let v = fields["settings"] ?? .object([])
                guard case .object = v else { throw r.fail("expected an object, found \(v.kindName)") }
                if schema != PluginManifest.schemaV1 {
                    let decoded = try r.settingsSchema(v, topLevel: true)
                    settingsSchema = decoded
                    return decoded.defaults
                }
                guard case .table(let t) = try r.setting(v) else { return [:] }
                return t
            }
            let expires = try at(.key("expires")) { r throws(CoreError) -> Int64? in
                guard let v = fields["expires"] else { return nil }
                let text = try r.plainText(v, max: 64)
                guard let seconds = Freshness.parseRFC3339(text) else {
                    throw r.fail(
                        "\(JSONValue.quote(Sanitizer.display(text))) is not an RFC 3339 date-time (for example "
                            + "\"2027-01-31T00:00:00Z\")")
                }
                return seconds
            }
            let capabilities = try at(.key("capabilities")) { r throws(CoreError) in
                try fields["capabilities"].map { v throws(CoreError) in try r.capabilities(v) } ?? .none
            }
            var manifest = PluginManifest(
                name: name, version: version, description: description, entry: entry,
                hostRequirements: requirements, resources: resources, settings: settings, sharedLibrary: sharedLibrary)
            manifest.expires = expires
            manifest.settingsSchema = settingsSchema
            manifest.capabilities = capabilities
            if let sharedLibrary, !resources.contains(where: { $0.path == sharedLibrary.path }) {
                throw fail(
                    at: .key("entry"),
                    "the shared library \(sharedLibrary.path) is not listed in \"resources\"; list it (and every "
                        + "non-system library it needs) there so its size and SHA-256 are signed")
            }
            return manifest
        }

        /// `entry`: a built-in implementation's name, or `{"kind": "shared-library", "path": …, "abi": N}`.
        mutating func entry(_ value: JSONValue) throws(CoreError) -> (String, PluginManifest.SharedLibraryEntry?) {
            if case .string = value { return (try plainText(value, max: 256), nil) }
            guard case .object = value else {
                throw fail(
                    "expected a built-in implementation's name or a {\"kind\": \"shared-library\", …} object, "
                        + "found \(value.kindName)")
            }
            let fields = try members(value, allowed: ["kind", "path", "abi"], required: ["kind", "path", "abi"])
            let kind = try stringMember(fields, "kind")
            guard kind == "shared-library" else {
                throw fail(
                    at: .key("kind"),
                    "unknown entry kind \(JSONValue.quote(Sanitizer.display(kind))) (known: shared-library)")
            }
            let path = try stringMember(fields, "path", problem: ManifestDecoder.resourcePathProblem)
            let abi = try at(.key("abi")) { r throws(CoreError) in
                guard case .number(let n) = fields["abi"]!, let abi = Int(n), (1...65535).contains(abi) else {
                    throw r.fail("expected the plugin ABI major version, a whole number from 1")
                }
                return abi
            }
            return ("shared-library", PluginManifest.SharedLibraryEntry(path: path, abi: abi))
        }

        /// `capabilities`: the closed vocabulary of docs/signing.md ("Capabilities"); every path
        /// normalised, every list without duplicates.
        mutating func capabilities(_ value: JSONValue) throws(CoreError) -> PluginCapabilities {
            let fields = try members(
                value, allowed: ["files", "sound_server", "bus", "network", "spawn"], required: [])
            var files: [PluginCapabilities.FileGrant] = []
            if let v = fields["files"] {
                files = try at(.key("files")) { r throws(CoreError) in try r.fileGrants(v) }
            }
            var soundServer = false
            if let v = fields["sound_server"] {
                guard case .bool(let b) = v else { throw fail(at: .key("sound_server"), "expected true or false") }
                soundServer = b
            }
            var buses: Set<PluginCapabilities.Bus> = []
            if let v = fields["bus"] {
                buses = try at(.key("bus")) { r throws(CoreError) in
                    Set(
                        try r.words(
                            v, of: PluginCapabilities.Bus.allCases.map(\.rawValue), what: "bus"
                        ).map { PluginCapabilities.Bus(rawValue: $0)! })
                }
            }
            var network = PluginCapabilities.Network.none
            if let v = fields["network"] {
                network = try at(.key("network")) { r throws(CoreError) in try r.network(v) }
            }
            var spawn: [String] = []
            if let v = fields["spawn"] {
                spawn = try at(.key("spawn")) { r throws(CoreError) in try r.executables(v) }
            }
            return PluginCapabilities(
                files: files, soundServer: soundServer, buses: buses, network: network, spawn: spawn)
        }

        /// A non-empty array without duplicates, each element read by `element`.
        mutating func uniqueList<T: Hashable>(
            _ value: JSONValue, _ element: (inout Reader, JSONValue) throws(CoreError) -> T
        ) throws(CoreError) -> [T] {
            guard case .array(let list) = value else { throw fail("expected an array, found \(value.kindName)") }
            guard !list.isEmpty else { throw fail("the list is empty; leave the field out to ask for nothing") }
            var out: [T] = []
            for (i, item) in list.enumerated() {
                let decoded = try at(.index(i)) { r throws(CoreError) in try element(&r, item) }
                guard !out.contains(decoded) else { throw fail(at: .index(i), "this entry is listed twice") }
                out.append(decoded)
            }
            return out
        }

        /// A string that is one of `known`, with the nearest known word when it is not.
        func word(_ value: JSONValue, of known: [String], what: String) throws(CoreError) -> String {
            let s = try string(value)
            guard known.contains(s) else {
                var reason = "unknown \(what) \(JSONValue.quote(Sanitizer.display(s)))"
                if let near = NearName.closest(to: s, among: known) { reason += "; did you mean \"\(near)\"?" }
                throw fail(reason + " (known: \(known.joined(separator: ", ")))")
            }
            return s
        }

        mutating func words(_ value: JSONValue, of known: [String], what: String) throws(CoreError) -> [String] {
            try uniqueList(value) { r, v throws(CoreError) in try r.word(v, of: known, what: what) }
        }

        /// A declared path, normalised; `absolute` requires a leading `/`.
        func capabilityPath(_ value: JSONValue, absolute: Bool) throws(CoreError) -> String {
            let s = try string(value)
            if absolute, !s.hasPrefix("/") {
                throw fail(
                    "\(JSONValue.quote(Sanitizer.display(s))) is not an absolute path; name the executable "
                        + "by its absolute path (for example \"/usr/bin/aplay\")")
            }
            switch PluginCapabilities.normalizedPath(s) {
            case .success(let path): return path
            case .failure(let problem): throw fail(problem.reason)
            }
        }

        mutating func fileGrants(_ value: JSONValue) throws(CoreError) -> [PluginCapabilities.FileGrant] {
            let grants = try uniqueList(value) { r, v throws(CoreError) -> PluginCapabilities.FileGrant in
                let fields = try r.members(v, allowed: ["path", "access"], required: ["path", "access"])
                let path = try r.at(.key("path")) { r throws(CoreError) in
                    try r.capabilityPath(fields["path"]!, absolute: false)
                }
                let access = try r.at(.key("access")) { r throws(CoreError) in
                    PluginCapabilities.FileAccess(
                        rawValue: try r.word(
                            fields["access"]!, of: PluginCapabilities.FileAccess.allCases.map(\.rawValue),
                            what: "access"))!
                }
                return PluginCapabilities.FileGrant(path: path, access: access)
            }
            for (i, grant) in grants.enumerated() where grants[..<i].contains(where: { $0.path == grant.path }) {
                throw fail(at: .index(i), "\(grant.path) is listed twice; list each path once with its access")
            }
            return grants
        }

        mutating func network(_ value: JSONValue) throws(CoreError) -> PluginCapabilities.Network {
            if case .string = value {
                return try word(value, of: ["none", "any"], what: "network") == "any" ? .any : .none
            }
            guard case .object = value else {
                throw fail(
                    "expected \"none\", \"any\" or {\"tcp_connect\": [PORT, …]}, found \(value.kindName)")
            }
            let fields = try members(value, allowed: ["tcp_connect"], required: ["tcp_connect"])
            let ports = try at(.key("tcp_connect")) { r throws(CoreError) in
                try r.uniqueList(fields["tcp_connect"]!) { r, v throws(CoreError) -> UInt16 in
                    guard case .number(let n) = v, n.utf8.allSatisfy({ (0x30...0x39).contains($0) }),
                        let port = UInt16(n), port >= 1
                    else { throw r.fail("expected a TCP port, a whole number from 1 to 65535") }
                    return port
                }
            }
            return .tcpConnect(ports)
        }

        mutating func executables(_ value: JSONValue) throws(CoreError) -> [String] {
            try uniqueList(value) { r, v throws(CoreError) -> String in
                let path = try r.capabilityPath(v, absolute: true)
                if path.hasSuffix("/") {
                    throw r.fail("\(path) is a directory; name each executable the plugin runs")
                }
                return path
            }
        }

        mutating func requirements(_ value: JSONValue) throws(CoreError) -> [HostRequirement] {
            guard case .array(let list) = value else { throw fail("expected an array, found \(value.kindName)") }
            var out: [HostRequirement] = []
            for (i, element) in list.enumerated() {
                out.append(try at(.index(i)) { r throws(CoreError) in try r.requirement(element) })
            }
            return out
        }

        mutating func requirement(_ value: JSONValue) throws(CoreError) -> HostRequirement {
            let fields = try members(value, allowed: ["kind", "value", "why"], required: ["kind"])
            let kind = try stringMember(fields, "kind")
            let why = try at(.key("why")) { r throws(CoreError) in
                try fields["why"].map { v throws(CoreError) in try r.plainText(v, max: 1024) }
            }
            let takesValue = ["background-mode", "service", "executable"].contains(kind)
            let knownKinds = ["background-mode", "service", "audio-output", "executable", "dbus-session"]
            guard knownKinds.contains(kind) else {
                throw fail(
                    at: .key("kind"),
                    "unknown requirement kind \(JSONValue.quote(Sanitizer.display(kind))) "
                        + "(known: \(knownKinds.joined(separator: ", ")))")
            }
            var text: String?
            if takesValue {
                guard let v = fields["value"] else { throw fail("a \"\(kind)\" requirement needs a \"value\"") }
                text = try at(.key("value")) { r throws(CoreError) in try r.plainText(v, max: 256) }
            } else if fields["value"] != nil {
                throw fail(at: .key("value"), "a \"\(kind)\" requirement takes no \"value\"")
            }
            let k: HostRequirement.Kind =
                switch kind {
                case "background-mode": .backgroundMode(text!)
                case "service": .service(text!)
                case "executable": .executable(text!)
                case "audio-output": .audioOutput
                default: .dbusSession
                }
            return HostRequirement(kind: k, why: why)
        }

        mutating func resources(_ value: JSONValue) throws(CoreError) -> [PluginManifest.Resource] {
            guard case .array(let list) = value else { throw fail("expected an array, found \(value.kindName)") }
            var out: [PluginManifest.Resource] = []
            var seen: Set<String> = []
            for (i, element) in list.enumerated() {
                let resource = try at(.index(i)) { r throws(CoreError) in try r.resource(element) }
                guard seen.insert(resource.path).inserted else {
                    throw fail(at: .index(i), "the resource \(resource.path) is listed twice")
                }
                out.append(resource)
            }
            return out
        }

        mutating func resource(_ value: JSONValue) throws(CoreError) -> PluginManifest.Resource {
            let fields = try members(value, allowed: ["path", "sha256", "size"], required: ["path", "sha256", "size"])
            let path = try stringMember(fields, "path", problem: ManifestDecoder.resourcePathProblem)
            let sha = try stringMember(fields, "sha256") { s in
                let isHex = s.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
                return s.utf8.count == 64 && isHex ? nil : "expected 64 lower-case hexadecimal digits"
            }
            let size = try at(.key("size")) { r throws(CoreError) in
                // Digits only: no sign (not even "-0"), fraction or exponent.
                guard case .number(let n) = fields["size"]!, n.utf8.allSatisfy({ (0x30...0x39).contains($0) }),
                    let size = Int(n)
                else {
                    throw r.fail("expected a non-negative integer number of bytes")
                }
                guard size <= ManifestDecoder.maxResourceSize else {
                    throw r.fail("\(size) bytes is more than the limit of \(ManifestDecoder.maxResourceSize)")
                }
                return size
            }
            return PluginManifest.Resource(path: path, sha256: sha, size: size)
        }

        /// A v2 `settings` object: each key's spec, `{"type": "integer", "min": 100, "max": 10000,
        /// "default": 1000, "description": "…"}` (see docs/signing.md, "Settings schema").
        mutating func settingsSchema(_ value: JSONValue, topLevel: Bool) throws(CoreError) -> SettingsSchema {
            guard case .object(let members) = value else { throw fail("expected an object, found \(value.kindName)") }
            var out: [String: SettingsSchema.Setting] = [:]
            for member in members {
                let key = member.key
                if key.isEmpty || key.utf8.count > 128 || key.unicodeScalars.contains(where: Sanitizer.isUnsafe) {
                    throw fail(at: .key(key), "a setting's name must be 1–128 bytes without control characters")
                }
                out[member.key] = try at(.key(member.key)) { r throws(CoreError) in
                    try r.settingSpec(member.value, topLevel: topLevel, inTable: !topLevel)
                }
            }
            for (key, setting) in out.sorted(by: { $0.key < $1.key }) {
                if let other = setting.orKeysOf, out[other]?.type != .table {
                    throw fail(
                        at: .key(key), "\"or_keys_of\" names \"\(other)\", which is not a table setting beside it")
                }
            }
            return SettingsSchema(out)
        }

        /// One setting's spec; `topLevel` ones need a description, `inTable` ones may be `required`.
        mutating func settingSpec(_ value: JSONValue, topLevel: Bool, inTable: Bool) throws(CoreError)
            -> SettingsSchema.Setting
        {
            let fields = try members(
                value,
                allowed: [
                    "type", "description", "default", "min", "max", "exclusive_min", "choices", "or_keys_of",
                    "non_empty", "required", "items", "fields", "values",
                ],
                required: topLevel ? ["type", "description"] : ["type"])
            let typeName = try stringMember(fields, "type")
            guard let type = SettingsSchema.ValueType(rawValue: typeName) else {
                throw fail(
                    at: .key("type"),
                    "unknown setting type \(JSONValue.quote(Sanitizer.display(typeName))) (known: "
                        + SettingsSchema.ValueType.allCases.map(\.rawValue).joined(separator: ", ") + ")")
            }
            var spec = SettingsSchema.Setting(type: type)
            func allowedOnly(_ key: String, for types: [SettingsSchema.ValueType]) throws(CoreError) {
                if fields[key] != nil, !types.contains(type) {
                    throw fail(at: .key(key), "\"\(key)\" does not apply to a setting of type \(type.rawValue)")
                }
            }
            try allowedOnly("min", for: [.integer, .number])
            try allowedOnly("max", for: [.integer, .number])
            try allowedOnly("exclusive_min", for: [.integer, .number])
            try allowedOnly("choices", for: [.string])
            try allowedOnly("or_keys_of", for: [.string])
            try allowedOnly("non_empty", for: [.string])
            try allowedOnly("items", for: [.array])
            try allowedOnly("fields", for: [.table])
            try allowedOnly("values", for: [.table])
            if fields["required"] != nil, !inTable {
                throw fail(at: .key("required"), "\"required\" applies only to the fields of a table in an array")
            }
            if let v = fields["description"] {
                spec.description = try at(.key("description")) { r throws(CoreError) in try r.plainText(v, max: 512) }
            }
            func flag(_ key: String) throws(CoreError) -> Bool {
                guard let v = fields[key] else { return false }
                guard case .bool(let b) = v else { throw fail(at: .key(key), "expected true or false") }
                return b
            }
            spec.exclusiveMinimum = try flag("exclusive_min")
            spec.nonEmpty = try flag("non_empty")
            spec.required = try flag("required")
            for key in ["min", "max"] {
                guard let v = fields[key] else { continue }
                guard case .number(let n) = v, let d = Double(n), d.isFinite else {
                    throw fail(at: .key(key), "expected a number")
                }
                if type == .integer, d != d.rounded() { throw fail(at: .key(key), "expected a whole number") }
                if key == "min" { spec.minimum = d } else { spec.maximum = d }
            }
            if let low = spec.minimum, let high = spec.maximum, low > high {
                throw fail(at: .key("max"), "\"max\" is below \"min\"")
            }
            if let v = fields["choices"] {
                spec.choices = try at(.key("choices")) { r throws(CoreError) -> [String] in
                    guard case .array(let list) = v, !list.isEmpty else {
                        throw r.fail("expected a non-empty array of strings")
                    }
                    var out: [String] = []
                    for (i, element) in list.enumerated() {
                        let s = try r.at(.index(i)) { r throws(CoreError) in
                            try r.plainText(element, max: 256, allowEmpty: true)
                        }
                        guard !out.contains(s) else { throw r.fail(at: .index(i), "a choice is listed twice") }
                        out.append(s)
                    }
                    return out
                }
            }
            if let v = fields["or_keys_of"] {
                guard spec.choices.isEmpty == false else {
                    throw fail(at: .key("or_keys_of"), "\"or_keys_of\" needs \"choices\"")
                }
                spec.orKeysOf = try at(.key("or_keys_of")) { r throws(CoreError) in try r.plainText(v, max: 128) }
            }
            if let v = fields["items"] {
                spec.items = SettingsSchema.Box(
                    try at(.key("items")) { r throws(CoreError) in
                        try r.settingSpec(v, topLevel: false, inTable: false)
                    })
            }
            if fields["fields"] != nil, fields["values"] != nil {
                throw fail("a table setting takes \"fields\" (fixed keys) or \"values\" (any keys), not both")
            }
            if let v = fields["fields"] {
                spec.fields = try at(.key("fields")) { r throws(CoreError) in try r.settingsSchema(v, topLevel: false) }
            }
            if let v = fields["values"] {
                spec.values = SettingsSchema.Box(
                    try at(.key("values")) { r throws(CoreError) in
                        try r.settingSpec(v, topLevel: false, inTable: false)
                    })
            }
            if let v = fields["default"] {
                let value = try at(.key("default")) { r throws(CoreError) in try r.setting(v) }
                let problems = SettingsSchema(["default": spec]).validate(["default": value])
                if let problem = problems.first {
                    throw fail(at: .key("default"), "the default does not fit its own spec: \(problem.message)")
                }
                spec.defaultValue = value
            }
            return spec
        }

        mutating func setting(_ value: JSONValue) throws(CoreError) -> SettingValue {
            switch value {
            case .null: throw fail("null is not a setting value; leave the setting out instead")
            case .bool(let b): return .bool(b)
            case .string(let s): return .string(s)
            case .number(let n):
                let isInteger = !n.contains(".") && !n.contains("e") && !n.contains("E")
                if isInteger {
                    guard let i = Int(n) else { throw fail("the integer \(n) is out of range") }
                    return .integer(i)
                }
                guard let d = Double(n), d.isFinite else { throw fail("the number \(n) is out of range") }
                return .double(d)
            case .array(let list):
                var out: [SettingValue] = []
                for (i, element) in list.enumerated() {
                    out.append(try at(.index(i)) { r throws(CoreError) in try r.setting(element) })
                }
                return .array(out)
            case .object(let members):
                var out: [String: SettingValue] = [:]
                for member in members {
                    out[member.key] = try at(.key(member.key)) { r throws(CoreError) in try r.setting(member.value) }
                }
                return .table(out)
            }
        }
    }
}
