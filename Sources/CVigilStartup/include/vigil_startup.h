// Process set-up for the `vigil` executable that must run before the Swift runtime opens any
// descriptor. It has no API: a constructor does the work at load time.
#ifndef VIGIL_STARTUP_H
#define VIGIL_STARTUP_H
#endif
