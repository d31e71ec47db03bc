internal import CVigilLoader
import Glibc
import VigilBase

/// The Linux calls behind plugin loading that Swift's Glibc module does not offer (`memfd_create`
/// and file seals need `_GNU_SOURCE`; `dladdr`'s `Dl_info` too), from CVigilLoader — which only
/// this module imports. VigilSharedLibrary maps plugins from sealed memfds through these.
package enum LoaderCalls {
    /// `memfd_create(2)` flags, with the kernel's values.
    package struct MemfdFlags: OptionSet, Sendable {
        package let rawValue: UInt32
        package init(rawValue: UInt32) { self.rawValue = rawValue }
        package static let closeOnExec = MemfdFlags(rawValue: VIGIL_MFD_CLOEXEC)
        package static let allowSealing = MemfdFlags(rawValue: VIGIL_MFD_ALLOW_SEALING)
        /// Executable mappings allowed (Linux ≥ 6.3; older kernels refuse the flag with EINVAL).
        package static let executable = MemfdFlags(rawValue: VIGIL_MFD_EXEC)
    }

    /// File seals (`fcntl(2)` `F_ADD_SEALS`), with the kernel's values.
    package struct Seals: OptionSet, Sendable {
        package let rawValue: UInt32
        package init(rawValue: UInt32) { self.rawValue = rawValue }
        package static let seal = Seals(rawValue: VIGIL_F_SEAL_SEAL)
        package static let shrink = Seals(rawValue: VIGIL_F_SEAL_SHRINK)
        package static let grow = Seals(rawValue: VIGIL_F_SEAL_GROW)
        package static let write = Seals(rawValue: VIGIL_F_SEAL_WRITE)
    }

    /// A new memfd called `name` (close it yourself); errno is read right at the failing call.
    package static func memfdCreate(_ name: String, flags: MemfdFlags) throws(SystemCallError) -> Int32 {
        let fd = vigil_memfd_create(name, flags.rawValue)
        guard fd >= 0 else { throw SystemCallError.current("memfd_create") }
        return fd
    }

    /// Adds `seals` to the memfd `fd`.
    package static func addSeals(_ seals: Seals, to fd: Int32) throws(SystemCallError) {
        guard vigil_add_seals(fd, seals.rawValue) == 0 else { throw SystemCallError.current("fcntl(F_ADD_SEALS)") }
    }

    /// The seals the memfd `fd` carries.
    package static func seals(of fd: Int32) throws(SystemCallError) -> Seals {
        let seals = vigil_get_seals(fd)
        guard seals >= 0 else { throw SystemCallError.current("fcntl(F_GET_SEALS)") }
        return Seals(rawValue: UInt32(seals))
    }

    /// The path of the loaded object (executable or shared library) holding `address` (`dladdr`),
    /// or nil when no loaded object holds it.
    package static func objectPath(containing address: UnsafeRawPointer) -> String? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        guard vigil_object_path(address, &buffer, buffer.count) == 0 else { return nil }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
