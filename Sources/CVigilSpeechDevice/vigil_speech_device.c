// espeak-ng 1.51's espeak_ng_InitializeOutput() creates a pcaudiolib audio object whatever the
// output mode — even AUDIO_OUTPUT_SYNCHRONOUS, where it never plays — and pcaudiolib probes
// PulseAudio with a blocking pa_simple_new() that has no timeout: a sound server that accepts and
// never answers (or is SIGSTOPped) holds that call forever. Vigil only retrieves samples through
// the synth callback and plays them on its own stream, with its own deadline.
//
// This definition of pcaudiolib's entry point comes before libpcaudio in the process's symbol
// lookup (it is linked into the program, and libespeak-ng's reference to the symbol exports it),
// so espeak-ng calls it. While VigilSpeech initialises espeak-ng it answers "no device", which
// espeak-ng handles as on a machine without audio; at any other time, or on any other thread,
// it forwards to the real pcaudiolib, so nothing else in the process changes.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>

#include "vigil_speech_device.h"

struct audio_object;

static _Thread_local int without_device;
static _Thread_local unsigned long refused;

void vigil_speech_without_device(int on) { without_device = on; }

unsigned long vigil_speech_devices_refused(void) { return refused; }

struct audio_object *create_audio_device_object(
    const char *device, const char *application_name, const char *description) {
    if (without_device) {
        refused++;
        return NULL;
    }
    typedef struct audio_object *(*create_fn)(const char *, const char *, const char *);
    create_fn next = (create_fn)dlsym(RTLD_NEXT, "create_audio_device_object");
    return next ? next(device, application_name, description) : NULL;
}

int vigil_speech_device_guard_active(void) {
    // The definition the dynamic linker hands to libespeak-ng is the one global lookup finds.
    return dlsym(RTLD_DEFAULT, "create_audio_device_object") == (void *)&create_audio_device_object;
}
