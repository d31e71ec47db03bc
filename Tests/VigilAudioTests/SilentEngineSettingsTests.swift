import Testing
import VigilAudio
import VigilPlugin
import VigilTestSupport

@testable import VigilSilentEngine

@Suite("silent-engine settings")
struct SilentEngineSettingsTests {
    static func settings(_ overrides: [String: SettingValue]) -> PluginSettings {
        PluginSettings(pluginName: "silent-engine", defaults: SilentEngineSettings.defaults, overrides: overrides)
    }

    @Test("the signed manifest ships exactly the defaults the code has (one place: the code)")
    func shippedManifestAgreesWithTheCode() throws {
        #expect(try ShippedManifest.settings("silent-engine") == SilentEngineSettings.defaults)
        // With no defaults at all (a host without the manifest's), the code's apply.
        let bare = try SilentEngineSettings(PluginSettings(pluginName: "silent-engine", values: [:]))
        #expect(bare == (try SilentEngineSettings(Self.settings([:]))))
    }

    @Test("the manifest defaults give zero mode on an automatic device with a 2 s buffer")
    func defaults() throws {
        let s = try SilentEngineSettings(Self.settings([:]))
        #expect(s.mode == .zero)
        #expect(s.playback.device == nil)
        #expect(s.playback.pulseServer == nil)
        #expect(s.playback.bufferMilliseconds == 2000)
        #expect(s.playback.retryBudget == 0)
        let environment = HostEnvironment(variables: ["PULSE_SERVER": "unix:/a unix:/b", "XDG_RUNTIME_DIR": "/run/x"])
        let configuration = s.playbackConfiguration(hostName: "my-signer", environment: environment)
        #expect(configuration.applicationName == "my-signer (Vigil keep-alive)")
        // Where the server is comes from the host's environment, and libpulse is told explicitly.
        #expect(configuration.soundServerAddresses == ["unix:/a", "unix:/b", "unix:/run/x/pulse/native"])
        #expect(configuration.serverList == "unix:/a unix:/b unix:/run/x/pulse/native unix:/run/pulse/native")
        #expect(configuration.retryMaxMilliseconds == 3000)
        #expect(configuration.healthCheckSeconds == 30)
    }

    @Test("every playback key reaches the stream's configuration, none left at its default")
    func everyPlaybackKeyReachesTheConfiguration() throws {
        let playback = try PlaybackSettings(
            Self.settings([
                "device": .string("pulse:sink-7"), "pulse_server": .string("unix:/srv/pulse"),
                "buffer_ms": .integer(700),
                "health_check_s": .integer(9), "retry_initial_ms": .integer(40), "retry_max_ms": .integer(900),
                "retry_budget": .integer(5),
            ]), defaults: SilentEngineSettings.Default.playback)
        let environment = HostEnvironment(variables: ["XDG_RUNTIME_DIR": "/run/y"])
        let configuration = PlaybackConfiguration(playback, environment: environment, applicationName: "app")
        #expect(
            configuration
                == PlaybackConfiguration(
                    device: "pulse:sink-7", pulseServer: "unix:/srv/pulse",
                    soundServerAddresses: ["unix:/run/y/pulse/native"], bufferMilliseconds: 700, healthCheckSeconds: 9,
                    retryInitialMilliseconds: 40, retryMaxMilliseconds: 900, retryBudget: 5, applicationName: "app"))
    }

    @Test(
        "bad values are refused with the key and a remedy",
        arguments: [
            ("mode", SettingValue.string("loud"), "is not one of"),
            ("mode", .integer(1), "expected a string"),
            ("buffer_ms", .integer(50), "out of range"),
            ("buffer_ms", .integer(20_000), "out of range"),
            ("buffer_ms", .string("2s"), "expected an integer"),
            ("sine_frequency_hz", .double(0), "out of range"),
            ("sine_amplitude", .double(1.5), "out of range"),
            ("noise_level", .double(-0.1), "out of range"),
            ("fluctuate_rate_hz", .integer(5000), "out of range"),
            ("health_check_s", .integer(0), "out of range"),
            ("retry_initial_ms", .integer(1), "out of range"),
            ("retry_max_ms", .integer(50), "out of range"),
            ("retry_budget", .integer(-1), "out of range"),
            ("device", .string("bad\"name"), "is not an output name"),
            ("pulse_server", .string("x\"y"), "not a PulseAudio server address"),
        ])
    func invalid(key: String, value: SettingValue, expected: String) throws {
        let error = #expect(throws: PluginError.self) { try SilentEngineSettings(Self.settings([key: value])) }
        #expect(error?.code == .invalidSetting)
        #expect(error?.message.contains("`\(key)`") == true, "\(String(describing: error))")
        #expect(error?.message.contains(expected) == true, "\(String(describing: error))")
        #expect(error?.message.contains("vigil.toml") == true)
    }

    @Test("retry_max_ms below retry_initial_ms is refused")
    func retryOrder() {
        #expect(throws: PluginError.self) {
            try SilentEngineSettings(
                Self.settings(["retry_initial_ms": .integer(2000), "retry_max_ms": .integer(1000)]))
        }
    }

    @Test("the plugin's make() validates settings")
    func makeValidates() {
        let context = PluginContext(
            pluginName: "silent-engine", hostName: "h", settings: Self.settings(["mode": .string("nope")]),
            logger: quietLogger, reporter: PluginReporter { _ in }, stateDirectory: "/nonexistent",
            environment: HostEnvironment(variables: [:]))
        #expect(SilentEnginePlugin.implementation.entry == "silent-engine")
        #expect(throws: PluginError.self) { _ = try SilentEnginePlugin.implementation.make(context) }
    }
}
