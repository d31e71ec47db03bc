#define _GNU_SOURCE
#include "vigil_helper.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

int vigil_helper_spawn(const char *path, int socket_fd, char *const envp[], pid_t *pid, int *pidfd) {
    // posix_spawn's dup2 of a descriptor onto itself would leave close-on-exec set: move it first.
    int source = socket_fd;
    int moved = -1;
    if (socket_fd == VIGIL_HELPER_SOCKET_FD) {
        moved = fcntl(socket_fd, F_DUPFD_CLOEXEC, VIGIL_HELPER_SOCKET_FD + 1);
        if (moved < 0) return -errno;
        source = moved;
    }
    char parent[24];
    snprintf(parent, sizeof parent, "%ld", (long)getpid());
    char *argv[] = {(char *)path, parent, NULL};

    posix_spawn_file_actions_t actions;
    posix_spawnattr_t attributes;
    int rc = posix_spawn_file_actions_init(&actions);
    if (rc != 0) goto out_moved;
    rc = posix_spawnattr_init(&attributes);
    if (rc != 0) goto out_actions;
    if ((rc = posix_spawn_file_actions_adddup2(&actions, source, VIGIL_HELPER_SOCKET_FD)) != 0) goto out_all;
    if ((rc = posix_spawn_file_actions_addclosefrom_np(&actions, VIGIL_HELPER_SOCKET_FD + 1)) != 0) goto out_all;
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    sigdelset(&all, SIGKILL);
    sigdelset(&all, SIGSTOP);
    posix_spawnattr_setsigmask(&attributes, &none);
    posix_spawnattr_setsigdefault(&attributes, &all);
    posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    pid_t child = -1;
    rc = posix_spawn(&child, path, &actions, &attributes, argv, envp);
    if (rc == 0) {
        int fd = (int)syscall(SYS_pidfd_open, child, 0);
        if (fd < 0) {
            rc = errno;
            kill(child, SIGKILL);
            while (waitpid(child, NULL, 0) < 0 && errno == EINTR) {}
        } else {
            (void)fcntl(fd, F_SETFD, FD_CLOEXEC);
            *pid = child;
            *pidfd = fd;
        }
    }
out_all:
    posix_spawnattr_destroy(&attributes);
out_actions:
    posix_spawn_file_actions_destroy(&actions);
out_moved:
    if (moved >= 0) close(moved);
    return rc == 0 ? 0 : -rc;
}

int vigil_helper_socketpair(int fds[2]) {
    return socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds) == 0 ? 0 : -errno;
}

int vigil_helper_send(int fd, const void *bytes, size_t length, int attached) {
    struct iovec part = {(void *)bytes, length};
    struct msghdr message;
    memset(&message, 0, sizeof message);
    message.msg_iov = &part;
    message.msg_iovlen = 1;
    union {
        char buffer[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } control;
    if (attached >= 0) {
        memset(&control, 0, sizeof control);
        message.msg_control = control.buffer;
        message.msg_controllen = sizeof control.buffer;
        struct cmsghdr *header = CMSG_FIRSTHDR(&message);
        header->cmsg_level = SOL_SOCKET;
        header->cmsg_type = SCM_RIGHTS;
        header->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(header), &attached, sizeof(int));
    }
    ssize_t sent;
    do {
        sent = sendmsg(fd, &message, MSG_NOSIGNAL);
    } while (sent < 0 && errno == EINTR);
    if (sent < 0) return -errno;
    return sent == (ssize_t)length ? 0 : -EMSGSIZE;
}

long vigil_helper_receive(int fd, void *buffer, size_t capacity) {
    struct iovec part = {buffer, capacity};
    struct msghdr message;
    memset(&message, 0, sizeof message);
    message.msg_iov = &part;
    message.msg_iovlen = 1;
    union {
        char buffer[CMSG_SPACE(sizeof(int) * 4)];
        struct cmsghdr align;
    } control;
    message.msg_control = control.buffer;
    message.msg_controllen = sizeof control.buffer;
    ssize_t n;
    do {
        n = recvmsg(fd, &message, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    } while (n < 0 && errno == EINTR);
    if (n < 0) return -errno;
    for (struct cmsghdr *h = CMSG_FIRSTHDR(&message); h != NULL; h = CMSG_NXTHDR(&message, h)) {
        if (h->cmsg_level == SOL_SOCKET && h->cmsg_type == SCM_RIGHTS) {
            size_t count = (h->cmsg_len - CMSG_LEN(0)) / sizeof(int);
            for (size_t i = 0; i < count; i++) {
                int passed;
                memcpy(&passed, CMSG_DATA(h) + i * sizeof(int), sizeof(int));
                close(passed);
            }
        }
    }
    if (message.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) return -EMSGSIZE;
    return (long)n;
}

int vigil_helper_reap(int pidfd, int *code, int *status) {
    siginfo_t info;
    memset(&info, 0, sizeof info);
    if (waitid((idtype_t)P_PIDFD, (id_t)pidfd, &info, WEXITED | WNOHANG) != 0) return -errno;
    if (info.si_pid == 0) return 0;
    *code = info.si_code;
    *status = info.si_status;
    return 1;
}

int vigil_helper_kill(int pidfd, int signal) {
    return syscall(SYS_pidfd_send_signal, pidfd, signal, NULL, 0) == 0 ? 0 : -errno;
}
