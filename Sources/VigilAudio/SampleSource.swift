/// Produces the audio a ``PlaybackStream`` plays.
///
/// The stream calls ``render(into:)`` only from its writer thread, one call after another, to
/// fill interleaved stereo frames (`buffer.count` is always even: left, right, left, right…) of
/// signed 16-bit samples at ``PlaybackConfiguration/sampleRate``. A source keeps its own phase
/// between calls, so consecutive buffers join without clicks. Rendering must not block.
public protocol SampleSource: Sendable {
    /// Fills every sample of `buffer`.
    mutating func render(into buffer: UnsafeMutableBufferPointer<Int16>)

    /// True when every sample this source will ever render is 0. The PulseAudio backend then
    /// sends gaps instead of zeros, which the server plays as silence without copying a sample
    /// (``render(into:)`` is never called). The default is `false`.
    var isSilent: Bool { get }
}

extension SampleSource {
    public var isSilent: Bool { false }
}

/// A source of digital silence: every sample is 0.
public struct ZeroSource: SampleSource {
    /// Creates a silent source.
    public init() {}

    public var isSilent: Bool { true }

    public func render(into buffer: UnsafeMutableBufferPointer<Int16>) {
        buffer.update(repeating: 0)
    }
}
