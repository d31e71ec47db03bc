// The error shape, the file layer (SafeFile, AtomicFile, StateFile) and CoreError are VigilBase's,
// so that modules that need only them (the audio plugins' state files) link none of the core's
// dependencies (TOMLKit, libsodium); every user of the core sees them through this re-export.
@_exported public import VigilBase
