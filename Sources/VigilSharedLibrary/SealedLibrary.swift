import Glibc
import VigilBase
import VigilLibraryCheck

/// A library's verified bytes in a sealed memfd, for the plugin's helper process to map.
///
/// The route: `memfd_create(MFD_CLOEXEC|MFD_ALLOW_SEALING[|MFD_EXEC])`, write the bytes, seal
/// against write, shrink, grow and further seals, probe an executable mapping, then send the
/// descriptor to the helper (SCM_RIGHTS), which maps it with `dlopen("/proc/self/fd/N")`. The
/// file on disk is never opened again, so what is mapped is exactly what was verified, whatever
/// happens to the plugin directory.
enum SealedLibrary {
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

    /// A memfd holding `library`'s bytes, sealed, checked to allow an executable mapping; the caller closes it.
    static func makeSealedMemfd(
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
