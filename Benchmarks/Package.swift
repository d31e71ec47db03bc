// swift-tools-version:6.1
import PackageDescription

// Vigil's benchmark hosts, a package of their own so that the product package (the one above)
// compiles none of them: bench/*.sh build them from here in release mode (BENCHMARKS.md). The
// SilentEngineBench host stays in the product package (Tests/Hosts): the tests run it too.
let strictSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
]

let log = Target.Dependency.product(name: "Logging", package: "swift-log")

func vigil(_ product: String) -> Target.Dependency { .product(name: product, package: "vigil") }

let package = Package(
    name: "vigil-benchmarks",
    dependencies: [
        .package(name: "vigil", path: ".."),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
    ],
    targets: [
        // A minimal announcer, for bench/announce.sh.
        .executableTarget(
            name: "AnnounceBench", dependencies: [vigil("VigilAnnounce"), vigil("VigilAudio"), log],
            swiftSettings: strictSettings),
        // A host timing one cold keepAlive(), for bench/cold-start.sh.
        .executableTarget(
            name: "ColdStartBench", dependencies: [vigil("Vigil"), vigil("VigilCore"), vigil("VigilPlugin"), log],
            swiftSettings: strictSettings),
        // Manifest verification throughput, for bench/verify.sh.
        .executableTarget(
            name: "VerifyBench", dependencies: [vigil("VigilCore"), vigil("VigilCrypto")],
            swiftSettings: strictSettings),
    ]
)
