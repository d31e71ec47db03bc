extension ELFImage {
    /// `dlsym`'s lookup of ``entrySymbol`` in one object, with every walk capped.
    struct SymbolLookup {
        let reader: Reader
        let limits: Limits
        let symtab: UInt64
        let strings: (offset: UInt64, size: UInt64)
        static let name = Array(ELFImage.entrySymbol.utf8)

        typealias Require = (UInt64, UInt64, String) throws(Problem) -> UInt64

        /// True when symbol `index` is one glibc's `check_match` accepts for our name.
        func matches(_ index: UInt64, _ require: Require) throws(Problem) -> Bool {
            let sym = try require(symtab &+ index &* 24, 24, "symbol \(index)")
            let nameOffset = UInt64(try reader.u32(sym))
            let info = try reader.u8(sym + 4), shndx = try reader.u16(sym + 6), value = try reader.u64(sym + 8)
            let stt = info & 0xF
            if value == 0 && shndx != 0xFFF1 && stt != 6 { return false }
            // STT_NOTYPE, OBJECT, FUNC, COMMON, TLS, GNU_IFUNC.
            guard [0, 1, 2, 5, 6, 10].contains(stt) else { return false }
            let length = UInt64(Self.name.count) + 1
            guard nameOffset < strings.size, strings.size - nameOffset >= length else { return false }
            return try reader.equals(strings.offset + nameOffset, Self.name + [0])
        }

        /// The GNU hash lookup (DT_GNU_HASH), as `do_lookup_x` does it.
        func gnu(table: UInt64, require: Require) throws(Problem) -> UInt64? {
            let header = try require(table, 16, "GNU hash table")
            let buckets = UInt64(try reader.u32(header)), symoffset = UInt64(try reader.u32(header + 4))
            let bloomWords = UInt64(try reader.u32(header + 8)), shift = UInt64(try reader.u32(header + 12))
            guard buckets <= UInt64(limits.symbols), bloomWords <= UInt64(limits.symbols) else {
                throw Problem(
                    .tooManySymbols,
                    "its GNU hash table has \(buckets) buckets and \(bloomWords) bloom words (at most \(limits.symbols))"
                )
            }
            guard buckets > 0, bloomWords > 0, bloomWords & (bloomWords - 1) == 0 else {
                throw Problem(.malformed, "its GNU hash table has no buckets or a bloom filter of \(bloomWords) words")
            }
            let all = try require(table, 16 + bloomWords * 8 + buckets * 4, "GNU hash table")
            var h: UInt32 = 5381
            for c in Self.name { h = h &* 33 &+ UInt32(c) }
            let word = try reader.u64(all + 16 + (UInt64(h) / 64 & (bloomWords - 1)) * 8)
            guard (word >> (UInt64(h) & 63)) & (word >> ((UInt64(h) >> shift) & 63)) & 1 == 1 else { return nil }
            var index = UInt64(try reader.u32(all + 16 + bloomWords * 8 + UInt64(h) % buckets * 4))
            guard index != 0 else { return nil }
            guard index >= symoffset else { throw Problem(.malformed, "its GNU hash bucket points before its chain") }
            let chain = table &+ 16 &+ bloomWords * 8 &+ buckets * 4
            var visited = 0
            while true {
                visited += 1
                guard visited <= limits.symbols else {
                    throw Problem(.tooManySymbols, "a GNU hash chain of it is longer than \(limits.symbols) symbols")
                }
                let entry = UInt64(try reader.u32(try require(chain &+ (index - symoffset) &* 4, 4, "GNU hash chain")))
                if (entry ^ UInt64(h)) >> 1 == 0, try matches(index, require) { return index }
                if entry & 1 == 1 { return nil }
                index += 1
            }
        }

        /// The SysV hash lookup (DT_HASH).
        func sysv(table: UInt64, require: Require) throws(Problem) -> UInt64? {
            let header = try require(table, 8, "hash table")
            let buckets = UInt64(try reader.u32(header)), chains = UInt64(try reader.u32(header + 4))
            guard buckets <= UInt64(limits.symbols), chains <= UInt64(limits.symbols) else {
                throw Problem(
                    .tooManySymbols,
                    "its hash table has \(buckets) buckets and \(chains) symbols (at most \(limits.symbols))")
            }
            guard buckets > 0 else { throw Problem(.malformed, "its hash table has no buckets") }
            let all = try require(table, 8 + (buckets + chains) * 4, "hash table")
            var h: UInt32 = 0
            for c in Self.name {
                h = (h << 4) &+ UInt32(c)
                let g = h & 0xF000_0000
                if g != 0 { h ^= g >> 24 }
                h &= ~g
            }
            var index = UInt64(try reader.u32(all + 8 + UInt64(h) % buckets * 4))
            var visited: UInt64 = 0
            while index != 0 {
                visited += 1
                guard index < chains, visited <= chains else {
                    throw Problem(.malformed, "a chain of its hash table leaves the table or loops")
                }
                if try matches(index, require) { return index }
                index = UInt64(try reader.u32(all + 8 + buckets * 4 + index * 4))
            }
            return nil
        }
    }
}
