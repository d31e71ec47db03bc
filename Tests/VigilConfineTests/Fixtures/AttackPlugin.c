// What a compromised plugin would try (issue 33, point 3), one attack a call, compiled by the tests
// with the system gcc. Each attack prints one line to standard output, "result WHAT ok" or
// "result WHAT refused ERRNO" (the error name the call failed with), and returns 0 or 1.
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

extern char **environ;

static int outcome(const char *what, int ok, int error_number) {
    if (ok) printf("result %s ok\n", what);
    else printf("result %s refused %s\n", what, error_number == EACCES ? "EACCES"
                                              : error_number == EPERM ? "EPERM"
                                                                      : strerror(error_number));
    fflush(stdout);
    return ok ? 0 : 1;
}

int vigil_attack(const char *what, const char *argument) {
    if (!strcmp(what, "read")) {
        int fd = open(argument, O_RDONLY | O_CLOEXEC);
        if (fd < 0) return outcome(what, 0, errno);
        char byte;
        ssize_t n = read(fd, &byte, 1);
        close(fd);
        return outcome(what, n == 1, errno);
    }
    if (!strcmp(what, "write")) {
        int fd = open(argument, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fd < 0) return outcome(what, 0, errno);
        ssize_t n = write(fd, "written by the plugin\n", 22);
        close(fd);
        return outcome(what, n == 22, errno);
    }
    if (!strcmp(what, "connect")) {
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0) return outcome(what, 0, errno);
        struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argument))};
        address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        int result = connect(fd, (struct sockaddr *)&address, sizeof address);
        int error_number = errno;
        close(fd);
        return outcome(what, result == 0, error_number);
    }
    if (!strcmp(what, "udp")) {
        int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (fd >= 0) close(fd);
        return outcome(what, fd >= 0, errno);
    }
    if (!strcmp(what, "exec")) {
        char *const arguments[] = {(char *)argument, "-c", "echo result exec ok", NULL};
        execve(argument, arguments, environ);
        return outcome(what, 0, errno);
    }
    if (!strcmp(what, "ptrace")) {
        pid_t pid = (pid_t)atoi(argument);
        long result = ptrace(PTRACE_ATTACH, pid, NULL, NULL);
        int error_number = errno;
        if (result == 0) ptrace(PTRACE_DETACH, pid, NULL, NULL);
        return outcome(what, result == 0, error_number);
    }
    if (!strcmp(what, "mem")) {
        char path[64];
        snprintf(path, sizeof path, "/proc/%s/mem", argument);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd >= 0) close(fd);
        return outcome(what, fd >= 0, errno);
    }
    if (!strcmp(what, "kill")) {
        int result = kill((pid_t)atoi(argument), SIGUSR1);
        return outcome(what, result == 0, errno);
    }
    if (!strcmp(what, "bus")) {
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0) return outcome(what, 0, errno);
        struct sockaddr_un address = {.sun_family = AF_UNIX};
        snprintf(address.sun_path, sizeof address.sun_path, "%s", argument);
        int result = connect(fd, (struct sockaddr *)&address, sizeof address);
        int error_number = errno;
        close(fd);
        return outcome(what, result == 0, error_number);
    }
    if (!strcmp(what, "abstract")) {
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0) return outcome(what, 0, errno);
        struct sockaddr_un address = {.sun_family = AF_UNIX};
        size_t length = strlen(argument);
        memcpy(address.sun_path + 1, argument, length);  // sun_path[0] == 0: the abstract namespace
        int result = connect(fd, (struct sockaddr *)&address, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + length));
        int error_number = errno;
        close(fd);
        return outcome(what, result == 0, error_number);
    }
    printf("result %s unknown\n", what);
    return 2;
}
