import Foundation
import Testing
import VigilLibraryCheck
import VigilTestSupport

/// The ELF reader sees only verified but untrusted bytes: every prefix and every single-byte
/// corruption of a real library is either parsed or refused with a reason, never a crash.
@Suite("ELF reader", .timeLimit(.minutes(2)))
struct ELFImageTests {
    @Test("reads SONAME, DT_NEEDED and the descriptor header of a real library; survives truncation and corruption")
    func robustness() async throws {
        let f = try NativePluginFixture()
        defer { f.remove() }
        let bytes = try await f.compile(
            .init(who: "alpha", pluginID: "alpha", soname: "libvigiltest-alpha.so", abiMinor: 0), output: "alpha.so")
        let image = try ELFImage(bytes)
        #expect(image.soname == "libvigiltest-alpha.so")
        #expect(image.needed.contains("libc.so.6"))
        #expect(image.descriptor?.magic == 0x4C50_4756)
        #expect(image.descriptor?.abiMajor == 1 && image.descriptor?.abiMinor == 0)
        #expect(image.descriptor?.structSize == 48)

        var refusedPrefixes = 0
        for length in stride(from: 0, to: bytes.count, by: max(1, bytes.count / 2000)) {
            do { _ = try ELFImage(Array(bytes[..<length])) } catch { refusedPrefixes += 1 }
        }
        #expect(refusedPrefixes > 0)
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<5000 {
            var copy = bytes
            // The headers at the start, the section header table at the end.
            let index =
                Bool.random(using: &generator)
                ? Int.random(in: 0..<min(copy.count, 4096), using: &generator)
                : Int.random(in: max(0, copy.count - 4096)..<copy.count, using: &generator)
            copy[index] = UInt8.random(in: 0...255, using: &generator)
            _ = try? ELFImage(copy)  // parsed or refused; reaching the next iteration is the assertion
        }
        #expect(throws: ELFImage.Problem.self) { try ELFImage(Array("not an ELF file".utf8)) }
    }
}
