internal import CVigilSpawn
import Logging
import VigilBase

#if canImport(Glibc)
import Glibc
#endif

/// The workers' lifecycle on the supervisor's loop: spawning, exits, restarts, stops.
extension SupervisorLoop {
    // MARK: - Spawning

    /// Starts `worker`'s process; returns the reason on failure.
    func spawn(_ worker: WorkerRuntime) -> SpawnFailure? {
        let now = clock.seconds()
        let started: WorkerSpawner.Started
        var result: Result<WorkerSpawner.Started, SpawnFailure>
        if let cgroups, worker.cgroupProblem == nil {
            switch cgroups.withDescriptors(
                worker: worker.index,
                { directory, procs in
                    spawner.spawn(
                        worker.spec, notifyPath: worker.notifyPath, cgroupDirectoryFD: directory, cgroupProcsFD: procs)
                })
            {
            case .success(let spawned): result = spawned
            case .failure(let failure) where failure.cgroupFault:
                result = .failure(SpawnFailure(cgroupStage: true, failure.reason))
            case .failure(let failure):
                return SpawnFailure("cannot start it: \(failure.reason) — raise the host's descriptor limit")
            }
            if case .failure(let failure) = result, failure.cgroupStage {
                // This worker's cgroup refused it (controllers enabled, a policy, removed): this
                // worker does without, the others keep theirs — and the tree's sentinel.
                degrade(worker, failure.reason)
                result = spawner.spawn(worker.spec, notifyPath: worker.notifyPath)
            }
        } else {
            result = spawner.spawn(worker.spec, notifyPath: worker.notifyPath)
        }
        switch result {
        case .success(let s): started = s
        case .failure(let failure): return failure
        }
        worker.pid = started.pid
        worker.pidfd = started.pidfd
        worker.startedAt = now
        worker.watchdogFired = false
        worker.killAt = nil
        worker.statusText = nil
        worker.state = worker.spec.readiness == .notify ? .starting : .running
        worker.watchdogInterval = worker.spec.watchdogSeconds
        worker.watchdogDeadline = worker.watchdogInterval.map { now + $0 }
        worker.pidToken = loop.add(OwnedDescriptor(adopting: started.pidfd), events: PollLoop.readable) {
            [self] _, _ in exited.append(worker)
        }
        logger.debug(
            "worker started",
            metadata: [
                "worker.name": "\(worker.spec.name)", "process.pid": "\(started.pid)", "worker.path": "\(started.path)",
            ])
        emit(.started, worker)
        return nil
    }

    /// Marks `worker` as running without its cgroup from now on, and says so once.
    func degrade(_ worker: WorkerRuntime, _ reason: String) {
        worker.cgroupProblem =
            "\(reason); it runs without its cgroup: processes it starts are cleaned up by process group only"
        logger.warning(
            "worker cannot be placed in its cgroup; the other workers keep theirs",
            metadata: ["worker.name": "\(worker.spec.name)", "error": "\(worker.cgroupProblem!)"])
        emit(.statusChanged, worker)
    }

    // MARK: - Exits and restarts

    func handleExit(_ worker: WorkerRuntime) {
        guard worker.alive else { return }
        var code: Int32 = 0
        var status: Int32 = 0
        let reaped = vigil_reap(worker.pidfd, &code, &status)
        if reaped == 0 { return }
        if reaped < 0 {
            logger.error("waitid failed", metadata: ["error": "\(SystemCallError("waitid", errno: reaped))"])
        }
        let pgid = worker.pid ?? 0
        if let token = worker.pidToken { loop.remove(token) }  // closes the pidfd
        worker.pidToken = nil
        worker.pidfd = -1
        worker.pid = nil
        // Whatever the worker left in its process group — and in its cgroup, at any depth — goes with it.
        if pgid > 0 { kill(-pgid, SIGKILL) }
        cgroups?.kill(worker: worker.index)
        worker.killAt = nil
        worker.watchdogDeadline = nil
        worker.suspended = nil

        let exit: WorkerExit =
            switch Int(code) {
            case Int(CLD_EXITED): .exited(status)
            case Int(CLD_DUMPED): .signaled(status, coreDumped: true)
            default: .signaled(status, coreDumped: false)
            }
        worker.lastExit = exit
        worker.lastPID = pgid
        logger.debug(
            "worker exited",
            metadata: ["worker.name": "\(worker.spec.name)", "process.pid": "\(pgid)", "worker.exit": "\(exit)"])
        afterEnd(worker, exit: exit)
    }

    func afterEnd(_ worker: WorkerRuntime, exit: WorkerExit) {
        let now = clock.seconds()
        if worker.stopRequested {
            worker.state = .stopped
            emit(.stopped, worker)
            // A reload stopped it: it goes, or starts again from its new spec.
            retireOrReplace(worker)
            return
        }
        let decision = worker.policy.afterExit(
            exit, watchdogFired: worker.watchdogFired, ranFor: now - worker.startedAt, history: &worker.history)
        switch decision {
        case .stop(let failed):
            if failed {
                worker.state = .failed
                worker.reason = "\(exit) (restart = \(worker.spec.restart.rawValue))"
                // An exit under restart = never is the worker's own end, said by whoever shows it.
                var metadata: Logger.Metadata = [
                    "worker.name": "\(worker.spec.name)", "worker.reason": "\(worker.reason!)",
                ]
                if worker.spec.restart != .never {
                    metadata[OperatorEvent.metadataKey] = "\(OperatorEvent.workerGaveUp)"
                }
                logger.log(level: worker.spec.restart == .never ? .info : .error, "worker failed", metadata: metadata)
                emit(.failed(worker.reason!), worker)
            } else {
                worker.state = .stopped
                worker.reason = "\(exit)"
                emit(.stopped, worker)
            }
        case .restart(let delay):
            worker.state = .backingOff
            worker.reason = worker.watchdogFired ? "watchdog timeout" : "\(exit)"
            logRestart(worker, exit: exit, delay: delay)
            emit(.crashed(exit, restartIn: .nanoseconds(Int64(delay * 1e9))), worker)
            if delay <= 0 {
                restart(worker, now: now)
            } else {
                worker.restartAt = now + delay
            }
        }
    }

    /// One entry per restart decided after a process ended (docs/logs.md, `worker-restarted`): how
    /// it ended, why it is restarted (the metric's reason) and in how long. A start limit hit when
    /// the restart is due is its own `worker-gave-up` entry.
    func logRestart(_ worker: WorkerRuntime, exit: WorkerExit, delay: Double) {
        var metadata: Logger.Metadata = [
            OperatorEvent.metadataKey: "\(OperatorEvent.workerRestarted)",
            "worker.name": "\(worker.spec.name)",
            "worker.exit": "\(exit)",
            "worker.exit_code": "\(exit.shellStatus)",
            "worker.restart_reason": "\(exit.restartReason(watchdogFired: worker.watchdogFired))",
            "worker.restart_delay_ms": "\(Int((delay * 1000).rounded()))",
        ]
        if case .signaled(let signal, _) = exit { metadata["worker.signal"] = "\(signalName(signal))" }
        if let pid = worker.lastPID { metadata["process.pid"] = "\(pid)" }
        logger.warning("worker \(worker.spec.name) \(worker.reason ?? "\(exit)"); restarting", metadata: metadata)
    }

    func restart(_ worker: WorkerRuntime, now: Double) {
        if case .limitHit(let starts) = worker.policy.mayStart(at: now, history: &worker.history) {
            worker.state = .failed
            worker.reason =
                "start limit hit: \(starts) starts within \(formatSeconds(worker.policy.startLimitInterval)); "
                + "last run \(worker.lastExit.map(String.init(describing:)) ?? "unknown")"
            logger.error(
                "worker failed: start limit hit",
                metadata: [
                    "worker.name": "\(worker.spec.name)", "worker.reason": "\(worker.reason!)",
                    OperatorEvent.metadataKey: "\(OperatorEvent.workerGaveUp)",
                ])
            emit(.failed(worker.reason!), worker)
            return
        }
        worker.restarts += 1
        if let failure = spawn(worker) {
            logger.warning(
                "worker restart failed", metadata: ["worker.name": "\(worker.spec.name)", "error": "\(failure.reason)"])
            worker.lastExit = .spawnFailed(failure.reason)
            afterEnd(worker, exit: .spawnFailed(failure.reason))
        }
    }

    /// Looks for workers stopped (or continued) since the last look, and says what a stop by the
    /// terminal means: a worker waiting silently for input it cannot get would look alive.
    func checkStops() {
        for worker in workers where worker.alive {
            var signal: Int32 = 0
            guard vigil_stop_state(worker.pidfd, &signal) == 1 else { continue }
            let before = worker.suspended
            worker.suspended = signal == 0 ? nil : Self.stopDescription(signal)
            guard worker.suspended != before else { continue }
            if let text = worker.suspended {
                logger.warning("worker \(worker.spec.name) \(text)", metadata: ["worker.name": "\(worker.spec.name)"])
            } else {
                logger.notice("worker \(worker.spec.name) continues", metadata: ["worker.name": "\(worker.spec.name)"])
            }
            emit(.statusChanged, worker)
        }
    }

    static func stopDescription(_ signal: Int32) -> String {
        switch signal {
        case SIGTTIN:
            "is stopped by SIGTTIN: it tried to read the terminal, which belongs to the shell, not to it — "
                + "give it its input another way (redirect its standard input, e.g. < /dev/null or < FILE); "
                + "Ctrl-C or SIGTERM stops it"
        case SIGTTOU:
            "is stopped by SIGTTOU: it tried to set up (or, with `stty tostop`, write to) the terminal, which "
                + "belongs to the shell, not to it — redirect its input and output away from the terminal; "
                + "Ctrl-C or SIGTERM stops it"
        default:
            "is stopped by \(signalName(signal)); send it SIGCONT (kill -CONT PID) to let it run again"
        }
    }

    func signalGroup(_ worker: WorkerRuntime, _ signal: Int32) {
        guard let pid = worker.pid else { return }
        kill(-pid, signal)
        _ = vigil_pidfd_signal(worker.pidfd, signal)
    }
}
