internal import CVigilPluginABI

/// The Vigil note a plugin library carries (`.note.vigil`, see `VIGIL_PLUGIN_NOTE` in
/// vigil_plugin.h), as 32-bit words, and the Swift declaration that emits it.
package enum PluginNoteSource {
    /// The note for plugin `id` and this host's ABI: `namesz`, `descsz`, `type`, "Vigil\0" padded,
    /// `abi_major | abi_minor << 16`, then the id, a NUL and zeros to a multiple of 4 bytes.
    package static func words(
        id: String, abiMajor: UInt16 = UInt16(VIGIL_PLUGIN_ABI_MAJOR), abiMinor: UInt16 = UInt16(VIGIL_PLUGIN_ABI_MINOR)
    ) -> [UInt32] {
        var idBytes = Array(id.utf8) + [0]
        while idBytes.count % 4 != 0 { idBytes.append(0) }
        var words: [UInt32] = [6, UInt32(4 + idBytes.count), ELFImage.noteType, 0x6967_6956, 0x0000_006C]
        words.append(UInt32(abiMajor) | UInt32(abiMinor) << 16)
        for i in stride(from: 0, to: idBytes.count, by: 4) {
            words.append((0..<4).reduce(UInt32(0)) { $0 | UInt32(idBytes[i + $1]) << (8 * UInt32($1)) })
        }
        return words
    }

    /// The Swift declaration (Swift 6.3 `@section`/`@used`, one line) that puts the note for `id`
    /// into the library being built.
    package static func swift(id: String) -> String {
        let words = words(id: id)
        let type = "(" + Array(repeating: "UInt32", count: words.count).joined(separator: ", ") + ")"
        let values = words.map { "0x" + String($0, radix: 16) }.joined(separator: ", ")
        return "@section(\".note.vigil\") @used let vigilPluginNote: \(type) = (\(values))"
    }
}
