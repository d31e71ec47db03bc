internal import CVigilConfine
public import VigilCore

/// What this kernel can enforce of a plugin's confinement (`vigil_confine_probe`).
public struct ConfinementSupport: Sendable, Hashable {
    /// The Landlock ABI level (0: no Landlock). 4 adds TCP bind/connect rules, 6 signal and
    /// abstract-UNIX-socket scoping.
    public var landlockABI: Int
    /// seccomp filters (with `SECCOMP_RET_TRAP`) are available.
    public var seccompFilter: Bool
    /// `PR_SET_NO_NEW_PRIVS` is available.
    public var noNewPrivileges: Bool
    /// An unprivileged user namespace can be created (not used by the policy today).
    public var userNamespaces: Bool

    public init(landlockABI: Int, seccompFilter: Bool, noNewPrivileges: Bool, userNamespaces: Bool) {
        self.landlockABI = landlockABI
        self.seccompFilter = seccompFilter
        self.noNewPrivileges = noNewPrivileges
        self.userNamespaces = userNamespaces
    }

    /// Asks the running kernel.
    public static func probe() -> ConfinementSupport {
        var support = vigil_confine_support()
        _ = vigil_confine_probe(&support)
        return ConfinementSupport(
            landlockABI: Int(support.landlock_abi), seccompFilter: support.seccomp_filter != 0,
            noNewPrivileges: support.no_new_privs != 0, userNamespaces: support.user_namespaces != 0)
    }

    /// What of `plan` this kernel cannot enforce, in plain words (empty: all of it). The same
    /// conditions `vigil_confine_apply` refuses on.
    public func missing(for plan: ConfinementPlan) -> [String] {
        missing(tcpRules: { if case .tcpConnect = plan.network { true } else { false } }())
    }

    /// What of the confinement of a plugin declaring `capabilities` this kernel cannot enforce.
    public func missing(for capabilities: PluginCapabilities) -> [String] {
        missing(tcpRules: { if case .tcpConnect = capabilities.network { true } else { false } }())
    }

    private func missing(tcpRules: Bool) -> [String] {
        var missing: [String] = []
        if !noNewPrivileges { missing.append("PR_SET_NO_NEW_PRIVS") }
        if !seccompFilter { missing.append("seccomp filters (system calls, socket families, signals)") }
        if landlockABI < 1 {
            missing.append("Landlock (file access)")
        } else {
            if landlockABI < 4, tcpRules {
                missing.append("Landlock TCP rules (ABI 4; this kernel has \(landlockABI))")
            }
            if landlockABI < 6 {
                missing.append("Landlock signal and abstract-socket scoping (ABI 6; this kernel has \(landlockABI))")
            }
        }
        return missing
    }

    /// The status line's words: "Landlock ABI 7, seccomp" and what is missing.
    public var summary: String {
        var parts: [String] = []
        parts.append(landlockABI > 0 ? "Landlock ABI \(landlockABI)" : "no Landlock")
        parts.append(seccompFilter ? "seccomp" : "no seccomp")
        return parts.joined(separator: ", ")
    }
}
