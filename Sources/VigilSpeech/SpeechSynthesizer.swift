internal import CEspeakNG
internal import CVigilSpeechDevice
import Synchronization
public import VigilAudio
@_exported public import VigilBase

/// Text to speech with espeak-ng's library, rendered into memory (nothing is played here, and
/// espeak-ng gets no audio device or sound-server connection of its own: the caller plays the
/// samples on its own stream, with its own deadline).
///
/// espeak-ng keeps one global synthesiser per process: every call is serialised under a
/// process-wide lock, and it blocks for as long as synthesis takes (about a tenth of the
/// speech's length), so call it from a thread you own.
public enum SpeechSynthesizer {
    /// What to say and how.
    public struct Voice: Sendable, Hashable {
        /// An espeak-ng voice name (`en`, `en-us`, `de`, `fr`… — `espeak-ng --voices` lists them).
        public var name: String
        /// Words per minute (80–450).
        public var wordsPerMinute: Int

        /// Creates a voice; the default is English at espeak-ng's normal 175 words a minute.
        public init(name: String = "en", wordsPerMinute: Int = 175) {
            self.name = name
            self.wordsPerMinute = wordsPerMinute
        }
    }

    /// Why synthesis failed.
    public typealias Failure = CodedError<SpeechFailureCode>

    /// The longest text accepted, in bytes.
    public static let maxTextBytes = 16 * 1024

    private struct State {
        var sampleRate: Int32 = 0
    }
    private static let state = Mutex(State())

    /// Speaks `text` into mono 16-bit audio at espeak-ng's rate (22050 Hz).
    public static func synthesize(_ text: String, voice: Voice = Voice()) throws(Failure) -> PromptAudio {
        guard !text.allSatisfy(\.isWhitespace) else {
            throw Failure(code: .invalidText, message: "the text to speak is empty — give some words to say")
        }
        guard text.utf8.count <= maxTextBytes else {
            throw Failure(
                code: .invalidText,
                message:
                    "the text to speak is \(text.utf8.count) bytes; the limit is \(maxTextBytes) — split it into several prompts"
            )
        }
        guard !text.contains("\0") else {
            throw Failure(code: .invalidText, message: "the text to speak contains a NUL character — remove it")
        }
        guard (80...450).contains(voice.wordsPerMinute) else {
            throw Failure(
                code: .invalidVoice, message: "speech rate \(voice.wordsPerMinute) words a minute; use 80 to 450")
        }
        guard !voice.name.isEmpty, voice.name.allSatisfy({ $0.isLetter || $0.isNumber || "-_+/".contains($0) }) else {
            throw Failure(
                code: .invalidVoice,
                message: "voice name \"\(voice.name)\" is not valid; use a name such as en or en-us")
        }
        return try state.withLock { state throws(Failure) -> PromptAudio in
            if state.sampleRate <= 0 {
                // espeak-ng 1.51 probes PulseAudio here, in every output mode, with a connect
                // that has no timeout; Vigil plays the samples itself, on its own stream with
                // its deadline, so espeak-ng is given no audio device (CVigilSpeechDevice).
                guard vigil_speech_device_guard_active() != 0 else {
                    throw Failure(
                        code: .unavailable,
                        message: "espeak-ng would open an audio device of its own here (libespeak-ng is not linked "
                            + "into the program, so Vigil cannot keep it off the sound server) — link VigilSpeech "
                            + "into the executable")
                }
                vigil_speech_without_device(1)
                let rate = espeak_Initialize(AUDIO_OUTPUT_SYNCHRONOUS, 0, nil, Int32(espeakINITIALIZE_DONT_EXIT))
                vigil_speech_without_device(0)
                guard rate > 0 else {
                    throw Failure(
                        code: .unavailable,
                        message: "espeak-ng could not start (its data files are missing?) — install espeak-ng-data")
                }
                state.sampleRate = rate
                espeak_SetSynthCallback { samples, count, events in
                    guard let events, let userdata = events.pointee.user_data else { return 0 }
                    let sink = Unmanaged<SampleSink>.fromOpaque(userdata).takeUnretainedValue()
                    if let samples, count > 0 {
                        sink.samples.append(contentsOf: UnsafeBufferPointer(start: samples, count: Int(count)))
                    }
                    return 0
                }
            }
            guard espeak_SetVoiceByName(voice.name) == EE_OK else {
                throw Failure(
                    code: .invalidVoice,
                    message: "espeak-ng has no voice \"\(voice.name)\" — `espeak-ng --voices` lists the installed ones")
            }
            espeak_SetParameter(espeakRATE, Int32(voice.wordsPerMinute), 0)
            let sink = SampleSink()
            let bytes = Array(text.utf8) + [0]
            let result = withExtendedLifetime(sink) {
                bytes.withUnsafeBytes { raw in
                    espeak_Synth(
                        raw.baseAddress, raw.count, 0, POS_CHARACTER, 0, UInt32(espeakCHARS_UTF8), nil,
                        Unmanaged.passUnretained(sink).toOpaque())
                }
            }
            guard result == EE_OK else {
                throw Failure(
                    code: .synthesisFailed, message: "espeak-ng failed to speak the text (error \(result.rawValue))")
            }
            guard !sink.samples.isEmpty else {
                throw Failure(
                    code: .invalidText, message: "espeak-ng produced no audio for the text — give words it can say")
            }
            return PromptAudio(samples: sink.samples, sampleRate: Int(state.sampleRate), channels: 1)
        }
    }

    /// Collects the samples of one synthesis (only touched under the lock).
    private final class SampleSink {
        var samples: [Int16] = []
    }
}

/// The kind of a ``SpeechSynthesizer/Failure``.
public enum SpeechFailureCode: String, ErrorCode {
    /// The text is empty, too long or not speakable.
    case invalidText = "invalid-text"
    /// The voice name is unknown or the rate is out of range.
    case invalidVoice = "invalid-voice"
    /// espeak-ng could not start (its data files are missing).
    case unavailable = "speech-unavailable"
    /// espeak-ng failed while speaking.
    case synthesisFailed = "synthesis-failed"
}
