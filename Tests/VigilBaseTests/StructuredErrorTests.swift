import Testing
import VigilBase

#if canImport(Glibc)
import Glibc
#endif

/// The one error shape: codes, typed causes and the one rendering from the fields.
@Suite struct StructuredErrorTests {
    enum SampleCode: String, ErrorCode {
        case broken = "sample-broken"
        case missing = "sample-missing"
    }
    typealias SampleError = CodedError<SampleCode>

    @Test func theDescriptionIsRenderedFromTheFields() {
        let plain = SampleError(code: .broken, message: "it broke — fix it")
        #expect(plain.description == "it broke — fix it")
        let named = SampleError(code: .broken, plugin: "demo", message: "it broke — fix it")
        #expect(named.description == "[demo] it broke — fix it")
        #expect(named.code.description == "sample-broken")
    }

    @Test func aSystemCallCauseKeepsTheCallAndTheErrno() throws {
        let failure = SystemCallError("open", errno: ENOENT)
        let error = SampleError(code: .missing, message: "no file", cause: ErrorCause(failure))
        let call = try #require(error.cause?.systemCall)
        #expect(call.call == "open" && call.number == ENOENT)
        #expect(call.reason == String(cString: strerror(ENOENT)))
        // A negated errno (ALSA's, sd-bus's) is the same error.
        #expect(SystemCallError("open", errno: -ENOENT) == failure)
    }

    @Test func causesCompareByTheirTypedValue() {
        let a = ErrorCause(SystemCallError("read", errno: EIO))
        let b = ErrorCause(SystemCallError("read", errno: EIO))
        let c = ErrorCause(SystemCallError("read", errno: EAGAIN))
        let d = ErrorCause(SampleError(code: .broken, message: "read"))
        #expect(a == b && a.hashValue == b.hashValue)
        #expect(a != c && a != d)
        #expect((d.error as? SampleError)?.code == .broken)
    }
}
