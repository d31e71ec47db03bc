// The denial reports of calls whose refusal comes back as an error (Landlock's EACCES on open,
// connect and execve): definitions of libc's open/openat/fopen/connect/execve for the ONE C
// executable that maps a plugin (include this header in exactly one of its files and link it with
// -rdynamic). The executable comes first in the dynamic linker's global scope, so the plugin's
// references to these names, and those of the libraries it links (the Swift runtime, Foundation),
// resolve here; each forwards to the kernel and reports a refusal with vigil_confine_report_*.
//
// This is the REPORT, not the enforcement: a plugin that makes the raw system call (syscall(2),
// inline assembly) or reaches these calls inside libc itself (glibc's own calls do not go through
// the PLT) is refused by the kernel all the same, but its refusal is not reported. seccomp's
// refusals are always reported (by the SIGSYS handler vigil_confine_apply installs).
#ifndef VIGIL_CONFINE_INTERPOSE_H
#define VIGIL_CONFINE_INTERPOSE_H

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "vigil_confine.h"

static int vigil_confine_opens_for_write(int flags) {
    return (flags & O_ACCMODE) != O_RDONLY || (flags & (O_CREAT | O_TRUNC)) != 0;
}

static int vigil_confine_openat(const char *operation, int directory, const char *path, int flags, mode_t mode) {
    long result = syscall(SYS_openat, directory, path, flags, mode);
    if (result < 0) {
        int error_number = errno;
        if (directory == AT_FDCWD || (path && path[0] == '/'))
            vigil_confine_report_path(operation, path, vigil_confine_opens_for_write(flags), error_number);
        errno = error_number;
    }
    return (int)result;
}

#define VIGIL_CONFINE_MODE(flags, mode)                         \
    do {                                                        \
        if ((flags) & (O_CREAT | __O_TMPFILE)) {                \
            va_list arguments;                                  \
            va_start(arguments, flags);                         \
            mode = (mode_t)va_arg(arguments, int);              \
            va_end(arguments);                                  \
        }                                                       \
    } while (0)

int open(const char *path, int flags, ...) {
    mode_t mode = 0;
    VIGIL_CONFINE_MODE(flags, mode);
    return vigil_confine_openat("open", AT_FDCWD, path, flags, mode);
}

int open64(const char *path, int flags, ...) {
    mode_t mode = 0;
    VIGIL_CONFINE_MODE(flags, mode);
    return vigil_confine_openat("open", AT_FDCWD, path, flags, mode);
}

int openat(int directory, const char *path, int flags, ...) {
    mode_t mode = 0;
    VIGIL_CONFINE_MODE(flags, mode);
    return vigil_confine_openat("open", directory, path, flags, mode);
}

int openat64(int directory, const char *path, int flags, ...) {
    mode_t mode = 0;
    VIGIL_CONFINE_MODE(flags, mode);
    return vigil_confine_openat("open", directory, path, flags, mode);
}

// _FORTIFY_SOURCE's names for open without a mode.
int __open_2(const char *path, int flags) { return vigil_confine_openat("open", AT_FDCWD, path, flags, 0); }
int __openat_2(int directory, const char *path, int flags) {
    return vigil_confine_openat("open", directory, path, flags, 0);
}

static FILE *vigil_confine_fopen(const char *symbol, const char *path, const char *mode) {
    FILE *(*next)(const char *, const char *) = (FILE * (*)(const char *, const char *)) dlsym(RTLD_NEXT, symbol);
    if (!next) {
        errno = ENOSYS;
        return NULL;
    }
    FILE *file = next(path, mode);
    if (!file) {
        int error_number = errno;
        vigil_confine_report_path("open", path, mode && (strchr(mode, 'w') || strchr(mode, 'a') || strchr(mode, '+')),
                                  error_number);
        errno = error_number;
    }
    return file;
}

FILE *fopen(const char *path, const char *mode) { return vigil_confine_fopen("fopen", path, mode); }
FILE *fopen64(const char *path, const char *mode) { return vigil_confine_fopen("fopen64", path, mode); }

int connect(int socket, const struct sockaddr *address, socklen_t length) {
    long result = syscall(SYS_connect, socket, address, length);
    if (result < 0) {
        int error_number = errno;
        vigil_confine_report_connect(address, length, error_number);
        errno = error_number;
    }
    return (int)result;
}

int execve(const char *path, char *const argv[], char *const envp[]) {
    long result = syscall(SYS_execve, path, argv, envp);
    int error_number = errno;
    vigil_confine_report_path("execve", path, 0, error_number);
    errno = error_number;
    return (int)result;
}

int execv(const char *path, char *const argv[]) { return execve(path, argv, environ); }

#endif
