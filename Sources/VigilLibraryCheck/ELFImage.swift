import Glibc

/// What Vigil reads from a shared library's verified bytes before anything of it is mapped: its
/// SONAME, the libraries it needs (`DT_NEEDED`), its search path, the plugin descriptor's header
/// and the plugin's `.note.vigil` note.
///
/// Every structure is read **the way glibc's loader reads it**: the dynamic array at `PT_DYNAMIC`'s
/// `p_vaddr` mapped through the `PT_LOAD` segments and walked to `DT_NULL`, the string, symbol and
/// hash tables at the addresses the dynamic array gives, the descriptor found by the same hash
/// lookup `dlsym` does. A library whose file view and loader view could differ (a load segment
/// outside the file or overlapping another, an offset not congruent with its address, a dynamic
/// array that does not end inside its segment, section headers that say something else) is
/// refused, each case with its own ``Problem/Kind``.
///
/// Every loop is bounded by an explicit cap in ``Limits`` and every comparison by the length of
/// what it looks for, so checking is linear in the size of the file.
package struct ELFImage: Sendable {
    /// `DT_SONAME`, if present.
    package let soname: String?
    /// `DT_NEEDED` entries (and filter libraries), in order.
    package let needed: [String]
    /// The directories of `DT_RPATH` and `DT_RUNPATH`, in order.
    package let searchPath: [String]
    /// The header of the exported `vigil_plugin_entry` descriptor, or `nil` when the library does
    /// not export the symbol (a dependency).
    package let descriptor: DescriptorHeader?
    /// The plugin note (`.note.vigil`, owner "Vigil", type 1) in a `PT_NOTE` segment, if any.
    package let note: PluginNote?

    /// The first 16 bytes of `vigil_plugin_entry` (plain integers, present in the file bytes).
    package struct DescriptorHeader: Sendable, Hashable {
        package var magic: UInt32
        package var abiMajor: UInt16
        package var abiMinor: UInt16
        package var structSize: UInt32
        package var flags: UInt32
        /// The symbol's `st_size`.
        package var symbolSize: UInt64

        /// Creates a header from its fields.
        package init(
            magic: UInt32, abiMajor: UInt16, abiMinor: UInt16, structSize: UInt32, flags: UInt32, symbolSize: UInt64
        ) {
            self.magic = magic
            self.abiMajor = abiMajor
            self.abiMinor = abiMinor
            self.structSize = structSize
            self.flags = flags
            self.symbolSize = symbolSize
        }
    }

    /// What `VIGIL_PLUGIN_NOTE` (vigil_plugin.h) and the Swift SDK emit: the plugin's id and the ABI
    /// it was built for, readable without mapping anything.
    package struct PluginNote: Sendable, Hashable {
        package var abiMajor: UInt16
        package var abiMinor: UInt16
        package var id: String

        /// Creates a note from its fields.
        package init(abiMajor: UInt16, abiMinor: UInt16, id: String) {
            self.abiMajor = abiMajor
            self.abiMinor = abiMinor
            self.id = id
        }
    }

    package static let entrySymbol = "vigil_plugin_entry"
    /// The plugin note's owner and type.
    package static let noteOwner = "Vigil"
    package static let noteType: UInt32 = 1
    /// The longest plugin id in a note (bytes, without the NUL).
    package static let noteIDLimit = 127

    #if arch(x86_64)
    package static let hostMachine: UInt16 = 62  // EM_X86_64
    #elseif arch(arm64)
    package static let hostMachine: UInt16 = 183  // EM_AARCH64
    #else
    package static let hostMachine: UInt16 = 0xFFFF
    #endif

    /// The loader maps whole pages of this size (at least 4 KiB; 16 or 64 KiB on some arm64 kernels).
    package static let pageSize = UInt64(max(4096, sysconf(Int32(_SC_PAGESIZE))))

    struct Segment {
        var offset: UInt64
        var vaddr: UInt64
        var filesz: UInt64
        var memsz: UInt64
    }

    /// Parses `bytes` under `limits`.
    package init(_ bytes: [UInt8], limits: Limits = .standard) throws(Problem) {
        guard bytes.count <= limits.fileSize else {
            throw Problem(
                .tooLarge,
                "it is \(bytes.count) bytes, more than the \(limits.fileSize) bytes a plugin library may have")
        }
        let r = Reader(bytes: bytes)
        guard bytes.count >= 64, bytes[0] == 0x7F, bytes[1] == 0x45, bytes[2] == 0x4C, bytes[3] == 0x46 else {
            throw Problem(.malformed, "it is not an ELF file")
        }
        guard bytes[4] == 2 else { throw Problem(.malformed, "it is not a 64-bit ELF object") }
        guard bytes[5] == 1 else { throw Problem(.malformed, "it is not a little-endian ELF object") }
        let type = try r.u16(16)
        guard type == 3 else {
            throw Problem(.malformed, "it is not a shared object (ELF type \(type), expected ET_DYN)")
        }
        let machine = try r.u16(18)
        guard machine == Self.hostMachine else {
            throw Problem(
                .malformed,
                "it is built for another machine (ELF machine \(machine), this host is \(Self.hostMachine))")
        }
        let phoff = try r.u64(32), shoff = try r.u64(40)
        let phentsize = try r.u16(54), phnum = try r.u16(56), shentsize = try r.u16(58), shnum = try r.u16(60)
        guard phentsize == 56, phnum > 0 else { throw Problem(.malformed, "its program headers are malformed") }
        guard Int(phnum) <= limits.programHeaders else {
            throw Problem(
                .tooManySegments, "it has \(phnum) program headers, more than the \(limits.programHeaders) allowed")
        }

        // The program headers, read from the file as the loader reads them.
        var loads: [Segment] = []
        var dynamicHeader: Segment?
        var noteHeaders: [(segment: Segment, align: UInt64)] = []
        var hasInterpreter = false
        for i in 0..<UInt64(phnum) {
            let at = try r.offset(phoff, plus: i * 56)
            let segment = Segment(
                offset: try r.u64(at + 8), vaddr: try r.u64(at + 16), filesz: try r.u64(at + 32),
                memsz: try r.u64(at + 40))
            switch try r.u32(at) {
            case 1: loads.append(segment)
            case 2:
                guard dynamicHeader == nil else {
                    throw Problem(.dynamicAmbiguous, "it has two PT_DYNAMIC program headers")
                }
                dynamicHeader = segment
            case 3: hasInterpreter = true
            case 4: noteHeaders.append((segment, try r.u64(at + 48)))
            default: break
            }
        }
        guard !hasInterpreter else {
            throw Problem(.malformed, "it is an executable (it has a program interpreter), not a shared library")
        }
        guard !loads.isEmpty else { throw Problem(.malformed, "it has no load segment") }

        // Load segments: inside the file, offset congruent with address, ascending and apart.
        var previousEnd: UInt64 = 0
        for (index, s) in loads.enumerated() {
            let (fileEnd, o1) = s.offset.addingReportingOverflow(s.filesz)
            let (memoryEnd, o2) = s.vaddr.addingReportingOverflow(s.memsz)
            guard !o1, !o2, fileEnd <= UInt64(bytes.count), s.filesz <= s.memsz else {
                throw Problem(
                    .segmentOutsideFile,
                    "its load segment \(index) (offset 0x\(hex(s.offset)), \(s.filesz) file bytes, \(s.memsz) memory "
                        + "bytes) does not lie inside the file's \(bytes.count) bytes")
            }
            guard s.vaddr % Self.pageSize == s.offset % Self.pageSize else {
                throw Problem(
                    .segmentMisaligned,
                    "its load segment \(index) has address 0x\(hex(s.vaddr)) but file offset 0x\(hex(s.offset)), which "
                        + "differ by other than whole pages")
            }
            let firstPage = s.vaddr / Self.pageSize * Self.pageSize
            guard index == 0 || firstPage >= previousEnd else {
                throw Problem(
                    .segmentsOverlap,
                    "its load segment \(index) at 0x\(hex(s.vaddr)) overlaps the page of the segment before it, or "
                        + "comes before it")
            }
            let (roundedEnd, o3) = memoryEnd.addingReportingOverflow(Self.pageSize - 1)
            guard !o3 else { throw Problem(.segmentOutsideFile, "its load segment \(index) wraps around") }
            previousEnd = roundedEnd / Self.pageSize * Self.pageSize
        }

        /// The file offset of `length` bytes at `vaddr`, if they are file-backed in one load segment.
        func mapped(_ vaddr: UInt64, _ length: UInt64) -> UInt64? { Self.fileOffset(of: vaddr, length, in: loads) }
        func require(_ vaddr: UInt64, _ length: UInt64, _ what: String) throws(Problem) -> UInt64 {
            guard let offset = mapped(vaddr, length) else {
                throw Problem(
                    .addressUnmapped,
                    "its \(what) (\(length) bytes at address 0x\(hex(vaddr))) is not inside the file bytes of a load "
                        + "segment")
            }
            return offset
        }

        // The dynamic array at p_vaddr, walked to DT_NULL as the loader walks it.
        guard let dynamicHeader else { throw Problem(.malformed, "it has no dynamic section") }
        let dynamicOffset = try require(dynamicHeader.vaddr, 16, "dynamic array")
        guard dynamicOffset == dynamicHeader.offset else {
            throw Problem(
                .viewMismatch,
                "its PT_DYNAMIC says file offset 0x\(hex(dynamicHeader.offset)), but the loader reads the dynamic array "
                    + "at address 0x\(hex(dynamicHeader.vaddr)), which is file offset 0x\(hex(dynamicOffset))")
        }
        var neededOffsets: [UInt64] = []
        var pathOffsets: [UInt64] = []
        var single: [UInt64: UInt64] = [:]  // tag → value, for tags the loader keeps one of
        var count: UInt64 = 0
        while true {
            guard count < UInt64(limits.dynamicEntries) else {
                throw Problem(
                    .tooManyDynamicEntries, "its dynamic array has more than \(limits.dynamicEntries) entries")
            }
            let address = dynamicHeader.vaddr &+ count * 16
            guard (count + 1) * 16 <= dynamicHeader.filesz, let at = mapped(address, 16) else {
                throw Problem(
                    .dynamicUnterminated,
                    "its dynamic array does not end (DT_NULL) inside its PT_DYNAMIC segment's \(dynamicHeader.filesz) "
                        + "bytes: the loader would read entries the file's headers do not show")
            }
            let tag = try r.u64(at), value = try r.u64(at + 8)
            count += 1
            if tag == 0 { break }
            switch tag {
            // DT_NEEDED, and DT_AUXILIARY/DT_FILTER, which also make the dynamic linker load a library.
            case 1, 0x7FFF_FFFD, 0x7FFF_FFFF: neededOffsets.append(value)
            case 15, 29: pathOffsets.append(value)  // DT_RPATH, DT_RUNPATH
            // DT_HASH, DT_STRTAB, DT_SYMTAB, DT_STRSZ, DT_SYMENT, DT_SONAME, DT_GNU_HASH.
            case 4, 5, 6, 10, 11, 14, 0x6FFF_FEF5:
                guard single.updateValue(value, forKey: tag) == nil else {
                    throw Problem(
                        .dynamicAmbiguous,
                        "its dynamic array gives tag 0x\(hex(tag)) twice (the loader uses the last, a reader may use the "
                            + "first)")
                }
            default: break
            }
        }
        let dynamicSize = count * 16

        // The string table at DT_STRTAB, as the loader reads it.
        var strings: (offset: UInt64, size: UInt64)?
        if let strtab = single[5] {
            guard let strsz = single[10] else { throw Problem(.malformed, "it has DT_STRTAB but no DT_STRSZ") }
            strings = (try require(strtab, strsz, "dynamic string table"), strsz)
        }
        func dynamicString(_ offset: UInt64) throws(Problem) -> String {
            guard let strings else { throw Problem(.malformed, "its dynamic array names strings but has no DT_STRTAB") }
            guard offset < strings.size else {
                throw Problem(.addressUnmapped, "a dynamic entry points outside the dynamic string table")
            }
            return try r.cString(
                strings.offset + offset, limit: strings.offset + strings.size, maximum: limits.stringLength)
        }
        var needed: [String] = []
        for offset in neededOffsets { needed.append(try dynamicString(offset)) }
        self.needed = needed
        self.soname = try single[14].map { (o: UInt64) throws(Problem) -> String in try dynamicString(o) }
        var searchPath: [String] = []
        for offset in pathOffsets {
            searchPath += try dynamicString(offset).split(separator: ":", omittingEmptySubsequences: false).map(
                String.init)
        }
        self.searchPath = searchPath

        // The descriptor, found by the hash lookup dlsym does.
        if let syment = single[11], syment != 24 {
            throw Problem(.malformed, "its DT_SYMENT is \(syment), not 24")
        }
        var descriptor: DescriptorHeader?
        if let symtab = single[6], let strings {
            let lookup = SymbolLookup(reader: r, limits: limits, symtab: symtab, strings: strings)
            let found: UInt64?
            if let gnuHash = single[0x6FFF_FEF5] {
                found = try lookup.gnu(table: gnuHash, require: require)
            } else if let hash = single[4] {
                found = try lookup.sysv(table: hash, require: require)
            } else {
                found = nil
            }
            if let found {
                let sym = try require(symtab &+ found &* 24, 24, "symbol \(found)")
                let info = try r.u8(sym + 4)
                let value = try r.u64(sym + 8), size = try r.u64(sym + 16)
                guard info & 0xF == 1, info >> 4 == 1 || info >> 4 == 2 else {
                    throw Problem(
                        .malformed,
                        "its \(Self.entrySymbol) is not a global data object (it must be the const descriptor)")
                }
                guard let fileOffset = mapped(value, 16) else {
                    throw Problem(
                        .addressUnmapped,
                        "its \(Self.entrySymbol) has no initialised bytes in the file (it must be a const descriptor)")
                }
                descriptor = DescriptorHeader(
                    magic: try r.u32(fileOffset), abiMajor: try r.u16(fileOffset + 4),
                    abiMinor: try r.u16(fileOffset + 6), structSize: try r.u32(fileOffset + 8),
                    flags: try r.u32(fileOffset + 12), symbolSize: size)
            }
        }
        self.descriptor = descriptor

        // Notes, from PT_NOTE segments whose file offset is where their address maps.
        var notes = 0
        var note: PluginNote?
        for (header, align) in noteHeaders {
            let (end, overflow) = header.offset.addingReportingOverflow(header.filesz)
            guard !overflow, end <= UInt64(bytes.count) else {
                throw Problem(.segmentOutsideFile, "a PT_NOTE segment lies outside the file")
            }
            if header.memsz > 0, let at = mapped(header.vaddr, header.filesz), at != header.offset {
                throw Problem(
                    .viewMismatch,
                    "a PT_NOTE says file offset 0x\(hex(header.offset)), but its address maps to 0x\(hex(at))")
            }
            // Notes in a segment aligned to 8 (GNU properties) pad to 8, others to 4, counted from
            // the segment's start (as readelf and the kernel do).
            let padding: UInt64 = align == 8 ? 8 : 4
            func padded(_ n: UInt64) -> UInt64 { (n + padding - 1) / padding * padding }
            var at: UInt64 = 0  // from header.offset
            let size = header.filesz
            while at < size {
                notes += 1
                guard notes <= limits.notes else {
                    throw Problem(.tooManyNotes, "it has more than \(limits.notes) notes")
                }
                guard size - at >= 12 else { throw Problem(.noteMalformed, "a note header is cut off") }
                let base = header.offset + at
                let namesz = UInt64(try r.u32(base)), descsz = UInt64(try r.u32(base + 4)), type = try r.u32(base + 8)
                guard namesz <= size, descsz <= size else { throw Problem(.noteMalformed, "a note is cut off") }
                let descAt = padded(at + 12 + namesz)
                guard descAt <= size, size - descAt >= descsz else {
                    throw Problem(.noteMalformed, "a note's contents are cut off")
                }
                at = min(size, padded(descAt + descsz))
                let nameAt = base + 12
                guard namesz == 6, try r.equals(nameAt, Array(Self.noteOwner.utf8) + [0]) else { continue }
                guard type == Self.noteType else { continue }
                guard note == nil else { throw Problem(.noteMalformed, "it has two Vigil notes") }
                note = try Self.pluginNote(r, header.offset + descAt, descsz)
            }
        }
        self.note = note

        // Section headers, when present, must say what the program headers say.
        try Self.checkSections(
            r, limits: limits, at: shoff, count: shnum, entrySize: shentsize, loads: loads, dynamic: dynamicHeader,
            dynamicSize: dynamicSize, tables: single)
    }

    /// The Vigil note's contents: `uint16 abi_major, uint16 abi_minor`, the id and a NUL, zeros.
    private static func pluginNote(_ r: Reader, _ at: UInt64, _ size: UInt64) throws(Problem) -> PluginNote {
        guard size >= 6, size <= 4 + UInt64(noteIDLimit) + 4 else {
            throw Problem(.noteMalformed, "its Vigil note is \(size) bytes, not 6 to \(noteIDLimit + 8)")
        }
        let major = try r.u16(at), minor = try r.u16(at + 2)
        let id = try r.cString(at + 4, limit: at + size, maximum: noteIDLimit)
        let rest = at + 4 + UInt64(id.utf8.count) + 1
        guard id.utf8.count > 0, try r.equals(rest, [UInt8](repeating: 0, count: Int(at + size - rest))) else {
            throw Problem(.noteMalformed, "its Vigil note's plugin id is empty or followed by other bytes")
        }
        return PluginNote(abiMajor: major, abiMinor: minor, id: id)
    }
}
