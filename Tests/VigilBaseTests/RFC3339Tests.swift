import Foundation
import Testing
import VigilBase

@Suite("RFC 3339 times: status documents, signed expiry, TUF metadata")
struct RFC3339Tests {
    @Test("known instants are written in UTC with milliseconds")
    func knownInstants() {
        // Epoch seconds from an independent calendar (Python's calendar.timegm).
        #expect(RFC3339.string(fromSecondsSince1970: 0) == "1970-01-01T00:00:00.000Z")
        #expect(RFC3339.string(fromSecondsSince1970: 1_795_406_706.789) == "2026-11-23T04:05:06.789Z")
        #expect(RFC3339.string(fromSecondsSince1970: 1_709_251_199.9996) == "2024-03-01T00:00:00.000Z")
        #expect(RFC3339.string(fromSecondsSince1970: 1_709_251_199.25) == "2024-02-29T23:59:59.250Z")
    }

    @Test("what it writes, Foundation's ISO 8601 formatter reads as the same instant, and back")
    func agreesWithFoundation() {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<500 {
            let millis = Double(Int.random(in: 0...4_102_444_800_000, using: &generator))
            let seconds = millis / 1000
            let text = RFC3339.string(fromSecondsSince1970: seconds)
            #expect(text == formatter.string(from: Date(timeIntervalSince1970: seconds)))
            let read = formatter.date(from: text)?.timeIntervalSince1970
            #expect(read.map { abs($0 - seconds) < 0.0005 } == true, "\(text)")
            let back = RFC3339.secondsSince1970(from: text)
            #expect(back.map { abs($0 - seconds) < 0.0005 } == true, "\(text)")
        }
    }

    @Test("offsets, missing fractions and the RFC's lower-case and space forms are read")
    func readsVariants() {
        #expect(RFC3339.secondsSince1970(from: "2026-11-23T04:05:06Z") == 1_795_406_706)
        #expect(RFC3339.secondsSince1970(from: "2026-11-23t04:05:06z") == 1_795_406_706)
        #expect(RFC3339.secondsSince1970(from: "2026-11-23 04:05:06.5Z") == 1_795_406_706.5)
        #expect(RFC3339.secondsSince1970(from: "2026-11-23T05:35:06+01:30") == 1_795_406_706)
        #expect(RFC3339.secondsSince1970(from: "2026-11-22T23:05:06-05:00") == 1_795_406_706)
    }

    @Test(
        "text that is not an RFC 3339 time is refused",
        arguments: [
            "", "2026-11-23", "2026-11-23T04:05:06", "2026-11-23T04:05:06.Z", "2026-02-30T00:00:00Z",
            "2026-13-01T00:00:00Z", "2026-11-23T24:00:00Z", "2026-11-23T04:05:06+0100", "26-11-23T04:05:06Z",
            "2026-11-23T04:05:06Z ", "2026-11-23T04:05:06.789Zjunk",
        ])
    func refusesOtherText(_ text: String) {
        #expect(RFC3339.secondsSince1970(from: text) == nil)
    }

    @Test("each reader's syntax accepts its variants and refuses the others")
    func syntaxProfiles() {
        let instant: Int64 = 1_795_406_706
        // The strict TUF form: `YYYY-MM-DDTHH:MM:SSZ` and nothing else.
        #expect(RFC3339.parse("2026-11-23T04:05:06Z", syntax: [])?.seconds == instant)
        for text in [
            "2026-11-23t04:05:06Z", "2026-11-23T04:05:06z", "2026-11-23 04:05:06Z", "2026-11-23T04:05:06.5Z",
            "2026-11-23T05:35:06+01:30", "2026-12-31T23:59:60Z",
        ] {
            #expect(RFC3339.parse(text, syntax: []) == nil, "\(text)")
        }
        // Signed `expires`: all but the space, the fraction dropped, a leap second as second 59.
        let signed: RFC3339.Syntax = [.lowercase, .fraction, .offset, .leapSecond]
        #expect(RFC3339.parse("2026-11-23t05:35:06.999+01:30", syntax: signed)?.seconds == instant)
        #expect(RFC3339.parse("2026-11-23 04:05:06Z", syntax: signed) == nil)
        #expect(RFC3339.parse("2026-12-31T23:59:60Z", syntax: signed)?.seconds == 1_798_761_599)
        // A fraction of more digits than a double holds stays inside its second.
        let long = "2026-11-23T04:05:06." + String(repeating: "9", count: 40) + "Z"
        #expect(RFC3339.parse(long, syntax: .full)?.seconds == instant)
        #expect(RFC3339.parse(long, syntax: .full).map { $0.fraction < 1 } == true)
    }

    /// The status reader used to carry :60 into the next minute through timegm, and so refused
    /// one at the end of a month (December 31st 23:59:60 became January 1st); the signed-expiry
    /// reader read it as :59. One reader now: :59 everywhere.
    @Test("a leap second is second 59 of its minute, also at the end of a month or a year")
    func leapSecond() {
        #expect(RFC3339.secondsSince1970(from: "2026-12-31T23:59:60Z") == 1_798_761_599)
        #expect(RFC3339.secondsSince1970(from: "2026-11-23T04:05:60Z") == 1_795_406_759)
        #expect(RFC3339.secondsSince1970(from: "2026-06-30T23:59:60.5Z") == 1_782_863_999.5)
    }

    @Test("whole seconds are written without a fraction, clamped to the years 0000 to 9999")
    func wholeSeconds() {
        #expect(RFC3339.string(fromSecondsSince1970: 1_893_456_000, milliseconds: false) == "2030-01-01T00:00:00Z")
        #expect(RFC3339.string(fromSecondsSince1970: -1, milliseconds: false) == "1969-12-31T23:59:59Z")
        #expect(RFC3339.string(fromSecondsSince1970: 59.9996, milliseconds: false) == "1970-01-01T00:00:59Z")
        #expect(RFC3339.string(fromSecondsSince1970: 1e300, milliseconds: false) == "9999-12-31T23:59:59Z")
    }
}
