import Foundation
import Testing
import VigilMetrics
import VigilTestSupport

/// docs/metrics.md's table and ``MetricsCatalog`` (what the host and plugins register) agree:
/// names, types, units and labels. (`MetricsExportTests` checks a real host's exposition against
/// the same table.)
@Suite("metrics catalog and docs/metrics.md")
struct MetricsCatalogTests {
    /// The table rows of docs/metrics.md: `| name | type | unit | labels | … |`.
    static func documentedRows() throws -> [String: (kind: String, unit: String, labels: [String])] {
        let text = try String(
            contentsOfFile: VigilExecutable.packageRoot + "/docs/metrics.md", encoding: .utf8)
        var rows: [String: (String, String, [String])] = [:]
        for line in text.split(separator: "\n") where line.hasPrefix("| `vigil_") {
            let cells = line.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
            let name = cells[0].trimmingCharacters(in: CharacterSet(charactersIn: "`"))
            let labels =
                cells[3] == "—"
                ? []
                : cells[3].split(separator: ",").map {
                    $0.trimmingCharacters(in: CharacterSet(charactersIn: " `"))
                }
            rows[name] = (cells[1], cells[2], labels)
        }
        return rows
    }

    @Test("every catalog metric is documented with its type, unit and labels, and nothing else is")
    func tableAgrees() throws {
        let rows = try Self.documentedRows()
        #expect(Set(rows.keys) == Set(MetricsCatalog.all.map(\.name)))
        for metric in MetricsCatalog.all {
            let row = try #require(rows[metric.name], "\(metric.name) is not in docs/metrics.md")
            #expect(row.kind == metric.kind.rawValue, "\(metric.name)")
            #expect(row.unit == metric.unit, "\(metric.name)")
            #expect(row.labels == metric.labels, "\(metric.name)")
        }
    }

    @Test("names follow Prometheus's guide: vigil_ prefix, _total counters, base units, snake case")
    func naming() {
        for metric in MetricsCatalog.all {
            #expect(metric.name.hasPrefix("vigil_"))
            #expect(metric.name.allSatisfy { $0.isLowercase || $0 == "_" }, "\(metric.name)")
            #expect((metric.kind == .counter) == metric.name.hasSuffix("_total"), "\(metric.name)")
            if metric.unit == "seconds" { #expect(metric.name.contains("_seconds"), "\(metric.name)") }
            if metric.unit == "ratio" { #expect(metric.name.hasSuffix("_ratio"), "\(metric.name)") }
            #expect(!metric.help.isEmpty && !metric.labels.contains("le"))
        }
        #expect(Set(MetricsCatalog.all.map(\.name)).count == MetricsCatalog.all.count)
    }
}
