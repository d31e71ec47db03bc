/// One sd_notify datagram: newline-separated `KEY=VALUE` assignments (sd_notify(3)).
package struct NotifyMessage: Equatable {
    var ready = false
    var stopping = false
    var reloading = false
    var status: String?
    var watchdogPing = false
    var watchdogTrigger = false
    var watchdogUsec: UInt64?
    var extendTimeoutUsec: UInt64?
    var mainPID: Int32?
    var errnoValue: Int32?

    /// Parses `payload`; unknown keys and malformed lines are ignored, as systemd does.
    package init(_ payload: String) {
        for line in payload.split(separator: "\n", omittingEmptySubsequences: true) {
            guard let eq = line.firstIndex(of: "=") else { continue }
            let key = line[..<eq]
            let value = String(line[line.index(after: eq)...])
            switch key {
            case "READY": ready = value == "1"
            case "STOPPING": stopping = value == "1"
            case "RELOADING": reloading = value == "1"
            case "STATUS": status = value
            case "WATCHDOG":
                if value == "1" { watchdogPing = true } else if value == "trigger" { watchdogTrigger = true }
            case "WATCHDOG_USEC": watchdogUsec = UInt64(value)
            case "EXTEND_TIMEOUT_USEC": extendTimeoutUsec = UInt64(value)
            case "MAINPID": mainPID = Int32(value)
            case "ERRNO": errnoValue = Int32(value)
            default: continue
            }
        }
    }
}
