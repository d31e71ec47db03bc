import ArgumentParser

/// The `--config PATH` option every command takes.
struct ConfigOption: ParsableArguments {
    @Option(
        name: .long,
        help: "The host configuration to use. Default: the nearest vigil.toml from the working directory upward.",
        completion: .file(extensions: ["toml"]))
    var config: String?
}
