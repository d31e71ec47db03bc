import FoundationEssentials
import VigilBase
import VigilCore

#if canImport(Glibc)
import Glibc
#endif

/// The JSON a running host publishes (and `vigil status --json` prints): schema `vigil.status/v2`.
///
/// v2 writes each plugin's `state` in the one vocabulary (``PluginStateName``): `stopped` where v1
/// wrote `idle`, and `waiting` where v1 wrote `blocked` for a plugin missing only its environment.
struct StatusDocument: Codable {
    static let schema = "vigil.status/v2"

    struct Failure: Codable {
        var code: String
        var message: String
    }
    struct Unmet: Codable {
        var kind: String
        var value: String?
        var why: String?
        var problem: String
        var remedy: String
    }
    struct Plugin: Codable {
        var name: String
        var version: String?
        var state: String
        /// RFC 3339 (UTC, milliseconds) in the file; older hosts wrote seconds since 1970.
        var since: Timestamp
        var reason: String?
        var error: Failure?
        var unmet: [Unmet]?
        var details: [String: Detail]
        /// The signed manifest's `expires` and the host's `[freshness] grace` (seconds), when it has one.
        var signature: Signature?
    }
    struct Signature: Codable {
        var expires: Timestamp
        var grace: Int64
    }

    /// A point in time written as RFC 3339 (`2026-11-23T04:05:06.789Z`), read from that or
    /// from a number of seconds since 1970.
    struct Timestamp: Codable {
        var secondsSince1970: Double

        init(_ seconds: Double) { secondsSince1970 = seconds }

        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let seconds = try? container.decode(Double.self) {
                // A number from a file: anything a calendar cannot show (1e300, past year 9999) is
                // refused here, so no reader converts it into a trap later.
                guard RFC3339.representable.contains(seconds) else {
                    throw DecodingError.dataCorruptedError(
                        in: container, debugDescription: "\(seconds) is not a time between the years 0 and 9999")
                }
                secondsSince1970 = seconds
                return
            }
            let text = try container.decode(String.self)
            guard let seconds = RFC3339.secondsSince1970(from: text) else {
                throw DecodingError.dataCorruptedError(
                    in: container, debugDescription: "\"\(text)\" is not an RFC 3339 time")
            }
            secondsSince1970 = seconds
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            try container.encode(RFC3339.string(fromSecondsSince1970: secondsSince1970))
        }
    }

    /// A plugin detail: a JSON number when its text is a plain decimal number (`42`, `-3`,
    /// `0.25`), else a string. Read back as its text either way.
    struct Detail: Codable {
        var text: String

        init(_ text: String) { self.text = text }

        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let int = try? container.decode(Int64.self) {
                text = String(int)
            } else if let number = try? container.decode(Double.self) {
                text = String(number)
            } else if let flag = try? container.decode(Bool.self) {
                text = String(flag)
            } else {
                text = try container.decode(String.self)
            }
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            if let int = Self.integer(text) {
                try container.encode(int)
            } else if let number = Self.decimal(text) {
                try container.encode(number)
            } else {
                try container.encode(text)
            }
        }

        /// `text` as an integer when it is written the canonical way (no sign but `-`, no
        /// leading zero, at most 15 digits so that every reader keeps it exact).
        static func integer(_ text: String) -> Int64? {
            let digits = text.hasPrefix("-") ? text.dropFirst() : Substring(text)
            guard !digits.isEmpty, digits.count <= 15, digits.allSatisfy({ $0.isASCII && $0.isNumber }),
                digits == "0" || digits.first != "0", text != "-0"
            else { return nil }
            return Int64(text)
        }

        /// `text` as a decimal number when it is `digits.digits` and reads back as the same text.
        static func decimal(_ text: String) -> Double? {
            let parts = (text.hasPrefix("-") ? String(text.dropFirst()) : text).split(
                separator: ".", omittingEmptySubsequences: false)
            guard parts.count == 2, integer(String(parts[0])) != nil, !parts[1].isEmpty,
                parts[1].allSatisfy({ $0.isASCII && $0.isNumber }), let value = Double(text),
                String(value) == text
            else { return nil }
            return value
        }
    }

    /// The host's sleep handling: the logind sleep locks held, or why there are none.
    struct Sleep: Codable {
        var locks: [String]
        var off: String?
    }

    /// The Vigil the host runs (``VigilVersion``); absent from a status file older than 0.1.0.
    struct Build: Codable {
        var version: String
        var revision: String?

        init(version: String, revision: String?) {
            self.version = version
            self.revision = revision
        }

        /// `"revision": null` when the build recorded none, rather than no key.
        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(version, forKey: .version)
            try container.encode(revision, forKey: .revision)
        }
    }

    var schema: String
    var vigil: Build?
    var pid: Int32
    var host: String
    var config: String?
    var plugins: [Plugin]
    var sleep: Sleep?
}

extension HostStatus {
    /// The schema of the status document: `vigil.status/v2`.
    public static let schema = StatusDocument.schema

    /// The status as `vigil.status/v2` JSON (sorted keys, stable for scripts).
    public func jsonData(pretty: Bool = false) -> Data {
        let document = StatusDocument(
            schema: StatusDocument.schema, vigil: vigilVersion.map { .init(version: $0, revision: vigilRevision) },
            pid: pid, host: hostName, config: configPath,
            plugins: plugins.map { plugin in
                var entry = StatusDocument.Plugin(
                    name: plugin.name, version: plugin.version, state: plugin.state.name,
                    since: .init(plugin.since), details: plugin.details.mapValues(StatusDocument.Detail.init))
                entry.signature = plugin.signature.map {
                    .init(expires: .init(Double($0.expires)), grace: $0.grace)
                }
                switch plugin.state {
                case .interrupted(let reason): entry.reason = reason
                case .failed(let failure):
                    entry.error = .init(code: failure.code.description, message: failure.message)
                    entry.reason = failure.message
                case .blocked(let unmet):
                    entry.unmet = unmet.map {
                        .init(
                            kind: $0.requirement.kindTag, value: $0.requirement.value, why: $0.requirement.why,
                            problem: $0.problem, remedy: $0.remedy)
                    }
                    entry.reason = unmet.map(\.description).joined(separator: "; ")
                default: break
                }
                return entry
            },
            sleep: sleep.map { .init(locks: $0.locks, off: $0.off) })
        let encoder = JSONEncoder()
        encoder.outputFormatting = pretty ? [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes] : [.sortedKeys]
        // Encoding plain strings and numbers cannot fail.
        return (try? encoder.encode(document)) ?? Data()
    }

    /// Reads `vigil.status/v2` JSON.
    ///
    /// - Throws: ``VigilError/Code/statusUnreadable`` for anything else.
    public init(jsonData data: Data) throws(VigilError) {
        let document: StatusDocument
        do {
            document = try JSONDecoder().decode(StatusDocument.self, from: data)
        } catch {
            throw VigilError(code: .statusUnreadable, message: "not a Vigil status document: \(error)")
        }
        guard document.schema == StatusDocument.schema else {
            throw VigilError(
                code: .statusUnreadable,
                message: "status schema \"\(document.schema)\" is not \(StatusDocument.schema) — "
                    + "the running host and this `vigil` are different versions")
        }
        // A failed plugin's code, typed: one this `vigil` does not know is refused, not guessed.
        var codes: [String: PluginFailure.Code] = [:]
        for plugin in document.plugins where plugin.state == PluginStateName.failed.rawValue {
            let text = plugin.error?.code ?? ""
            guard let code = PluginFailure.Code(text) else {
                throw VigilError(
                    code: .statusUnreadable,
                    message:
                        "plugin \(plugin.name) failed with the error code \"\(text)\", which this `vigil` does not "
                        + "know — the running host and this `vigil` are different versions")
            }
            codes[plugin.name] = code
        }
        self.init(
            pid: document.pid, hostName: document.host, configPath: document.config,
            plugins: document.plugins.map { plugin in
                let state: PluginState =
                    switch PluginStateName(rawValue: plugin.state) {
                    case .starting: .starting
                    case .running: .running
                    case .stopping: .stopping
                    case .interrupted: .interrupted(reason: plugin.reason ?? "")
                    case .failed:
                        if let code = codes[plugin.name] {
                            .failed(
                                PluginFailure(code: code, plugin: plugin.name, message: plugin.error?.message ?? ""))
                        } else {
                            .idle  // not reached: every failed plugin's code was read above
                        }
                    case .waiting, .blocked: .blocked((plugin.unmet ?? []).map(Self.unmet(from:)))
                    case .stopped, .verified, nil: .idle
                    }
                var status = PluginStatus(
                    name: plugin.name, version: plugin.version, state: state, since: plugin.since.secondsSince1970,
                    details: plugin.details.mapValues(\.text))
                status.signature = plugin.signature.map {
                    SignatureFreshness(expires: Int64($0.expires.secondsSince1970.rounded(.down)), grace: $0.grace)
                }
                return status
            },
            sleep: document.sleep.map { SleepStatus(locks: $0.locks, off: $0.off) })
        vigilVersion = document.vigil?.version
        vigilRevision = document.vigil?.revision
    }

    private static func unmet(from entry: StatusDocument.Unmet) -> UnmetRequirement {
        let kind: HostRequirement.Kind =
            switch entry.kind {
            case "background-mode": .backgroundMode(entry.value ?? "")
            case "service": .service(entry.value ?? "")
            case "executable": .executable(entry.value ?? "")
            case "dbus-session": .dbusSession
            default: .audioOutput
            }
        return UnmetRequirement(
            requirement: HostRequirement(kind: kind, why: entry.why), problem: entry.problem, remedy: entry.remedy)
    }
}
