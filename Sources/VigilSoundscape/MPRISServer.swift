import FoundationEssentials
import Logging
import Synchronization
import VigilDBus

#if canImport(Glibc)
import Glibc
#endif

/// The soundscape as an MPRIS 2.2 player on the session bus: `org.mpris.MediaPlayer2.vigil.HOST`
/// (`.instancePID` when that name is taken), object `/org/mpris/MediaPlayer2`, both interfaces
/// with every mandatory property in its specified type.
///
/// Soundscapes are the tracks: Next/Previous cycle them, `mpris:trackid` is an object path
/// under `/org/vigil/soundscape/track/` (outside the reserved `/org/mpris`), `xesam:title` is the
/// soundscape's title, `xesam:artist` the host's name. Volume maps to the plugin's volume.
/// Pause and Stop silence the soundscape but keep the stream, so the keep-alive holds.
///
/// The player lives beside the keep-alive, never in its path: ``run()`` is a child of the
/// plugin's `run()`; a ``DBusKeeper`` connects (within its deadline), publishes, and after the
/// session bus restarts (or when it did not answer) says so once and publishes again, with
/// backoff. PropertiesChanged goes out from a second child, to whichever connection is current.
final class MPRISServer: Sendable {
    /// Where the player stands, for `vigil status`.
    enum Publication: Sendable, Equatable {
        /// The first attempt has not ended yet.
        case connecting
        /// Published under this bus name.
        case published(String)
        /// Not on the bus: why, and whether it is tried again.
        case off(reason: String, retrying: Bool)
    }

    private let publication = Mutex<Publication>(.connecting)
    /// The current connection's bus name and exported object.
    private let session = Mutex<(name: String, object: DBusExportedObject)?>(nil)
    private let controller: SoundscapeController
    private let hostName: String
    private let logger: Logger
    private let onChange: @Sendable () -> Void
    private let keeper: DBusKeeper

    static let objectPath = "/org/mpris/MediaPlayer2"
    static let rootInterface = "org.mpris.MediaPlayer2"
    static let playerInterface = "org.mpris.MediaPlayer2.Player"

    /// A player for `controller` on the session bus named by `environment`; `onChange` runs
    /// whenever ``current`` changes. `keeper` sets the deadline, backoff and clock.
    init(
        controller: SoundscapeController, hostName: String, environment: [String: String], logger: Logger,
        onChange: @escaping @Sendable () -> Void, keeper: DBusKeeper? = nil
    ) {
        self.controller = controller
        self.hostName = hostName
        self.logger = logger
        self.onChange = onChange
        self.keeper = keeper ?? DBusKeeper(bus: .session, environment: environment)
    }

    /// The bus name while published.
    var busName: String? {
        if case .published(let name) = current { name } else { nil }
    }

    /// Where the player stands now.
    var current: Publication { publication.withLock { $0 } }

    /// Keeps the player on the bus until cancelled; then gives the name back and closes the
    /// connection.
    func run() async {
        let interfaces = Self.interfaces(controller: controller, hostName: hostName)
        let (logger, onChange, hostName) = (self.logger, self.onChange, self.hostName)
        await withTaskGroup(of: Void.self) { group in
            group.addTask { [keeper] in
                await keeper.run(
                    logger: logger,
                    report: { event in
                        switch event {
                        case .up(let again):
                            let name = self.session.withLock { $0?.name } ?? ""
                            self.publication.withLock { $0 = .published(name) }
                            if again {
                                logger.notice(
                                    "MPRIS player back on the session bus", metadata: ["dbus.name": "\(name)"])
                            } else {
                                logger.info("MPRIS player on the session bus", metadata: ["dbus.name": "\(name)"])
                            }
                        case .down(let reason, let retrying):
                            self.publication.withLock { $0 = .off(reason: reason, retrying: retrying) }
                            if retrying {
                                logger.warning("No MPRIS player: \(reason); trying again with backoff")
                            } else {
                                logger.info("No MPRIS player: \(reason)")
                            }
                        }
                        onChange()
                    },
                    session: { connection throws(DBusError) in
                        let published = try await Self.publish(
                            on: connection, interfaces: interfaces, hostName: hostName)
                        self.session.withLock { $0 = published }
                    },
                    withdraw: { connection in
                        guard let session = self.session.withLock({ $0.take() }) else { return }
                        if connection.isConnected {
                            _ = try? await connection.releaseName(session.name, timeout: .seconds(2))
                        }
                    })
            }
            group.addTask {
                await self.sendChanges()
            }
            await group.next()
            group.cancelAll()
        }
    }

    /// Exports the player on `connection` and takes its name (`.instancePID` when the plain one
    /// is taken); returns the name and the exported object.
    private static func publish(on connection: DBusConnection, interfaces: [DBusInterface], hostName: String)
        async throws(DBusError) -> (String, DBusExportedObject)
    {
        let object = try await connection.export(path: objectPath, interfaces: interfaces)
        let base = "org.mpris.MediaPlayer2.vigil." + nameElement(for: hostName)
        if try await connection.requestName(base) == .primaryOwner { return (base, object) }
        let name = base + ".instance\(getpid())"
        guard try await connection.requestName(name).owns else {
            throw DBusError(code: .nameNotAcquired, message: "both \(base) and \(name) are taken")
        }
        return (name, object)
    }

    /// Sends PropertiesChanged from the current session's object for every change of the
    /// controller's state, until cancelled (or the controller finishes).
    private func sendChanges() async {
        var last: SoundscapeState?
        for await state in controller.changes() {
            defer { last = state }
            guard let last, let object = session.withLock({ $0?.object }) else { continue }
            var changed: [String] = []
            if last.playback != state.playback || last.interrupted != state.interrupted || last.asleep != state.asleep {
                changed.append("PlaybackStatus")
            }
            if last.soundscape != state.soundscape { changed.append("Metadata") }
            if last.volume != state.volume { changed.append("Volume") }
            if !changed.isEmpty { try? await object.propertiesChanged(interface: Self.playerInterface, changed) }
        }
    }

    /// The bus-name element for `host`: letters, digits, `_` and `-` kept, anything else `_`,
    /// `_` in front of a leading digit (a D-Bus name element must not start with one).
    static func nameElement(for host: String) -> String {
        var element = String(
            host.unicodeScalars.prefix(64).map { scalar -> Character in
                ("0"..."9").contains(scalar) || ("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar)
                    || scalar == "_" || scalar == "-"
                    ? Character(scalar) : "_"
            })
        if element.isEmpty { element = "host" }
        if let first = element.unicodeScalars.first, ("0"..."9").contains(first) {
            element = "_" + element
        }
        return element
    }

    /// The track id of soundscape `id`.
    static func trackID(_ id: String) -> String {
        "/org/vigil/soundscape/track/" + id.replacing("-", with: "_")
    }
    private static func interfaces(controller: SoundscapeController, hostName: String) -> [DBusInterface] {
        let root = DBusInterface(
            name: rootInterface,
            methods: [
                // CanRaise and CanQuit are false: both have no effect, as the spec asks.
                DBusMethod("Raise") { _ throws(DBusError) in [] },
                DBusMethod("Quit") { _ throws(DBusError) in [] },
            ],
            properties: [
                DBusProperty("CanQuit", signature: "b", changeSignal: .const, get: { .bool(false) }),
                DBusProperty("CanRaise", signature: "b", changeSignal: .const, get: { .bool(false) }),
                DBusProperty("HasTrackList", signature: "b", changeSignal: .const, get: { .bool(false) }),
                DBusProperty(
                    "Identity", signature: "s", changeSignal: .const, get: { .string("\(hostName) soundscape") }),
                DBusProperty("SupportedUriSchemes", signature: "as", changeSignal: .const, get: { .stringArray([]) }),
                DBusProperty("SupportedMimeTypes", signature: "as", changeSignal: .const, get: { .stringArray([]) }),
            ])

        @Sendable func refuse(_ error: SoundscapeError) -> DBusError {
            DBusError.refusal(DBusErrorName.failed, error.message)
        }
        /// A method without arguments or results that runs `action`; a refusal goes back as an error.
        func method(_ name: String, _ action: @escaping @Sendable () throws(SoundscapeError) -> Void) -> DBusMethod {
            DBusMethod(name) { _ throws(DBusError) in
                do throws(SoundscapeError) { try action() } catch { throw refuse(error) }
                return []
            }
        }
        let player = DBusInterface(
            name: playerInterface,
            methods: [
                method("Next") { () throws(SoundscapeError) in try controller.skip(1) },
                method("Previous") { () throws(SoundscapeError) in try controller.skip(-1) },
                method("Pause") { controller.pause() },
                method("PlayPause") { controller.playPause() },
                method("Stop") { controller.stop() },
                method("Play") { controller.play() },
                // CanSeek is false: Seek and SetPosition have no effect.
                DBusMethod("Seek", inputs: [DBusArgument("Offset", "x")]) { _ throws(DBusError) in [] },
                DBusMethod("SetPosition", inputs: [DBusArgument("TrackId", "o"), DBusArgument("Position", "x")]) {
                    _ throws(DBusError) in []
                },
                DBusMethod("OpenUri", inputs: [DBusArgument("Uri", "s")]) { _ throws(DBusError) in
                    throw DBusError.refusal(
                        DBusErrorName.notSupported, "this player opens no URIs (SupportedUriSchemes is empty)")
                },
            ],
            properties: [
                DBusProperty("PlaybackStatus", signature: "s") {
                    let state = controller.current
                    return .string(state.interrupted && state.playback == .playing ? "Paused" : state.playback.rawValue)
                },
                DBusProperty(
                    "Rate", signature: "d", get: { .double(1) },
                    set: { value throws(DBusError) in
                        guard value.double == 1 else {
                            throw DBusError.refusal(DBusErrorName.invalidArgs, "the rate is fixed at 1.0")
                        }
                    }),
                DBusProperty("Metadata", signature: "a{sv}") {
                    let state = controller.current
                    return .stringVariantMap([
                        "mpris:trackid": .objectPath(trackID(state.soundscape)),
                        "xesam:title": .string(state.title),
                        "xesam:artist": .stringArray([hostName]),
                    ])
                },
                DBusProperty(
                    "Volume", signature: "d", get: { .double(controller.current.volume) },
                    set: { value throws(DBusError) in
                        guard let volume = value.double, volume.isFinite else {
                            throw DBusError.refusal(DBusErrorName.invalidArgs, "the volume must be a number")
                        }
                        // Negative means 0 (spec); above 1.0 is capped at the plugin's maximum.
                        do throws(SoundscapeError) { try controller.setVolume(min(1, max(0, volume))) } catch {
                            throw refuse(error)
                        }
                    }),
                DBusProperty("Position", signature: "x", changeSignal: .none, get: { .int64(0) }),
                DBusProperty("MinimumRate", signature: "d", changeSignal: .const, get: { .double(1) }),
                DBusProperty("MaximumRate", signature: "d", changeSignal: .const, get: { .double(1) }),
                DBusProperty("CanGoNext", signature: "b", changeSignal: .const, get: { .bool(true) }),
                DBusProperty("CanGoPrevious", signature: "b", changeSignal: .const, get: { .bool(true) }),
                DBusProperty("CanPlay", signature: "b", changeSignal: .const, get: { .bool(true) }),
                DBusProperty("CanPause", signature: "b", changeSignal: .const, get: { .bool(true) }),
                DBusProperty("CanSeek", signature: "b", changeSignal: .const, get: { .bool(false) }),
                DBusProperty("CanControl", signature: "b", changeSignal: .none, get: { .bool(true) }),
            ],
            signals: [DBusSignal("Seeked", arguments: [DBusArgument("Position", "x")])])
        return [root, player]
    }
}
