// Landlock + seccomp + no_new_privs for a shared-library plugin's helper process (vigil_confine.h).
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "vigil_confine.h"

#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <linux/landlock.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <stddef.h>
#include <sys/un.h>
#include <netinet/in.h>
#include <ucontext.h>
#include <unistd.h>

// Debian 12's <linux/landlock.h> predates TCP rules (ABI 4), IOCTL_DEV (5) and scoping (6): the
// kernel's values, which are ABI and never change.
#define VC_FS_EXECUTE (1ULL << 0)
#define VC_FS_WRITE_FILE (1ULL << 1)
#define VC_FS_READ_FILE (1ULL << 2)
#define VC_FS_READ_DIR (1ULL << 3)
#define VC_FS_REMOVE_DIR (1ULL << 4)
#define VC_FS_REMOVE_FILE (1ULL << 5)
#define VC_FS_MAKE_CHAR (1ULL << 6)
#define VC_FS_MAKE_DIR (1ULL << 7)
#define VC_FS_MAKE_REG (1ULL << 8)
#define VC_FS_MAKE_SOCK (1ULL << 9)
#define VC_FS_MAKE_FIFO (1ULL << 10)
#define VC_FS_MAKE_BLOCK (1ULL << 11)
#define VC_FS_MAKE_SYM (1ULL << 12)
#define VC_FS_REFER (1ULL << 13)
#define VC_FS_TRUNCATE (1ULL << 14)
#define VC_FS_IOCTL_DEV (1ULL << 15)
#define VC_NET_BIND_TCP (1ULL << 0)
#define VC_NET_CONNECT_TCP (1ULL << 1)
#define VC_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0)
#define VC_SCOPE_SIGNAL (1ULL << 1)
#define VC_RULE_PATH_BENEATH 1
#define VC_RULE_NET_PORT 2

struct vc_ruleset_attr {
    uint64_t handled_access_fs;
    uint64_t handled_access_net;
    uint64_t scoped;
};

struct vc_path_beneath_attr {
    uint64_t allowed_access;
    int32_t parent_fd;
} __attribute__((packed));

struct vc_net_port_attr {
    uint64_t allowed_access;
    uint64_t port;
};

// The file rights of one rule: on a regular file only these may be granted (else EINVAL).
#define VC_FS_FILE_RIGHTS (VC_FS_EXECUTE | VC_FS_WRITE_FILE | VC_FS_READ_FILE | VC_FS_TRUNCATE | VC_FS_IOCTL_DEV)

static void set_error(char *error, size_t size, const char *format, ...) {
    if (!error || size == 0) return;
    va_list args;
    va_start(args, format);
    vsnprintf(error, size, format, args);
    va_end(args);
}

// MARK: - Probe

static int landlock_abi(void) {
    long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
    return abi < 0 ? 0 : (int)abi;
}

static int read_number(const char *path, long *out) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    char buffer[32] = {0};
    ssize_t n = read(fd, buffer, sizeof buffer - 1);
    close(fd);
    if (n <= 0) return -1;
    *out = strtol(buffer, NULL, 10);
    return 0;
}

int vigil_confine_probe(vigil_confine_support *out) {
    memset(out, 0, sizeof *out);
    out->landlock_abi = landlock_abi();
    out->no_new_privs = prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) >= 0;
    uint32_t action = SECCOMP_RET_TRAP;
    out->seccomp_filter = syscall(SYS_seccomp, SECCOMP_GET_ACTION_AVAIL, 0, &action) == 0;
    long max_namespaces = 0, clone_allowed = 1;
    if (read_number("/proc/sys/user/max_user_namespaces", &max_namespaces) != 0) max_namespaces = 0;
    (void)read_number("/proc/sys/kernel/unprivileged_userns_clone", &clone_allowed);
    out->user_namespaces = max_namespaces > 0 && clone_allowed != 0;
    return 0;
}

// MARK: - Wire decoding

void vigil_confine_policy_free(vigil_confine_policy *policy) {
    if (!policy) return;
    free(policy->state_directory);
    for (size_t i = 0; i < policy->rule_count; i++) free(policy->rules[i].path);
    free(policy->rules);
    free(policy->tcp_connect);
    for (size_t i = 0; i < policy->spawn_count; i++) free(policy->spawn[i]);
    free(policy->spawn);
    free(policy);
}

static int add_rule(vigil_confine_policy *policy, const char *path, uint32_t access) {
    vigil_confine_rule *rules = realloc(policy->rules, (policy->rule_count + 1) * sizeof *rules);
    if (!rules) return -1;
    policy->rules = rules;
    char *copy = strdup(path);
    if (!copy) return -1;
    rules[policy->rule_count++] = (vigil_confine_rule){.path = copy, .access = access};
    return 0;
}

int vigil_confine_decode(
    const char *bytes, size_t length, vigil_confine_policy **out, char *error, size_t error_size) {
    *out = NULL;
    if (memchr(bytes, 0, length)) {
        set_error(error, error_size, "the confinement policy contains a NUL byte");
        return -1;
    }
    vigil_confine_policy *policy = calloc(1, sizeof *policy);
    char *text = malloc(length + 1);
    if (!policy || !text) {
        free(policy);
        free(text);
        set_error(error, error_size, "out of memory decoding the confinement policy");
        return -1;
    }
    memcpy(text, bytes, length);
    text[length] = 0;
    int line_number = 0, ended = 0, failed = 0;
    char *cursor = text;
    while (*cursor && !failed) {
        char *newline = strchr(cursor, '\n');
        if (!newline) {
            set_error(error, error_size, "line %d of the confinement policy has no end of line", line_number + 1);
            failed = 1;
            break;
        }
        *newline = 0;
        char *line = cursor;
        cursor = newline + 1;
        line_number++;
        if (ended) {
            set_error(error, error_size, "line %d of the confinement policy follows `end`", line_number);
            failed = 1;
            break;
        }
        char *space = strchr(line, ' ');
        char *argument = space ? space + 1 : NULL;
        if (space) *space = 0;
        if (line_number == 1) {
            if (strcmp(line, "vigil-confine") != 0 || !argument || strcmp(argument, "1") != 0) {
                set_error(error, error_size, "the confinement policy does not start with `vigil-confine 1`");
                failed = 1;
            } else {
                policy->version = 1;
            }
            continue;
        }
        int needs_path = !strcmp(line, "state") || !strcmp(line, "read") || !strcmp(line, "write") ||
                         !strcmp(line, "exec") || !strcmp(line, "spawn");
        if (needs_path && (!argument || argument[0] != '/')) {
            set_error(error, error_size, "line %d of the confinement policy: `%s` needs an absolute path",
                      line_number, line);
            failed = 1;
            break;
        }
        if (!strcmp(line, "state")) {
            free(policy->state_directory);
            policy->state_directory = strdup(argument);
            failed = !policy->state_directory;
        } else if (!strcmp(line, "read")) {
            failed = add_rule(policy, argument, VIGIL_CONFINE_ACCESS_READ) != 0;
        } else if (!strcmp(line, "write")) {
            failed = add_rule(policy, argument, VIGIL_CONFINE_ACCESS_READ | VIGIL_CONFINE_ACCESS_WRITE) != 0;
        } else if (!strcmp(line, "exec")) {
            failed = add_rule(policy, argument, VIGIL_CONFINE_ACCESS_READ | VIGIL_CONFINE_ACCESS_EXECUTE) != 0;
        } else if (!strcmp(line, "spawn")) {
            char **spawn = realloc(policy->spawn, (policy->spawn_count + 1) * sizeof *spawn);
            failed = !spawn;
            if (spawn) {
                policy->spawn = spawn;
                spawn[policy->spawn_count] = strdup(argument);
                failed = !spawn[policy->spawn_count];
                if (!failed) policy->spawn_count++;
                if (!failed)
                    failed = add_rule(policy, argument, VIGIL_CONFINE_ACCESS_READ | VIGIL_CONFINE_ACCESS_EXECUTE) != 0;
            }
        } else if (!strcmp(line, "network") && argument) {
            if (!strcmp(argument, "none")) policy->network = VIGIL_CONFINE_NETWORK_NONE;
            else if (!strcmp(argument, "any")) policy->network = VIGIL_CONFINE_NETWORK_ANY;
            else if (!strcmp(argument, "tcp")) policy->network = VIGIL_CONFINE_NETWORK_TCP;
            else {
                set_error(error, error_size, "line %d of the confinement policy: unknown network `%s`", line_number,
                          argument);
                failed = 1;
            }
        } else if (!strcmp(line, "tcp-connect") && argument) {
            char *end = NULL;
            long port = strtol(argument, &end, 10);
            if (!*argument || *end || port < 1 || port > 65535) {
                set_error(error, error_size, "line %d of the confinement policy: `%s` is not a TCP port", line_number,
                          argument);
                failed = 1;
                break;
            }
            uint16_t *ports = realloc(policy->tcp_connect, (policy->tcp_connect_count + 1) * sizeof *ports);
            failed = !ports;
            if (ports) {
                policy->tcp_connect = ports;
                ports[policy->tcp_connect_count++] = (uint16_t)port;
            }
        } else if (!strcmp(line, "unix") && !argument) {
            policy->unix_sockets = 1;
        } else if (!strcmp(line, "allow-unenforced") && !argument) {
            policy->allow_unenforced = 1;
        } else if (!strcmp(line, "end") && !argument) {
            ended = 1;
        } else {
            set_error(error, error_size, "line %d of the confinement policy: unknown directive `%.40s`", line_number,
                      line);
            failed = 1;
        }
        if (failed && error && !error[0]) set_error(error, error_size, "out of memory decoding the confinement policy");
    }
    free(text);
    if (!failed && !ended) {
        set_error(error, error_size, "the confinement policy has no `end` line (truncated?)");
        failed = 1;
    }
    if (failed) {
        vigil_confine_policy_free(policy);
        return -1;
    }
    *out = policy;
    return 0;
}

// MARK: - Reporting (async-signal-safe: no malloc, no stdio, one write a line)

static volatile int report_descriptor = -1;
static pid_t confined_pid;

struct line {
    char bytes[VIGIL_CONFINE_REPORT_MAX];
    size_t used;
};

static void put_raw(struct line *line, const char *text) {
    for (; *text && line->used < sizeof line->bytes - 1; text++) line->bytes[line->used++] = *text;
}

static void put_field(struct line *line, const char *text) {
    if (!text) return;
    for (; *text && line->used < sizeof line->bytes - 3; text++) {
        char c = *text;
        if (c == '\t' || c == '\n' || c == '\\') {
            line->bytes[line->used++] = '\\';
            line->bytes[line->used++] = c == '\t' ? 't' : c == '\n' ? 'n' : '\\';
        } else {
            line->bytes[line->used++] = c;
        }
    }
}

static void put_number(struct line *line, long long value) {
    char digits[24];
    int n = 0;
    int negative = value < 0;
    unsigned long long magnitude = negative ? 0ULL - (unsigned long long)value : (unsigned long long)value;
    do {
        digits[n++] = (char)('0' + magnitude % 10);
        magnitude /= 10;
    } while (magnitude && n < 22);
    if (negative) digits[n++] = '-';
    while (n && line->used < sizeof line->bytes - 1) line->bytes[line->used++] = digits[--n];
}

static void report(const char *operation, const char *capability, const char *argument, long long number,
                   int has_number, const char *detail, long long detail_number) {
    int fd = report_descriptor;
    if (fd < 0) return;
    struct line line = {.used = 0};
    put_raw(&line, "denial\t");
    put_field(&line, operation);
    put_raw(&line, "\t");
    put_field(&line, capability);
    put_raw(&line, "\t");
    if (has_number) put_number(&line, number);
    else put_field(&line, argument);
    put_raw(&line, "\t");
    put_field(&line, detail);
    if (detail_number >= 0) put_number(&line, detail_number);
    line.bytes[line.used++] = '\n';
    int saved = errno;
    ssize_t ignored = write(fd, line.bytes, line.used);
    (void)ignored;
    errno = saved;
}

static int landlock_denied(const char *path, int mode) {
    // Landlock does not mediate access(2): when the permission bits allow what open refused, the
    // refusal was Landlock's (an EACCES from the mode bits is not a confinement denial). A file to
    // be created: the same question of its directory.
    if (syscall(SYS_faccessat2, AT_FDCWD, path, mode, AT_EACCESS) == 0) return 1;
    if (errno != ENOENT || mode != W_OK) return 0;
    char directory[PATH_MAX];
    size_t length = strnlen(path, sizeof directory - 1);
    memcpy(directory, path, length);
    directory[length] = 0;
    char *slash = strrchr(directory, '/');
    if (!slash) return syscall(SYS_faccessat2, AT_FDCWD, ".", W_OK | X_OK, AT_EACCESS) == 0;
    slash[slash == directory ? 1 : 0] = 0;
    return syscall(SYS_faccessat2, AT_FDCWD, directory, W_OK | X_OK, AT_EACCESS) == 0;
}

void vigil_confine_report_path(const char *operation, const char *path, int write, int error_number) {
    if (report_descriptor < 0 || error_number != EACCES || !path) return;
    int execute = !strcmp(operation, "execve");
    if (!landlock_denied(path, execute ? X_OK : write ? W_OK : R_OK)) return;
    // Another process's /proc entries: no declaration reaches them (Landlock's ptrace rule too).
    int other_process = !strncmp(path, "/proc/", 6) && strncmp(path, "/proc/self/", 11) != 0;
    const char *capability = other_process ? "none" : execute ? "spawn" : write ? "file-write" : "file-read";
    report(operation, capability, path, 0, 0, "EACCES", -1);
}

void vigil_confine_report_connect(const void *address, uint32_t length, int error_number) {
    if (report_descriptor < 0 || !address || length < sizeof(sa_family_t)) return;
    sa_family_t family = ((const struct sockaddr *)address)->sa_family;
    if (family == AF_UNIX && error_number == EPERM && length > offsetof(struct sockaddr_un, sun_path) + 1 &&
        ((const struct sockaddr_un *)address)->sun_path[0] == 0) {
        // An abstract socket made outside the sandbox (Landlock's scope, ABI 6): nothing allows it.
        const char *name = ((const struct sockaddr_un *)address)->sun_path + 1;
        size_t name_length = length - offsetof(struct sockaddr_un, sun_path) - 1;
        char printable[sizeof(((struct sockaddr_un *)0)->sun_path) + 1];
        printable[0] = '@';
        size_t n = 0;
        for (; n < name_length && n + 1 < sizeof printable - 1; n++)
            printable[n + 1] = name[n] >= 0x20 && name[n] < 0x7f ? name[n] : '?';
        printable[n + 1] = 0;
        report("connect", "none", printable, 0, 0, "EPERM", -1);
        return;
    }
    if (error_number != EACCES) return;
    if (family == AF_INET && length >= sizeof(struct sockaddr_in)) {
        report("connect", "tcp-connect", NULL, ntohs(((const struct sockaddr_in *)address)->sin_port), 1, "EACCES",
               -1);
    } else if (family == AF_INET6 && length >= sizeof(struct sockaddr_in6)) {
        report("connect", "tcp-connect", NULL, ntohs(((const struct sockaddr_in6 *)address)->sin6_port), 1,
               "EACCES", -1);
    }
}

// The system calls the filter traps, by number, for the report.
static const char *syscall_name(long number) {
    switch (number) {
#define NAME(x) \
    case SYS_##x: return #x;
        NAME(ptrace) NAME(process_vm_readv) NAME(process_vm_writev) NAME(process_madvise) NAME(pidfd_getfd)
        NAME(kcmp) NAME(kill) NAME(tkill) NAME(tgkill) NAME(rt_sigqueueinfo) NAME(rt_tgsigqueueinfo)
        NAME(pidfd_send_signal) NAME(socket) NAME(socketpair) NAME(execve) NAME(execveat) NAME(mount)
        NAME(umount2) NAME(pivot_root) NAME(chroot) NAME(unshare) NAME(setns) NAME(clone) NAME(bpf)
        NAME(keyctl) NAME(add_key) NAME(request_key) NAME(perf_event_open) NAME(userfaultfd)
        NAME(io_uring_setup) NAME(io_uring_enter) NAME(io_uring_register) NAME(kexec_load)
        NAME(kexec_file_load) NAME(init_module) NAME(finit_module) NAME(delete_module) NAME(reboot)
        NAME(swapon) NAME(swapoff) NAME(open_by_handle_at) NAME(name_to_handle_at) NAME(syslog) NAME(acct)
        NAME(quotactl) NAME(fsopen) NAME(fsmount) NAME(fsconfig) NAME(fspick)
        NAME(move_mount) NAME(open_tree) NAME(mount_setattr) NAME(personality) NAME(rt_sigaction)
        NAME(fanotify_init)
#ifdef SYS_iopl
        NAME(iopl) NAME(ioperm)
#endif
#undef NAME
    default: return "syscall";
    }
}

// The trapped call's arguments and its return value, in the signal's saved registers.
#if defined(__x86_64__)
#define VC_ARGUMENT(uc, n) ((long long)(uc)->uc_mcontext.gregs[(n) == 0 ? REG_RDI : REG_RSI])
#define VC_SET_RESULT(uc, value) ((uc)->uc_mcontext.gregs[REG_RAX] = (value))
#elif defined(__aarch64__)
#define VC_ARGUMENT(uc, n) ((long long)(uc)->uc_mcontext.regs[n])
#define VC_SET_RESULT(uc, value) ((uc)->uc_mcontext.regs[0] = (unsigned long long)(value))
#else
#error "vigil_confine: the SIGSYS handler knows x86_64 and aarch64 registers only"
#endif

static void sigsys_handler(int signal_number, siginfo_t *info, void *context) {
    (void)signal_number;
    ucontext_t *uc = context;
    long number = info->si_syscall;
    long long a0 = VC_ARGUMENT(uc, 0);
    const char *capability = "none";
    const char *argument = NULL;
    long long argument_number = 0;
    int has_number = 0;
    if (number == SYS_socket || number == SYS_socketpair) {
        capability = a0 == AF_UNIX ? "unix-socket" : (a0 == AF_INET || a0 == AF_INET6) ? "network" : "none";
        argument_number = a0;
        has_number = 1;
    } else if (number == SYS_execve || number == SYS_execveat) {
        capability = "spawn";
        argument = (const char *)(number == SYS_execve ? VC_ARGUMENT(uc, 0) : VC_ARGUMENT(uc, 1));
    } else if (number == SYS_kill || number == SYS_tgkill || number == SYS_tkill || number == SYS_ptrace ||
               number == SYS_rt_sigqueueinfo || number == SYS_rt_tgsigqueueinfo ||
               number == SYS_process_vm_readv || number == SYS_process_vm_writev) {
        argument_number = number == SYS_ptrace ? VC_ARGUMENT(uc, 1) : a0;
        has_number = 1;
    }
    report(syscall_name(number), capability, argument, argument_number, has_number, "EPERM (seccomp) syscall ",
           number);
    VC_SET_RESULT(uc, -EPERM);
}

// MARK: - Landlock

static uint64_t fs_rights(int abi) {
    uint64_t rights = VC_FS_EXECUTE | VC_FS_WRITE_FILE | VC_FS_READ_FILE | VC_FS_READ_DIR | VC_FS_REMOVE_DIR |
                      VC_FS_REMOVE_FILE | VC_FS_MAKE_CHAR | VC_FS_MAKE_DIR | VC_FS_MAKE_REG | VC_FS_MAKE_SOCK |
                      VC_FS_MAKE_FIFO | VC_FS_MAKE_BLOCK | VC_FS_MAKE_SYM;
    if (abi >= 2) rights |= VC_FS_REFER;
    if (abi >= 3) rights |= VC_FS_TRUNCATE;
    if (abi >= 5) rights |= VC_FS_IOCTL_DEV;
    return rights;
}

static uint64_t rule_rights(uint32_t access, int directory, uint64_t handled) {
    uint64_t rights = 0;
    if (access & VIGIL_CONFINE_ACCESS_READ) rights |= VC_FS_READ_FILE | VC_FS_READ_DIR;
    if (access & VIGIL_CONFINE_ACCESS_WRITE)
        rights |= VC_FS_WRITE_FILE | VC_FS_TRUNCATE | VC_FS_IOCTL_DEV | VC_FS_REMOVE_DIR | VC_FS_REMOVE_FILE |
                  VC_FS_MAKE_DIR | VC_FS_MAKE_REG | VC_FS_MAKE_SYM | VC_FS_MAKE_FIFO | VC_FS_MAKE_SOCK | VC_FS_REFER;
    if (access & VIGIL_CONFINE_ACCESS_EXECUTE) rights |= VC_FS_EXECUTE;
    if (!directory) rights &= VC_FS_FILE_RIGHTS;
    return rights & handled;
}

static int is_inside(const char *path, const char *directory) {
    size_t n = strlen(directory);
    while (n > 1 && directory[n - 1] == '/') n--;
    return strncmp(path, directory, n) == 0 && path[n] == '/';
}

// Creates `path` and its missing parents (0700), as the plugin would on first use: a declared file
// of a state directory that does not exist yet needs the directory for its rule.
static void make_directories(const char *path) {
    char buffer[PATH_MAX];
    size_t length = strnlen(path, sizeof buffer);
    if (length == 0 || length >= sizeof buffer) return;
    memcpy(buffer, path, length + 1);
    for (char *p = buffer + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        (void)mkdir(buffer, 0700);
        *p = '/';
    }
    (void)mkdir(buffer, 0700);
}

static int apply_landlock(const vigil_confine_policy *policy, int abi, char *error, size_t error_size) {
    struct vc_ruleset_attr attributes = {.handled_access_fs = fs_rights(abi)};
    if (abi >= 4 && policy->network != VIGIL_CONFINE_NETWORK_ANY)
        attributes.handled_access_net = VC_NET_BIND_TCP | VC_NET_CONNECT_TCP;
    if (abi >= 6) attributes.scoped = VC_SCOPE_ABSTRACT_UNIX_SOCKET | VC_SCOPE_SIGNAL;
    size_t size = abi >= 6 ? sizeof attributes : abi >= 4 ? 2 * sizeof(uint64_t) : sizeof(uint64_t);
    int ruleset = (int)syscall(SYS_landlock_create_ruleset, &attributes, size, 0);
    if (ruleset < 0) {
        set_error(error, error_size, "landlock_create_ruleset failed: %s", strerror(errno));
        return -1;
    }
    for (size_t i = 0; i < policy->rule_count && policy->state_directory; i++) {
        if (is_inside(policy->rules[i].path, policy->state_directory) ||
            !strcmp(policy->rules[i].path, policy->state_directory)) {
            make_directories(policy->state_directory);
            break;
        }
    }
    for (size_t i = 0; i < policy->rule_count; i++) {
        const vigil_confine_rule *rule = &policy->rules[i];
        int fd = open(rule->path, O_PATH | O_CLOEXEC);
        if (fd < 0 && errno == ENOENT && (rule->access & VIGIL_CONFINE_ACCESS_WRITE) && policy->state_directory &&
            is_inside(rule->path, policy->state_directory) && rule->path[strlen(rule->path) - 1] != '/') {
            // A declared read-write file of the state directory that does not exist yet: create it
            // empty, so the rule has its inode (Landlock rules name existing files).
            int created = open(rule->path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
            if (created >= 0) close(created);
            fd = open(rule->path, O_PATH | O_CLOEXEC);
        }
        if (fd < 0) continue;  // a declared path that does not exist grants nothing
        struct stat status;
        if (fstat(fd, &status) != 0) {
            close(fd);
            continue;
        }
        struct vc_path_beneath_attr beneath = {
            .allowed_access = rule_rights(rule->access, S_ISDIR(status.st_mode), attributes.handled_access_fs),
            .parent_fd = fd,
        };
        long result = beneath.allowed_access
                          ? syscall(SYS_landlock_add_rule, ruleset, VC_RULE_PATH_BENEATH, &beneath, 0)
                          : 0;
        int saved = errno;
        close(fd);
        if (result != 0) {
            set_error(error, error_size, "landlock_add_rule for %s failed: %s", rule->path, strerror(saved));
            close(ruleset);
            return -1;
        }
    }
    if (attributes.handled_access_net) {
        for (size_t i = 0; i < policy->tcp_connect_count; i++) {
            struct vc_net_port_attr port = {.allowed_access = VC_NET_CONNECT_TCP, .port = policy->tcp_connect[i]};
            if (syscall(SYS_landlock_add_rule, ruleset, VC_RULE_NET_PORT, &port, 0) != 0) {
                set_error(error, error_size, "landlock_add_rule for TCP port %u failed: %s", policy->tcp_connect[i],
                          strerror(errno));
                close(ruleset);
                return -1;
            }
        }
    }
    if (syscall(SYS_landlock_restrict_self, ruleset, 0) != 0) {
        set_error(error, error_size, "landlock_restrict_self failed: %s", strerror(errno));
        close(ruleset);
        return -1;
    }
    close(ruleset);
    return 0;
}

// MARK: - seccomp

static int trap(scmp_filter_ctx filter, int number, unsigned int count, const struct scmp_arg_cmp *arguments) {
    int result = seccomp_rule_add_array(filter, SCMP_ACT_TRAP, number, count, arguments);
    return result == -EEXIST ? 0 : result;
}

#define TRAP0(name) trap(filter, SCMP_SYS(name), 0, NULL)
#define TRAP1(name, a) trap(filter, SCMP_SYS(name), 1, (struct scmp_arg_cmp[]){a})
#define TRAP2(name, a, b) trap(filter, SCMP_SYS(name), 2, (struct scmp_arg_cmp[]){a, b})

static int socket_rules(scmp_filter_ctx filter, const vigil_confine_policy *policy) {
    int result = 0;
    int inet = policy->network != VIGIL_CONFINE_NETWORK_NONE;
    for (int family = 0; family < AF_MAX && !result; family++) {
        int allowed = (family == AF_UNIX && policy->unix_sockets) || ((family == AF_INET || family == AF_INET6) && inet);
        if (!allowed) result = TRAP1(socket, SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)family));
        // A connected pair reaches nothing outside the process: AF_UNIX pairs stay allowed.
        if (!result && family != AF_UNIX) result = TRAP1(socketpair, SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)family));
    }
    if (!result) result = TRAP1(socket, SCMP_A0(SCMP_CMP_GE, (scmp_datum_t)AF_MAX));
    if (!result) result = TRAP1(socketpair, SCMP_A0(SCMP_CMP_GE, (scmp_datum_t)AF_MAX));
    if (!result && policy->network == VIGIL_CONFINE_NETWORK_TCP) {
        // Landlock mediates TCP only: with a list of TCP ports, no UDP, raw or other INET socket.
        const int types[] = {SOCK_DGRAM, SOCK_RAW, SOCK_RDM, SOCK_SEQPACKET, SOCK_DCCP, SOCK_PACKET};
        const int families[] = {AF_INET, AF_INET6};
        for (size_t f = 0; f < 2 && !result; f++) {
            for (size_t t = 0; t < sizeof types / sizeof types[0] && !result; t++)
                result = TRAP2(socket, SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)families[f]),
                               SCMP_A1(SCMP_CMP_MASKED_EQ, 0xf, (scmp_datum_t)types[t]));
            if (!result)
                result = TRAP2(socket, SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)families[f]),
                               SCMP_A2(SCMP_CMP_GT, (scmp_datum_t)IPPROTO_TCP));
        }
    }
    return result;
}

static int apply_seccomp(const vigil_confine_policy *policy, char *error, size_t error_size) {
    // A deny-list (docs/native-plugins.md says why): everything not below is allowed, and Landlock
    // is the allow-list for files, TCP ports, signals and abstract sockets.
    scmp_filter_ctx filter = seccomp_init(SCMP_ACT_ALLOW);
    if (!filter) {
        set_error(error, error_size, "seccomp_init failed");
        return -1;
    }
    scmp_datum_t self = (scmp_datum_t)confined_pid;
    int result = 0;
    const int always[] = {
        SCMP_SYS(ptrace), SCMP_SYS(process_vm_readv), SCMP_SYS(process_vm_writev), SCMP_SYS(process_madvise),
        SCMP_SYS(pidfd_getfd), SCMP_SYS(kcmp), SCMP_SYS(tkill), SCMP_SYS(pidfd_send_signal), SCMP_SYS(mount),
        SCMP_SYS(umount2), SCMP_SYS(pivot_root), SCMP_SYS(chroot), SCMP_SYS(unshare), SCMP_SYS(setns),
        SCMP_SYS(bpf), SCMP_SYS(keyctl), SCMP_SYS(add_key), SCMP_SYS(request_key), SCMP_SYS(perf_event_open),
        SCMP_SYS(userfaultfd), SCMP_SYS(io_uring_setup), SCMP_SYS(io_uring_enter), SCMP_SYS(io_uring_register),
        SCMP_SYS(kexec_load), SCMP_SYS(kexec_file_load), SCMP_SYS(init_module), SCMP_SYS(finit_module),
        SCMP_SYS(delete_module), SCMP_SYS(reboot), SCMP_SYS(swapon), SCMP_SYS(swapoff),
        SCMP_SYS(open_by_handle_at), SCMP_SYS(name_to_handle_at), SCMP_SYS(syslog), SCMP_SYS(acct),
        SCMP_SYS(quotactl), SCMP_SYS(iopl), SCMP_SYS(ioperm), SCMP_SYS(fsopen), SCMP_SYS(fsmount),
        SCMP_SYS(fsconfig), SCMP_SYS(fspick), SCMP_SYS(move_mount), SCMP_SYS(open_tree),
        SCMP_SYS(mount_setattr), SCMP_SYS(fanotify_init),
    };
    for (size_t i = 0; i < sizeof always / sizeof always[0] && !result; i++) result = trap(filter, always[i], 0, NULL);
    // Signals only to itself (Landlock's signal scope says the same on ABI 6+; this holds on older kernels).
    if (!result) result = TRAP1(kill, SCMP_A0(SCMP_CMP_NE, self));
    if (!result) result = TRAP1(tgkill, SCMP_A0(SCMP_CMP_NE, self));
    if (!result) result = TRAP1(rt_sigqueueinfo, SCMP_A0(SCMP_CMP_NE, self));
    if (!result) result = TRAP1(rt_tgsigqueueinfo, SCMP_A0(SCMP_CMP_NE, self));
    // The report handler stays: no new SIGSYS disposition.
    if (!result) result = TRAP1(rt_sigaction, SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)SIGSYS));
    // No new namespaces through clone's flags; clone3's flags are behind a pointer seccomp cannot
    // read, so it answers ENOSYS and glibc falls back to clone.
    const scmp_datum_t namespaces[] = {CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET, CLONE_NEWIPC,
                                       CLONE_NEWUTS, CLONE_NEWCGROUP, CLONE_NEWTIME};
    for (size_t i = 0; i < sizeof namespaces / sizeof namespaces[0] && !result; i++)
        result = TRAP1(clone, SCMP_A0(SCMP_CMP_MASKED_EQ, namespaces[i], namespaces[i]));
    if (!result) {
        result = seccomp_rule_add(filter, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
    }
    if (!result && policy->spawn_count == 0) result = TRAP0(execve);
    if (!result && policy->spawn_count == 0) result = TRAP0(execveat);
    if (!result) result = socket_rules(filter, policy);
    if (result) {
        set_error(error, error_size, "building the seccomp filter failed: %s", strerror(-result));
        seccomp_release(filter);
        return -1;
    }
    result = seccomp_load(filter);
    seccomp_release(filter);
    if (result) {
        set_error(error, error_size, "loading the seccomp filter failed: %s", strerror(-result));
        return -1;
    }
    return 0;
}

// MARK: - Apply

int vigil_confine_apply(const vigil_confine_policy *policy, int report_fd, char *error, size_t error_size) {
    if (error && error_size) error[0] = 0;
    vigil_confine_support support;
    vigil_confine_probe(&support);
    const char *missing = NULL;
    if (!support.no_new_privs) missing = "PR_SET_NO_NEW_PRIVS";
    else if (!support.seccomp_filter) missing = "seccomp filters";
    else if (support.landlock_abi < 1) missing = "Landlock";
    else if (support.landlock_abi < 4 && policy->network == VIGIL_CONFINE_NETWORK_TCP)
        missing = "Landlock TCP rules (ABI 4)";
    else if (support.landlock_abi < 6) missing = "Landlock signal and abstract-socket scoping (ABI 6)";
    if (missing && !policy->allow_unenforced) {
        set_error(error, error_size, "this kernel cannot enforce the confinement: no %s", missing);
        return -1;
    }
    confined_pid = getpid();
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
        set_error(error, error_size, "PR_SET_NO_NEW_PRIVS failed: %s", strerror(errno));
        return -1;
    }
    if (support.landlock_abi >= 1 && apply_landlock(policy, support.landlock_abi, error, error_size) != 0) return -1;
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_sigaction = sigsys_handler;
    action.sa_flags = SA_SIGINFO;
    sigemptyset(&action.sa_mask);
    if (sigaction(SIGSYS, &action, NULL) != 0) {
        set_error(error, error_size, "installing the SIGSYS handler failed: %s", strerror(errno));
        return -1;
    }
    report_descriptor = report_fd;
    if (support.seccomp_filter && apply_seccomp(policy, error, error_size) != 0) {
        report_descriptor = -1;
        return -1;
    }
    return 0;
}
