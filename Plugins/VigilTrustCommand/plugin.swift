import PackagePlugin

// Placeholder: replaced by the real command plugin.
@main struct VigilTrustCommand: CommandPlugin {
    func performCommand(context: PluginContext, arguments: [String]) async throws {}
}
