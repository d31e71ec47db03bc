public import VigilSoundscape

/// The controls of the soundscape plugin running in this process (`nil` when it is not active):
/// set the soundscape, volume or preset, pause/resume, the sleep timer, list soundscapes.
///
/// ```swift
/// try Vigil.soundscape?.select("rain")
/// Vigil.soundscape?.setPreset(.low)
/// ```
public var soundscape: SoundscapeController? { SoundscapeController.running }

/// A soundscape the plugin can play.
public typealias Soundscape = VigilSoundscape.Soundscape
/// The soundscape volume presets (Off, Low, Med, High, Max).
public typealias VolumePreset = VigilSoundscape.VolumePreset
/// A snapshot of the soundscape player.
public typealias SoundscapeState = VigilSoundscape.SoundscapeState
/// Why a soundscape control was refused.
public typealias SoundscapeError = VigilSoundscape.SoundscapeError
