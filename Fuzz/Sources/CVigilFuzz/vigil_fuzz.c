#include "vigil_fuzz.h"

// libFuzzer's entry point for programs with their own main (LLVM 11 and later). Weak: it is
// present only when the program is linked with `-sanitize=fuzzer` (scripts/fuzz.sh).
extern int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size))
    __attribute__((weak));

static int (*vigil_fuzz_callback)(const uint8_t *data, size_t size);

// libFuzzer's own main, linked in with the runtime but never run (vigil-fuzz's main runs the
// driver), still names this function.
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    return vigil_fuzz_callback == NULL ? 0 : vigil_fuzz_callback(data, size);
}

int vigil_fuzz_run(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size)) {
    if (LLVMFuzzerRunDriver == NULL) return -1;
    vigil_fuzz_callback = callback;
    return LLVMFuzzerRunDriver(argc, argv, callback);
}
