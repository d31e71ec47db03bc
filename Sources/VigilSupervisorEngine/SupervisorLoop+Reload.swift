import Logging
import VigilBase

#if canImport(Glibc)
import Glibc
#endif

/// A reload's new worker list on the supervisor's loop: only what changed stops or starts.
extension SupervisorLoop {
    /// Applies `specs` (already validated: unique names) by worker name. An unchanged worker is
    /// left alone (same process, same restart history); a changed one is stopped as a stop
    /// does (its signal, then SIGKILL after the stop grace) and started from its new spec once
    /// reaped; a removed one is stopped and forgotten once reaped; an added one starts now.
    /// Returns the workers that could not be started now.
    func reconfigure(_ specs: [WorkerSpec]) -> [StartFailure] {
        let now = clock.seconds()
        var failures: [StartFailure] = []
        let wanted = Dictionary(specs.map { ($0.name, $0) }) { first, _ in first }
        var next: [WorkerRuntime] = []
        var used = Set(workers.map(\.index))
        for spec in specs {
            if let worker = workers.first(where: { $0.spec.name == spec.name }) {
                // Also one a previous reload removed that is still stopping: it is wanted again.
                worker.retiring = false
                let target = worker.replacement ?? worker.spec
                if target != spec {
                    worker.replacement = spec
                    if worker.alive {
                        stopForReload(worker, now: now)
                    } else if let failure = replace(worker, now: now) {
                        failures.append(failure)
                    }
                }
                next.append(worker)
            } else {
                // The lowest index no worker uses: its notify socket path and cgroup are free.
                let index = (0...).first { !used.contains($0) }!
                used.insert(index)
                let worker = WorkerRuntime(
                    index: index, spec: spec, notifyPath: "\(runtimeDirectory)/\(index).notify",
                    configuration: configuration)
                if let failure = add(worker, now: now) { failures.append(failure) }
                next.append(worker)
            }
        }
        for worker in workers where wanted[worker.spec.name] == nil {
            worker.retiring = true
            worker.replacement = nil
            if worker.alive {
                stopForReload(worker, now: now)
                next.append(worker)
            } else {
                forget(worker)
            }
        }
        workers = next
        return failures
    }

    /// Stops `worker` for a reload, as a stop does: its signal to the group, SIGKILL after the grace.
    private func stopForReload(_ worker: WorkerRuntime, now: Double) {
        worker.stopRequested = true
        worker.restartAt = nil
        if worker.killAt == nil { worker.killAt = now + configuration.stopGrace.seconds }
        worker.state = .stopping
        signalGroup(worker, SIGTERM)
        signalGroup(worker, SIGCONT)
        logger.info(
            worker.retiring ? "worker removed by a reload; stopping it" : "worker changed by a reload; restarting it",
            metadata: ["worker.name": "\(worker.spec.name)", "process.pid": "\(worker.pid ?? 0)"])
    }

    /// After a stopped worker was reaped: a removed one goes, a changed one starts from its new spec.
    func retireOrReplace(_ worker: WorkerRuntime) {
        if worker.retiring {
            forget(worker)
            workers.removeAll { $0 === worker }
        } else if worker.replacement != nil {
            if let failure = replace(worker, now: clock.seconds()) {
                logger.error("worker could not be restarted with its new settings: \(failure.reason)")
            }
        }
    }

    /// Starts `worker` again from its replacement spec, with a fresh restart history.
    private func replace(_ worker: WorkerRuntime, now: Double) -> StartFailure? {
        guard let spec = worker.replacement else { return nil }
        worker.replacement = nil
        worker.spec = spec
        worker.policy = RestartPolicy(restart: spec.restart, configuration: configuration)
        worker.history = RestartPolicy.History()
        worker.restarts = 0
        worker.lastExit = nil
        worker.reason = nil
        worker.stopRequested = false
        worker.restartAt = nil
        return start(worker, now: now)
    }

    /// A worker a reload added: its notify socket, its cgroup, its process.
    private func add(_ worker: WorkerRuntime, now: Double) -> StartFailure? {
        do {
            try openNotifySocket(worker)
        } catch {
            let reason = (error as? SupervisorError)?.message ?? "\(error)"
            return fail(worker, reason)
        }
        if let cgroups, let problem = cgroups.addWorker(worker.index) { degrade(worker, problem) }
        return start(worker, now: now)
    }

    private func start(_ worker: WorkerRuntime, now: Double) -> StartFailure? {
        _ = worker.policy.mayStart(at: now, history: &worker.history)
        guard let failure = spawn(worker) else { return nil }
        worker.lastExit = .spawnFailed(failure.reason)
        return fail(worker, failure.reason)
    }

    private func fail(_ worker: WorkerRuntime, _ reason: String) -> StartFailure {
        worker.state = .failed
        worker.reason = reason
        logger.error(
            "worker could not be started",
            metadata: [
                "worker.name": "\(worker.spec.name)", "worker.reason": "\(reason)",
                OperatorEvent.metadataKey: "\(OperatorEvent.workerGaveUp)",
            ])
        emit(.failed(reason), worker)
        return StartFailure(worker: worker.spec.name, reason: reason)
    }

    /// Drops a worker that no longer runs: its notify socket goes (its cgroup stays for reuse).
    private func forget(_ worker: WorkerRuntime) {
        closeNotifySocket(worker)
        worker.restartAt = nil
        worker.statusEventAt = nil
    }
}
