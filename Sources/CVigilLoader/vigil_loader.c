#define _GNU_SOURCE
#include "vigil_loader.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

int vigil_memfd_create(const char *name, unsigned int flags) {
    return (int)syscall(SYS_memfd_create, name, flags);
}

int vigil_add_seals(int fd, unsigned int seals) {
    return fcntl(fd, F_ADD_SEALS, seals);
}

int vigil_get_seals(int fd) {
    return fcntl(fd, F_GET_SEALS);
}

int vigil_object_path(const void *address, char *buffer, size_t size) {
    Dl_info info;
    if (size == 0 || dladdr(address, &info) == 0 || info.dli_fname == NULL) return -1;
    size_t n = strlen(info.dli_fname);
    if (n >= size) return -1;
    memcpy(buffer, info.dli_fname, n + 1);
    return 0;
}
