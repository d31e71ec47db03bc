#define _GNU_SOURCE
#include "vigil_spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/close_range.h>
#include <linux/sched.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

// ---- child side: async-signal-safe only, no allocation --------------------------------------

static void child_fail(int errfd, int stage) {
    int message[2] = {stage, errno};
    ssize_t ignored = write(errfd, message, sizeof message);
    (void)ignored;
    _exit(127);
}

static size_t format_decimal(char *out, long value) {
    char digits[24];
    size_t n = 0;
    unsigned long v = value < 0 ? (unsigned long)(-value) : (unsigned long)value;
    do {
        digits[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v != 0 && n < sizeof digits);
    size_t k = 0;
    if (value < 0) out[k++] = '-';
    while (n > 0) out[k++] = digits[--n];
    out[k] = '\0';
    return k;
}

static void child_main(const vigil_spawn_request *r, pid_t parent, int errfd) {
    // Default dispositions for every signal (SIGKILL/SIGSTOP and glibc's internal ones refuse).
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    for (int s = 1; s < NSIG; s++) {
        if (s != SIGKILL && s != SIGSTOP) (void)sigaction(s, &dfl, NULL);
    }

    // Forked without CLONE_INTO_CGROUP: into the worker's cgroup first, so that whatever it
    // forks later, at any depth, stays there.
    if (r->cgroup_procs_fd >= 0 && write(r->cgroup_procs_fd, "0", 1) != 1) child_fail(errfd, VIGIL_STAGE_CGROUP);

    if (setpgid(0, 0) != 0) child_fail(errfd, VIGIL_STAGE_SETPGID);

    // Die with the supervisor thread. If it already died between clone and here we were
    // re-parented and the death signal will never come: check and leave.
    if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) child_fail(errfd, VIGIL_STAGE_PDEATHSIG);
    if (getppid() != parent) _exit(127);

    if (r->oom_score_adj != NULL) {
        int fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
        if (fd < 0) child_fail(errfd, VIGIL_STAGE_OOM_SCORE_ADJ);
        size_t length = strlen(r->oom_score_adj);
        if (write(fd, r->oom_score_adj, length) != (ssize_t)length) child_fail(errfd, VIGIL_STAGE_OOM_SCORE_ADJ);
        close(fd);
    }

    if (r->watchdog_pid_env != NULL) {
        static const char key[] = "WATCHDOG_PID=";
        memcpy(r->watchdog_pid_env, key, sizeof key - 1);
        format_decimal(r->watchdog_pid_env + sizeof key - 1, (long)getpid());
    }

    if (r->working_directory != NULL && chdir(r->working_directory) != 0) child_fail(errfd, VIGIL_STAGE_CHDIR);


    // Nothing above 2 survives exec (the error pipe is already close-on-exec).
    if (syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC) != 0) {
        struct rlimit limit;
        long max = 65536;
        if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) max = (long)limit.rlim_cur;
        for (long fd = 3; fd < max; fd++) (void)fcntl((int)fd, F_SETFD, FD_CLOEXEC);
    }

    // The descriptor limit the worker would have had, not the one the supervisor raised itself
    // to (after the loop above, which must reach every descriptor the raised limit allowed).
    if (r->nofile_soft != 0) {
        struct rlimit limit;
        if (getrlimit(RLIMIT_NOFILE, &limit) == 0
            && (limit.rlim_max == RLIM_INFINITY || r->nofile_soft <= limit.rlim_max)) {
            limit.rlim_cur = (rlim_t)r->nofile_soft;
            (void)setrlimit(RLIMIT_NOFILE, &limit);
        }
    }

    sigset_t none;
    sigemptyset(&none);
    (void)sigprocmask(SIG_SETMASK, &none, NULL);

    execve(r->path, r->argv, r->envp);
    child_fail(errfd, VIGIL_STAGE_EXEC);
}

// ---- parent side ----------------------------------------------------------------------------

int vigil_spawn(const vigil_spawn_request *request, vigil_spawn_result *result) {
    result->pid = -1;
    result->pidfd = -1;
    result->failed_stage = VIGIL_STAGE_OK;
    result->error = 0;

    int pipefd[2];
    if (pipe2(pipefd, O_CLOEXEC) != 0) {
        result->failed_stage = VIGIL_STAGE_PIPE;
        result->error = errno;
        return -1;
    }

    // No signal handler of the parent may run in the child before dispositions are reset.
    sigset_t all, previous;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &previous);

    pid_t parent = getpid();
    int pidfd = -1;
    struct clone_args args;
    memset(&args, 0, sizeof args);
    args.flags = CLONE_PIDFD;
    args.pidfd = (uint64_t)(uintptr_t)&pidfd;
    args.exit_signal = SIGCHLD;
    if (request->cgroup_dir_fd >= 0) {
        args.flags |= CLONE_INTO_CGROUP;
        args.cgroup = (uint64_t)request->cgroup_dir_fd;
    }
    long pid = syscall(SYS_clone3, &args, sizeof args);
    int usedFork = 0;
    int intoCgroup = request->cgroup_dir_fd >= 0;
    // Out of descriptors (the pidfd), processes or memory: a failed fork like any other, not the
    // cgroup's fault — the tree stays for every worker.
    int resourceError = pid < 0 && (errno == EMFILE || errno == ENFILE || errno == EAGAIN || errno == ENOMEM);
    if (pid < 0 && intoCgroup && !resourceError && errno != ENOSYS && errno != E2BIG) {
        // The kernel refused the cgroup (EBUSY for one with controllers, EACCES…): say so.
        int cloneError = errno;
        pthread_sigmask(SIG_SETMASK, &previous, NULL);
        close(pipefd[0]);
        close(pipefd[1]);
        result->failed_stage = VIGIL_STAGE_CGROUP;
        result->error = cloneError;
        return -1;
    }
    if (pid < 0 && (errno == ENOSYS || errno == EINVAL || errno == E2BIG)) {
        usedFork = 1;
        intoCgroup = 0;
        pid = fork();
    }
    if (pid == 0) {
        close(pipefd[0]);
        vigil_spawn_request copy = *request;
        if (intoCgroup) copy.cgroup_procs_fd = -1;  // already there
        child_main(&copy, parent, pipefd[1]);
    }
    int cloneError = errno;
    pthread_sigmask(SIG_SETMASK, &previous, NULL);
    close(pipefd[1]);

    if (pid < 0) {
        close(pipefd[0]);
        result->failed_stage = VIGIL_STAGE_CLONE;
        result->error = cloneError;
        return -1;
    }
    if (usedFork) {
        pidfd = (int)syscall(SYS_pidfd_open, (pid_t)pid, 0);
        if (pidfd >= 0) (void)fcntl(pidfd, F_SETFD, FD_CLOEXEC);
    }

    int message[2];
    ssize_t n;
    do {
        n = read(pipefd[0], message, sizeof message);
    } while (n < 0 && errno == EINTR);
    close(pipefd[0]);

    if (n == (ssize_t)sizeof message || pidfd < 0) {
        int status;
        while (waitpid((pid_t)pid, &status, 0) < 0 && errno == EINTR) {}
        if (pidfd >= 0) close(pidfd);
        if (n == (ssize_t)sizeof message) {
            result->failed_stage = message[0];
            result->error = message[1];
        } else {
            result->failed_stage = VIGIL_STAGE_PIDFD;
            result->error = errno;
        }
        return -1;
    }
    result->pid = (pid_t)pid;
    result->pidfd = pidfd;
    return 0;
}

int vigil_reap(int pidfd, int *code, int *status) {
    siginfo_t info;
    memset(&info, 0, sizeof info);
    int rc;
    do {
        rc = waitid((idtype_t)P_PIDFD, (id_t)pidfd, &info, WEXITED | WNOHANG);
    } while (rc < 0 && errno == EINTR);
    if (rc < 0) return -errno;
    if (info.si_pid == 0) return 0;
    *code = info.si_code;
    *status = info.si_status;
    return 1;
}

int vigil_stop_state(int pidfd, int *stop_signal) {
    siginfo_t info;
    memset(&info, 0, sizeof info);
    int rc;
    do {
        rc = waitid((idtype_t)P_PIDFD, (id_t)pidfd, &info, WSTOPPED | WCONTINUED | WNOHANG);
    } while (rc < 0 && errno == EINTR);
    if (rc < 0) return -errno;
    if (info.si_pid == 0) return 0;
    *stop_signal = info.si_code == CLD_STOPPED ? info.si_status : 0;
    return 1;
}

int vigil_pidfd_signal(int pidfd, int signal) {
    if (syscall(SYS_pidfd_send_signal, pidfd, signal, NULL, 0) != 0) return -errno;
    return 0;
}

static int fill_address(const char *address, struct sockaddr_un *sun, socklen_t *length) {
    size_t n = strlen(address);
    memset(sun, 0, sizeof *sun);
    sun->sun_family = AF_UNIX;
    if (n == 0 || n >= sizeof sun->sun_path) return -ENAMETOOLONG;
    memcpy(sun->sun_path, address, n);
    if (address[0] == '@') {
        sun->sun_path[0] = '\0';
        *length = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n);
    } else {
        *length = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + 1);
    }
    return 0;
}

int vigil_notify_listen(const char *path) {
    struct sockaddr_un sun;
    socklen_t length;
    int rc = fill_address(path, &sun, &length);
    if (rc != 0) return rc;
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) return -errno;
    (void)unlink(path);
    int one = 1;
    if (setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &one, sizeof one) != 0 || bind(fd, (struct sockaddr *)&sun, length) != 0
        || chmod(path, 0600) != 0) {
        int e = errno;
        close(fd);
        return -e;
    }
    return fd;
}

long vigil_notify_receive(int fd, char *buffer, size_t capacity, int *pid, int *uid, int *gid) {
    *pid = -1;
    *uid = -1;
    *gid = -1;
    if (capacity < 2) return -EINVAL;
    struct iovec iov = {.iov_base = buffer, .iov_len = capacity - 1};
    union {
        struct cmsghdr align;
        char space[CMSG_SPACE(sizeof(struct ucred)) + CMSG_SPACE(sizeof(int) * 253)];
    } control;
    struct msghdr msg;
    memset(&msg, 0, sizeof msg);
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.space;
    msg.msg_controllen = sizeof control.space;
    ssize_t n;
    do {
        n = recvmsg(fd, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC | MSG_TRUNC);
    } while (n < 0 && errno == EINTR);
    if (n < 0) return -errno;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c != NULL; c = CMSG_NXTHDR(&msg, c)) {
        if (c->cmsg_level != SOL_SOCKET) continue;
        if (c->cmsg_type == SCM_CREDENTIALS && c->cmsg_len == CMSG_LEN(sizeof(struct ucred))) {
            struct ucred cred;
            memcpy(&cred, CMSG_DATA(c), sizeof cred);
            *pid = (int)cred.pid;
            *uid = (int)cred.uid;
            *gid = (int)cred.gid;
        } else if (c->cmsg_type == SCM_RIGHTS) {
            size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
            for (size_t i = 0; i < count; i++) {
                int passed;
                memcpy(&passed, CMSG_DATA(c) + i * sizeof(int), sizeof passed);
                close(passed);
            }
        }
    }
    if ((size_t)n > capacity - 1 || (msg.msg_flags & MSG_TRUNC)) return -EMSGSIZE;
    buffer[n] = '\0';
    return (long)n;
}

int vigil_notify_send(const char *address, const char *message, size_t length) {
    struct sockaddr_un sun;
    socklen_t addressLength;
    int rc = fill_address(address, &sun, &addressLength);
    if (rc != 0) return rc;
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -errno;
    ssize_t n;
    do {
        n = sendto(fd, message, length, MSG_NOSIGNAL | MSG_DONTWAIT, (struct sockaddr *)&sun, addressLength);
    } while (n < 0 && errno == EINTR);
    int e = errno;
    close(fd);
    return n == (ssize_t)length ? 0 : -(n < 0 ? e : EMSGSIZE);
}

int vigil_sentinel_start(int kill_fd, const char *rmdir_paths, pid_t *pid, int *pipe_write_fd) {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) return -errno;
    sigset_t all, previous;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &previous);
    pid_t child = fork();
    if (child == 0) {
        // Async-signal-safe only: raw system calls, no allocation.
        (void)prctl(PR_SET_NAME, "vigil-sentinel", 0, 0, 0);
        (void)setsid();
        struct sigaction ign;
        memset(&ign, 0, sizeof ign);
        ign.sa_handler = SIG_IGN;
        int ignored[] = {SIGHUP, SIGINT, SIGTERM, SIGQUIT, SIGPIPE, SIGUSR1, SIGUSR2, SIGTSTP, SIGTTIN, SIGTTOU};
        for (size_t i = 0; i < sizeof ignored / sizeof ignored[0]; i++) (void)sigaction(ignored[i], &ign, NULL);
        int null = open("/dev/null", O_RDWR);
        if (null >= 0) {
            (void)dup2(null, 0);
            (void)dup2(null, 1);
            (void)dup2(null, 2);
        }
        // Above any descriptor the dup2()s below could clobber, then to 3 and 4.
        int readEnd = fcntl(fds[0], F_DUPFD, 10);
        int killer = fcntl(kill_fd, F_DUPFD, 10);
        if (readEnd < 0 || killer < 0 || dup2(readEnd, 3) < 0 || dup2(killer, 4) < 0) _exit(1);
        (void)syscall(SYS_close_range, 5U, ~0U, 0U);
        sigset_t none;
        sigemptyset(&none);
        (void)sigprocmask(SIG_SETMASK, &none, NULL);
        char buffer[64];
        for (;;) {
            ssize_t n = read(3, buffer, sizeof buffer);
            if (n == 0) break;
            if (n < 0 && errno != EINTR) break;
        }
        ssize_t ignoredResult = write(4, "1", 1);
        (void)ignoredResult;
        // The processes take a moment to die; the directories can go once they are empty.
        for (int attempt = 0; attempt < 300; attempt++) {
            int left = 0;
            for (const char *p = rmdir_paths; *p != '\0'; p += strlen(p) + 1) {
                if (rmdir(p) != 0 && errno != ENOENT) left++;
            }
            if (left == 0) break;
            struct timespec pause = {0, 10 * 1000 * 1000};
            (void)nanosleep(&pause, NULL);
        }
        _exit(0);
    }
    int e = errno;
    pthread_sigmask(SIG_SETMASK, &previous, NULL);
    close(fds[0]);
    if (child < 0) {
        close(fds[1]);
        return -e;
    }
    *pid = child;
    *pipe_write_fd = fds[1];
    return 0;
}
