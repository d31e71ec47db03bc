// swift-tools-version:6.1
import PackageDescription

// The libFuzzer driver, a package of its own so that the product package (the one above) builds
// no fuzzer: scripts/fuzz.sh builds it with `-sanitize=fuzzer,address` (docs/fuzzing.md). The
// harnesses (VigilFuzzTargets) stay in the product package, under Tests/: they reach the parsers
// through `package`-level entry points, which only a module of the same package can call, and
// CI's regression tests (VigilFuzzTests) run them in the ordinary build.
let package = Package(
    name: "vigil-fuzz",
    dependencies: [.package(name: "vigil", path: "..")],
    targets: [
        // libFuzzer's driver, reached through a weak symbol: absent from a build without the runtime.
        .target(name: "CVigilFuzz"),
        .executableTarget(
            name: "vigil-fuzz",
            dependencies: ["CVigilFuzz", .product(name: "VigilFuzzTargets", package: "vigil")],
            swiftSettings: [
                .enableUpcomingFeature("ExistentialAny"), .enableUpcomingFeature("MemberImportVisibility"),
            ]),
    ]
)
