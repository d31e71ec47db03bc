import Glibc

/// Which `DT_NEEDED` names count as system libraries, which a plugin need not ship.
///
/// A name is a system library when an object of that name or SONAME is already loaded in this
/// process (the host's own libraries, for example libc or the Swift runtime), or when a file of
/// that name exists in the dynamic linker's default directories (`/lib`, `/usr/lib`, their
/// multiarch and `64` variants) or in the directory the host's own Swift runtime was loaded from.
/// Nothing is mapped to find out: `dlopen(RTLD_NOLOAD)` only looks at what is loaded.
package enum SystemLibraries {
    #if arch(x86_64)
    package static let multiarch = "x86_64-linux-gnu"
    #elseif arch(arm64)
    package static let multiarch = "aarch64-linux-gnu"
    #else
    package static let multiarch = "unknown-linux-gnu"
    #endif

    /// The directories searched for system libraries.
    package static let directories: [String] = {
        var dirs = ["/lib/\(multiarch)", "/usr/lib/\(multiarch)", "/lib", "/usr/lib", "/lib64", "/usr/lib64"]
        if let runtime = swiftRuntimeDirectory() { dirs.append(runtime) }
        return dirs
    }()

    /// True when `name` (a `DT_NEEDED` entry or a SONAME) is a system library.
    package static func contains(_ name: String) -> Bool {
        isLoaded(name) || installedPath(name) != nil
    }

    /// True when an object named or SONAMEd `name` is loaded in this process.
    package static func isLoaded(_ name: String) -> Bool {
        guard !name.contains("/"), let handle = dlopen(name, RTLD_LAZY | RTLD_NOLOAD) else { return false }
        dlclose(handle)
        return true
    }

    /// The system directory file called `name`, if any.
    package static func installedPath(_ name: String) -> String? {
        guard !name.isEmpty, !name.contains("/") else { return nil }
        for dir in directories {
            var st = stat()
            let path = dir + "/" + name
            if stat(path, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG { return path }
        }
        return nil
    }

    /// The directory of the loaded `libswiftCore.so` (the host's Swift runtime), if any.
    private static func swiftRuntimeDirectory() -> String? {
        guard let symbol = dlsym(nil, "swift_retain"), let path = LoaderCalls.objectPath(containing: symbol) else {
            return nil
        }
        guard path.hasPrefix("/"), !path.hasPrefix("/proc/"), let slash = path.lastIndex(of: "/") else { return nil }
        return String(path[..<slash])
    }
}
