/// Edits a gcc-built (so trusted, well-formed) shared library the way an attacker would: the
/// tests' stand-in for a hex editor. Only what the tests need; every offset comes from the
/// library's own headers.
struct ELFPatch {
    var bytes: [UInt8]

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    func u16(_ at: Int) -> UInt64 { UInt64(bytes[at]) | UInt64(bytes[at + 1]) << 8 }
    func u32(_ at: Int) -> UInt64 { (0..<4).reduce(0) { $0 | UInt64(bytes[at + $1]) << (8 * UInt64($1)) } }
    func u64(_ at: Int) -> UInt64 { (0..<8).reduce(0) { $0 | UInt64(bytes[at + $1]) << (8 * UInt64($1)) } }
    mutating func set32(_ at: Int, _ value: UInt64) {
        for k in 0..<4 { bytes[at + k] = UInt8((value >> (8 * k)) & 0xFF) }
    }
    mutating func set64(_ at: Int, _ value: UInt64) {
        for k in 0..<8 { bytes[at + k] = UInt8((value >> (8 * k)) & 0xFF) }
    }

    /// The file offsets of the program headers of `type`, in order.
    func programHeaders(_ type: UInt64) -> [Int] {
        let phoff = Int(u64(32)), phnum = Int(u16(56))
        return (0..<phnum).map { phoff + $0 * 56 }.filter { u32($0) == type }
    }

    /// The file offsets of the section headers of `type`, in order.
    func sectionHeaders(_ type: UInt64) -> [Int] {
        let shoff = Int(u64(40)), shnum = Int(u16(60))
        return (0..<shnum).map { shoff + $0 * 64 }.filter { u32($0 + 4) == type }
    }

    /// The dynamic array's entries up to and including DT_NULL, and its file offset.
    func dynamicEntries() -> (offset: Int, entries: [(tag: UInt64, value: UInt64)]) {
        let offset = Int(u64(programHeaders(2)[0] + 8))
        var entries: [(UInt64, UInt64)] = []
        var at = offset
        while true {
            entries.append((u64(at), u64(at + 8)))
            if u64(at) == 0 { break }
            at += 16
        }
        return (offset, entries)
    }

    /// Rewrites the dynamic array as `entries` (same length or shorter, then zeros).
    mutating func writeDynamic(_ entries: [(tag: UInt64, value: UInt64)]) {
        let (offset, old) = dynamicEntries()
        precondition(entries.count <= old.count)
        for (i, entry) in entries.enumerated() {
            set64(offset + i * 16, entry.tag)
            set64(offset + i * 16 + 8, entry.value)
        }
    }

    /// The attack of issue 25: DT_SONAME, DT_STRTAB and DT_STRSZ first, everything else after them,
    /// and `PT_DYNAMIC`'s `p_filesz` (and the `.dynamic` section's size) shrunk to those three
    /// entries, so a reader that stops at `p_filesz` sees no `DT_NEEDED` and no `DT_RUNPATH` while
    /// glibc walks on to `DT_NULL` and uses all of them.
    mutating func hideDynamicTail() {
        let entries = dynamicEntries().entries
        let front = [14, 5, 10].compactMap { tag in entries.first { $0.tag == tag } }
        precondition(front.count == 3, "needs DT_SONAME, DT_STRTAB and DT_STRSZ")
        let rest = entries.filter { ![14, 5, 10].contains($0.tag) }
        writeDynamic(front + rest)
        set64(programHeaders(2)[0] + 32, 48)
        for section in sectionHeaders(6) { set64(section + 32, 48) }
    }
}
