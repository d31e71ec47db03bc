// Process set-up for the `vigil` executable that must run before the Swift runtime opens any
// descriptor (a constructor does that work at load time), and the release of its start-up code.
#ifndef VIGIL_STARTUP_H
#define VIGIL_STARTUP_H

/// Drops this process's page mappings of the executable's own code (its read-only, executable
/// segment) with madvise(MADV_DONTNEED), so that what start-up alone ran (argument parsing,
/// configuration, manifest verification), and what the kernel mapped around it, stops counting
/// as the process's memory; the pages stay in the page cache, and what runs later is mapped
/// again on first use. Returns the bytes released, 0 when nothing could be (a segment that was
/// written to, DT_TEXTREL), or -errno.
long vigil_release_startup_code(void);

#endif
