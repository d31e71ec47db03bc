import Testing
import VigilLibraryCheck

/// The rules a plugin library's verified bytes must meet before anything is mapped: the
/// descriptor's ABI, the Vigil note, the search path, the ELF reader on a real system library.
@Suite("Library checks: descriptor, note, search path, ELF reader")
struct LibraryRulesTests {
    static let good = ELFImage.DescriptorHeader(
        magic: 0x4C50_4756, abiMajor: VerifiedLibrarySet.abiMajor, abiMinor: VerifiedLibrarySet.abiMinor,
        structSize: 48, flags: 0, symbolSize: 48)

    static func code(_ body: () throws(SharedLibraryError) -> Void) -> SharedLibraryErrorCode? {
        do {
            try body()
            return nil
        } catch {
            #expect(error.plugin == "p")
            return error.code
        }
    }

    @Test("the descriptor: the magic, the same ABI major, no newer minor, a size ABI 1 can read")
    func descriptorRules() {
        func check(_ change: (inout ELFImage.DescriptorHeader) -> Void) -> SharedLibraryErrorCode? {
            var d = Self.good
            change(&d)
            return Self.code { () throws(SharedLibraryError) in
                try VerifiedLibrarySet.checkDescriptor(d, path: "/x/libp.so", plugin: "p")
            }
        }
        #expect(check { _ in } == nil)
        #expect(check { $0.magic = 0x4C50_4757 } == .missingDescriptor)
        #expect(check { $0.abiMajor += 1 } == .abiMajorMismatch)
        #expect(check { $0.abiMinor += 1 } == .abiMinorTooNew)
        #expect(check { $0.structSize = 47 } == .missingDescriptor)
        #expect(check { $0.structSize = 4097 } == .missingDescriptor)
        #expect(check { $0.symbolSize = 8 } == .missingDescriptor)
        #expect(
            check {
                $0.structSize = 64; $0.symbolSize = 64
            } == nil, "a descriptor that grew at the end")
    }

    @Test("the note: present, naming the manifest's plugin, with the descriptor's ABI")
    func noteRules() {
        func check(_ note: ELFImage.PluginNote?) -> SharedLibraryErrorCode? {
            Self.code { () throws(SharedLibraryError) in
                try VerifiedLibrarySet.checkNote(note, descriptor: Self.good, path: "/x/libp.so", plugin: "p")
            }
        }
        let major = VerifiedLibrarySet.abiMajor
        let minor = VerifiedLibrarySet.abiMinor
        #expect(check(.init(abiMajor: major, abiMinor: minor, id: "p")) == nil)
        #expect(check(nil) == .pluginNoteMissing)
        #expect(check(.init(abiMajor: major, abiMinor: minor, id: "q")) == .pluginIDMismatch)
        #expect(check(.init(abiMajor: major, abiMinor: minor + 1, id: "p")) == .pluginNoteMismatch)
    }

    @Test("the note a plugin carries, word by word, and the Swift line that emits it")
    func noteWords() {
        let abi = UInt32(VerifiedLibrarySet.abiMajor) | UInt32(VerifiedLibrarySet.abiMinor) << 16
        // namesz 6 ("Vigil\0"), descsz 4 + "ab\0" padded to 4, type 1, "Vigil\0\0\0", ABI, "ab\0\0".
        #expect(PluginNoteSource.words(id: "ab") == [6, 8, 1, 0x6967_6956, 0x0000_006C, abi, 0x0000_6261])
        #expect(PluginNoteSource.words(id: "abcd").count == 8, "a 4-byte id needs a fifth byte for its NUL")
        #expect(
            PluginNoteSource.swift(id: "ab")
                == "@section(\".note.vigil\") @used let vigilPluginNote: (UInt32, UInt32, UInt32, UInt32, UInt32, "
                + "UInt32, UInt32) = (0x6, 0x8, 0x1, 0x69676956, 0x6c, 0x\(String(abi, radix: 16)), 0x6261)")
    }

    @Test("search paths: $ORIGIN and the system directories only")
    func searchPaths() {
        for safe in ["$ORIGIN", "${ORIGIN}/", "/usr/lib", "/lib/\(SystemLibraries.multiarch)/"] {
            #expect(VerifiedLibrarySet.isSafeSearchDirectory(safe), "\(safe)")
        }
        for unsafe in ["$ORIGIN/../lib", "/tmp", "/usr/lib/../../tmp", "", "lib"] {
            #expect(!VerifiedLibrarySet.isSafeSearchDirectory(unsafe), "\(unsafe)")
        }
    }

    @Test("system libraries: what is loaded or installed counts, other names and paths do not")
    func systemLibraries() throws {
        #expect(SystemLibraries.isLoaded("libc.so.6"))
        #expect(SystemLibraries.contains("libc.so.6"))
        #expect(!SystemLibraries.contains("libvigil-no-such-library.so.9"))
        #expect(SystemLibraries.installedPath("../libc.so.6") == nil)
        #expect(!SystemLibraries.isLoaded("/usr/lib/libc.so.6"), "a path is never taken for a loaded name")
    }

    @Test("the ELF reader on a real system library, and its refusals of what is not one")
    func elfReader() throws {
        // libm, not libc: libc.so.6 can also be run (it has a program interpreter), which the check refuses.
        let path = try #require(SystemLibraries.installedPath("libm.so.6"))
        let bytes = try #require(FileIO.contents(ofFile: path, limit: 64 << 20))
        let image = try ELFImage(bytes)
        #expect(image.soname == "libm.so.6")
        #expect(image.needed.contains("libc.so.6"))
        #expect(image.descriptor == nil, "libm exports no vigil_plugin_entry")
        #expect(image.note == nil)
        func kind(_ bytes: [UInt8], _ limits: ELFImage.Limits = .standard) -> ELFImage.Problem.Kind? {
            do {
                _ = try ELFImage(bytes, limits: limits)
                return nil
            } catch {
                return error.kind
            }
        }
        #expect(kind(Array("#!/bin/sh\n".utf8) + [UInt8](repeating: 0, count: 64)) == .malformed)
        let libc = try #require(
            SystemLibraries.installedPath("libc.so.6").flatMap { FileIO.contents(ofFile: $0, limit: 64 << 20) })
        #expect(kind(libc) == .malformed, "a library that is also a program")
        var executable = bytes
        executable[16] = 2  // ET_EXEC
        #expect(kind(executable) == .malformed)
        var small = ELFImage.Limits()
        small.fileSize = bytes.count - 1
        #expect(kind(bytes, small) == .tooLarge)
    }
}
