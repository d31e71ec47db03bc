// Process spawning and Linux syscalls for VigilSupervisor.
//
// Everything that must run between fork and exec lives here, in C, because only
// async-signal-safe code may run in the child of a multi-threaded process: the child path of
// vigil_spawn() allocates nothing and calls only raw system calls.
#ifndef VIGIL_SPAWN_H
#define VIGIL_SPAWN_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/// Size of the buffer a caller passes as `watchdog_pid_env` ("WATCHDOG_PID=" + up to 20 digits).
#define VIGIL_PID_ENV_SIZE 40

/// Where a spawn failed (vigil_spawn_result.failed_stage).
enum {
    VIGIL_STAGE_OK = 0,
    VIGIL_STAGE_PIPE = 1,
    VIGIL_STAGE_CLONE = 2,
    VIGIL_STAGE_SETPGID = 3,
    VIGIL_STAGE_PDEATHSIG = 4,
    VIGIL_STAGE_OOM_SCORE_ADJ = 5,
    VIGIL_STAGE_CHDIR = 6,
    VIGIL_STAGE_CLOSE_FDS = 7,
    VIGIL_STAGE_EXEC = 8,
    VIGIL_STAGE_PIDFD = 9,
    VIGIL_STAGE_CGROUP = 10,
};

typedef struct vigil_spawn_request {
    /// Absolute path of the executable.
    const char *path;
    /// NULL-terminated argument vector.
    char *const *argv;
    /// NULL-terminated environment.
    char *const *envp;
    /// Directory to change into, or NULL to inherit the parent's.
    const char *working_directory;
    /// Decimal value written to /proc/self/oom_score_adj, or NULL to leave it.
    const char *oom_score_adj;
    /// NULL, or a writable buffer of VIGIL_PID_ENV_SIZE bytes that is also an entry of envp: the
    /// child writes "WATCHDOG_PID=<its pid>" into it before exec.
    char *watchdog_pid_env;
    /// -1, or an open descriptor of a cgroup directory: the child is created in it
    /// (clone3 CLONE_INTO_CGROUP, no migration cost), so every process it ever starts stays there.
    int cgroup_dir_fd;
    /// -1, or that cgroup's `cgroup.procs`: where clone3 is missing, the forked child moves
    /// itself there (writes "0") before anything else.
    int cgroup_procs_fd;
    /// 0, or the soft RLIMIT_NOFILE the child gets back before exec: the supervisor raises its
    /// own soft limit to the hard one (as systemd does), its workers keep the limit they would
    /// have had (programs that use select(2) break above 1024).
    unsigned long nofile_soft;
} vigil_spawn_request;

typedef struct vigil_spawn_result {
    pid_t pid;
    int pidfd;
    int failed_stage;
    int error;
} vigil_spawn_result;

/// Starts a worker: its own process group (pgid = pid), PR_SET_PDEATHSIG(SIGKILL) with the
/// getppid() check that closes the fork/exec race, default signal dispositions, an empty signal
/// mask, every descriptor above 2 closed on exec. Returns 0 and fills pid/pidfd once the child
/// has exec'd; returns -1 with failed_stage/error set (the failed child is already reaped).
///
/// PR_SET_PDEATHSIG fires when the calling *thread* exits: call this from a thread that lives as
/// long as the worker.
int vigil_spawn(const vigil_spawn_request *request, vigil_spawn_result *result);

/// Reaps the child behind `pidfd` without blocking (waitid(P_PIDFD, WEXITED|WNOHANG)).
/// Returns 1 and sets *code (CLD_EXITED, CLD_KILLED, CLD_DUMPED) and *status (exit status or
/// signal number) when reaped, 0 when the child is still running, -errno on error.
int vigil_reap(int pidfd, int *code, int *status);

/// Whether the child behind `pidfd` stopped or continued since the last call, without reaping it
/// (waitid(P_PIDFD, WSTOPPED|WCONTINUED|WNOHANG)). Returns 1 and sets *stop_signal to the
/// signal that stopped it (0 when it was continued), 0 when nothing changed, -errno on error.
int vigil_stop_state(int pidfd, int *stop_signal);

/// pidfd_send_signal(2). Returns 0 or -errno.
int vigil_pidfd_signal(int pidfd, int signal);

/// Creates an AF_UNIX datagram socket bound to `path` (unlinked first), mode 0600, SO_PASSCRED
/// on, non-blocking, close-on-exec. Returns the fd or -errno.
int vigil_notify_listen(const char *path);

/// Receives one sd_notify datagram into `buffer` (NUL-terminated; at most capacity-1 bytes).
/// Closes every descriptor passed with it (that is how a BARRIER=1 is answered). Returns the
/// payload length, -EMSGSIZE for an oversized datagram (dropped), -EAGAIN when the queue is
/// empty, or another -errno. *pid/*uid/*gid are the kernel-checked sender credentials, or -1
/// when the datagram carried none.
long vigil_notify_receive(int fd, char *buffer, size_t capacity, int *pid, int *uid, int *gid);

/// Sends `message` as one datagram to the sd_notify address `address` (a path, or "@name" for
/// the abstract namespace) without blocking. Returns 0 or -errno.
int vigil_notify_send(const char *address, const char *message, size_t length);

/// Starts the sentinel of a supervisor's cgroup: a small process (forked, no exec) in a session
/// of its own that ignores terminal signals and waits until the read end of a pipe reports
/// end-of-file — when the supervisor closes the write end (a normal stop) or dies, even by
/// SIGKILL. It then writes "1" to `kill_fd` (the cgroup's `cgroup.kill`: every process in the
/// cgroup tree dies, at any depth, whatever its session or process group), removes the
/// directories in `rmdir_paths` (NUL-separated, ending with an empty string; children first) as
/// they empty, and exits. Returns 0 and sets *pid and *pipe_write_fd (close-on-exec), or -errno.
int vigil_sentinel_start(int kill_fd, const char *rmdir_paths, pid_t *pid, int *pipe_write_fd);

#endif
