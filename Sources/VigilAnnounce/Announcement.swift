public import VigilAudio

/// One prompt to play: what it says and, optionally, its own policy.
public struct Announcement: Sendable, Hashable {
    /// Where the prompt's audio comes from.
    public enum Content: Sendable, Hashable {
        /// Text spoken by espeak-ng.
        case speech(String)
        /// Audio the host made itself (a chime, pre-rendered speech).
        case audio(PromptAudio)
        /// A sound file (WAV, FLAC, Ogg Vorbis, Opus or MP3, decoded with libsndfile), at most
        /// ``Announcement/maxFileSeconds`` long.
        case file(String)
    }

    /// The longest sound file accepted as a prompt, in seconds.
    public static let maxFileSeconds = 600.0

    /// The prompt.
    public var content: Content
    /// The policy for this prompt; `nil` uses `[announce] policy`.
    public var policy: AnnouncementPolicy?

    /// Creates an announcement.
    public init(_ content: Content, policy: AnnouncementPolicy? = nil) {
        self.content = content
        self.policy = policy
    }

    /// Text to speak.
    public static func say(_ text: String, policy: AnnouncementPolicy? = nil) -> Announcement {
        Announcement(.speech(text), policy: policy)
    }

    /// A sound file to play.
    public static func file(_ path: String, policy: AnnouncementPolicy? = nil) -> Announcement {
        Announcement(.file(path), policy: policy)
    }

    /// In-memory audio to play.
    public static func play(_ audio: PromptAudio, policy: AnnouncementPolicy? = nil) -> Announcement {
        Announcement(.audio(audio), policy: policy)
    }
}
