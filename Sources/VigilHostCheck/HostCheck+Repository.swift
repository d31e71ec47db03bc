import VigilCore

extension HostCheck {
    /// `[repository]`'s refusal as an error diagnostic, with its code (`repository-no-root`…), located
    /// at the key it names; a shipped `root` or a `ca_file` that cannot be read (missing, unsafe); and,
    /// with ``caFileCheck``, a `ca_file` with no certificate in it (`repository-ca-invalid`).
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
        guard let settings else { return [] }
        var diagnostics: [Diagnostic] = []
        func read(_ key: String, _ body: () throws(CoreError) -> Void) {
            do throws(CoreError) {
                try body()
            } catch {
                diagnostics.append(
                    Diagnostic(
                        severity: .error, location: located(["repository", key]), plugin: nil,
                        message: "\(error.message) (\(error.code))"))
            }
        }
        if let root = settings.root {
            read("root") { () throws(CoreError) in
                _ = try RepositorySettings.readRoot(root, cap: RepositorySettings.rootCap)
            }
        }
        if let caFile = settings.caFile {
            read("ca_file") { () throws(CoreError) in
                let pem = try RepositorySettings.readCAFile(caFile)
                if let problem = caFileCheck?(pem) {
                    diagnostics.append(
                        Diagnostic(
                            severity: .error, location: located(["repository", "ca_file"]), plugin: nil,
                            message: "[repository] ca_file: \(caFile) \(problem) "
                                + "(\(RepositorySettingsCode.caInvalid.rawValue))"))
                }
            }
        }
        return diagnostics
    }
}
