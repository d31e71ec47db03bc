extension WorkerStatus {
    /// The worker's row for `vigil status`: `worker.NAME.FIELD` keys (state, restarts, pid,
    /// last exit, its `STATUS=` text, why it failed, faults ending in `_error`), as the supervisor
    /// plugin and `vigil run` publish them, so one table shows configured workers and `vigil run`'s
    /// command alike.
    public var details: [String: String] {
        let prefix = "worker.\(name)."
        var out: [String: String] = [:]
        out[prefix + "state"] = state.rawValue
        out[prefix + "restarts"] = String(restarts)
        if let pid { out[prefix + "pid"] = String(pid) }
        if let exit = lastExit { out[prefix + "last_exit"] = exit.description }
        if let text = statusText { out[prefix + "status"] = text }
        if let reason, state == .failed || state == .backingOff { out[prefix + "reason"] = reason }
        if flooding { out[prefix + "flooding"] = "true" }
        if let stop = suspended { out[prefix + "stopped_error"] = "\(name) \(stop)" }
        if let problem = cgroupProblem { out[prefix + "cgroup_error"] = problem }
        return out
    }
}
