import Synchronization

/// The libraries this process mapped from sealed memfds, by SONAME.
///
/// A record stays while its object is mapped. Its memfd stays open for exactly that long: glibc
/// matches already-loaded objects by path, so closing the descriptor while the object is still
/// mapped would let the next library given the same descriptor number alias it. A library that
/// cannot be unloaded (``CVigilPluginABI`` flag `VIGIL_PLUGIN_FLAG_KEEP_LOADED`, or one glibc keeps)
/// stays idle here and is used again by the same plugin with the same bytes.
final class LibraryRegistry: Sendable {
    /// One mapped library.
    struct Record: Sendable {
        var plugin: String
        var sha256: String
        /// `/proc/self/fd/N`.
        var path: String
        var fd: Int32
        var inUse: Bool
    }

    static let shared = LibraryRegistry()

    private let records = Mutex<[String: Record]>([:])

    /// True when `soname` was mapped by this registry for `plugin` from the same bytes (running, or
    /// idle and reusable), so it is no conflict for that plugin.
    func isOwn(soname: String, plugin: String, sha256: String) -> Bool {
        records.withLock { r in
            guard let record = r[soname] else { return false }
            return record.plugin == plugin && record.sha256 == sha256
        }
    }

    /// Marks an idle record of `plugin` with these bytes as in use and returns it.
    func acquire(soname: String, plugin: String, sha256: String) -> Record? {
        records.withLock { r in
            guard var record = r[soname], !record.inUse, record.plugin == plugin, record.sha256 == sha256 else {
                return nil
            }
            record.inUse = true
            r[soname] = record
            return record
        }
    }

    /// The record for `soname`, if any.
    func record(soname: String) -> Record? {
        records.withLock { $0[soname] }
    }

    /// Records a library just mapped (in use).
    func insert(soname: String, _ record: Record) {
        records.withLock { $0[soname] = record }
    }

    /// Marks `soname` idle (still mapped) or forgets it (unmapped, memfd closed).
    func release(soname: String, stillMapped: Bool) {
        records.withLock { r in
            if stillMapped { r[soname]?.inUse = false } else { r[soname] = nil }
        }
    }
}
