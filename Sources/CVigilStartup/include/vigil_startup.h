// Process set-up for the `vigil` executable that must run before the Swift runtime opens any
// descriptor (a constructor does that work at load time), and the release of its start-up code.
#ifndef VIGIL_STARTUP_H
#define VIGIL_STARTUP_H

/// The descriptors that must be free when `vigil` starts, or it exits at once (before the Swift
/// runtime opens any): swift-nio's event loop and libdispatch take an epoll, an eventfd and a
/// timerfd each, libdispatch a signalfd per trapped signal (SIGTERM, SIGINT, SIGHUP), `vigil up`
/// its vigil.toml lock and the status file it writes, and every command the files it reads;
/// with room to spare, so that what runs out later is a plugin's own descriptor, which it reports.
#define VIGIL_STARTUP_DESCRIPTORS_NEEDED 16
/// The exit status when they are not (sysexits' EX_OSFILE range: 71 is taken by an unreadable
/// command line).
#define VIGIL_STARTUP_NO_DESCRIPTORS_EXIT 72

/// Drops this process's page mappings of the executable's own code (its read-only, executable
/// segment) with madvise(MADV_DONTNEED), so that what start-up alone ran (argument parsing,
/// configuration, manifest verification), and what the kernel mapped around it, stops counting
/// as the process's memory; the pages stay in the page cache, and what runs later is mapped
/// again on first use. Returns the bytes released, 0 when nothing could be (a segment that was
/// written to, DT_TEXTREL), or -errno.
long vigil_release_startup_code(void);

#endif
