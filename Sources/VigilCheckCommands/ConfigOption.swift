import ArgumentParser

/// The `--config PATH` option every command takes.
package struct ConfigOption: ParsableArguments {
    /// Creates the option group (the parser fills it in).
    package init() {}

    @Option(
        name: .long,
        help: "The host configuration to use. Default: the nearest vigil.toml from the working directory upward.",
        completion: .file(extensions: ["toml"]))
    package var config: String?
}
