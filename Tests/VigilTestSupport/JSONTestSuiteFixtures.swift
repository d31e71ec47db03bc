import Foundation

/// JSONTestSuite's parsing cases (Tests/VigilCoreTests/Fixtures/JSONTestSuite, MIT), read by
/// both strict JSON readers' tests: the core's `StrictJSON` and the TUF client's canonical JSON.
public enum JSONTestSuiteFixtures {
    /// The `test_parsing` directory.
    public static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("VigilCoreTests/Fixtures/JSONTestSuite/test_parsing").path

    /// The case files whose names start with `prefix` (`y_` accepted, `n_` refused, `i_`
    /// implementation-defined), sorted.
    public static func cases(_ prefix: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).filter { $0.hasPrefix(prefix) }
            .sorted()
    }

    /// The bytes of case `file` (none when it cannot be read, which the parsers refuse).
    public static func bytes(_ file: String) -> [UInt8] {
        (try? TextFile.bytes(directory + "/" + file)) ?? []
    }
}
