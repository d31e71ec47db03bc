import PackagePlugin

// Placeholder: replaced by the real build-tool plugin.
@main struct VigilBuildCheck: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: any Target) async throws -> [Command] { [] }
}
