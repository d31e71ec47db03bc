import ArgumentParser
import VigilCheckCommands

/// `vigil plugin …`: keys, signing, verification and trust of plugin manifests.
struct PluginCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "plugin",
        abstract: "Sign, verify and trust plugin manifests.",
        discussion: """
            Publishers: `vigil plugin keygen --name NAME`, then `vigil plugin sign DIR --key KEY`. \
            Hosts: `vigil plugin trust NAME` records the plugin's key in vigil.toml after a review; \
            `vigil plugin list` shows every known plugin and its state. Publishers rotate keys with \
            `vigil plugin rotate DIR --from OLD.key --to NEW.pub --cosign NEW.key`. Fleets: `vigil plugin \
            install NAME`, `vigil plugin update` and `vigil plugin outdated` use the TUF repository of \
            [repository] in vigil.toml.
            """,
        subcommands: [
            PluginKeygen.self, PluginSign.self, PluginVerify.self, PluginTrust.self, PluginUntrust.self,
            PluginList.self, PluginRotate.self, PluginRevoke.self, PluginInstall.self, PluginUpdate.self,
            PluginOutdated.self, PluginBundle.self,
        ]
    )
}
