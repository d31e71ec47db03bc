// The umbrella: the host core, re-exported, with the parts this module adds.
@_exported public import VigilHostCore
