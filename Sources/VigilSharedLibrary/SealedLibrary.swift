import Glibc
import VigilBase
import VigilLibraryCheck

/// One library mapped from a sealed memfd holding its verified bytes.
///
/// The route: `memfd_create(MFD_CLOEXEC|MFD_ALLOW_SEALING[|MFD_EXEC])`, write the bytes, seal
/// against write, shrink, grow and further seals, then `dlopen("/proc/self/fd/N")`. The file on
/// disk is never opened again, so what is mapped is exactly what was verified, whatever happens to
/// the plugin directory. The memfd stays open while the object is mapped (see ``LibraryRegistry``).
struct SealedLibrary: Sendable {
    /// The SONAME it was registered under.
    let soname: String
    /// `/proc/self/fd/N`.
    let path: String
    /// The `dlopen` handle, as a bit pattern (`dlclose` it through ``close()``).
    let handleBits: UInt

    var handle: UnsafeMutableRawPointer { UnsafeMutableRawPointer(bitPattern: handleBits)! }

    /// Maps `library` of `plugin`, or takes an idle mapping of the same bytes this process kept.
    ///
    /// - Parameter keepLoaded: mark the object never to be unloaded (`RTLD_NODELETE`).
    static func open(
        _ library: VerifiedLibrarySet.Library, plugin: String, keepLoaded: Bool
    ) throws(SharedLibraryError) -> SealedLibrary {
        func fail(_ code: SharedLibraryError.Code, _ message: String) -> SharedLibraryError {
            SharedLibraryError(code: code, plugin: plugin, message: message)
        }
        if let kept = LibraryRegistry.shared.acquire(soname: library.soname, plugin: plugin, sha256: library.sha256) {
            // Still mapped from an earlier start: take a reference without mapping anything.
            if let handle = dlopen(kept.path, RTLD_NOW | RTLD_NOLOAD) {
                return SealedLibrary(soname: library.soname, path: kept.path, handleBits: UInt(bitPattern: handle))
            }
            LibraryRegistry.shared.release(soname: library.soname, stillMapped: false)
            Glibc.close(kept.fd)
        }
        if SystemLibraries.isLoaded(library.soname) || LibraryRegistry.shared.record(soname: library.soname) != nil {
            throw fail(
                .sonameConflict,
                "its library \(library.path) has the SONAME \(library.soname), which is already loaded in this process "
                    + "(by another plugin or the host) — give each plugin's libraries unique SONAMEs")
        }

        let fd = try makeSealedMemfd(library, plugin: plugin)
        let path = "/proc/self/fd/\(fd)"
        if let stale = dlopen(path, RTLD_LAZY | RTLD_NOLOAD) {
            dlclose(stale)
            Glibc.close(fd)
            throw fail(
                .staleHandle,
                "an object named \(path) is still loaded although its descriptor was closed, so glibc would return it "
                    + "instead of \(library.path) — this is a bug in the host, which must keep each memfd open while "
                    + "its library is loaded; restart the host")
        }
        guard let handle = dlopen(path, RTLD_NOW | RTLD_LOCAL) else {
            let reason = dlerror().map { String(cString: $0) } ?? "unknown error"
            Glibc.close(fd)
            throw fail(
                .loadFailed,
                "the dynamic linker refused its verified library \(library.path): \(reason) — a symbol it needs may be "
                    + "missing from the libraries it lists; ask the publisher for a build for this system")
        }
        // The SONAME must now resolve to exactly this object, so DT_NEEDED of what follows binds here.
        let bySoname = dlopen(library.soname, RTLD_LAZY | RTLD_NOLOAD)
        if let bySoname { dlclose(bySoname) }
        guard bySoname == handle else {
            dlclose(handle)
            if dlopen(path, RTLD_LAZY | RTLD_NOLOAD) == nil { Glibc.close(fd) }
            throw fail(
                .staleHandle,
                "after mapping \(library.path) its SONAME \(library.soname) resolves to another object — give each "
                    + "plugin's libraries unique SONAMEs")
        }
        if keepLoaded, let pinned = dlopen(path, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE) { dlclose(pinned) }
        LibraryRegistry.shared.insert(
            soname: library.soname, .init(plugin: plugin, sha256: library.sha256, path: path, fd: fd, inUse: true))
        return SealedLibrary(soname: library.soname, path: path, handleBits: UInt(bitPattern: handle))
    }

    /// Drops this reference; when glibc unmapped the object, closes its memfd, else keeps both
    /// (a library that stays mapped keeps its descriptor, so its path is never reused).
    func close() {
        dlclose(handle)
        if let still = dlopen(path, RTLD_LAZY | RTLD_NOLOAD) {
            dlclose(still)
            LibraryRegistry.shared.release(soname: soname, stillMapped: true)
        } else {
            let fd = LibraryRegistry.shared.record(soname: soname)?.fd
            LibraryRegistry.shared.release(soname: soname, stillMapped: false)
            if let fd { Glibc.close(fd) }
        }
    }

    /// The address of `symbol` in this object, and whether it lies in this object (not in one it needs).
    func ownSymbol(_ symbol: String) -> UnsafeRawPointer? {
        guard let address = dlsym(handle, symbol) else { return nil }
        return LoaderCalls.objectPath(containing: address) == path ? UnsafeRawPointer(address) : nil
    }

    /// What `vm.memfd_noexec` says, or `nil` on kernels before 6.3 (no such sysctl).
    static func memfdNoexecPolicy() -> Int? {
        guard let bytes = FileIO.contents(ofFile: "/proc/sys/vm/memfd_noexec", limit: 15), !bytes.isEmpty else {
            return nil
        }
        return Int(String(decoding: bytes, as: UTF8.self).filter(\.isNumber))
    }

    private static func execRefused(
        _ plugin: String, _ why: String, cause: SystemCallError? = nil
    ) -> SharedLibraryError {
        SharedLibraryError(
            code: .memfdExecRefused, plugin: plugin,
            message: "this system refuses executable memfds (\(why)), and Vigil maps plugin code only from a sealed "
                + "memfd holding the verified bytes — allow them with `sysctl vm.memfd_noexec=1` (or 0; 1 still makes "
                + "memfds non-executable by default for other programs), or check the security module's policy for "
                + "this program; built-in plugins are not affected",
            cause: cause.map { ErrorCause($0) })
    }

    /// A memfd holding `library`'s bytes, sealed, checked to allow an executable mapping.
    private static func makeSealedMemfd(
        _ library: VerifiedLibrarySet.Library, plugin: String
    ) throws(SharedLibraryError) -> Int32 {
        func fail(_ what: String, _ failure: SystemCallError) -> SharedLibraryError {
            SharedLibraryError(
                code: .memfdFailed, plugin: plugin,
                message: "cannot \(what) the memfd for \(library.path): \(failure.reason) — check the "
                    + "process's memory and descriptor limits",
                cause: ErrorCause(failure))
        }
        if memfdNoexecPolicy() == 2 { throw execRefused(plugin, "vm.memfd_noexec is 2") }
        let name = String("vigil-plugin:\(plugin):\(library.soname)".utf8.prefix(240)) ?? "vigil-plugin"
        let base: LoaderCalls.MemfdFlags = [.closeOnExec, .allowSealing]
        let fd: Int32
        do throws(SystemCallError) {
            do throws(SystemCallError) {
                fd = try LoaderCalls.memfdCreate(name, flags: base.union(.executable))
            } catch  where error.number == EINVAL {
                // Kernels before 6.3 know no MFD_EXEC; their memfds are executable.
                fd = try LoaderCalls.memfdCreate(name, flags: base)
            }
        } catch {
            if error.number == EACCES || error.number == EPERM {
                throw execRefused(plugin, "memfd_create(MFD_EXEC): \(error.reason)", cause: error)
            }
            throw fail("create", error)
        }
        do {
            try FileIO.writeAll(fd, library.bytes)
        } catch {
            Glibc.close(fd)
            throw fail("write", error)
        }
        let seals: LoaderCalls.Seals = [.shrink, .grow, .write, .seal]
        do {
            try LoaderCalls.addSeals(seals, to: fd)
        } catch {
            Glibc.close(fd)
            throw fail("seal", error)
        }
        guard let applied = try? LoaderCalls.seals(of: fd), applied.isSuperset(of: seals) else {
            Glibc.close(fd)
            throw fail("verify the seals of", SystemCallError("fcntl(F_GET_SEALS)", errno: EINVAL))
        }
        // Probe an executable mapping now, so a refusal gets its own error instead of a dlopen message.
        let pageSize = Int(sysconf(Int32(_SC_PAGESIZE)))
        if let probe = mmap(nil, pageSize, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0), probe != MAP_FAILED {
            munmap(probe, pageSize)
        } else {
            let failure = SystemCallError.current("mmap")
            Glibc.close(fd)
            throw execRefused(plugin, "an executable mapping of the memfd failed: \(failure.reason)", cause: failure)
        }
        return fd
    }
}
