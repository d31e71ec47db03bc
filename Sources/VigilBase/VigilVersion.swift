internal import CVigilBase

/// Which Vigil this is: the one version that `vigil --version`, the status file, the Debian
/// package and (with the metrics) `vigil_build_info` report, and the git revision it was built from.
public enum VigilVersion {
    /// Vigil's release version (semantic versioning). This line is the only place it is written:
    /// CHANGELOG.md's newest release section must name it (VigilVersionTests check that), and
    /// `make` and scripts/package-deb.sh ask the built `vigil --version --json` for it.
    public static let version = "0.1.0"

    /// The git revision the binary was built from (12 hex digits, `-dirty` when the checkout had
    /// uncommitted changes to tracked files), or `nil` when the build did not record one: `make`
    /// (and so the Debian package) records it; a plain `swift build` does not, so that a new commit
    /// never makes a development build compile anything again.
    public static let revision: String? = {
        let text = String(cString: vigil_build_revision())
        return text.isEmpty ? nil : text
    }()

    /// True when `make` built this binary for an install layout (`PREFIX/bin/vigil` beside
    /// `PREFIX/share/vigil`): such a binary never looks at the source checkout it was built from.
    /// False for a development build (`swift build`, `swift run`, a host package's build).
    public static let isInstallBuild = vigil_build_for_install() != 0

    /// `0.1.0 (revision 0123456789ab)`, or `0.1.0 (development build, revision not recorded)`.
    public static var description: String {
        if let revision { return "\(version) (revision \(revision))" }
        return "\(version) (\(isInstallBuild ? "revision not recorded" : "development build, revision not recorded"))"
    }
}
