// swift-tools-version:6.1
import PackageDescription

// An example host app: its own package, depending on Vigil by path (a real app would use
// `.package(url: "https://…/vigil", from: "…")`). The VigilBuildCheck plugin runs `vigil check`
// on ./vigil.toml during `swift build`.
let package = Package(
    name: "ExampleHost",
    dependencies: [
        // `name:` pins the package's identity to "vigil" whatever the checkout's directory is called.
        .package(name: "vigil", path: "../..")
    ],
    targets: [
        .executableTarget(
            name: "ExampleHost",
            dependencies: [.product(name: "Vigil", package: "vigil")],
            plugins: [.plugin(name: "VigilBuildCheck", package: "vigil")])
    ]
)
