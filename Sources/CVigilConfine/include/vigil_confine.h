// The kernel-side confinement of a shared-library plugin (issue 33): what the helper process applies
// to itself before it maps the plugin's library. Landlock (filesystem, TCP connect/bind, signal and
// abstract-UNIX-socket scoping), a seccomp filter (libseccomp) and PR_SET_NO_NEW_PRIVS.
//
// The policy travels from the host to the helper as text (the wire encoding below), made by the
// Swift module VigilConfine (`ConfinementPlan.encoded`) and decoded here by
// `vigil_confine_decode`. Denials are written to the report descriptor as lines (format below),
// parsed by VigilPlugin's `ConfinementDenial`.
//
// Wire encoding (UTF-8, one directive a line, '\n'-terminated, fields separated by one space; a path
// is the rest of its line and may not contain '\n' or NUL):
//   vigil-confine 1                 first line: the format and its version
//   state PATH                      the plugin's state directory (absolute), for naming denials
//   read PATH                       read (and map) PATH; a PATH ending in "/" is the directory tree
//   write PATH                      read and write PATH (create, truncate, remove inside a tree)
//   exec PATH                       read and execute PATH (the loader's directories, spawn grants)
//   network none|any|tcp            none: no socket of AF_INET/AF_INET6; any: unconfined TCP/UDP;
//                                   tcp: TCP connect only to the ports listed by `tcp-connect`
//   tcp-connect PORT                a TCP port it may connect to (decimal, 1-65535)
//   unix                            it may create AF_UNIX sockets (declared sound_server or bus)
//   spawn PATH                      an executable it may execve (also an `exec PATH` rule)
//   allow-unenforced                the operator acknowledged that this kernel cannot enforce all of it:
//                                   apply what it can instead of failing
//   end                             last line
//
// Report lines (written with one write(2) each, async-signal-safe, at most
// VIGIL_CONFINE_REPORT_MAX bytes, fields separated by one tab; '\t', '\n' and '\\' in a field are
// written as "\t", "\n" and "\\"):
//   denial<TAB>OPERATION<TAB>CAPABILITY<TAB>ARGUMENT<TAB>DETAIL\n
// OPERATION is the call refused (open, connect, execve, ptrace, kill, socket, ...). CAPABILITY names
// what would allow it: file-read, file-write (ARGUMENT: the path), tcp-connect (ARGUMENT: the port),
// network (ARGUMENT: the address family), unix-socket (sound_server or bus), spawn (ARGUMENT: the
// executable), or none (no capability allows it: ptrace, another process's memory or signals,
// namespaces, mounts, BPF, ...). DETAIL is free text (the errno name, the system call number).

#ifndef VIGIL_CONFINE_H
#define VIGIL_CONFINE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define VIGIL_CONFINE_WIRE_VERSION 1
#define VIGIL_CONFINE_REPORT_MAX 1024

// A filesystem rule's rights.
enum {
    VIGIL_CONFINE_ACCESS_READ = 1,
    VIGIL_CONFINE_ACCESS_WRITE = 2,
    VIGIL_CONFINE_ACCESS_EXECUTE = 4,
};

// `vigil_confine_policy.network`.
enum {
    VIGIL_CONFINE_NETWORK_NONE = 0,
    VIGIL_CONFINE_NETWORK_ANY = 1,
    VIGIL_CONFINE_NETWORK_TCP = 2,
};

typedef struct vigil_confine_rule {
    char *path;       // absolute; a trailing '/' is the directory tree
    uint32_t access;  // VIGIL_CONFINE_ACCESS_*
} vigil_confine_rule;

typedef struct vigil_confine_policy {
    uint32_t version;
    char *state_directory;  // may be NULL
    vigil_confine_rule *rules;
    size_t rule_count;
    uint32_t network;  // VIGIL_CONFINE_NETWORK_*
    uint16_t *tcp_connect;
    size_t tcp_connect_count;
    int unix_sockets;  // AF_UNIX allowed (sound_server or bus declared)
    char **spawn;
    size_t spawn_count;
    int allow_unenforced;
} vigil_confine_policy;

// What this kernel can enforce.
typedef struct vigil_confine_support {
    int landlock_abi;     // 0: no Landlock; 4+: TCP rules; 6+: signal and abstract-socket scoping
    int seccomp_filter;   // 1: seccomp filters (SECCOMP_SET_MODE_FILTER) are available
    int no_new_privs;     // 1: PR_SET_NO_NEW_PRIVS is available
    int user_namespaces;  // 1: an unprivileged user namespace can be created here
} vigil_confine_support;

// Fills `out` from the kernel. Returns 0 (the probe itself cannot fail; absent features are 0).
int vigil_confine_probe(vigil_confine_support *out);

// Decodes the wire encoding. On success returns 0 and `*out` (free it with vigil_confine_policy_free);
// on failure returns -1 and a message in `error`.
int vigil_confine_decode(
    const char *bytes, size_t length, vigil_confine_policy **out, char *error, size_t error_size);

void vigil_confine_policy_free(vigil_confine_policy *policy);

// Confines the calling process (every thread it has must be this one: call it before starting
// threads): PR_SET_NO_NEW_PRIVS, the Landlock ruleset, the seccomp filter with a SIGSYS handler that
// reports to `report_fd` and makes the call fail with EPERM. Returns 0, or -1 with a message in
// `error` (nothing may be mapped after a failure: the caller exits). Unless the policy allows it,
// a kernel that cannot enforce the whole policy is a failure.
int vigil_confine_apply(const vigil_confine_policy *policy, int report_fd, char *error, size_t error_size);

// Writes one report line for a call Landlock refused (the error came back to the caller), naming
// the capability that would allow it: a path's EACCES that its permission bits would have allowed; a
// TCP connect's EACCES; an abstract UNIX socket's EPERM (the scope: no capability allows it). `path`
// may be NULL. Async-signal-safe. Does nothing before vigil_confine_apply or for other errors.
void vigil_confine_report_path(const char *operation, const char *path, int write, int error_number);
void vigil_confine_report_connect(const void *address, uint32_t address_length, int error_number);

#ifdef __cplusplus
}
#endif

#endif
