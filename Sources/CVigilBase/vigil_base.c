#define _GNU_SOURCE
#include "vigil_base.h"

#include <sys/eventfd.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/prctl.h>
#include <fcntl.h>
#include <stdio.h>

// What `make` (and scripts/package-deb.sh through it) records about a build: it writes
// vigil_build_info.h into the build directory and passes that directory with -Xcc -I. Only this
// file includes it, so a new revision recompiles this file alone. A plain `swift build` has no
// such header: no revision, and a development build.
#if __has_include("vigil_build_info.h")
#include "vigil_build_info.h"
#endif
#ifndef VIGIL_BUILD_REVISION
#define VIGIL_BUILD_REVISION ""
#endif
#ifndef VIGIL_BUILD_FOR_INSTALL
#define VIGIL_BUILD_FOR_INSTALL 0
#endif

void vigil_set_thread_name(const char *name) {
    (void)prctl(PR_SET_NAME, name, 0, 0, 0);
}

const char *vigil_build_revision(void) {
    return VIGIL_BUILD_REVISION;
}

int vigil_build_for_install(void) {
    return VIGIL_BUILD_FOR_INSTALL;
}

int vigil_base_eventfd(void) {
    return eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
}

int vigil_base_accept(int listener) {
    return accept4(listener, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
}

int vigil_base_exchange(const char *a, const char *b) {
    return renameat2(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE);
}
