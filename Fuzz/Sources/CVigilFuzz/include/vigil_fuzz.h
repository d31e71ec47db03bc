#ifndef VIGIL_FUZZ_H
#define VIGIL_FUZZ_H

#include <stddef.h>
#include <stdint.h>

/// Runs libFuzzer over `callback` with libFuzzer's command line `argc`/`argv` and returns its
/// exit status, or returns -1 at once when the program was linked without the fuzzer runtime
/// (an ordinary `swift build`).
int vigil_fuzz_run(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));

#endif
