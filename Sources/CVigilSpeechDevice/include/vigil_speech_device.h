#ifndef VIGIL_SPEECH_DEVICE_H
#define VIGIL_SPEECH_DEVICE_H

/// While nonzero on the calling thread, espeak-ng gets no audio device of its own (see
/// vigil_speech_device.c). VigilSpeech sets it around espeak-ng's initialisation.
void vigil_speech_without_device(int on);

/// How many times espeak-ng asked for an audio device on this thread and was refused.
unsigned long vigil_speech_devices_refused(void);

/// Nonzero when the dynamic linker resolves espeak-ng's create_audio_device_object to the
/// definition above (it does when libespeak-ng is linked into the program).
int vigil_speech_device_guard_active(void);

#endif
