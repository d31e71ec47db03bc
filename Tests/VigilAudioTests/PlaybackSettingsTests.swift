import Testing
import VigilAudio
import VigilPlugin
import VigilTestSupport

/// The playback keys every audio plugin reads through one reader (``PlaybackSettings``).
@Suite struct PlaybackSettingsTests {
    @Test func playbackKeysAreReadOnceForEveryAudioPlugin() throws {
        let defaults = PlaybackSettings.Defaults(bufferMilliseconds: 1000, retryMaxMilliseconds: 2000)
        let read = try PlaybackSettings(PluginSettings(pluginName: "p", values: [:]), defaults: defaults)
        #expect(read.device == nil && read.pulseServer == nil)
        #expect(read.bufferMilliseconds == 1000 && read.retryMaxMilliseconds == 2000 && read.healthCheckSeconds == 30)
        #expect(
            try PlaybackSettings(PluginSettings(pluginName: "p", values: defaults.values), defaults: defaults) == read,
            "the defaults as values read back as the defaults")
        let order = PluginSettings(
            pluginName: "p", values: ["retry_initial_ms": .integer(5000), "retry_max_ms": .integer(100)])
        #expect(
            settingRefusal { _ = try PlaybackSettings(order, defaults: defaults) }?.hasPrefix("setting `retry_max_ms`")
                == true)
        let quote = PluginSettings(pluginName: "p", values: ["pulse_server": .string("a\"b")])
        #expect(
            settingRefusal { _ = try PlaybackSettings(quote, defaults: defaults) }?.contains(
                "not a PulseAudio server address") == true)
    }
}
