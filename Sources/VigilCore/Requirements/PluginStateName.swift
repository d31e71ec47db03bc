/// The one vocabulary of plugin states, from `vigil check` and the build check to `vigil up`,
/// `vigil status` and every `--json` document (docs/states.md has the table).
///
/// A check says what each plugin will do when the host starts (`verified`, `waiting`, `blocked`,
/// `failed`); a running host says what it does (`starting`, `running`, `waiting`, `blocked`,
/// `interrupted`, `stopping`, `stopped`, `failed`). The two share the words they have in common,
/// so a plugin the check calls `waiting for an audio output` is `waiting for an audio output` in
/// `vigil status` too.
public enum PluginStateName: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// Check only: verified (signature, trust, rollback), its entry is one this Vigil runs, and its
    /// requirements are met as far as the check looked (`--declarations-only` probes nothing): it
    /// will start.
    case verified
    /// Its environment requirements are not met (an audio output, an executable, a D-Bus session
    /// bus): it started nothing, and a running host probes again and starts it once they are.
    case waiting
    /// `[host]` lacks a declaration it requires (`background_modes`, `services`): it starts nothing
    /// until `vigil.toml` declares it and the host starts again. An error in `vigil check` and the build.
    case blocked
    /// It did not verify, could not be made or started, or gave up: the reason says why.
    case failed
    /// Its `start` is in flight.
    case starting
    /// Running and keeping the host alive.
    case running
    /// Running, but it lost what it keeps alive and is getting it back.
    case interrupted
    /// Its stop is in flight.
    case stopping
    /// Not running: before `keepAlive()`, after `stop()`.
    case stopped

    /// The state of a plugin whose requirements `unmet` are not met: `blocked` when a declaration is
    /// among them, else `waiting`.
    public init(unmet: [UnmetRequirement]) {
        self = unmet.contains { $0.requirement.isDeclaration } ? .blocked : .waiting
    }

    /// The state's word.
    public var description: String { rawValue }

    /// The state with what it waits for or is blocked by, as every output says it:
    /// `waiting for an audio output`, `blocked by a missing declaration`.
    public static func phrase(unmet: [UnmetRequirement]) -> String {
        if let declaration = unmet.first(where: { $0.requirement.isDeclaration }) {
            return phrase(for: declaration)
        }
        return unmet.first.map(phrase(for:)) ?? PluginStateName.waiting.rawValue
    }

    /// What one unmet requirement makes of a plugin: `waiting for an audio output`,
    /// `blocked by a missing declaration`.
    public static func phrase(for unmet: UnmetRequirement) -> String {
        unmet.requirement.isDeclaration
            ? "\(PluginStateName.blocked) by a missing declaration"
            : "\(PluginStateName.waiting) for \(unmet.requirement.noun)"
    }

    /// The state with its reasons, for one status line: `blocked by a missing declaration: requires
    /// background_modes to include "audio" — add …`, one `; ` between reasons.
    public static func line(unmet: [UnmetRequirement]) -> String {
        let declarations = unmet.filter(\.requirement.isDeclaration)
        let reasons = declarations.isEmpty ? unmet : declarations + unmet.filter { !$0.requirement.isDeclaration }
        return phrase(unmet: unmet) + ": " + reasons.map(\.description).joined(separator: "; ")
    }
}
