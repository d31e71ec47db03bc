/// A host requirement that is not met: which one, what is wrong, and how to fix it.
///
/// Produced by ``RequirementChecker``; shown by `vigil check`, the build plugin, `vigil up`,
/// `vigil status` and in a blocked plugin's status.
public struct UnmetRequirement: Sendable, Hashable, CustomStringConvertible {
    /// The requirement as the manifest declared it.
    public let requirement: HostRequirement
    /// What is wrong, for example `requires background_modes to include "audio"`.
    public let problem: String
    /// How to fix it, for example `add it under [host]`.
    public let remedy: String

    /// Creates an unmet requirement.
    public init(requirement: HostRequirement, problem: String, remedy: String) {
        self.requirement = requirement
        self.problem = problem
        self.remedy = remedy
    }

    /// `problem — remedy`, plus the plugin's reason when it gave one.
    public var description: String {
        var text = "\(problem) — \(remedy)"
        if let why = requirement.why, !why.isEmpty { text += " (why: \(why))" }
        return text
    }
}
