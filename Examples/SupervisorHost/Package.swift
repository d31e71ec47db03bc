// swift-tools-version:6.1
import PackageDescription

// A supervisor-only host (a signer daemon, a worker box): the host core and the supervisor
// plugin, nothing else — no audio, speech, sound-file or D-Bus module is built or linked, so it
// needs no libpulse, ALSA, libsndfile, espeak-ng or libsystemd (and none of their -dev packages).
// Its own package, depending on Vigil by path (a real app would use `.package(url: …, from: …)`).
let package = Package(
    name: "SupervisorHost",
    dependencies: [
        // `name:` pins the package's identity to "vigil" whatever the checkout's directory is called.
        .package(name: "vigil", path: "../.."),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
    ],
    targets: [
        .executableTarget(
            name: "SupervisorHost",
            dependencies: [
                .product(name: "VigilHostCore", package: "vigil"),
                .product(name: "VigilSupervisor", package: "vigil"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ])
    ]
)
