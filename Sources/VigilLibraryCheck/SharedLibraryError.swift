@_exported public import VigilBase

/// Why a shared-library plugin was refused or failed, before or after it was mapped.
///
/// Every refusal has its own ``SharedLibraryErrorCode`` and a ``CodedError/message`` with the cause
/// and the remedy. Refusals found in the verified bytes (everything up to
/// ``SharedLibraryErrorCode/memfdExecRefused``) happen before anything of the library is mapped, so
/// none of its code — not even a constructor — has run.
public typealias SharedLibraryError = CodedError<SharedLibraryErrorCode>

/// The kind of a ``SharedLibraryError``, stable for scripts and tests.
public enum SharedLibraryErrorCode: String, ErrorCode {
    /// A library is not a 64-bit little-endian ELF shared object for this machine, or is malformed.
    case malformedLibrary = "library-malformed"
    /// The plugin's library has no `DT_SONAME`.
    case missingSoname = "library-no-soname"
    /// A library's SONAME is already loaded in this process (another plugin, the host) or names a
    /// system library, so glibc could alias the two.
    case sonameConflict = "library-soname-conflict"
    /// A library needs (`DT_NEEDED`) a library that is neither a system library nor listed in
    /// the manifest's `resources`.
    case undeclaredDependency = "library-undeclared-dependency"
    /// A library's `DT_RUNPATH`/`DT_RPATH` names a directory the dynamic linker would search for
    /// its system dependencies before the system's own, where unsigned code could wait.
    case unsafeSearchPath = "library-unsafe-search-path"
    /// The plugin's library exports no usable `vigil_plugin_entry` descriptor.
    case missingDescriptor = "abi-no-descriptor"
    /// The descriptor's ABI major differs from the host's (or from the manifest's `abi`).
    case abiMajorMismatch = "abi-major-mismatch"
    /// The descriptor's ABI minor is newer than the host's.
    case abiMinorTooNew = "abi-minor-too-new"
    /// The kernel refuses executable memfds (`vm.memfd_noexec` = 2, or a security module).
    case memfdExecRefused = "memfd-exec-refused"
    /// Creating, writing or sealing the memfd failed.
    case memfdFailed = "memfd-failed"
    /// `dlopen` refused the verified bytes (for example a missing symbol).
    case loadFailed = "library-load-failed"
    /// The object glibc returned is not the one just mapped from the sealed memfd.
    case staleHandle = "library-stale-handle"
    /// The descriptor's `plugin_id` is not the manifest's name.
    case pluginIDMismatch = "plugin-id-mismatch"
    /// The plugin's `init` returned false.
    case initFailed = "plugin-init-failed"
    /// The plugin does not offer the keep-alive interface (or its table is too small).
    case interfaceMissing = "interface-missing"
    /// The keep-alive interface's `create` returned NULL.
    case createFailed = "plugin-create-failed"
    /// The keep-alive interface's `start` returned false.
    case startFailed = "plugin-start-failed"
}
