import FoundationEssentials
import Logging
import VigilDBus

#if canImport(Glibc)
import Glibc
#endif

/// `pause-spoken`: pauses the MPRIS players named in `[announce] players` that are playing, and
/// resumes exactly those after the prompt — unless someone stopped or paused them otherwise
/// meanwhile (only a player still `Paused` is resumed).
///
/// A name matches `org.mpris.MediaPlayer2.NAME` and its instances
/// (`org.mpris.MediaPlayer2.NAME.instance1234`).
struct SpokenAudioPauser {
    let connection: DBusConnection
    let players: [String]
    let logger: Logger

    static let prefix = "org.mpris.MediaPlayer2."
    static let path = "/org/mpris/MediaPlayer2"
    static let player = "org.mpris.MediaPlayer2.Player"

    /// Connects to `bus`, the session bus's address (``AnnounceSettings/sessionBus``, which a host
    /// fills from its environment; `nil`: there is none).
    static func connect(bus: String?, players: [String], logger: Logger) async throws(AnnounceError)
        -> SpokenAudioPauser
    {
        guard let bus else {
            throw AnnounceError(
                code: .sessionBus,
                message: "pause-spoken needs the session bus, but the host's environment names none — "
                    + "set DBUS_SESSION_BUS_ADDRESS for the host (or run it in a user session)")
        }
        do throws(DBusError) {
            let connection = try await DBusConnection.connect(to: .address(bus), logger: logger)
            return SpokenAudioPauser(connection: connection, players: players, logger: logger)
        } catch {
            throw AnnounceError(code: .sessionBus, message: "pause-spoken needs the session bus: \(error.message)")
        }
    }

    /// The bus names of the configured players that are on the bus now.
    func busNames() async throws(AnnounceError) -> [String] {
        let names: [DBusValue]
        do throws(DBusError) {
            names = try await connection.call(
                destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
                member: "ListNames", timeout: .seconds(5))
        } catch {
            throw AnnounceError(code: .sessionBus, message: "cannot list the session bus's names: \(error.message)")
        }
        let all = (names.first?.array ?? []).compactMap(\.string)
        return all.filter { name in
            players.contains { name == Self.prefix + $0 || name.hasPrefix(Self.prefix + $0 + ".instance") }
        }.sorted()
    }

    /// `PlaybackStatus` of the player at `name` (`Playing`, `Paused`, `Stopped`), or `nil`.
    func status(_ name: String) async -> String? {
        let reply = try? await connection.call(
            destination: name, path: Self.path, interface: "org.freedesktop.DBus.Properties", member: "Get",
            arguments: [.string(Self.player), .string("PlaybackStatus")], timeout: .seconds(2))
        return reply?.first?.unwrapped.string
    }

    /// Pauses every configured player that is playing; returns their bus names.
    func pausePlaying() async throws(AnnounceError) -> [String] {
        await send("Pause", to: try await busNames(), whenStatus: "Playing", failure: "Cannot pause an MPRIS player")
    }

    /// Resumes the players in `names` that are still paused; returns those resumed.
    func resume(_ names: [String]) async -> [String] {
        await send("Play", to: names, whenStatus: "Paused", failure: "Cannot resume an MPRIS player")
    }

    /// Calls the player method `member` on each of `names` whose status is `status`; returns those
    /// that answered (a failure is logged as `failure` and skipped).
    private func send(_ member: String, to names: [String], whenStatus status: String, failure: String) async
        -> [String]
    {
        var done: [String] = []
        for name in names where await self.status(name) == status {
            do throws(DBusError) {
                _ = try await connection.call(
                    destination: name, path: Self.path, interface: Self.player, member: member, timeout: .seconds(2))
                done.append(name)
            } catch {
                logger.warning(
                    "\(failure)", metadata: ["announce.player": "\(name)", "announce.error": "\(error)"])
            }
        }
        return done
    }
}
