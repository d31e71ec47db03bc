import VigilConfine
import VigilCore
import VigilPlugin

extension HostCheck {
    /// `[confinement] acknowledge_unenforced` against the activated plugins and this kernel: a
    /// name that is not an activated plugin (error, with a near name), a shared-library plugin
    /// whose declared confinement this kernel cannot wholly enforce and that is not acknowledged
    /// (error: it would not start), and an acknowledgement that is in use or not needed (warnings).
    func confinementDiagnostics(
        _ plan: HostPlan, configuration: HostConfiguration, located: ([String]) -> SourceLocation?
    ) -> [Diagnostic] {
        var diagnostics: [Diagnostic] = []
        let acknowledged = configuration.acknowledgedUnenforced
        let key = ["confinement", "acknowledge_unenforced"]
        for name in acknowledged where !configuration.plugins.contains(name) {
            let near = NearName.closest(to: name, among: configuration.plugins)
            diagnostics.append(
                .init(
                    severity: .error, location: located(key + [name]), plugin: nil,
                    message: "[confinement] acknowledge_unenforced names \"\(Sanitizer.display(name))\", which is not "
                        + "an activated plugin" + (near.map { "; did you mean \"\($0)\"?" } ?? "")
                        + " — correct the name or remove it (an acknowledgement applies to one plugin by name)"))
        }
        for item in plan.items {
            guard case .ready(let ready) = item.outcome, ready.loaded.manifest.sharedLibrary != nil else { continue }
            let missing = confinementSupport.missing(for: ready.loaded.manifest.capabilities)
            let isAcknowledged = acknowledged.contains(item.name)
            if missing.isEmpty, isAcknowledged {
                diagnostics.append(
                    .init(
                        severity: .warning, location: located(key + [item.name]), plugin: item.name,
                        message: "is acknowledged in [confinement] acknowledge_unenforced, but this kernel "
                            + "(\(confinementSupport.summary)) enforces all of its confinement — remove it, so that a "
                            + "kernel that cannot is refused rather than accepted"))
            } else if !missing.isEmpty, isAcknowledged {
                diagnostics.append(
                    .init(
                        severity: .warning, location: located(key + [item.name]), plugin: item.name,
                        message: "runs with its declared confinement only partly enforced (acknowledged in "
                            + "[confinement] acknowledge_unenforced): this kernel lacks "
                            + missing.joined(separator: ", ") + " — run it on Linux 6.12 or later to enforce all of it")
                )
            } else if !missing.isEmpty {
                diagnostics.append(
                    .init(
                        severity: .error, location: located(["plugins", item.name]), plugin: item.name,
                        message: "this kernel cannot enforce its declared confinement (it lacks "
                            + missing.joined(separator: ", ") + "), so it would not start — run it on Linux 6.12 or "
                            + "later, or accept the weaker confinement with acknowledge_unenforced = [\"\(item.name)\"] "
                            + "under [confinement] in vigil.toml"))
            }
        }
        return diagnostics
    }
}
