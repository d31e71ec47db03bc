// The constructor runs before main() and before the Swift runtime or libdispatch open anything:
// - descriptors 0, 1 and 2 are opened to /dev/null when closed (`vigil run -- cmd 2>&-`), so
//   that no internal descriptor (an eventfd, a socket) becomes "standard error" and receives
//   (or crashes on) text meant for the user;
// - SIGPIPE is ignored: a closed output pipe (`vigil up | head -2`) is an EPIPE error the writer
//   handles, not a death that leaves workers and files behind. Workers get default dispositions
//   back before exec (CVigilSpawn);
// - the descriptors the runtime itself needs are checked to be there: libdispatch and swift-nio
//   open theirs lazily (an epoll, an eventfd and a timerfd each, a signalfd per trapped signal)
//   and trap, or silently lose their signal handling, when the open fails; without enough free
//   descriptors vigil exits at once with VIGIL_STARTUP_NO_DESCRIPTORS_EXIT and says what to do.
#define _GNU_SOURCE
#include "vigil_startup.h"

#include <elf.h>
#include <errno.h>
#include <link.h>
#include <stdint.h>
#include <sys/mman.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

// How many more descriptors the process can open, counted up to `needed` by really opening them
// (duplicates of a standard descriptor, closed again at once): what the kernel gives, whatever the
// limit says and whatever was inherited.
static int vigil_free_descriptors(int needed) {
    int opened[VIGIL_STARTUP_DESCRIPTORS_NEEDED];
    int count = 0;
    while (count < needed && count < VIGIL_STARTUP_DESCRIPTORS_NEEDED) {
        int fd = fcntl(2, F_DUPFD_CLOEXEC, 0);
        if (fd < 0 && errno == EBADF) fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (fd < 0) break;
        opened[count++] = fd;
    }
    for (int i = 0; i < count; i++) (void)close(opened[i]);
    return count;
}

// Exits VIGIL_STARTUP_NO_DESCRIPTORS_EXIT, before the Swift runtime starts, when fewer than
// VIGIL_STARTUP_DESCRIPTORS_NEEDED descriptors are free; with `--json` among the arguments (before
// a `--`), the message is one JSON document on standard output. Written with write(2) only: stdio
// would need nothing more, but nothing else may run.
static void vigil_exit_unless_descriptors(int argc, char **argv) {
    int free_count = vigil_free_descriptors(VIGIL_STARTUP_DESCRIPTORS_NEEDED);
    if (free_count >= VIGIL_STARTUP_DESCRIPTORS_NEEDED) return;
    struct rlimit limit = {0, 0};
    (void)getrlimit(RLIMIT_NOFILE, &limit);
    int json = 0;
    for (int i = 1; i < argc && argv != NULL && argv[i] != NULL; i++) {
        if (strcmp(argv[i], "--") == 0) break;
        if (strcmp(argv[i], "--json") == 0) json = 1;
    }
    char message[512];
    snprintf(message, sizeof message,
             "vigil is out of file descriptors: %d free where it needs %d to start (limit %llu, "
             "hard limit %llu) - raise the limit (ulimit -n N in its shell, LimitNOFILE=N in its "
             "systemd unit) or close the descriptors it inherits",
             free_count, VIGIL_STARTUP_DESCRIPTORS_NEEDED, (unsigned long long)limit.rlim_cur,
             (unsigned long long)limit.rlim_max);
    char line[640];
    int length;
    int fd;
    if (json) {
        // The message has no character JSON must escape.
        length = snprintf(line, sizeof line,
                          "{\"ok\":false,\"error\":{\"code\":\"out-of-descriptors\",\"message\":\"%s\"}}\n",
                          message);
        fd = 1;
    } else {
        length = snprintf(line, sizeof line, "error: %s\n", message);
        fd = 2;
    }
    if (length > (int)sizeof line - 1) length = (int)sizeof line - 1;
    for (int written = 0; length > 0 && written < length;) {
        ssize_t n = write(fd, line + written, (size_t)(length - written));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        written += (int)n;
    }
    _exit(VIGIL_STARTUP_NO_DESCRIPTORS_EXIT);
}

// glibc passes the program's arguments to ELF constructors.
__attribute__((constructor)) static void vigil_startup(int argc, char **argv, char **envp) {
    (void)envp;
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
    vigil_exit_unless_descriptors(argc, argv);
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
