// The constructor runs before main() and before the Swift runtime or libdispatch open anything:
// - descriptors 0, 1 and 2 are opened to /dev/null when closed (`vigil run -- cmd 2>&-`), so
//   that no internal descriptor (an eventfd, a socket) becomes "standard error" and receives
//   (or crashes on) text meant for the user;
// - SIGPIPE is ignored: a closed output pipe (`vigil up | head -2`) is an EPIPE error the writer
//   handles, not a death that leaves workers and files behind. Workers get default dispositions
//   back before exec (CVigilSpawn).
#define _GNU_SOURCE
#include "vigil_startup.h"

#include <elf.h>
#include <errno.h>
#include <link.h>
#include <stdint.h>
#include <sys/mman.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

__attribute__((constructor)) static void vigil_startup(void) {
    for (int fd = 0; fd <= 2; fd++) {
        if (fcntl(fd, F_GETFD) == -1 && errno == EBADF) {
            int opened = open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
            if (opened >= 0 && opened != fd) {
                (void)dup2(opened, fd);
                (void)close(opened);
            }
        }
    }
    (void)signal(SIGPIPE, SIG_IGN);
}

// --- Start-up code release -------------------------------------------------------------------
// The executable's text is never written (no DT_TEXTREL: checked), so its pages are clean copies
// of the file: dropping the mappings loses nothing, and a later fault maps the same bytes again.

struct vigil_release {
    long released;
    int error;
};

static int vigil_has_text_relocations(const struct dl_phdr_info *info) {
    for (int i = 0; i < info->dlpi_phnum; i++) {
        if (info->dlpi_phdr[i].p_type != PT_DYNAMIC) continue;
        const ElfW(Dyn) *dyn = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
        for (; dyn->d_tag != DT_NULL; dyn++) {
            if (dyn->d_tag == DT_TEXTREL) return 1;
            if (dyn->d_tag == DT_FLAGS && (dyn->d_un.d_val & DF_TEXTREL)) return 1;
        }
    }
    return 0;
}

static int vigil_release_main_program(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    struct vigil_release *result = data;
    // The first object is the main program (an empty name); stop after it.
    if (vigil_has_text_relocations(info)) return 1;
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X) || (ph->p_flags & PF_W)) continue;
        // Whole pages inside the segment only: a page shared with another segment stays.
        uintptr_t start = (info->dlpi_addr + ph->p_vaddr + page - 1) & ~(page - 1);
        uintptr_t end = (info->dlpi_addr + ph->p_vaddr + ph->p_memsz) & ~(page - 1);
        if (end <= start) continue;
        if (madvise((void *)start, end - start, MADV_DONTNEED) != 0) {
            result->error = errno;
            return 1;
        }
        result->released += (long)(end - start);
    }
    return 1;
}

long vigil_release_startup_code(void) {
    struct vigil_release result = {0, 0};
    dl_iterate_phdr(vigil_release_main_program, &result);
    return result.error ? -(long)result.error : result.released;
}
