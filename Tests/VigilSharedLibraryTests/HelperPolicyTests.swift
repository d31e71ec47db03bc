import Foundation
import Testing
import VigilTestSupport

/// The helper applies only a policy it can read: an empty one (which a helper that confined
/// nothing used to accept) and a malformed one are refused with `confinement-failed` before any
/// library is sent. Driven over the real protocol by `Fixtures/helper-policy.py`.
@Suite("vigil-plugin-helper's POLICY record", .timeLimit(.minutes(1)))
struct HelperPolicyTests {
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().path + "/Fixtures/helper-policy.py"
    static let helper = (VigilExecutable.path as NSString).deletingLastPathComponent + "/vigil-plugin-helper"

    @Test(
        "an empty or malformed policy is refused with confinement-failed",
        arguments: [
            ("", "detail the host sent no confinement policy"),
            ("garbage", "detail line 1 of the confinement policy has no end of line"),
        ])
    func refused(_ example: (String, String)) async throws {
        let out = try await RuntimeFixtures.run("/usr/bin/python3", [Self.script, Self.helper, example.0], timeout: 20)
        #expect(out.status == 0, "\(out.stderr)")
        let lines = out.stdout.split(separator: "\n").map(String.init)
        #expect(lines == ["type 256", "code confinement-failed", example.1], "\(out.stdout)\(out.stderr)")
    }
}
