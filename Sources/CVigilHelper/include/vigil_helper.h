// The wire protocol between the host and `vigil-plugin-helper`, the process a shared-library
// plugin runs in (docs/native-plugins.md, "The helper process"), and the host's calls to start
// and talk to it. Imported by VigilSharedLibrary (HelperProcess) and by the helper itself.
//
// Transport: an AF_UNIX SOCK_SEQPACKET socket pair; the helper's end is its descriptor 3. Every
// message is one record: a uint32_t type, then fields in order, each a uint32_t or a string
// (uint32_t length, then that many bytes, no NUL), in the machine's byte order (both ends are
// the same machine). A record is at most VIGIL_HELPER_MESSAGE_MAX bytes. The host sends one
// request and waits for its reply; the helper sends events, log lines and denials at any time.
#ifndef VIGIL_HELPER_H
#define VIGIL_HELPER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/// The largest record either side sends or accepts.
#define VIGIL_HELPER_MESSAGE_MAX 65536
/// The descriptor the helper finds its socket on.
#define VIGIL_HELPER_SOCKET_FD 3

enum {
    // ---- host -> helper: requests, each answered by one VIGIL_HELPER_REPLY --------------------
    /// string policy: the confinement to apply to itself before any plugin byte is mapped
    /// (VigilConfine's wire encoding; empty: none).
    VIGIL_HELPER_POLICY = 1,
    /// One library, its sealed memfd attached (SCM_RIGHTS): string soname. Dependencies first,
    /// the plugin's own library last; each is mapped (dlopen of /proc/self/fd/N) on arrival.
    VIGIL_HELPER_LIBRARY = 2,
    /// The descriptor header checked in the bytes (16 bytes: magic, abi major/minor, struct size,
    /// flags) as a string, then string plugin name, host name, state directory, uint32_t count and
    /// count pairs of strings (settings). The helper checks the mapped descriptor, calls init,
    /// get_interface and create.
    VIGIL_HELPER_CREATE = 3,
    /// start().
    VIGIL_HELPER_START = 4,
    /// stop().
    VIGIL_HELPER_STOP = 5,
    /// details(): the reply carries uint32_t count and count pairs of strings after its fields.
    VIGIL_HELPER_DETAILS = 6,
    /// destroy(), deinit(), unmap; the helper replies and exits 0.
    VIGIL_HELPER_DESTROY = 7,

    // ---- helper -> host -------------------------------------------------------------------------
    /// The answer to the last request: string code ("" when it succeeded, else a
    /// SharedLibraryErrorCode spelling), string variant (which check), string detail (the plugin's
    /// or the loader's text).
    VIGIL_HELPER_REPLY = 0x100,
    /// A keep-alive event: uint32_t kind (VIGIL_HELPER_EVENT_*), string reason.
    VIGIL_HELPER_EVENT = 0x101,
    /// A log line of the plugin's: uint32_t level (VIGIL_LOG_*), string text.
    VIGIL_HELPER_LOG = 0x102,
    /// A line the confinement reported (an operation it denied): string line.
    VIGIL_HELPER_DENIAL = 0x103,
};

enum {
    VIGIL_HELPER_EVENT_INTERRUPTED = 1,
    VIGIL_HELPER_EVENT_RESUMED = 2,
    VIGIL_HELPER_EVENT_RESUME_FAILED = 3,
    VIGIL_HELPER_EVENT_DETAILS_CHANGED = 4,
};

/// Starts `path` as the helper with a fresh exec (posix_spawn: no fork of the caller's image runs
/// any code), `socket_fd` as its descriptor 3 and nothing else open but 0-2, default signal
/// dispositions and an empty mask, argv { path, "<caller's pid>" }, environment `envp`. Returns 0
/// and sets *pid and *pidfd (close-on-exec), or -errno.
int vigil_helper_spawn(const char *path, int socket_fd, char *const envp[], pid_t *pid, int *pidfd);

/// socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC); 0 or -errno.
int vigil_helper_socketpair(int fds[2]);

/// Sends one record, with `attached` (>= 0) as SCM_RIGHTS. Never blocks past a full buffer (the
/// helper reads every record), never raises SIGPIPE. Returns 0 or -errno.
int vigil_helper_send(int fd, const void *bytes, size_t length, int attached);

/// Receives one record without blocking: its length, 0 at end-of-file, -EAGAIN when none waits,
/// -EMSGSIZE for a truncated record (dropped), or another -errno. Descriptors sent with it are closed.
long vigil_helper_receive(int fd, void *buffer, size_t capacity);

/// Reaps the child behind `pidfd` without blocking: 1 with *code (CLD_EXITED, CLD_KILLED,
/// CLD_DUMPED) and *status, 0 while it runs, -errno.
int vigil_helper_reap(int pidfd, int *code, int *status);

/// pidfd_send_signal(2): 0 or -errno.
int vigil_helper_kill(int pidfd, int signal);

#endif
