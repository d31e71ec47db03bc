/// What Vigil reads from a shared library's verified bytes before anything of it is mapped:
/// its SONAME, the libraries it needs (`DT_NEEDED`) and the plugin descriptor's header.
///
/// Only 64-bit little-endian ELF shared objects for the host's machine are accepted. Every
/// offset is bounds-checked; a malformed file is refused, never trusted.
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

    /// Why the bytes are not an acceptable shared object.
    package struct Problem: Error, Sendable {
        package let reason: String
    }

    package static let entrySymbol = "vigil_plugin_entry"

    #if arch(x86_64)
    package static let hostMachine: UInt16 = 62  // EM_X86_64
    #elseif arch(arm64)
    package static let hostMachine: UInt16 = 183  // EM_AARCH64
    #else
    package static let hostMachine: UInt16 = 0xFFFF
    #endif

    private struct Segment {
        var offset: UInt64
        var vaddr: UInt64
        var filesz: UInt64
    }

    /// Parses `bytes`.
    package init(_ bytes: [UInt8]) throws(Problem) {
        let r = Reader(bytes: bytes)
        guard bytes.count >= 64, bytes[0] == 0x7F, bytes[1] == 0x45, bytes[2] == 0x4C, bytes[3] == 0x46 else {
            throw Problem(reason: "it is not an ELF file")
        }
        guard bytes[4] == 2 else { throw Problem(reason: "it is not a 64-bit ELF object") }
        guard bytes[5] == 1 else { throw Problem(reason: "it is not a little-endian ELF object") }
        let type = try r.u16(16)
        guard type == 3 else { throw Problem(reason: "it is not a shared object (ELF type \(type), expected ET_DYN)") }
        let machine = try r.u16(18)
        guard machine == Self.hostMachine else {
            throw Problem(
                reason: "it is built for another machine (ELF machine \(machine), this host is \(Self.hostMachine))")
        }
        let phoff = try r.u64(32), shoff = try r.u64(40)
        let phentsize = try r.u16(54), phnum = try r.u16(56), shentsize = try r.u16(58), shnum = try r.u16(60)
        guard phentsize == 56, phnum > 0 else { throw Problem(reason: "its program headers are malformed") }

        var loads: [Segment] = []
        var dynamic: (offset: UInt64, size: UInt64)?
        var hasInterpreter = false
        for i in 0..<UInt64(phnum) {
            let at = try r.offset(phoff, plus: i * 56)
            let pType = try r.u32(at)
            switch pType {
            case 1:
                loads.append(Segment(offset: try r.u64(at + 8), vaddr: try r.u64(at + 16), filesz: try r.u64(at + 32)))
            case 2: dynamic = (try r.u64(at + 8), try r.u64(at + 32))
            case 3: hasInterpreter = true
            default: break
            }
        }
        guard !hasInterpreter else {
            throw Problem(reason: "it is an executable (it has a program interpreter), not a shared library")
        }
        guard let dynamic else { throw Problem(reason: "it has no dynamic section") }

        // The dynamic section: DT_NEEDED, DT_SONAME, DT_STRTAB, DT_STRSZ.
        var neededOffsets: [UInt64] = []
        var pathOffsets: [UInt64] = []
        var sonameOffset: UInt64?
        var strtab: UInt64?
        var strsz: UInt64?
        var index: UInt64 = 0
        while index * 16 + 16 <= dynamic.size {
            let at = try r.offset(dynamic.offset, plus: index * 16)
            let tag = try r.u64(at), value = try r.u64(at + 8)
            if tag == 0 { break }
            switch tag {
            // DT_NEEDED, and DT_AUXILIARY/DT_FILTER, which also make the dynamic linker load a library.
            case 1, 0x7FFF_FFFD, 0x7FFF_FFFF: neededOffsets.append(value)
            case 5: strtab = value
            case 10: strsz = value
            case 14: sonameOffset = value
            case 15, 29: pathOffsets.append(value)  // DT_RPATH, DT_RUNPATH
            default: break
            }
            index += 1
        }
        func segmentOffset(_ vaddr: UInt64, length: UInt64) -> UInt64? {
            for s in loads
            where vaddr >= s.vaddr && vaddr - s.vaddr <= s.filesz && s.filesz - (vaddr - s.vaddr) >= length {
                return s.offset + (vaddr - s.vaddr)
            }
            return nil
        }
        if !neededOffsets.isEmpty || sonameOffset != nil || !pathOffsets.isEmpty {
            guard let strtab, let strsz, let tableOffset = segmentOffset(strtab, length: strsz) else {
                throw Problem(reason: "its dynamic string table is missing or outside the file")
            }
            func dynamicString(_ offset: UInt64) throws(Problem) -> String {
                guard offset < strsz else { throw Problem(reason: "a dynamic entry points outside the string table") }
                return try r.cString(tableOffset + offset, limit: tableOffset + strsz)
            }
            var needed: [String] = []
            for offset in neededOffsets { needed.append(try dynamicString(offset)) }
            self.needed = needed
            self.soname = try sonameOffset.map { (o: UInt64) throws(Problem) -> String in try dynamicString(o) }
            var searchPath: [String] = []
            for offset in pathOffsets {
                searchPath += try dynamicString(offset).split(separator: ":", omittingEmptySubsequences: false).map(
                    String.init)
            }
            self.searchPath = searchPath
        } else {
            self.needed = []
            self.soname = nil
            self.searchPath = []
        }

        // The exported descriptor, through the section headers' .dynsym.
        var descriptor: DescriptorHeader?
        if shoff != 0 && shnum != 0 {
            guard shentsize == 64 else { throw Problem(reason: "its section headers are malformed") }
            for i in 0..<UInt64(shnum) {
                let at = try r.offset(shoff, plus: i * 64)
                guard try r.u32(at + 4) == 11 else { continue }  // SHT_DYNSYM
                let symOffset = try r.u64(at + 24), symSize = try r.u64(at + 32), link = UInt64(try r.u32(at + 40))
                guard link < UInt64(shnum) else { throw Problem(reason: "its symbol table links to no string table") }
                let strHeader = try r.offset(shoff, plus: link * 64)
                let strOffset = try r.u64(strHeader + 24), strSize = try r.u64(strHeader + 32)
                _ = try r.offset(strOffset, plus: strSize)
                var s: UInt64 = 0
                while (s + 1) * 24 <= symSize {
                    let sym = try r.offset(symOffset, plus: s * 24)
                    s += 1
                    let nameOffset = UInt64(try r.u32(sym))
                    guard nameOffset < strSize,
                        try r.cString(strOffset + nameOffset, limit: strOffset + strSize) == Self.entrySymbol
                    else { continue }
                    let info = try r.u8(sym + 4), shndx = try r.u16(sym + 6)
                    let value = try r.u64(sym + 8), size = try r.u64(sym + 16)
                    guard shndx != 0 else { continue }  // an undefined reference, not the definition
                    guard info & 0xF == 1, info >> 4 == 1 || info >> 4 == 2 else {
                        throw Problem(
                            reason:
                                "its \(Self.entrySymbol) is not a global data object (it must be the const descriptor)")
                    }
                    guard let fileOffset = segmentOffset(value, length: 16) else {
                        throw Problem(
                            reason: "its \(Self.entrySymbol) has no initialised bytes (it must be a const descriptor)")
                    }
                    descriptor = DescriptorHeader(
                        magic: try r.u32(fileOffset), abiMajor: try r.u16(fileOffset + 4),
                        abiMinor: try r.u16(fileOffset + 6),
                        structSize: try r.u32(fileOffset + 8), flags: try r.u32(fileOffset + 12), symbolSize: size)
                }
            }
        }
        self.descriptor = descriptor
    }

    /// Bounds-checked little-endian reads.
    private struct Reader {
        let bytes: [UInt8]

        func offset(_ base: UInt64, plus delta: UInt64) throws(Problem) -> UInt64 {
            let (sum, overflow) = base.addingReportingOverflow(delta)
            guard !overflow, sum <= UInt64(bytes.count) else {
                throw Problem(reason: "an offset points outside the file")
            }
            return sum
        }

        func check(_ at: UInt64, _ width: UInt64) throws(Problem) -> Int {
            let (end, overflow) = at.addingReportingOverflow(width)
            guard !overflow, end <= UInt64(bytes.count) else { throw Problem(reason: "the file is truncated") }
            return Int(at)
        }

        func u8(_ at: UInt64) throws(Problem) -> UInt8 { bytes[try check(at, 1)] }

        func u16(_ at: UInt64) throws(Problem) -> UInt16 {
            let i = try check(at, 2)
            return UInt16(bytes[i]) | UInt16(bytes[i + 1]) << 8
        }

        func u32(_ at: UInt64) throws(Problem) -> UInt32 {
            let i = try check(at, 4)
            var v: UInt32 = 0
            for k in 0..<4 { v |= UInt32(bytes[i + k]) << (8 * UInt32(k)) }
            return v
        }

        func u64(_ at: UInt64) throws(Problem) -> UInt64 {
            let i = try check(at, 8)
            var v: UInt64 = 0
            for k in 0..<8 { v |= UInt64(bytes[i + k]) << (8 * UInt64(k)) }
            return v
        }

        /// A NUL-terminated UTF-8 string starting at `at` and ending before `limit`.
        func cString(_ at: UInt64, limit: UInt64) throws(Problem) -> String {
            let end = min(limit, UInt64(bytes.count))
            var i = at
            while i < end && bytes[Int(i)] != 0 { i += 1 }
            guard i < end else { throw Problem(reason: "a string runs past its table") }
            guard let s = String(validating: bytes[Int(at)..<Int(i)], as: UTF8.self) else {
                throw Problem(reason: "a name in its dynamic section is not UTF-8")
            }
            return s
        }
    }
}
