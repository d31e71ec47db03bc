import Foundation
import Testing
import VigilTestSupport

/// The package's target graph as SwiftPM sees it (`swift package describe --type json`, which
/// loads the manifest only: no dependency is fetched or built), checked for what a host that
/// links one product pays for, and for dependencies declared but never imported.
@Suite("package graph: what each product links")
struct PackageGraphTests {
    /// One target of the graph.
    struct Target: Sendable {
        let name: String
        let moduleType: String
        let path: String
        let sources: [String]
        let targets: [String]
        let products: [String]
    }

    /// The root package's targets by name and its products' targets by product name.
    struct Graph: Sendable {
        let targets: [String: Target]
        let products: [String: [String]]

        /// Every target `roots` need, themselves included (target dependencies, transitively).
        func closure(_ roots: [String]) -> Set<String> {
            var seen = Set<String>()
            var queue = roots
            while let name = queue.popLast() {
                guard seen.insert(name).inserted, let target = targets[name] else { continue }
                queue += target.targets
            }
            return seen
        }

        /// The closure of a product's targets.
        func closure(product: String) throws -> Set<String> {
            closure(try #require(products[product], "no product \(product)"))
        }
    }

    /// Described once per test process, in a scratch directory of its own (so it never waits for
    /// the lock of the `.build` the tests run from), with a deadline.
    static let graph: Result<Graph, any Error> = Result { try describe() }

    static func describe() throws -> Graph {
        let scratch = try TestDirectory("vigil-describe")
        defer { scratch.remove() }
        let output = try ChildProcess.run(
            "/usr/bin/timeout",
            [
                "300", "swift", "package", "--package-path", VigilExecutable.packageRoot, "--scratch-path",
                scratch.path, "describe", "--type", "json",
            ])
        let document = try #require(
            try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [String: Any], "not a JSON object")
        var targets: [String: Target] = [:]
        for entry in try #require(document["targets"] as? [[String: Any]]) {
            let target = Target(
                name: try #require(entry["name"] as? String), moduleType: entry["module_type"] as? String ?? "",
                path: entry["path"] as? String ?? "", sources: entry["sources"] as? [String] ?? [],
                targets: entry["target_dependencies"] as? [String] ?? [],
                products: entry["product_dependencies"] as? [String] ?? [])
            targets[target.name] = target
        }
        var products: [String: [String]] = [:]
        for entry in try #require(document["products"] as? [[String: Any]]) {
            products[try #require(entry["name"] as? String)] = entry["targets"] as? [String] ?? []
        }
        return Graph(targets: targets, products: products)
    }

    /// What a host that only supervises workers must not link: audio, speech, sound files, D-Bus
    /// and the C libraries behind them (each one an -dev package to build and a library to ship).
    static let notForSupervisorHosts: Set<String> = [
        "VigilAudio", "CPulse", "CALSA", "VigilSoundFile", "CSndfile", "VigilSpeech", "CEspeakNG",
        "CVigilSpeechDevice", "VigilDBus", "CSystemd", "VigilAnnounce", "VigilSilentEngine", "VigilSoundscape",
    ]

    @Test("the supervisor product's closure holds no audio, speech, sound-file or D-Bus module, nor any C library")
    func supervisorClosure() throws {
        let graph = try Self.graph.get()
        let closure = try graph.closure(product: "VigilSupervisor")
        // The supervisor itself is there, down to its engine and the engine's C.
        #expect(closure.isSuperset(of: ["VigilSupervisor", "VigilSupervisorEngine", "CVigilSpawn", "VigilPlugin"]))
        #expect(closure.intersection(Self.notForSupervisorHosts).isEmpty, "\(closure.sorted())")
        // No system library at all: building a supervisor-only host needs no -dev package.
        let systemLibraries = closure.filter { graph.targets[$0]?.moduleType == "SystemLibraryTarget" }
        #expect(systemLibraries.isEmpty, "\(systemLibraries.sorted())")
        // The checks read the workers' settings with the supervisor's reader, without its engine.
        let checks = graph.closure(["VigilHostCheck"])
        #expect(checks.contains("VigilSupervisorSettings"))
        #expect(!checks.contains("VigilSupervisorEngine") && checks.intersection(Self.notForSupervisorHosts).isEmpty)
    }

    /// The one system library a host on the host core must link: libsodium (VigilCrypto), with
    /// which the core checks every plugin's signed manifest.
    static let hostCoreSystemLibraries: Set<String> = ["CSodium"]

    @Test(
        "a supervisor-only host (the host core + the supervisor) links no audio, speech, sound-file or D-Bus module; libsodium is its one C library"
    )
    func supervisorOnlyHostClosure() throws {
        let graph = try Self.graph.get()
        let core = try graph.closure(product: "VigilHostCore")
        let closure = core.union(try graph.closure(product: "VigilSupervisor"))
        #expect(closure.isSuperset(of: ["VigilHostCore", "VigilCore", "VigilSupervisor", "VigilSupervisorEngine"]))
        #expect(closure.intersection(Self.notForSupervisorHosts).isEmpty, "\(closure.sorted())")
        let systemLibraries = closure.filter { graph.targets[$0]?.moduleType == "SystemLibraryTarget" }
        #expect(systemLibraries == Self.hostCoreSystemLibraries, "\(systemLibraries.sorted())")
        // The host core registers no plugin of its own: a host adds the ones it runs.
        let plugins: Set<String> = [
            "VigilSupervisor", "VigilSupervisorDesktop", "VigilSilentEngine", "VigilSoundscape",
        ]
        #expect(core.intersection(plugins).isEmpty, "\(core.sorted())")
        // The example supervisor-only host builds from exactly these, and the umbrella on the core.
        #expect(graph.closure(["SupervisorHostSource"]) == closure.union(["SupervisorHostSource"]))
        #expect(try graph.closure(product: "Vigil").isSuperset(of: core.union(plugins)))
    }

    @Test("the same measure finds D-Bus in the optional desktop notification and everything in the umbrella")
    func optionalPiecesAndUmbrella() throws {
        let graph = try Self.graph.get()
        let desktop = try graph.closure(product: "VigilSupervisorDesktop")
        #expect(desktop.contains("VigilDBus") && desktop.contains("CSystemd"))
        #expect(!desktop.contains("VigilAudio"))
        let umbrella = try graph.closure(product: "Vigil")
        #expect(umbrella.isSuperset(of: Self.notForSupervisorHosts.union(["VigilSupervisor"])))
    }

    @Test("the audio plugins and the announcer link neither the core's TOMLKit nor libsodium")
    func audioPluginsWithoutTheCore() throws {
        let graph = try Self.graph.get()
        for product in ["VigilSilentEngine", "VigilSoundscape", "VigilAnnounce", "VigilSupervisor"] {
            let closure = try graph.closure(product: product)
            let packages = Set(closure.flatMap { graph.targets[$0]?.products ?? [] })
            #expect(
                !closure.contains("VigilCore") && !closure.contains("VigilCrypto"), "\(product): \(closure.sorted())")
            #expect(!closure.contains("CSodium") && !packages.contains("TOMLKit"), "\(product): \(packages.sorted())")
        }
        // The measure sees them where they are: the core itself.
        let core = try graph.closure(product: "VigilCore")
        #expect(core.contains("CSodium") && Set(core.flatMap { graph.targets[$0]?.products ?? [] }).contains("TOMLKit"))
    }

    @Test("swift-nio and swift-prometheus only in the metrics exporter: no plugin or host library links them")
    func metricsExporterAlonePullsNIO() throws {
        let graph = try Self.graph.get()
        let heavy: Set<String> = ["NIOCore", "NIOPosix", "NIOHTTP1", "Prometheus"]
        func packages(_ closure: Set<String>) -> Set<String> {
            Set(closure.flatMap { graph.targets[$0]?.products ?? [] })
        }
        for product in ["VigilSupervisor", "VigilSilentEngine", "VigilSoundscape", "VigilPlugin", "Vigil"] {
            let closure = try graph.closure(product: product)
            #expect(packages(closure).isDisjoint(with: heavy), "\(product): \(packages(closure).sorted())")
        }
        // The supervisor records its metrics through swift-metrics' API only.
        let supervisor = try graph.closure(product: "VigilSupervisor")
        #expect(supervisor.contains("VigilMetrics") && packages(supervisor).contains("CoreMetrics"))
        // The measure sees them where they are: the exporter, which `vigil` links.
        let exporter = try graph.closure(product: "VigilMetricsExport")
        #expect(packages(exporter).isSuperset(of: heavy))
        #expect(graph.closure(["vigil"]).contains("VigilMetricsExport"))
    }

    @Test(
        "the repository commands: VigilRepository (and the TUF client, swift-nio's HTTP) in `vigil` only, called only by its repository commands"
    )
    func repositoryOutOfTheUpPath() throws {
        let graph = try Self.graph.get()
        let repository: Set<String> = ["VigilRepository", "VigilTUF", "VigilTUFHTTP"]
        for product in ["Vigil", "VigilHostCore", "VigilPlugin", "VigilCore", "VigilSupervisor", "VigilMetricsExport"] {
            let closure = try graph.closure(product: product)
            #expect(closure.isDisjoint(with: repository), "\(product): \(closure.intersection(repository).sorted())")
        }
        #expect(graph.closure(["vigil"]).isSuperset(of: repository))
        // Within `vigil`, one file imports it: the three commands; `up`, `run`, `reload` never reach it.
        let cli = try #require(graph.targets["vigil"])
        let importers = try cli.sources.filter { source in
            try TextFile.read(VigilExecutable.packageRoot + "/" + cli.path + "/" + source).split(separator: "\n")
                .contains { $0.hasPrefix("import VigilRepository") }
        }
        #expect(importers == ["Plugin/PluginRepositoryCommands.swift"], "\(importers)")
    }

    @Test("every first-party plugin module is a library product of its own")
    func onePluginOneProduct() throws {
        let graph = try Self.graph.get()
        for plugin in ["VigilSupervisor", "VigilSilentEngine", "VigilSoundscape"] {
            #expect(graph.products[plugin] == [plugin], "no library product \(plugin)")
        }
    }

    /// Each system library's apt package, as Package.swift's `providers: [.apt([...])]` names it.
    static func aptProviders() throws -> [String: String] {
        let manifest = try String(contentsOfFile: VigilExecutable.packageRoot + "/Package.swift", encoding: .utf8)
        let block = try Regex(#"\.systemLibrary\(\s*name:\s*"(\w+)"[^)]*?\.apt\(\[\s*"([^"]+)"\s*\]\)"#)
        var providers: [String: String] = [:]
        for match in manifest.matches(of: block) {
            if let name = match.output[1].substring, let package = match.output[2].substring {
                providers[String(name)] = String(package)
            }
        }
        return providers
    }

    @Test("the host guide's Debian packages per product are exactly the apt providers of each product's C libraries")
    func guidePackageList() throws {
        let graph = try Self.graph.get()
        let providers = try Self.aptProviders()
        let systemLibraries = graph.targets.values.filter { $0.moduleType == "SystemLibraryTarget" }.map(\.name)
        #expect(Set(systemLibraries) == Set(providers.keys), "a system library without an apt provider: \(providers)")
        let guide = try String(contentsOfFile: VigilExecutable.packageRoot + "/docs/host-guide.md", encoding: .utf8)
        let start = try #require(guide.range(of: "<!-- packages-per-product"), "no package table in the guide")
        let end = try #require(guide.range(of: "<!-- end packages-per-product -->"))
        var rows: [String: Set<String>] = [:]
        for line in guide[start.upperBound..<end.lowerBound].split(separator: "\n") where line.hasPrefix("| `") {
            let cells = line.split(separator: "|", omittingEmptySubsequences: false).map {
                $0.trimmingCharacters(in: .whitespaces)
            }
            let product = cells[1].trimmingCharacters(in: CharacterSet(charactersIn: "`"))
            let packages =
                cells[3] == "none"
                ? []
                : cells[3].trimmingCharacters(in: CharacterSet(charactersIn: "`"))
                    .split(separator: " ").map(String.init)
            rows[product] = Set(packages)
        }
        // The umbrella, the build check every guide host applies, and each plugin's own product.
        for product in ["Vigil", "VigilBuildCheck", "VigilSupervisor", "VigilSilentEngine", "VigilSoundscape"] {
            #expect(rows[product] != nil, "the guide lists no packages for \(product)")
        }
        for (product, listed) in rows.sorted(by: { $0.key < $1.key }) {
            let needed = try graph.closure(product: product).compactMap { providers[$0] }
            #expect(
                listed == Set(needed), "\(product): the guide lists \(listed.sorted()), it needs \(needed.sorted())")
        }
        // The two the guide once left out.
        #expect(rows["Vigil"]?.isSuperset(of: ["libsndfile1-dev", "libespeak-ng-dev"]) == true)
    }

    @Test("the supervisor's `workers` are read in one module, which the plugin and the checks both use")
    func workersReadOnce() throws {
        let graph = try Self.graph.get()
        let read = try Regex(#"\.array\(\s*"workers"\s*\)"#)
        var readers: Set<String> = []
        for target in graph.targets.values where target.path.hasPrefix("Sources/") {
            for file in target.sources where file.hasSuffix(".swift") {
                let text = try String(
                    contentsOfFile: VigilExecutable.packageRoot + "/" + target.path + "/" + file, encoding: .utf8)
                if text.contains(read) { readers.insert(target.name) }
            }
        }
        #expect(readers == ["VigilSupervisorSettings"])
        #expect(graph.closure(["VigilSupervisor"]).contains("VigilSupervisorSettings"))
        #expect(graph.closure(["VigilHostCheck"]).contains("VigilSupervisorSettings"))
    }

    /// Dependencies a target links without importing, each with its reason.
    static let linkedNotImported: Set<String> = [
        "vigil-plugin-tool → CVigilStartup",  // its constructor sets up descriptors 0–2 and SIGPIPE
        "VigilBuildCheck → vigil-plugin-tool",  // the SwiftPM plugin's tool, run, not imported
    ]

    @Test("every dependency a Swift target declares is imported by one of its files")
    func noUnusedDependencies() throws {
        let graph = try Self.graph.get()
        // `import M`, `public import M`, `@testable import M`, `@_exported public import M`, `import struct M.T`.
        let importLine = try Regex(
            #"(?m)^\s*(?:@\w+(?:\([^)]*\))?\s+)*(?:(?:public|package|internal|fileprivate|private)\s+)?import\s+(?:(?:struct|class|enum|protocol|func|var|let|typealias)\s+)?(\w+)"#
        )
        var unused: [String] = []
        var checked = 0
        for target in graph.targets.values.sorted(by: { $0.name < $1.name }) {
            let files = target.sources.filter { $0.hasSuffix(".swift") }
            guard !files.isEmpty else { continue }
            var imported = Set<String>()
            for file in files {
                let directory =
                    target.path.hasPrefix("/") ? target.path : VigilExecutable.packageRoot + "/" + target.path
                let text = try String(contentsOfFile: directory + "/" + file, encoding: .utf8)
                for match in text.matches(of: importLine) {
                    if let name = match.output[1].substring { imported.insert(String(name)) }
                }
            }
            for dependency in target.targets + target.products where !imported.contains(dependency) {
                if !Self.linkedNotImported.contains("\(target.name) → \(dependency)") {
                    unused.append("\(target.name) → \(dependency)")
                }
            }
            checked += 1
        }
        #expect(checked > 30, "only \(checked) targets with Swift sources")
        #expect(unused.isEmpty, "declared but never imported (remove them, or list them with a reason): \(unused)")
    }
}
