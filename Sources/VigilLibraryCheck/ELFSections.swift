extension ELFImage {
    /// Section headers, when present, must say what the program headers and the dynamic array
    /// say: every allocated section where the load segments map it, and the dynamic array, symbol,
    /// string and hash tables where the loader reads them (`tables`: the dynamic array's tags).
    static func checkSections(
        _ r: Reader, limits: Limits, at shoff: UInt64, count shnum: UInt16, entrySize shentsize: UInt16,
        loads: [Segment], dynamic dynamicHeader: Segment, dynamicSize: UInt64, tables single: [UInt64: UInt64]
    ) throws(Problem) {
        func mapped(_ vaddr: UInt64, _ length: UInt64) -> UInt64? { fileOffset(of: vaddr, length, in: loads) }
        guard shoff != 0 || shnum != 0 else { return }
        guard shnum != 0 else {
            throw Problem(.tooManySections, "its section count is in extended numbering (more than 65,279 sections)")
        }
        guard Int(shnum) <= limits.sections else {
            throw Problem(.tooManySections, "it has \(shnum) section headers, more than the \(limits.sections) allowed")
        }
        guard shentsize == 64 else { throw Problem(.malformed, "its section headers are malformed") }
        _ = try r.offset(shoff, plus: UInt64(shnum) * 64)
        var addresses: [UInt32: UInt64] = [:]  // section type → address, for the tables above
        var sizes: [UInt32: UInt64] = [:]
        var links: [UInt32: UInt32] = [:]
        var sectionAddress: [UInt64] = []
        var sectionSize: [UInt64] = []
        for i in 0..<UInt64(shnum) {
            let at = shoff + i * 64
            let shType = try r.u32(at + 4), flags = try r.u64(at + 8), address = try r.u64(at + 16)
            let offset = try r.u64(at + 24), size = try r.u64(at + 32), link = try r.u32(at + 40)
            sectionAddress.append(address)
            sectionSize.append(size)
            if [6, 11, 5, 0x6FFF_FFF6].contains(shType) {  // SHT_DYNAMIC, SHT_DYNSYM, SHT_HASH, SHT_GNU_HASH
                guard addresses.updateValue(address, forKey: shType) == nil else {
                    throw Problem(.sectionsDisagree, "it has two sections of type \(shType)")
                }
                sizes[shType] = size
                links[shType] = link
            }
            // SHF_ALLOC sections must be where the loader maps them; SHT_NOBITS and TLS only in memory.
            guard flags & 0x2 != 0, size > 0, flags & 0x400 == 0 else { continue }
            if shType == 8 {
                guard
                    loads.contains(where: {
                        address >= $0.vaddr && address - $0.vaddr <= $0.memsz && $0.memsz - (address - $0.vaddr) >= size
                    })
                else {
                    throw Problem(
                        .sectionsDisagree, "its section \(i) (0x\(hex(address))) lies outside every load segment")
                }
            } else {
                guard let mappedOffset = mapped(address, size), mappedOffset == offset else {
                    throw Problem(
                        .sectionsDisagree,
                        "its section \(i) says file offset 0x\(hex(offset)) at address 0x\(hex(address)), but the "
                            + "load segments map other bytes there")
                }
            }
        }
        func agree(_ shType: UInt32, _ value: UInt64?, _ what: String) throws(Problem) {
            guard addresses[shType] == value else {
                throw Problem(
                    .sectionsDisagree,
                    "its section headers place the \(what) at "
                        + (addresses[shType].map { "0x" + hex($0) } ?? "no address")
                        + ", the loader at " + (value.map { "0x" + hex($0) } ?? "no address"))
            }
        }
        try agree(6, dynamicHeader.vaddr, "dynamic array")
        guard let dynamicSectionSize = sizes[6], dynamicSectionSize == dynamicHeader.filesz,
            dynamicSize <= dynamicSectionSize
        else {
            throw Problem(
                .sectionsDisagree,
                "its .dynamic section is \(sizes[6] ?? 0) bytes, its PT_DYNAMIC \(dynamicHeader.filesz) bytes, and the "
                    + "loader reads \(dynamicSize)")
        }
        try agree(11, single[6], "symbol table")
        try agree(5, single[4], "SysV hash table")
        try agree(0x6FFF_FFF6, single[0x6FFF_FEF5], "GNU hash table")
        if let link = links[11] {
            guard link < UInt32(shnum), sectionAddress[Int(link)] == single[5],
                sectionSize[Int(link)] == single[10]
            else {
                throw Problem(
                    .sectionsDisagree,
                    "its symbol table's string section is not the DT_STRTAB/DT_STRSZ table the loader reads")
            }
        }

    }

    /// The file offset of `length` bytes at `vaddr`, if they are file-backed in one load segment.
    static func fileOffset(of vaddr: UInt64, _ length: UInt64, in loads: [Segment]) -> UInt64? {
        for s in loads
        where vaddr >= s.vaddr && vaddr - s.vaddr <= s.filesz && s.filesz - (vaddr - s.vaddr) >= length {
            return s.offset + (vaddr - s.vaddr)
        }
        return nil
    }
}
