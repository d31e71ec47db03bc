/// A request the sound server sends a playing stream (PulseAudio's stream events).
///
/// PulseAudio's `module-role-cork` sends ``cork`` to `music` and `video` streams while a `phone`
/// stream plays (and mutes them), and ``uncork`` when it ends. The requests are advisory: a
/// keep-alive stream stays connected and uncorked (a corked stream lets the sink suspend) and
/// goes quiet instead. Only the native PulseAudio backend receives them; pipewire-pulse sends none.
public enum ServerRequest: String, Sendable, Hashable {
    /// Be quiet for a while (`request-cork`).
    case cork
    /// The reason to be quiet is over (`request-uncork`), or the stream was reopened.
    case uncork
}
