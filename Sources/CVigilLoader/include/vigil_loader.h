// Linux calls the shared-library plugin loader needs that Swift's Glibc module does not expose
// (memfd_create and file seals need _GNU_SOURCE; dladdr's Dl_info too). Imported only by VigilLibraryCheck (LoaderCalls).
#ifndef VIGIL_LOADER_H
#define VIGIL_LOADER_H

#include <stddef.h>

// memfd_create(2) flags and fcntl(2) seals, with the kernel's values.
#define VIGIL_MFD_CLOEXEC 0x0001U
#define VIGIL_MFD_ALLOW_SEALING 0x0002U
#define VIGIL_MFD_NOEXEC_SEAL 0x0008U
#define VIGIL_MFD_EXEC 0x0010U
#define VIGIL_F_SEAL_SEAL 0x0001U
#define VIGIL_F_SEAL_SHRINK 0x0002U
#define VIGIL_F_SEAL_GROW 0x0004U
#define VIGIL_F_SEAL_WRITE 0x0008U

/// memfd_create(2); -1 with errno on failure.
int vigil_memfd_create(const char *name, unsigned int flags);
/// fcntl(fd, F_ADD_SEALS, seals).
int vigil_add_seals(int fd, unsigned int seals);
/// fcntl(fd, F_GET_SEALS).
int vigil_get_seals(int fd);
/// The path of the loaded object holding `address` (dladdr), copied into `buffer`; 0 on success.
int vigil_object_path(const void *address, char *buffer, size_t size);

#endif
