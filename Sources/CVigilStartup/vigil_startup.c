// Runs before main() and before the Swift runtime or libdispatch open anything:
// - descriptors 0, 1 and 2 are opened to /dev/null when closed (`vigil run -- cmd 2>&-`), so
//   that no internal descriptor (an eventfd, a socket) becomes "standard error" and receives
//   (or crashes on) text meant for the user;
// - SIGPIPE is ignored: a closed output pipe (`vigil up | head -2`) is an EPIPE error the writer
//   handles, not a death that leaves workers and files behind. Workers get default dispositions
//   back before exec (CVigilSpawn).
#include "vigil_startup.h"

#include <errno.h>
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
