import Foundation
import Testing

/// docs/architecture.md: every C module is `internal import`ed by exactly one Swift module, but
/// the plugin ABI header, which each party to the ABI imports. Read from the sources themselves.
@Suite("C modules and their importers")
struct CModuleImportTests {
    /// The package's root, from this file's path.
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path

    /// Target directories (name → path) under the package's source roots.
    static func targets() -> [String: String] {
        var found: [String: String] = [:]
        for base in ["Sources", "Fuzz/Sources"] {
            let directory = root + "/" + base
            for name in (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [] {
                found[name] = directory + "/" + name
            }
        }
        return found
    }

    /// What may stand before `import` in an import declaration.
    static let modifiers: Set<Substring> = [
        "internal", "public", "package", "private", "fileprivate", "@_exported", "@_implementationOnly",
        "@preconcurrency", "@testable",
    ]

    /// The Swift files under `path`, recursively.
    static func swiftFiles(_ path: String) -> [String] {
        let all = FileManager.default.enumerator(atPath: path)?.allObjects as? [String] ?? []
        return all.filter { $0.hasSuffix(".swift") }.map { path + "/" + $0 }
    }

    @Test(
        "each C module is imported by one Swift module (vigil_plugin.h by the ABI's three parties), always internally")
    func importers() throws {
        let targets = Self.targets()
        let cModules = Set(targets.filter { Self.swiftFiles($0.value).isEmpty }.keys)
        #expect(cModules.isSuperset(of: ["CSodium", "CPulse", "CVigilLoader", "CVigilPluginABI", "CVigilSpawn"]))
        var importers: [String: Set<String>] = [:]
        var notInternal: [String] = []
        for (target, path) in targets where !cModules.contains(target) {
            for file in Self.swiftFiles(path) {
                for line in try String(contentsOfFile: file, encoding: .utf8).split(separator: "\n") {
                    let words = line.split(separator: " ")
                    guard let at = words.firstIndex(of: "import"), at + 1 < words.count,
                        words[..<at].allSatisfy(Self.modifiers.contains)
                    else { continue }
                    let module = String(words[at + 1])
                    guard cModules.contains(module) else { continue }
                    importers[module, default: []].insert(target)
                    if words[..<at] != ["internal"] { notInternal.append("\(file): \(line)") }
                }
            }
        }
        #expect(notInternal.isEmpty, "C modules must be `internal import`ed: \(notInternal)")
        #expect(importers["CVigilLoader"] == ["VigilLibraryCheck"])
        // The confinement policy's one Swift wrapper; libseccomp is reached only from its C.
        #expect(importers["CVigilConfine"] == ["VigilConfine"])
        #expect(cModules.contains("CSeccomp") && importers["CSeccomp"] == nil)
        #expect(importers["CVigilPluginABI"] == ["VigilLibraryCheck", "VigilSharedLibrary", "VigilPluginSDK"])
        for (module, users) in importers where module != "CVigilPluginABI" {
            #expect(users.count == 1, "\(module) is imported by \(users.sorted())")
        }
    }
}
