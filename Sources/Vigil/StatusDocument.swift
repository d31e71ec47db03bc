import Foundation
import VigilCore

/// The JSON a running host publishes (and `vigil status --json` prints): schema `vigil.status/v1`.
struct StatusDocument: Codable {
    static let schema = "vigil.status/v1"

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
        var since: Double
        var reason: String?
        var error: Failure?
        var unmet: [Unmet]?
        var details: [String: String]
    }

    var schema: String
    var pid: Int32
    var host: String
    var config: String?
    var plugins: [Plugin]
}

extension HostStatus {
    /// The status as `vigil.status/v1` JSON (sorted keys, stable for scripts).
    public func jsonData(pretty: Bool = false) -> Data {
        let document = StatusDocument(
            schema: StatusDocument.schema, pid: pid, host: hostName, config: configPath,
            plugins: plugins.map { plugin in
                var entry = StatusDocument.Plugin(
                    name: plugin.name, version: plugin.version, state: plugin.state.name, since: plugin.since,
                    details: plugin.details)
                switch plugin.state {
                case .interrupted(let reason): entry.reason = reason
                case .failed(let failure):
                    entry.error = .init(code: failure.code, message: failure.message)
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
            })
        let encoder = JSONEncoder()
        encoder.outputFormatting = pretty ? [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes] : [.sortedKeys]
        // Encoding plain strings and numbers cannot fail.
        return (try? encoder.encode(document)) ?? Data()
    }

    /// Reads `vigil.status/v1` JSON.
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
        self.init(
            pid: document.pid, hostName: document.host, configPath: document.config,
            plugins: document.plugins.map { plugin in
                let state: PluginState =
                    switch plugin.state {
                    case "starting": .starting
                    case "running": .running
                    case "stopping": .stopping
                    case "interrupted": .interrupted(reason: plugin.reason ?? "")
                    case "failed":
                        .failed(
                            PluginFailure(
                                code: plugin.error?.code ?? "unknown", message: plugin.error?.message ?? ""))
                    case "blocked": .blocked((plugin.unmet ?? []).map(Self.unmet(from:)))
                    default: .idle
                    }
                return PluginStatus(
                    name: plugin.name, version: plugin.version, state: state, since: plugin.since,
                    details: plugin.details)
            })
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
