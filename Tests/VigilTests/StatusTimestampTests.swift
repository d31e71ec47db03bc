import Foundation
import Testing

@testable import Vigil

/// The status file's times, formatted without Foundation's (ICU-backed) ISO 8601 formatter.
@Suite struct StatusTimestampTests {
    @Test(
        "RFC 3339 in UTC with milliseconds, the same text Foundation's ISO 8601 formatter gives",
        arguments: [0, 0.5, 951_782_400.25, 1_795_417_698.125, 4_102_444_799.75, 1_000_000_000])
    func matchesFoundation(seconds: Double) throws {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        formatter.timeZone = TimeZone(identifier: "UTC")
        let expected = formatter.string(from: Date(timeIntervalSince1970: seconds))
        #expect(StatusDocument.Timestamp.rfc3339(seconds) == expected)
    }

    @Test("an encoded time reads back to the same millisecond")
    func roundTrip() throws {
        let seconds = 1_795_417_698.821_9
        let data = try JSONEncoder().encode([StatusDocument.Timestamp(seconds)])
        #expect(String(decoding: data, as: UTF8.self) == "[\"2026-11-23T07:08:18.821Z\"]")
        let back = try JSONDecoder().decode([StatusDocument.Timestamp].self, from: data)
        #expect(abs(back[0].secondsSince1970 - 1_795_417_698.821) < 0.000_5)
    }
}
