import VigilCore

extension HostCheck {
    /// `[repository]`'s refusal as an error diagnostic, with its code (`repository-no-root`…), located
    /// at the key it names; and a shipped `root` that cannot be read (missing, unsafe).
    func repositoryDiagnostics(_ configuration: HostConfiguration, located: ([String]) -> SourceLocation?)
        -> [Diagnostic]
    {
        let settings: RepositorySettings?
        do throws(RepositorySettingsError) {
            settings = try configuration.repository()
        } catch {
            let key = RepositorySettings.keys.first {
                error.message.contains("] \($0) =") || error.message.contains("] \($0):")
            }
            return [
                Diagnostic(
                    severity: .error, location: located(["repository"] + (key.map { [$0] } ?? [])), plugin: nil,
                    message: "\(error.message) (\(error.code))")
            ]
        }
        guard let root = settings?.root else { return [] }
        do throws(CoreError) {
            _ = try RepositorySettings.readRoot(root, cap: RepositorySettings.rootCap)
            return []
        } catch {
            return [
                Diagnostic(
                    severity: .error, location: located(["repository", "root"]), plugin: nil,
                    message: "\(error.message) (\(error.code))")
            ]
        }
    }
}
