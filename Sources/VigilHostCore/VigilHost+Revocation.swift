import Logging
import VigilBase
import VigilCore
import VigilPlugin

#if canImport(Glibc)
import Glibc
#endif

/// Revocation while the host runs: a plugin whose publisher revokes its key, its manifest or its
/// version is stopped with a ``HostEvent/Kind/revoked(_:)`` event — the only case where trust
/// data stops something already running (an expired signature or a clock set back never does).
///
/// The host learns of a new list in two ways: ``reevaluateRevocations()`` (a reload calls it),
/// and, while the host runs as a `Service`, an inotify watch on each plugin directory (a list
/// written or moved into place as `revocations.json`) through a ``PollLoop`` that sleeps in
/// `poll(2)` without a timeout — no wakeup while nothing changes.
extension VigilHost {
    /// A verified plugin to re-check: its index and what it was loaded from.
    struct RevocationTarget: Sendable {
        var index: Int
        var plugin: LoadedPlugin
    }

    /// What re-checking found: the plugins now revoked, and lists that could not be applied.
    struct RevocationFindings: Sendable {
        var revoked: [(index: Int, failure: PluginFailure)] = []
        var problems: [CoreError] = []
    }

    /// Reads every verified plugin's revocation list again (verified by a threshold of its keys,
    /// never older than the one this host applied; a newer one is recorded) and stops each plugin
    /// it now revokes: the plugin shows `failed` with the code `revoked`, subscribers get a
    /// `revoked` event, and it does not start again in this host.
    ///
    /// A list that does not verify, is malformed or goes back revokes nothing: it is logged and
    /// the plugins keep running.
    ///
    /// - Returns: the names of the plugins revoked by this call.
    @discardableResult
    public func reevaluateRevocations() async -> [String] {
        let targets = revocationTargets()
        guard !targets.isEmpty else { return [] }
        let environment = options.environment
        // File reads and signature checks run on a thread of ours, not on the cooperative pool.
        let thread = DedicatedThread(name: "vigil-revoke")
        defer { thread.close() }
        let findings = await thread.run { Self.findRevocations(targets, environment: environment) } ?? .init()
        return await apply(findings)
    }

    /// The verified plugins not revoked yet.
    func revocationTargets() -> [RevocationTarget] {
        slots.indices.compactMap { index in
            guard let plugin = slots[index].loaded, machine.plugins[index].unavailable == nil else { return nil }
            return RevocationTarget(index: index, plugin: plugin)
        }
    }

    /// Logs the problems and feeds each revocation to the state machine (through the running
    /// loop, or directly when none runs: nothing is live then).
    private func apply(_ findings: RevocationFindings) async -> [String] {
        for problem in findings.problems {
            logger.warning(
                "[\(problem.plugin ?? "?")] its new revocation list was not applied; it keeps running: \(problem.message)",
                metadata: ["plugin.name": "\(problem.plugin ?? "?")"])
        }
        var names: [String] = []
        for (index, failure) in findings.revoked where machine.plugins[index].unavailable == nil {
            names.append(slots[index].name)
            if let inbox {
                inbox.send(.machine(.revoked(plugin: index, failure)))
            } else {
                _ = await handle(.machine(.revoked(plugin: index, failure)))
            }
        }
        return names
    }

    /// Re-checks `targets` against their revocation lists (blocking file reads: call it on a
    /// thread of ours).
    nonisolated static func findRevocations(
        _ targets: [RevocationTarget], environment: HostEnvironment
    ) -> RevocationFindings {
        var findings = RevocationFindings()
        let rollback: RollbackStore?
        do throws(CoreError) {
            rollback = try RollbackStore.standard(environment: environment)
        } catch {
            findings.problems.append(error)
            return findings
        }
        for target in targets {
            do throws(CoreError) {
                if let refusal = try PluginLoader.revocation(of: target.plugin, rollback: rollback) {
                    findings.revoked.append(
                        (target.index, PluginFailure(refusal, plugin: target.plugin.manifest.name)))
                }
            } catch {
                findings.problems.append(error)
            }
        }
        return findings
    }

    /// The `Service`'s watch: until cancelled, re-checks the plugins whenever a file named
    /// `revocations.json` (or one of its signatures) is written or moved into a plugin directory.
    /// Without inotify it only logs why and waits for cancellation (reloads still re-check).
    func watchRevocations(_ inbox: HostInbox) async {
        let targets = revocationTargets()
        guard !targets.isEmpty else { return await Self.untilCancelled() }
        let environment = options.environment
        let logger = self.logger
        let watch: RevocationWatch
        do throws(SystemCallError) {
            watch = try RevocationWatch(directories: Set(targets.map(\.plugin.directory)).sorted()) {
                // On the watch's thread: read the lists there, then let the host apply them.
                let findings = Self.findRevocations(targets, environment: environment)
                inbox.send(.revocations(findings))
            }
        } catch {
            logger.warning(
                "revocation lists are not watched (\(error)); a new list applies at the next reload or start")
            return await Self.untilCancelled()
        }
        watchingRevocations = true
        await withTaskCancellationHandler {
            await watch.loop.closed()
        } onCancel: {
            watch.loop.close()
        }
        watchingRevocations = false
    }

    /// Applies what the watch found (from the host's loop).
    func applyWatched(_ findings: RevocationFindings) async {
        _ = await apply(findings)
    }

    private nonisolated static func untilCancelled() async {
        let (stream, continuation) = AsyncStream.makeStream(of: Void.self)
        await withTaskCancellationHandler {
            for await _ in stream {}
        } onCancel: {
            continuation.finish()
        }
    }
}

/// An inotify descriptor on the plugin directories, served by its own ``PollLoop``: `changed`
/// runs on the loop's thread after a batch of events that touched a revocation list.
final class RevocationWatch: Sendable {
    let loop: PollLoop

    init(directories: [String], changed: @escaping @Sendable () -> Void) throws(SystemCallError) {
        let inotify = try OwnedDescriptor("inotify_init1") { inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC)) }
        let mask = UInt32(IN_CLOSE_WRITE | IN_MOVED_TO)
        for directory in directories {
            _ = try SystemCallError.check("inotify_add_watch") {
                inotify_add_watch(inotify.rawValue, directory, mask)
            }
        }
        loop = try PollLoop(name: "vigil-revwatch")
        // Registered before the loop starts (then it belongs to the loop's thread).
        loop.add(inotify, events: PollLoop.readable) { _, ready in
            if Self.drain(ready.descriptor) { changed() }
        }
        loop.start()
    }

    /// Reads every queued event; true when one named a revocation list or its signatures (or the
    /// kernel's queue overflowed).
    static func drain(_ fd: Int32) -> Bool {
        var touched = false
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            guard count > 0 else { return touched }
            var offset = 0
            // struct inotify_event: wd, mask, cookie, len (4 bytes each), then len bytes of name.
            while offset + 16 <= count {
                let (mask, length) = buffer.withUnsafeBytes {
                    (
                        $0.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self),
                        Int($0.loadUnaligned(fromByteOffset: offset + 12, as: UInt32.self))
                    )
                }
                let name = buffer[(offset + 16)..<min(offset + 16 + length, count)].prefix { $0 != 0 }
                // A full queue lost events: re-check, as if a list had changed.
                if mask & UInt32(IN_Q_OVERFLOW) != 0
                    || String(decoding: name, as: UTF8.self).hasPrefix(RevocationList.fileName)
                {
                    touched = true
                }
                offset += 16 + length
            }
        }
    }
}
