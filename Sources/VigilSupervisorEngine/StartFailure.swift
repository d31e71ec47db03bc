/// `seconds` as a log and reason text shows it: `3 s`, `0.5 s`.
func formatSeconds(_ seconds: Double) -> String {
    seconds == seconds.rounded() ? "\(Int(seconds)) s" : "\(seconds) s"
}

/// A worker that could not be started (`worker` nil: none could, the supervisor was stopped).
struct StartFailure: Sendable {
    var worker: String?
    var reason: String

    /// `workers "a", "b": reason; worker "c": other reason` — workers with the same reason on one clause.
    static func describe(_ failures: [StartFailure]) -> String {
        var reasons: [String] = []
        var names: [String: [String]] = [:]
        for failure in failures {
            if names[failure.reason] == nil { reasons.append(failure.reason) }
            names[failure.reason, default: []] += failure.worker.map { ["\"\($0)\""] } ?? []
        }
        return reasons.map { reason in
            let workers = names[reason] ?? []
            if workers.isEmpty { return reason }
            return (workers.count == 1 ? "worker " : "workers ") + workers.joined(separator: ", ") + ": " + reason
        }.joined(separator: "; ")
    }
}
