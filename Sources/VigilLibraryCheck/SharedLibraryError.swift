@_exported public import VigilBase

/// Why a shared-library plugin was refused or failed, before or after it was mapped.
///
/// Every refusal has its own ``SharedLibraryErrorCode`` and a ``CodedError/message`` with the cause
/// and the remedy. Refusals found in the verified bytes (everything up to
/// ``SharedLibraryErrorCode/memfdExecRefused``, and ``SharedLibraryErrorCode/pluginIDMismatch``
/// when the Vigil note names another plugin) happen before anything of the library is mapped, so
/// none of its code — not even a constructor — has run.
public typealias SharedLibraryError = CodedError<SharedLibraryErrorCode>

/// The kind of a ``SharedLibraryError``, stable for scripts and tests.
public enum SharedLibraryErrorCode: String, ErrorCode {
    /// A library is not a 64-bit little-endian ELF shared object for this machine, or is malformed.
    case malformedLibrary = "library-malformed"
    /// A library is larger than the checker's cap (64 MiB).
    case libraryTooLarge = "library-too-large"
    /// A load segment's file bytes lie outside the file (or it has more file than memory bytes).
    case segmentOutsideFile = "library-segment-outside-file"
    /// A load segment's file offset and address differ by other than whole pages, so the loader
    /// would map other bytes at its address than the file holds at its offset.
    case segmentMisaligned = "library-segment-misaligned"
    /// Load segments out of address order or sharing a page (a later mapping would replace bytes).
    case segmentsOverlap = "library-segments-overlap"
    /// `PT_DYNAMIC` or `PT_NOTE` gives a file offset other than where its address is mapped.
    case viewMismatch = "library-view-mismatch"
    /// A table the loader reads is not wholly inside the file bytes of one load segment.
    case addressUnmapped = "library-address-unmapped"
    /// The dynamic array does not end (`DT_NULL`) inside `PT_DYNAMIC`'s file size and its segment.
    case dynamicUnterminated = "library-dynamic-unterminated"
    /// Two `PT_DYNAMIC` headers, or a table given twice in the dynamic array.
    case dynamicAmbiguous = "library-dynamic-ambiguous"
    /// The section headers disagree with the program headers or the dynamic array.
    case sectionsDisagree = "library-sections-disagree"
    /// More program headers than the cap (64).
    case tooManySegments = "library-too-many-segments"
    /// More section headers than the cap (1,024).
    case tooManySections = "library-too-many-sections"
    /// More dynamic entries than the cap (4,096).
    case tooManyDynamicEntries = "library-too-many-dynamic-entries"
    /// More hash buckets, bloom words or symbols on a hash chain than the cap (1,048,576).
    case tooManySymbols = "library-too-many-symbols"
    /// A dynamic string (`DT_NEEDED`, `DT_SONAME`, `DT_RUNPATH`) longer than the cap (4,096 bytes).
    case stringTooLong = "library-string-too-long"
    /// More notes than the cap (256).
    case tooManyNotes = "library-too-many-notes"
    /// The plugin's library carries no Vigil note (`VIGIL_PLUGIN_NOTE`), so its plugin id cannot be
    /// checked before mapping.
    case pluginNoteMissing = "plugin-note-missing"
    /// A Vigil note is malformed, or there are two.
    case pluginNoteMalformed = "plugin-note-malformed"
    /// The note's ABI version differs from the descriptor's.
    case pluginNoteMismatch = "plugin-note-mismatch"
    /// The plugin's library has no `DT_SONAME`.
    case missingSoname = "library-no-soname"
    /// A library's SONAME is one of the host's loaded libraries' or names a
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
    /// The note's plugin id (before mapping) or the descriptor's `plugin_id` (after `init`) is not
    /// the manifest's name.
    case pluginIDMismatch = "plugin-id-mismatch"
    /// The plugin's `init` returned false.
    case initFailed = "plugin-init-failed"
    /// The plugin does not offer the keep-alive interface (or its table is too small).
    case interfaceMissing = "interface-missing"
    /// The keep-alive interface's `create` returned NULL.
    case createFailed = "plugin-create-failed"
    /// The keep-alive interface's `start` returned false.
    case startFailed = "plugin-start-failed"
    /// No `vigil-plugin-helper` beside the running executable nor in `/usr/libexec/vigil/`.
    case helperMissing = "plugin-helper-missing"
    /// The helper executable, or its directory, could be replaced by others (owner, mode).
    case helperUnsafe = "plugin-helper-unsafe"
    /// The helper process could not be started (socket pair, `posix_spawn`).
    case helperFailed = "plugin-helper-failed"
    /// The helper process ended while the host waited for its answer.
    case helperDied = "plugin-helper-died"
    /// The helper did not answer a request within its deadline; it was killed.
    case helperTimeout = "plugin-helper-timeout"
    /// The helper sent something the protocol does not allow; it was killed.
    case helperProtocol = "plugin-helper-protocol"
    /// The helper could not apply the plugin's confinement to itself.
    case confinementFailed = "confinement-failed"
}
