import Synchronization

/// The libraries this process mapped from sealed memfds, by SONAME.
///
/// A record stays while its object is mapped. Its memfd stays open for exactly that long: glibc
/// matches already-loaded objects by path, so closing the descriptor while the object is still
/// mapped would let the next library given the same descriptor number alias it. A library that
/// cannot be unloaded (``CVigilPluginABI`` flag `VIGIL_PLUGIN_FLAG_KEEP_LOADED`, or one glibc keeps)
/// stays idle here and is used again by the same plugin with the same bytes.
package final class LibraryRegistry: Sendable {
    /// One mapped library.
    package struct Record: Sendable {
        package var plugin: String
        package var sha256: String
        /// `/proc/self/fd/N`.
        package var path: String
        package var fd: Int32
        package var inUse: Bool

        /// Creates a record.
        package init(plugin: String, sha256: String, path: String, fd: Int32, inUse: Bool) {
            self.plugin = plugin
            self.sha256 = sha256
            self.path = path
            self.fd = fd
            self.inUse = inUse
        }
    }

    package static let shared = LibraryRegistry()

    private let records = Mutex<[String: Record]>([:])

    /// True when `soname` was mapped by this registry for `plugin` from the same bytes (running, or
    /// idle and reusable), so it is no conflict for that plugin.
    package func isOwn(soname: String, plugin: String, sha256: String) -> Bool {
        records.withLock { r in
            guard let record = r[soname] else { return false }
            return record.plugin == plugin && record.sha256 == sha256
        }
    }

    /// Marks an idle record of `plugin` with these bytes as in use and returns it.
    package func acquire(soname: String, plugin: String, sha256: String) -> Record? {
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
    package func record(soname: String) -> Record? {
        records.withLock { $0[soname] }
    }

    /// Records a library just mapped (in use).
    package func insert(soname: String, _ record: Record) {
        records.withLock { $0[soname] = record }
    }

    /// Marks `soname` idle (still mapped) or forgets it (unmapped, memfd closed).
    package func release(soname: String, stillMapped: Bool) {
        records.withLock { r in
            if stillMapped { r[soname]?.inUse = false } else { r[soname] = nil }
        }
    }
}
