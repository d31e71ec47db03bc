import Synchronization
import Testing
import VigilCore
import VigilPlugin
import VigilTestSupport

@testable import Vigil
@testable import VigilHostCore

/// Sleep handling is an injected, optional component of the host core: none at all, or a
/// stand-in driven by the test (no bus, no logind), through the same loop as logind's.
@Suite("Injected sleep handling", .timeLimit(.minutes(1)))
struct InjectedSleepHandlingTests {
    /// A sleep handling the test drives: it reports what the test sends and counts releases.
    final class ScriptedSleep: SleepHandling {
        let reports: AsyncStream<SleepReport>
        let sink: AsyncStream<SleepReport>.Continuation
        let released = Mutex(0)
        let runs = Mutex(0)

        init() { (reports, sink) = AsyncStream.makeStream() }

        func run(report: @escaping @Sendable (SleepReport) async -> Void) async {
            runs.withLock { $0 += 1 }
            await report(.settled)
            for await next in reports { await report(next) }
        }
        func releaseDelayLock() { released.withLock { $0 += 1 } }
        var status: (locks: [String], off: String?) { (["delay"], nil) }
    }

    /// A host with an audio plugin (its requirement met by a real PulseAudio server) and a worker.
    static func host(_ ledger: InstanceLedger, sleep: (any SleepHandling)?, pulse: PulseAudioServer) throws
        -> VigilHost
    {
        var options = VigilHost.Options(
            publishStatus: false,
            environment: RequirementChecker.Environment(variables: ["PULSE_SERVER": pulse.address]))
        options.makeSleepHandling = { _ in sleep }
        return try VigilHost(
            plugins: [
                TestPlugins.prepared("audio", ledger: ledger, requirements: [HostRequirement(kind: .audioOutput)]),
                TestPlugins.prepared("worker", ledger: ledger),
            ],
            declarations: HostDeclarations(backgroundModes: ["audio"]), options: options,
            logger: TestPlugins.quietLogger)
    }

    @Test("without sleep handling the host runs, and its status has no sleep")
    func none() async throws {
        try await PulseAudioServer.with { pulse in
            let ledger = InstanceLedger()
            let host = try Self.host(ledger, sleep: nil, pulse: pulse)
            let status = await host.keepAlive()
            #expect(status.plugins.map(\.state) == [.running, .running])
            #expect(status.sleep == nil)
            await host.stop()
            #expect(ledger.snapshot.live == 0)
        }
    }

    @Test("a sleep coming stops the audio plugin, then releases the delay lock; the wake-up starts it again")
    func scripted() async throws {
        try await PulseAudioServer.with { pulse in
            let ledger = InstanceLedger()
            let sleep = ScriptedSleep()
            let host = try Self.host(ledger, sleep: sleep, pulse: pulse)
            let events = host.events
            let status = await host.keepAlive()
            #expect(status.sleep == SleepStatus(locks: ["delay"]))
            sleep.sink.yield(.coming)
            var iterator = events.makeAsyncIterator()
            var kinds: [HostEvent.Kind] = []
            while let event = await iterator.next() {
                kinds.append(event.kind)
                if event.plugin == "audio", case .interrupted = event.kind { break }
            }
            #expect(kinds.last == .interrupted(reason: HostStateMachine.sleepReason))
            // Released right after (the same step of the loop), once the audio plugin's run() ended.
            #expect(await RuntimeFixtures.waitUntil(timeout: 5) { sleep.released.withLock { $0 } == 1 })
            #expect(await host.status().plugins.map(\.state.name) == ["interrupted", "running"])
            sleep.sink.yield(.ended)
            while let event = await iterator.next() {
                if event.plugin == "audio", event.kind == .resumed { break }
            }
            #expect(await host.status().plugins.map(\.state) == [.running, .running])
            await host.stop()
            #expect(await host.status().sleep == nil)
            #expect(ledger.snapshot.live == 0)
            #expect(ledger.snapshot.violations.isEmpty)
            #expect(sleep.runs.withLock { $0 } == 1)
        }
    }
}
