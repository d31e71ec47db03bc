import Foundation
import Testing

/// Long-lived work in `Sources/` is structured: a `Service`'s `run()` and its task groups. This
/// scans every Swift file under `Sources/` for an unstructured task — `Task {`, `Task(`,
/// `Task.detached` — and fails on any outside the allow-list below, each with its reason.
@Suite("No unstructured tasks in Sources/")
struct UnstructuredTaskScanTests {
    /// File (under `Sources/`) → how many unstructured tasks it may create, and why.
    static let allowed: [String: (count: Int, reason: String)] = [
        "VigilHostCore/VigilHost.swift": (
            1,
            "the loop of a library host (Vigil.keepAlive() without a ServiceGroup); run() runs the same loop as its child"
        ),
        "VigilBase/Uncancelled.swift": (
            1,
            "runUncancelled: a release a stop asked for (plugin run()'s, a bus name given back) runs to its end; awaited at once"
        ),
        "VigilCLI/Up.swift": (
            3, "the CLI's display tasks, cancelled by `defer` when `vigil up` returns; no plugin work runs in them"
        ),
        "VigilCLI/Run.swift": (
            1, "a graceful-shutdown handler is synchronous: it hops to the async worker stop, which the group awaits"
        ),
    ]

    static var sources: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Sources")
    }

    /// The unstructured task creations in `text`, as line numbers (comments skipped).
    static func occurrences(in text: String) -> [Int] {
        var lines: [Int] = []
        for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let code = line.trimmingCharacters(in: .whitespaces)
            if code.hasPrefix("//") { continue }
            let scalars = Array(code.unicodeScalars)
            var index = 0
            while index + 4 <= scalars.count {
                defer { index += 1 }
                guard String(String.UnicodeScalarView(scalars[index..<index + 4])) == "Task" else { continue }
                if index > 0 {
                    let before = scalars[index - 1]
                    if CharacterSet.alphanumerics.contains(before) || before == "_" || before == "." { continue }
                }
                let rest = String(String.UnicodeScalarView(scalars[(index + 4)...]))
                if rest.hasPrefix(" {") || rest.hasPrefix("{") || rest.hasPrefix("(") || rest.hasPrefix(".detached") {
                    lines.append(number + 1)
                }
            }
        }
        return lines
    }

    @Test("the scanner finds each spelling and skips structured ones")
    func scannerFindsEachSpelling() {
        let text = """
            let a = Task { await work() }
            let b = Task(priority: .high) { }
            Task.detached { }
            group.addTask { }
            // Task { in a comment }
            var handle: Task<Void, Never>?
            try await Task.sleep(for: .seconds(1))
            """
        #expect(Self.occurrences(in: text) == [1, 2, 3])
    }

    @Test("Sources/ creates unstructured tasks only where the allow-list says why")
    func onlyAllowListed() throws {
        let root = Self.sources
        let enumerator = try #require(FileManager.default.enumerator(atPath: root.path))
        var found: [String: [Int]] = [:]
        while let relative = enumerator.nextObject() as? String {
            guard relative.hasSuffix(".swift") else { continue }
            let text = try String(contentsOf: root.appendingPathComponent(relative), encoding: .utf8)
            let lines = Self.occurrences(in: text)
            if !lines.isEmpty { found[relative] = lines }
        }
        #expect(found["VigilHostCore/VigilHost.swift"] != nil, "the scan reads Sources/ (found \(found.keys.sorted()))")
        for (file, lines) in found.sorted(by: { $0.key < $1.key }) {
            let allowance = Self.allowed[file]?.count ?? 0
            #expect(
                lines.count <= allowance,
                "Sources/\(file) creates an unstructured task at line(s) \(lines): make it a child of a task group or a Service's run(), or add it to the allow-list with its reason"
            )
        }
        for file in Self.allowed.keys {
            #expect(found[file] != nil, "Sources/\(file) is allow-listed but creates no task: remove its entry")
        }
    }
}
