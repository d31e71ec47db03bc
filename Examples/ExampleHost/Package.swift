// swift-tools-version:6.1
import PackageDescription

// An example host app: its own package, depending on Vigil by path (a real app would use
// `.package(url: "https://…/vigil", from: "…")`). The VigilBuildCheck plugin runs `vigil check`
// on ./vigil.toml during `swift build`.
let package = Package(
    name: "ExampleHost",
    dependencies: [
        // `name:` pins the package's identity to "vigil" whatever the checkout's directory is called.
        .package(name: "vigil", path: "../.."),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
    ],
    targets: [
        .executableTarget(
            name: "ExampleHost",
            dependencies: [
                .product(name: "Vigil", package: "vigil"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            plugins: [.plugin(name: "VigilBuildCheck", package: "vigil")])
    ]
)
