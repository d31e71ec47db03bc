/// A soundscape the plugin can play: one of the four made by code, or a user's sound file.
public struct Soundscape: Sendable, Hashable, Identifiable, Codable {
    /// Where the sound comes from.
    public enum Kind: String, Sendable, Hashable, Codable {
        /// Generated at play time (no file, no loop seam).
        case generated
        /// A sound file named in the plugin's settings, looped with a crossfade.
        case file
    }

    /// The identifier (`ocean-waves`, or the name given to a file in `vigil.toml`).
    public var id: String
    /// Human-readable title (MPRIS `xesam:title`).
    public var title: String
    public var kind: Kind
    /// The file, for ``Kind/file``.
    public var path: String?

    /// The loudness every soundscape is levelled to at volume 1.0 (EBU R128 integrated).
    public static let targetLoudness = -27.0
    /// The highest true peak at volume 1.0, in dBTP.
    public static let truePeakCeiling = -6.0

    /// The soundscapes made by code, in the order Next cycles through them.
    public static let generated: [Soundscape] = [
        Soundscape(id: "ocean-waves", title: "Ocean waves", kind: .generated),
        Soundscape(id: "rain", title: "Rain", kind: .generated),
        Soundscape(id: "brown-noise", title: "Brown noise", kind: .generated),
        Soundscape(id: "pink-noise", title: "Pink noise", kind: .generated),
    ]

    /// The default soundscape.
    public static let defaultID = "ocean-waves"

    /// A valid soundscape or file name: 1–40 of a–z, 0–9 and `-`, starting with a letter (it
    /// becomes part of a D-Bus object path).
    public static func isValidID(_ id: String) -> Bool {
        guard let first = id.utf8.first, (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(first), id.utf8.count <= 40
        else {
            return false
        }
        return id.utf8.allSatisfy {
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains($0) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0)
                || $0 == UInt8(ascii: "-")
        }
    }
}

/// The volume presets (Igloo's values): Off keeps the stream running, silent.
public enum VolumePreset: String, Sendable, Hashable, CaseIterable, Codable {
    case off, low, med, high, max

    /// The volume 0…1.
    public var volume: Double {
        switch self {
        case .off: 0
        case .low: 0.1
        case .med: 0.3
        case .high: 0.5
        case .max: 0.75
        }
    }

    /// The default: Med.
    public static let `default` = VolumePreset.med

    /// The preset whose volume is `volume` (within 0.001), if any.
    public init?(volume: Double) {
        guard let match = Self.allCases.first(where: { abs($0.volume - volume) < 0.001 }) else { return nil }
        self = match
    }
}

/// Creates the voice for a generated soundscape.
func makeGeneratedVoice(_ id: String, seed: UInt64) -> (any Voice)? {
    switch id {
    case "ocean-waves": OceanWavesVoice(seed: seed)
    case "rain": RainVoice(seed: seed)
    case "brown-noise": BrownNoiseVoice(seed: seed)
    case "pink-noise": PinkNoiseVoice(seed: seed)
    default: nil
    }
}
