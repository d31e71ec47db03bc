import Glibc
import Synchronization
import VigilPluginSDK

/// An example third-party keep-alive plugin, written in Swift against VigilPluginSDK and shipped
/// as a shared library: while running it rewrites a heartbeat file every `interval_ms`
/// milliseconds ("beat N"), so anyone can watch that the host is alive. A failed write is reported
/// as an interruption, the next good one as resumed.
final class HeartbeatPlugin: NativeKeepAlive {
    private let file: String
    /// The state directory, when `file` is the default inside it.
    private let defaultDirectory: String?
    private let intervalMilliseconds: Int
    private let events: NativePluginEvents
    private let shared = Mutex(Shared())
    private var thread: pthread_t?

    private struct Shared {
        var stopping = false
        var beats = 0
        var failing = false
    }

    init(context: NativePluginContext) throws {
        file = context.settings["file"] ?? context.stateDirectory + "/heartbeat"
        defaultDirectory = context.settings["file"] == nil ? context.stateDirectory : nil
        guard file.hasPrefix("/") else {
            throw HeartbeatError(
                "the \"file\" setting must be an absolute path, not \"\(file)\" — fix it in vigil.toml")
        }
        let text = context.settings["interval_ms"] ?? "1000"
        guard let interval = Int(text), (100...3_600_000).contains(interval) else {
            throw HeartbeatError("the \"interval_ms\" setting must be a whole number from 100 to 3600000, not \(text)")
        }
        intervalMilliseconds = interval
        events = context.events
        context.log(.info, "heartbeat to \(file) every \(interval) ms")
    }

    func start() throws {
        if let directory = defaultDirectory {
            // The default lives in the plugin's state directory, created (0700) on first use.
            var path = ""
            for component in directory.split(separator: "/") {
                path += "/" + component
                if mkdir(path, 0o700) != 0 && errno != EEXIST {
                    let reason = String(cString: strerror(errno))
                    throw HeartbeatError("cannot create \(path): \(reason) — check the state directory's permissions")
                }
            }
        }
        guard beat() else {
            throw HeartbeatError(
                "cannot write \(file): \(String(cString: strerror(errno))) — check the path and its permissions")
        }
        shared.withLock { $0.stopping = false }
        let box = Unmanaged.passRetained(self)
        var handle = pthread_t()
        let result = pthread_create(
            &handle, nil,
            { raw in
                let plugin = Unmanaged<HeartbeatPlugin>.fromOpaque(raw!).takeRetainedValue()
                plugin.run()
                return nil
            }, box.toOpaque())
        guard result == 0 else {
            box.release()
            throw HeartbeatError("cannot start the heartbeat thread: \(String(cString: strerror(result)))")
        }
        thread = handle
    }

    func stop() {
        shared.withLock { $0.stopping = true }
        if let thread { pthread_join(thread, nil) }
        thread = nil
    }

    func details() -> [String: String] {
        let beats = shared.withLock { $0.beats }
        return ["file": file, "interval_ms": String(intervalMilliseconds), "beats": String(beats)]
    }

    /// The heartbeat thread: sleeps in short steps so stop() returns promptly.
    private func run() {
        var waited = 0
        while !shared.withLock({ $0.stopping }) {
            usleep(50_000)
            waited += 50
            guard waited >= intervalMilliseconds else { continue }
            waited = 0
            let ok = beat()
            let change = shared.withLock { s -> Bool? in
                defer { s.failing = !ok }
                return s.failing == ok ? ok : nil
            }
            if change == true { events.resumed() }
            if change == false {
                events.interrupted(reason: "cannot write \(file): \(String(cString: strerror(errno)))")
            }
        }
    }

    /// Writes "beat N" to the file; false on failure.
    private func beat() -> Bool {
        let n = shared.withLock { s -> Int in
            s.beats += 1
            return s.beats
        }
        let fd = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0o644)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        let line = Array("beat \(n)\n".utf8)
        return line.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) } == line.count
    }
}

/// A setting or start-up problem, shown as the plugin's failure.
struct HeartbeatError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// The one entry point the SDK needs: registers the plugin under its manifest name.
@_cdecl("vigil_swift_plugin")
public func vigilSwiftPlugin() {
    NativePlugin.export(id: "heartbeat-example", HeartbeatPlugin.self)
}

/// The Vigil note (`.note.vigil`): the plugin id and ABI, checked by the host from the verified bytes
/// before anything of this library is mapped. `vigil plugin verify` prints this declaration for a
/// plugin without one (it is the note `VIGIL_PLUGIN_NOTE("heartbeat-example")` emits in C).
@section(".note.vigil") @used
let vigilPluginNote: (UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32) = (
    0x6, 0x18, 0x1, 0x69676956, 0x6c, 0x1, 0x72616568, 0x61656274, 0x78652d74, 0x6c706d61, 0x65
)
