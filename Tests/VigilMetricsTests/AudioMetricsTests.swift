import Foundation
import Logging
import Testing
import Vigil
import VigilAnnounce
import VigilMetrics
import VigilMetricsExport
import VigilPlugin
import VigilSoundscape
import VigilTestSupport

/// The audio metrics of a host whose metrics go to a Prometheus registry (`PrometheusExport`, as
/// `vigil up` exports them), read from its exposition: silent-engine and the soundscape playing on
/// a private PulseAudio server (a null sink) that the test suspends by hand, and announcements
/// spoken by espeak-ng through the host's announcer. promtool accepts the exposition.
@Suite("metrics: audio stream, sink, soundscape and announcements", .serialized, .timeLimit(.minutes(1)))
struct AudioMetricsTests {
    /// The value of `series` (`name{labels}` as rendered) in `export`'s exposition.
    static func sample(_ series: String, _ export: PrometheusExport) -> Double? {
        PrometheusServer.sample(series, in: String(decoding: export.render(), as: UTF8.self))
    }

    /// Waits (up to 10 s) until `series` has `value`; the last value.
    static func waitFor(_ series: String, _ value: Double, _ export: PrometheusExport) async -> Double? {
        _ = await RuntimeFixtures.waitUntil(timeout: 10) { sample(series, export) == value }
        return sample(series, export)
    }

    static func builtin(_ name: String, _ values: [String: SettingValue]) throws -> VigilHost.PreparedPlugin {
        VigilHost.PreparedPlugin(
            name: name, version: "1.0.0", requirements: [],
            settings: PluginSettings(pluginName: name, values: values),
            implementation: try #require(PluginRegistry.builtin.implementation(for: name)))
    }

    @Test("sink state and suspends from a real pactl suspend-sink; soundscape playing and volume; announcements")
    func audioSeries() async throws {
        try await PulseAudioServer.with(directory: "vigil-audio-metrics") { pulse, directory in
            let export = PrometheusExport()
            var options = VigilHost.Options(
                publishStatus: false,
                environment: HostEnvironment(variables: [
                    "XDG_RUNTIME_DIR": pulse.directory.path, "XDG_STATE_HOME": directory.path + "/state",
                    "HOME": directory.path, "PATH": "/usr/bin:/bin",
                ]))
            options.metrics = export
            var logger = Logger(label: "audio-metrics-test")
            logger.logLevel = .critical
            let host = try VigilHost(
                plugins: [
                    try Self.builtin("silent-engine", [:]),
                    try Self.builtin(
                        "soundscape", ["mpris": .bool(false), "control_socket": .bool(false), "volume": .double(0.25)]),
                ],
                hostName: "audio-metrics", options: options, logger: logger)
            let status = await host.keepAlive()
            for name in ["silent-engine", "soundscape"] {
                #expect(status[plugin: name]?.state == .running, "\(name): \(String(describing: status[plugin: name]))")
            }
            let engine = #"plugin="silent-engine""#
            let sink = { (state: String) in #"vigil_audio_sink_state{\#(engine),state="\#(state)"}"# }
            #expect(await Self.waitFor(sink("running"), 1, export) == 1)
            #expect(Self.sample(sink("suspended"), export) == 0)
            #expect(Self.sample(#"vigil_audio_sink_suspends_total{\#(engine)}"#, export) == 0)
            #expect(Self.sample(#"vigil_audio_underruns_total{\#(engine)}"#, export) != nil)

            // Another program suspends the sink: one suspension, not a lost stream; then it resumes.
            _ = try pulse.pactl(["suspend-sink", pulse.sinkName, "1"])
            #expect(await Self.waitFor(sink("suspended"), 1, export) == 1)
            #expect(Self.sample(sink("running"), export) == 0)
            #expect(Self.sample(#"vigil_audio_sink_suspends_total{\#(engine)}"#, export) == 1)
            #expect(Self.sample(#"vigil_audio_stream_up{\#(engine)}"#, export) == 0)
            _ = try pulse.pactl(["suspend-sink", pulse.sinkName, "0"])
            #expect(await Self.waitFor(sink("running"), 1, export) == 1)
            #expect(Self.sample(#"vigil_audio_stream_up{\#(engine)}"#, export) == 1)
            let exposition = String(decoding: export.render(), as: UTF8.self)
            #expect(!exposition.contains("vigil_audio_stream_interruptions_total{"), "a suspension is no reconnect")

            // The soundscape: audible at its configured volume; a change and a pause show.
            let scape = #"plugin="soundscape""#
            #expect(await Self.waitFor(#"vigil_soundscape_playing{\#(scape)}"#, 1, export) == 1)
            #expect(Self.sample(#"vigil_soundscape_volume_ratio{\#(scape)}"#, export) == 0.25)
            let running = Vigil.soundscape
            let controls = try #require(running, "no soundscape controller")
            try controls.setVolume(0.5)
            #expect(await Self.waitFor(#"vigil_soundscape_volume_ratio{\#(scape)}"#, 0.5, export) == 0.5)
            controls.pause()
            #expect(await Self.waitFor(#"vigil_soundscape_playing{\#(scape)}"#, 0, export) == 0)

            // Announcements: one spoken by espeak-ng, one refused; each by its outcome, both timed.
            try await host.announce(.say("metrics"))
            var refusal = ""
            do throws(AnnounceError) {
                try await host.announce(.file(directory.path + "/no-such-prompt.wav"))
            } catch {
                refusal = error.code.rawValue
            }
            #expect(!refusal.isEmpty, "a missing file played")
            #expect(Self.sample(#"vigil_announcements_total{outcome="played"}"#, export) == 1)
            #expect(Self.sample(#"vigil_announcements_total{outcome="\#(refusal)"}"#, export) == 1)
            #expect(Self.sample(#"vigil_announcements_total{outcome="cancelled"}"#, export) == 0)
            #expect(Self.sample("vigil_announcement_duration_seconds_count", export) == 2)
            let spoken = try #require(Self.sample("vigil_announcement_duration_seconds_sum", export))
            #expect(spoken > 0.2 && spoken < 30, "\(spoken)")

            // Every series is in the catalog, and promtool accepts the exposition.
            let text = String(decoding: export.render(), as: UTF8.self)
            for line in text.split(separator: "\n") where line.hasPrefix("# TYPE ") {
                let parts = line.split(separator: " ")
                #expect(
                    MetricsCatalog.description(named: String(parts[2]))?.kind.rawValue == String(parts[3]), "\(line)")
            }
            let input = try directory.write("exposition.prom", text)
            let lint = try await RuntimeFixtures.run(
                "/bin/sh", ["-c", "/usr/bin/promtool check metrics < \(input) 2>&1"])
            #expect(lint.status == 0, "promtool: \(lint.stdout)")
            await host.stop()
        }
    }
}
