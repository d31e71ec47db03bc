internal import CVigilPluginABI
import VigilCore
import VigilCrypto

/// A shared-library plugin's libraries as checked from their verified bytes, before anything is
/// mapped: the plugin's library with its descriptor header, and its listed dependencies in the
/// order they must be loaded.
package struct VerifiedLibrarySet: Sendable {
    /// One verified library.
    package struct Library: Sendable {
        /// Its path in the plugin directory (a manifest resource).
        package let path: String
        /// The verified bytes (read once, hashed and compared by the core loader).
        package let bytes: [UInt8]
        /// Lower-case hex SHA-256 of `bytes`.
        package let sha256: String
        /// Its `DT_SONAME`.
        package let soname: String
        /// Its `DT_NEEDED` entries.
        package let needed: [String]
        /// Its `DT_RUNPATH`/`DT_RPATH` directories.
        package var searchPath: [String] = []
    }

    /// The plugin's name.
    package let plugin: String
    /// The library that exports `vigil_plugin_entry`.
    package let main: Library
    /// The descriptor header read from `main`'s bytes.
    package let descriptor: ELFImage.DescriptorHeader
    /// Listed dependencies, each after the ones it needs.
    package let dependencies: [Library]

    /// The ABI this host implements.
    package static let abiMajor = UInt16(VIGIL_PLUGIN_ABI_MAJOR)
    package static let abiMinor = UInt16(VIGIL_PLUGIN_ABI_MINOR)
    /// The size of the 1.0 descriptor: the smallest accepted.
    package static let minimumDescriptorSize: UInt32 = 48
    /// The largest descriptor size accepted (a sanity cap; structs only grow slowly).
    package static let maximumDescriptorSize: UInt32 = 4096

    /// Checks `plugin`'s shared library and its dependencies from the verified bytes the core
    /// loader read. Maps nothing and runs nothing.
    package init(_ plugin: LoadedPlugin) throws(SharedLibraryError) {
        let name = plugin.manifest.name
        guard let entry = plugin.manifest.sharedLibrary else {
            throw SharedLibraryError(
                code: .missingDescriptor, plugin: name,
                message: "its manifest entry is \"\(plugin.manifest.entry)\", not a shared library")
        }
        func fail(_ code: SharedLibraryError.Code, _ message: String) -> SharedLibraryError {
            SharedLibraryError(code: code, plugin: name, message: message)
        }
        let shaByPath = Dictionary(
            plugin.manifest.resources.map { ($0.path, $0.sha256) }, uniquingKeysWith: { a, _ in a })
        guard let mainBytes = plugin.resourceContents[entry.path], let mainSHA = shaByPath[entry.path] else {
            throw fail(.malformedLibrary, "its library \(entry.path) is not among the verified resources")
        }

        // The manifest's abi first: it is signed, and says what the publisher built for.
        guard entry.abi == Int(Self.abiMajor) else {
            throw fail(
                .abiMajorMismatch,
                "its manifest says it is built for plugin ABI \(entry.abi), but this Vigil implements ABI "
                    + "\(Self.abiMajor) — install a release of the plugin built for ABI \(Self.abiMajor), or a Vigil that "
                    + "implements ABI \(entry.abi)")
        }

        let image: ELFImage
        do {
            image = try ELFImage(mainBytes)
        } catch {
            throw Self.refusal(error, path: entry.path, plugin: name)
        }
        guard let soname = image.soname, !soname.isEmpty else {
            throw fail(
                .missingSoname,
                "its library \(entry.path) has no SONAME — link it with a unique SONAME "
                    + "(cc -shared -Wl,-soname,lib\(name).so …) so two plugins can never alias in the dynamic linker")
        }
        guard let descriptor = image.descriptor else {
            throw fail(
                .missingDescriptor,
                "its library \(entry.path) exports no \(ELFImage.entrySymbol) descriptor — define "
                    + "`const vigil_plugin_descriptor vigil_plugin_entry = {…}` as documented in vigil_plugin.h")
        }
        try Self.checkDescriptor(descriptor, path: entry.path, plugin: name)
        try Self.checkNote(image.note, descriptor: descriptor, path: entry.path, plugin: name)

        // Every other ELF resource may be a dependency; they are matched to DT_NEEDED by SONAME.
        var bySoname: [String: Library] = [:]
        var notLoadable: [String: String] = [:]  // resource basename → why
        for resource in plugin.manifest.resources where resource.path != entry.path {
            guard let bytes = plugin.resourceContents[resource.path], bytes.starts(with: [0x7F, 0x45, 0x4C, 0x46])
            else {
                continue
            }
            let base = String(resource.path.split(separator: "/").last ?? "")
            do {
                let dep = try ELFImage(bytes)
                guard let depSoname = dep.soname, !depSoname.isEmpty else {
                    notLoadable[base] = "the listed \(resource.path) has no SONAME (link it with -Wl,-soname,\(base))"
                    continue
                }
                if let other = bySoname[depSoname] {
                    throw fail(
                        .sonameConflict,
                        "its libraries \(other.path) and \(resource.path) both have the SONAME \(depSoname) — give each "
                            + "library its own SONAME")
                }
                bySoname[depSoname] = Library(
                    path: resource.path, bytes: bytes, sha256: resource.sha256, soname: depSoname, needed: dep.needed,
                    searchPath: dep.searchPath)
            } catch let problem as ELFImage.Problem where problem.kind == .malformed {
                notLoadable[base] = "the listed \(resource.path) is not a loadable shared object: \(problem.reason)"
            } catch let problem as ELFImage.Problem {
                // Readable as ELF, but the loader could see something else than this check: refuse.
                throw Self.refusal(problem, path: resource.path, plugin: name)
            } catch let error as SharedLibraryError {
                throw error
            } catch {
                throw fail(.malformedLibrary, "\(error)")
            }
        }
        if let clash = bySoname[soname] {
            throw fail(
                .sonameConflict,
                "its library \(entry.path) and the listed \(clash.path) both have the SONAME \(soname) — give each "
                    + "library its own SONAME")
        }

        // A system dependency not loaded yet is searched in RUNPATH/RPATH first: only $ORIGIN (which
        // is /proc/self/fd for a memfd, holding no libraries) and the system directories may be there.
        for (path, searchPath) in [(entry.path, image.searchPath)] + bySoname.values.map({ ($0.path, $0.searchPath) }) {
            if let unsafe = searchPath.first(where: { !Self.isSafeSearchDirectory($0) }) {
                throw fail(
                    .unsafeSearchPath,
                    "\(path) asks the dynamic linker to search \(Sanitizer.display(unsafe)) (DT_RUNPATH/DT_RPATH) for "
                        + "the libraries it needs, where unsigned code could be found before the system's — link it "
                        + "without -rpath, or with -Wl,-rpath,'$ORIGIN' only (its listed libraries are loaded first)")
            }
        }

        // Walk DT_NEEDED from the plugin's library: listed, system, or refused.
        var ordered: [Library] = []
        var state: [String: Bool] = [:]  // soname → finished?
        func visit(_ needer: String, _ needed: [String]) throws(SharedLibraryError) {
            for dependency in needed {
                if let library = bySoname[dependency] {
                    switch state[dependency] {
                    case true?: continue
                    case false?:
                        throw fail(
                            .undeclaredDependency,
                            "its listed libraries need each other in a cycle through \(dependency) — break the cycle")
                    case nil:
                        state[dependency] = false
                        try visit(library.path, library.needed)
                        state[dependency] = true
                        ordered.append(library)
                    }
                    continue
                }
                if !dependency.contains("/") && SystemLibraries.contains(dependency) { continue }
                let hint = notLoadable[dependency].map { " (\($0))" } ?? ""
                throw fail(
                    .undeclaredDependency,
                    "\(needer) needs \(dependency), which is neither a system library nor a library listed in the "
                        + "manifest's \"resources\"\(hint) — the publisher must list it there (with a SONAME equal to "
                        + "\(dependency)) and sign again, or link it statically; Vigil loads no unsigned code")
            }
        }
        try visit(entry.path, image.needed)

        // SONAMEs must not alias anything glibc already knows or would find on the system.
        for library in ordered + [Library(path: entry.path, bytes: [], sha256: mainSHA, soname: soname, needed: [])] {
            if SystemLibraries.installedPath(library.soname) != nil {
                throw fail(
                    .sonameConflict,
                    "its library \(library.path) has the SONAME \(library.soname), which is a system library's name — "
                        + "give it a unique SONAME (for example lib\(name)-….so)")
            }
            if SystemLibraries.isLoaded(library.soname) {
                throw fail(
                    .sonameConflict,
                    "its library \(library.path) has the SONAME \(library.soname), which a library of the host "
                        + "already has — give each plugin's libraries unique SONAMEs, for example prefixed with the "
                        + "plugin's name")
            }
        }

        self.plugin = name
        self.main = Library(path: entry.path, bytes: mainBytes, sha256: mainSHA, soname: soname, needed: image.needed)
        self.descriptor = descriptor
        self.dependencies = ordered
    }

    /// The refusal for a library the ELF reader did not accept, with the code of its kind.
    static func refusal(_ problem: ELFImage.Problem, path: String, plugin: String) -> SharedLibraryError {
        let code: SharedLibraryError.Code
        let remedy: String
        let rebuild =
            "rebuild it with the system's compiler and linker (cc -shared -fPIC …) and do not edit the result; a "
            + "library whose file and whose loaded image could differ is never loaded"
        switch problem.kind {
        case .malformed:
            (code, remedy) = (
                .malformedLibrary,
                "the publisher must ship a 64-bit shared library built for this machine (cc -shared -fPIC …)"
            )
        case .tooLarge: (code, remedy) = (.libraryTooLarge, "ship a smaller library, or split it into listed libraries")
        case .segmentOutsideFile: (code, remedy) = (.segmentOutsideFile, rebuild)
        case .segmentMisaligned: (code, remedy) = (.segmentMisaligned, rebuild)
        case .segmentsOverlap: (code, remedy) = (.segmentsOverlap, rebuild)
        case .viewMismatch: (code, remedy) = (.viewMismatch, rebuild)
        case .addressUnmapped: (code, remedy) = (.addressUnmapped, rebuild)
        case .dynamicUnterminated: (code, remedy) = (.dynamicUnterminated, rebuild)
        case .dynamicAmbiguous: (code, remedy) = (.dynamicAmbiguous, rebuild)
        case .sectionsDisagree:
            (code, remedy) = (.sectionsDisagree, rebuild + " (strip and objcopy keep headers consistent)")
        case .tooManySegments: (code, remedy) = (.tooManySegments, rebuild)
        case .tooManySections: (code, remedy) = (.tooManySections, "link it without keeping thousands of sections")
        case .tooManyDynamicEntries:
            (code, remedy) = (
                .tooManyDynamicEntries, "link it against fewer libraries; no real library needs that many"
            )
        case .tooManySymbols:
            (code, remedy) = (.tooManySymbols, "export fewer symbols (-fvisibility=hidden, a version script)")
        case .stringTooLong: (code, remedy) = (.stringTooLong, "use shorter library names and search paths")
        case .tooManyNotes: (code, remedy) = (.tooManyNotes, rebuild)
        case .noteMalformed:
            (code, remedy) = (
                .pluginNoteMalformed,
                "emit exactly one note with VIGIL_PLUGIN_NOTE(\"\(plugin)\") (vigil_plugin.h) or the Swift SDK's "
                    + "declaration, and rebuild"
            )
        }
        return SharedLibraryError(
            code: code, plugin: plugin,
            message: "its library \(path) is not loadable as verified: \(problem.reason) — \(remedy)")
    }

    /// The Vigil note's rules: present, the manifest's name, the descriptor's ABI. All from the
    /// verified bytes, so a library with another id runs no code, not even a constructor.
    package static func checkNote(
        _ note: ELFImage.PluginNote?, descriptor: ELFImage.DescriptorHeader, path: String, plugin: String
    ) throws(SharedLibraryError) {
        guard let note else {
            throw SharedLibraryError(
                code: .pluginNoteMissing, plugin: plugin,
                message: "\(path) carries no Vigil note, so Vigil cannot check which plugin it is before mapping it — "
                    + "in C add `VIGIL_PLUGIN_NOTE(\"\(plugin)\");` (vigil_plugin.h) or use VIGIL_PLUGIN_ENTRY; in Swift "
                    + "add `\(PluginNoteSource.swift(id: plugin))` to the file with vigil_swift_plugin; then "
                    + "rebuild and sign again")
        }
        guard note.id == plugin else {
            throw SharedLibraryError(
                code: .pluginIDMismatch, plugin: plugin,
                message: "\(path) says in its Vigil note that it is plugin \"\(Sanitizer.display(note.id))\", but the "
                    + "signed manifest is for \"\(plugin)\" — the publisher must build it with the manifest's name "
                    + "(VIGIL_PLUGIN_NOTE / plugin_id) and sign again")
        }
        guard note.abiMajor == descriptor.abiMajor, note.abiMinor == descriptor.abiMinor else {
            throw SharedLibraryError(
                code: .pluginNoteMismatch, plugin: plugin,
                message: "\(path) says ABI \(note.abiMajor).\(note.abiMinor) in its Vigil note but "
                    + "\(descriptor.abiMajor).\(descriptor.abiMinor) in its descriptor — build both from one "
                    + "vigil_plugin.h")
        }
    }

    /// True for a search-path entry that can only lead to the system's libraries: `$ORIGIN` alone
    /// (a memfd's origin is /proc/self/fd), or one of the system directories.
    package static func isSafeSearchDirectory(_ entry: String) -> Bool {
        if entry == "$ORIGIN" || entry == "${ORIGIN}" || entry == "$ORIGIN/" || entry == "${ORIGIN}/" { return true }
        var trimmed = entry
        while trimmed.count > 1 && trimmed.hasSuffix("/") { trimmed.removeLast() }
        return SystemLibraries.directories.contains(trimmed)
    }

    /// The ABI rules on the descriptor header, from the bytes or from memory.
    package static func checkDescriptor(_ d: ELFImage.DescriptorHeader, path: String, plugin: String)
        throws(SharedLibraryError)
    {
        guard d.magic == VIGIL_PLUGIN_MAGIC else {
            throw SharedLibraryError(
                code: .missingDescriptor, plugin: plugin,
                message: "the \(ELFImage.entrySymbol) of \(path) does not start with the Vigil magic (found "
                    + "0x\(String(d.magic, radix: 16))) — it is not a Vigil plugin descriptor; build it with vigil_plugin.h"
            )
        }
        guard d.abiMajor == abiMajor else {
            throw SharedLibraryError(
                code: .abiMajorMismatch, plugin: plugin,
                message: "\(path) is built for plugin ABI \(d.abiMajor).\(d.abiMinor), but this Vigil implements ABI "
                    + "\(abiMajor).\(abiMinor) and loads only major \(abiMajor) — install a release of the plugin built "
                    + "for ABI \(abiMajor), or a Vigil that implements ABI \(d.abiMajor)")
        }
        guard d.abiMinor <= abiMinor else {
            throw SharedLibraryError(
                code: .abiMinorTooNew, plugin: plugin,
                message: "\(path) is built for plugin ABI \(d.abiMajor).\(d.abiMinor), newer than this Vigil's "
                    + "\(abiMajor).\(abiMinor), and may rely on what this Vigil does not provide — update Vigil, or "
                    + "install a release of the plugin built for ABI \(abiMajor).\(abiMinor) or older")
        }
        guard d.structSize >= minimumDescriptorSize, d.structSize <= maximumDescriptorSize,
            d.symbolSize >= UInt64(minimumDescriptorSize)
        else {
            throw SharedLibraryError(
                code: .missingDescriptor, plugin: plugin,
                message: "the \(ELFImage.entrySymbol) of \(path) declares a size of \(d.structSize) bytes (symbol "
                    + "\(d.symbolSize) bytes); ABI \(abiMajor) needs at least \(minimumDescriptorSize) — build it with "
                    + "vigil_plugin.h and set struct_size = sizeof(vigil_plugin_descriptor)")
        }
    }
}
