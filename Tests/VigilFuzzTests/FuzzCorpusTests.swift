import Foundation
import Testing
import VigilFuzzTargets
import VigilTestSupport

/// Every seed input and every input that once crashed a target (Fuzz/Regressions) goes through
/// its target again: a regression crashes this test.
@Suite struct FuzzCorpusTests {
    static let fuzzDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Fuzz").path

    @Test(arguments: FuzzTarget.allCases)
    func seedsAndRegressionsRunClean(target: FuzzTarget) throws {
        let directories = ["Corpus", "Regressions"].map { "\(Self.fuzzDirectory)/\($0)/\(target.rawValue)" }
            .filter { FileManager.default.fileExists(atPath: $0) }
        let files = try FuzzTarget.inputs(directories)
        #expect(files.count >= 3, "\(target.rawValue) has too few seeds in Fuzz/Corpus")
        for file in files {
            target.run(try TextFile.bytes(file))
        }
    }
}
