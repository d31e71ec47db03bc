import ArgumentParser
import VigilCheckCommands

/// `vigil check`: VigilCheckCommands' ``Check`` (the one `vigil-plugin-tool` runs too, which links
/// no TLS library), with `[repository] ca_file`'s certificates judged by the TLS library the
/// repository commands fetch with (``RepositoryCommand/caFileCheck``).
struct CheckCommand: AsyncParsableCommand {
    static let configuration = Check.configuration

    @OptionGroup var check: Check

    func run() async throws { try await check.perform(caFileCheck: RepositoryCommand.caFileCheck) }
}
