// swift-tools-version:6.1
import PackageDescription

// Every Swift target is built in Swift 6 language mode with these upcoming features on.
let strictSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
]

let log = Target.Dependency.product(name: "Logging", package: "swift-log")
let lifecycle = Target.Dependency.product(name: "ServiceLifecycle", package: "swift-service-lifecycle")

let package = Package(
    name: "vigil",
    products: [
        .library(name: "Vigil", targets: ["Vigil"]),
        .library(name: "VigilPlugin", targets: ["VigilPlugin"]),
        .executable(name: "vigil", targets: ["vigil"]),
        .plugin(name: "VigilBuildCheck", targets: ["VigilBuildCheck"]),
        .plugin(name: "VigilTrustCommand", targets: ["VigilTrustCommand"]),
        .plugin(name: "VigilCheckCommand", targets: ["VigilCheckCommand"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/LebJe/TOMLKit", from: "0.6.0"),
        .package(url: "https://github.com/mxcl/Version", from: "2.2.1"),
    ],
    targets: [
        // C libraries, each reached through exactly one Swift wrapper module (`internal import`).
        .systemLibrary(
            name: "CSodium", pkgConfig: "libsodium",
            providers: [.apt(["libsodium-dev"])]),
        .systemLibrary(
            name: "CALSA", pkgConfig: "alsa",
            providers: [.apt(["libasound2-dev"])]),
        // No `pkgConfig` here: libpulse.pc adds `-D_REENTRANT -pthread`, which SwiftPM refuses
        // with a warning on every build; the headers and library are in the default paths.
        .systemLibrary(
            name: "CPulse",
            providers: [.apt(["libpulse-dev"])]),
        .systemLibrary(
            name: "CSystemd", pkgConfig: "libsystemd",
            providers: [.apt(["libsystemd-dev"])]),
        .systemLibrary(
            name: "CSndfile", pkgConfig: "sndfile",
            providers: [.apt(["libsndfile1-dev"])]),

        // Ed25519, BLAKE2b, SHA-256 and minisign file formats over libsodium.
        .target(name: "VigilCrypto", dependencies: ["CSodium"], swiftSettings: strictSettings),
        // The contract between the host and keep-alive plugin implementations.
        .target(name: "VigilPlugin", dependencies: [log], swiftSettings: strictSettings),
        // vigil.toml, signed manifests, trust, rollback protection, host requirements and checks.
        .target(
            name: "VigilCore",
            dependencies: [
                "VigilCrypto", "VigilPlugin", log,
                .product(name: "TOMLKit", package: "TOMLKit"),
                .product(name: "Version", package: "Version"),
            ],
            swiftSettings: strictSettings),
        // The playback layer shared by the audio plugins: ALSA PCMs, and PulseAudio's native
        // protocol for the sound server (`pulse`), where the ALSA plugin costs far more wakeups.
        .target(name: "VigilAudio", dependencies: ["CALSA", "CPulse", log], swiftSettings: strictSettings),
        // First-party plugins.
        .target(
            name: "VigilSilentEngine", dependencies: ["VigilAudio", "VigilPlugin", log],
            swiftSettings: strictSettings),
        .target(
            name: "VigilSoundscape",
            dependencies: ["VigilAudio", "VigilPlugin", "VigilDBus", "VigilSoundFile", "VigilCore", log],
            swiftSettings: strictSettings),
        // fork/exec, pidfd, epoll and sd_notify socket calls for the supervisor (async-signal-safe child path).
        .target(name: "CVigilSpawn"),
        .target(
            name: "VigilSupervisor", dependencies: ["VigilPlugin", "VigilDBus", "CVigilSpawn", log],
            swiftSettings: strictSettings),
        // D-Bus over sd-bus (libsystemd): connections on a thread of their own, calls, signals,
        // names and exported objects. The only module that imports CSystemd's sd-bus.
        .target(name: "VigilDBus", dependencies: ["CSystemd", log], swiftSettings: strictSettings),
        // Decoding sound files (WAV, FLAC, Ogg Vorbis, Opus, MP3) with libsndfile, streamed through
        // a bounded buffer. The only module that imports CSndfile.
        .target(name: "VigilSoundFile", dependencies: ["CSndfile"], swiftSettings: strictSettings),
        // The library a host app links: keepAlive()/stop(), status, events, Service.
        .target(
            name: "Vigil",
            dependencies: [
                "VigilCore", "VigilPlugin", "VigilSilentEngine", "VigilSupervisor", "VigilSoundscape", log, lifecycle,
            ],
            swiftSettings: strictSettings),
        // The `vigil` command-line tool.
        .executableTarget(
            name: "vigil",
            dependencies: [
                "Vigil", "VigilCore", "VigilCrypto", "VigilSupervisor", "VigilSoundscape", log, lifecycle,
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Sources/VigilCLI",
            swiftSettings: strictSettings),

        // A minimal host running silent-engine, for bench/silent-engine.sh and the restart-leak
        // test (an executable target, not a product).
        .executableTarget(
            name: "SilentEngineBench", dependencies: ["VigilSilentEngine", "VigilPlugin", log],
            swiftSettings: strictSettings),

        // SwiftPM plugins for host packages.
        .plugin(
            name: "VigilBuildCheck", capability: .buildTool(), dependencies: ["vigil"]),
        .plugin(
            name: "VigilTrustCommand",
            capability: .command(
                intent: .custom(verb: "vigil-trust", description: "Review and trust a Vigil plugin's signing key."),
                permissions: [
                    .writeToPackageDirectory(reason: "Records the plugin's key under [trusted_plugins] in vigil.toml.")
                ]),
            dependencies: ["vigil"]),
        .plugin(
            name: "VigilCheckCommand",
            capability: .command(
                intent: .custom(verb: "vigil-check", description: "Check vigil.toml and its plugins.")),
            dependencies: ["vigil"]),

        // Tests.
        .target(
            name: "VigilTestSupport", dependencies: ["VigilPlugin", log], path: "Tests/VigilTestSupport",
            swiftSettings: strictSettings),
        .testTarget(
            name: "VigilCryptoTests", dependencies: ["VigilCrypto", "VigilTestSupport"],
            exclude: ["Fixtures"],  // golden files, read through #filePath (no resource bundle)
            swiftSettings: strictSettings),
        .testTarget(
            name: "VigilCoreTests", dependencies: ["VigilCore", "VigilCrypto", "VigilTestSupport"],
            swiftSettings: strictSettings),
        .testTarget(
            name: "VigilAudioTests", dependencies: ["VigilAudio", "VigilSilentEngine", "VigilTestSupport"],
            swiftSettings: strictSettings),
        .testTarget(
            name: "VigilSupervisorTests", dependencies: ["VigilSupervisor", "VigilPlugin", "VigilTestSupport"],
            exclude: ["Fixtures"], swiftSettings: strictSettings),
        .testTarget(
            name: "VigilTests",
            dependencies: [
                "Vigil", "VigilCore", "VigilCrypto", "VigilPlugin", "VigilTestSupport", log, lifecycle,
                .product(name: "ServiceLifecycleTestKit", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strictSettings),
        .testTarget(
            name: "VigilDBusTests", dependencies: ["VigilDBus", "VigilTestSupport", log],
            swiftSettings: strictSettings),
        .testTarget(
            name: "VigilSoundFileTests", dependencies: ["VigilSoundFile", "VigilTestSupport"],
            swiftSettings: strictSettings),
        .testTarget(
            name: "VigilSoundscapeTests",
            dependencies: ["VigilSoundscape", "VigilAudio", "VigilPlugin", "VigilSoundFile", "VigilTestSupport", log],
            swiftSettings: strictSettings),
        .testTarget(
            name: "VigilCLITests", dependencies: ["VigilTestSupport", "VigilCrypto"],
            swiftSettings: strictSettings),
    ]
)
