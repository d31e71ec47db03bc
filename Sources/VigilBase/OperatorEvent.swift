/// The events an operator alerts on, each with a stable journal `MESSAGE_ID`.
///
/// The modules that log one of them add ``metadataKey`` with the event's ``rawValue`` to the log
/// call's metadata. The `vigil` CLI's journal handler sends it as `MESSAGE_ID=` ``messageID`` (and
/// `VIGIL_EVENT=`); its terminal handler leaves the key out, so the text lines are unchanged. The
/// journal catalog (`Examples/systemd/vigil.catalog`, docs/logs.md) explains each id.
///
/// An id never changes once released: alerts and `journalctl MESSAGE_ID=…` filters depend on it.
public enum OperatorEvent: String, Sendable, CaseIterable, CustomStringConvertible {
    /// A plugin failed (did not verify, failed to start, gave up after an interruption).
    case pluginFailed = "plugin-failed"
    /// A supervised worker failed for good: its start limit was hit, or its restart policy does not
    /// restart it after a failure.
    case workerGaveUp = "worker-gave-up"
    /// A supervised worker's process ended (an exit status, a signal, a missed watchdog deadline
    /// or a failed start) and the supervisor restarts it.
    case workerRestarted = "worker-restarted"
    /// The keep-alive stream's sink was suspended by another program while the stream plays.
    case sinkSuspended = "sink-suspended"
    /// A plugin was refused because its manifest is signed by another key than the trusted one.
    case keyRotationRefused = "key-rotation-refused"
    /// Sleep handling is off: the audio plugins are not stopped before system sleep.
    case sleepHandlingOff = "sleep-handling-off"

    /// The log metadata key that carries the event's ``rawValue``.
    public static let metadataKey = "vigil.event"

    /// The event's name, ``rawValue`` (the value of ``metadataKey``).
    public var description: String { rawValue }

    /// The journal's `MESSAGE_ID`: 128 bits, 32 lowercase hexadecimal digits, fixed per event.
    public var messageID: String {
        switch self {
        case .pluginFailed: "0bc1d68492ac4a90b045c10469cafd80"
        case .workerGaveUp: "b109f69c695540149bdfb8356aae1fd6"
        case .workerRestarted: "6b0d1c93acfa407f94bf8f9f385d3536"
        case .sinkSuspended: "f66869ed41264c17898bb5b395473970"
        case .keyRotationRefused: "4ebc1e5a993449c793709cc0b751149f"
        case .sleepHandlingOff: "ef37005d438e4ee38ee5c1f0248057cd"
        }
    }
}
