import Testing
import VigilBase

@testable import Vigil
@testable import VigilHostCore

/// The status writer's retry after a failed write, without threads or clocks: when it tries again,
/// and which outcomes it reports.
@Suite("status file retry: backoff and what is reported")
struct StatusRetryTests {
    @Test("failures are retried after 1, 2, 4… s up to 30 s; the first failure and the recovery are reported")
    func backoff() throws {
        var retry = StatusRetry()
        #expect(retry.nextAttempt == nil)
        #expect(retry.record(success: true, at: 0) == false, "a success after a success is no news")
        var reported: [Bool] = []
        var delays: [Double] = []
        var now = 100.0
        for _ in 0..<8 {
            reported.append(retry.record(success: false, at: now))
            let next = try #require(retry.nextAttempt)
            delays.append(next - now)
            now = next
        }
        #expect(reported == [true, false, false, false, false, false, false, false])
        #expect(delays == [1, 2, 4, 8, 16, 30, 30, 30])
        #expect(retry.record(success: true, at: now) == true, "the recovery is reported")
        #expect(retry.nextAttempt == nil)
        // A new failure starts from the first delay again, and is reported again.
        #expect(retry.record(success: false, at: 500) == true)
        #expect(retry.nextAttempt == 501)
    }

    @Test("the delay never exceeds the maximum, however many failures")
    func bounded() {
        var retry = StatusRetry()
        for i in 0..<10_000 { _ = retry.record(success: false, at: Double(i)) }
        #expect(retry.delay == StatusRetry.maximumDelay)
        #expect(retry.nextAttempt == 9_999 + StatusRetry.maximumDelay)
    }

    @Test("RFC 3339 never traps on a time outside the calendar: it writes the nearest end")
    func rfc3339Clamps() {
        #expect(RFC3339.string(fromSecondsSince1970: 1e300) == "9999-12-31T23:59:59.000Z")
        #expect(RFC3339.string(fromSecondsSince1970: -1e300) == "0000-01-01T00:00:00.000Z")
        #expect(RFC3339.string(fromSecondsSince1970: .nan) == "1970-01-01T00:00:00.000Z")
        #expect(RFC3339.string(fromSecondsSince1970: .infinity) == "9999-12-31T23:59:59.000Z")
    }
}
