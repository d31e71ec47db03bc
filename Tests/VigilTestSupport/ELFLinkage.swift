import Foundation
import Testing

/// What a built ELF binary links, from binutils (`readelf`, `nm`) and `ldd`.
public enum ELFLinkage {
    /// The shared libraries `binary` names (`DT_NEEDED`), from `readelf -d`.
    public static func neededLibraries(_ binary: String) async throws -> [String] {
        let readelf = try #require(RuntimeFixtures.which("readelf"), "readelf (binutils) is not on PATH")
        let out = try await VigilExecutable.run(executable: readelf, ["-d", binary], in: "/")
        #expect(out.status == 0, "\(out.stderr)")
        return out.stdout.split(separator: "\n").compactMap { line in
            guard line.contains("(NEEDED)"), let open = line.firstIndex(of: "["), let close = line.lastIndex(of: "]")
            else { return nil }
            return String(line[line.index(after: open)..<close])
        }
    }

    /// The dynamic symbols `binary` defines (`defined: true`) or needs from a shared library
    /// (`defined: false`), from `nm -D`.
    public static func dynamicSymbols(_ binary: String, defined: Bool) async throws -> Set<String> {
        let nm = try #require(RuntimeFixtures.which("nm"), "nm (binutils) is not on PATH")
        let out = try await VigilExecutable.run(
            executable: nm, ["-D", defined ? "--defined-only" : "--undefined-only", binary], in: "/")
        #expect(out.status == 0, "\(out.stderr)")
        return Set(out.stdout.split(separator: "\n").compactMap { $0.split(separator: " ").last.map(String.init) })
    }

    /// The path `binary`'s dynamic loader resolves the library whose name starts with `prefix` to
    /// (`ldd`), or nil when the binary does not load it.
    public static func resolvedLibrary(_ binary: String, prefix: String) async throws -> String? {
        let ldd = try #require(RuntimeFixtures.which("ldd"), "ldd is not on PATH")
        let out = try await VigilExecutable.run(executable: ldd, [binary], in: "/")
        #expect(out.status == 0, "\(out.stderr)")
        for line in out.stdout.split(separator: "\n") {
            let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            if fields.count >= 3, fields[0].hasPrefix(prefix), fields[1] == "=>" { return String(fields[2]) }
        }
        return nil
    }
}
