import PackagePlugin

// Placeholder: replaced by the real command plugin.
@main struct VigilCheckCommand: CommandPlugin {
    func performCommand(context: PluginContext, arguments: [String]) async throws {}
}
