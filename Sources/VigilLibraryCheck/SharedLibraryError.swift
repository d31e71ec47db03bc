/// Why a shared-library plugin was refused or failed, before or after it was mapped.
///
/// Every refusal has its own ``Code`` and a ``message`` with the cause and the remedy. Refusals
/// found in the verified bytes (everything up to ``Code/memfdExecRefused``) happen before anything
/// of the library is mapped, so none of its code — not even a constructor — has run.
public struct SharedLibraryError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kind of failure, stable for scripts and tests.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private let raw: String
        private init(_ raw: String) { self.raw = raw }

        /// A library is not a 64-bit little-endian ELF shared object for this machine, or is malformed.
        public static let malformedLibrary = Code("library-malformed")
        /// The plugin's library has no `DT_SONAME`.
        public static let missingSoname = Code("library-no-soname")
        /// A library's SONAME is already loaded in this process (another plugin, the host) or names a
        /// system library, so glibc could alias the two.
        public static let sonameConflict = Code("library-soname-conflict")
        /// A library needs (`DT_NEEDED`) a library that is neither a system library nor listed in
        /// the manifest's `resources`.
        public static let undeclaredDependency = Code("library-undeclared-dependency")
        /// A library's `DT_RUNPATH`/`DT_RPATH` names a directory the dynamic linker would search for
        /// its system dependencies before the system's own, where unsigned code could wait.
        public static let unsafeSearchPath = Code("library-unsafe-search-path")
        /// The plugin's library exports no usable `vigil_plugin_entry` descriptor.
        public static let missingDescriptor = Code("abi-no-descriptor")
        /// The descriptor's ABI major differs from the host's (or from the manifest's `abi`).
        public static let abiMajorMismatch = Code("abi-major-mismatch")
        /// The descriptor's ABI minor is newer than the host's.
        public static let abiMinorTooNew = Code("abi-minor-too-new")
        /// The kernel refuses executable memfds (`vm.memfd_noexec` = 2, or a security module).
        public static let memfdExecRefused = Code("memfd-exec-refused")
        /// Creating, writing or sealing the memfd failed.
        public static let memfdFailed = Code("memfd-failed")
        /// `dlopen` refused the verified bytes (for example a missing symbol).
        public static let loadFailed = Code("library-load-failed")
        /// The object glibc returned is not the one just mapped from the sealed memfd.
        public static let staleHandle = Code("library-stale-handle")
        /// The descriptor's `plugin_id` is not the manifest's name.
        public static let pluginIDMismatch = Code("plugin-id-mismatch")
        /// The plugin's `init` returned false.
        public static let initFailed = Code("plugin-init-failed")
        /// The plugin does not offer the keep-alive interface (or its table is too small).
        public static let interfaceMissing = Code("interface-missing")
        /// The keep-alive interface's `create` returned NULL.
        public static let createFailed = Code("plugin-create-failed")
        /// The keep-alive interface's `start` returned false.
        public static let startFailed = Code("plugin-start-failed")

        public var description: String { raw }
    }

    /// The kind of failure.
    public let code: Code
    /// The plugin concerned.
    public let plugin: String
    /// The cause and the remedy.
    public let message: String

    /// Creates an error; `message` states the cause and the remedy.
    public init(code: Code, plugin: String, message: String) {
        self.code = code
        self.plugin = plugin
        self.message = message
    }

    public var description: String { "[\(plugin)] \(message)" }
}
