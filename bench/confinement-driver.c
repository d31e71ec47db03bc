// The two peers of bench/confinement.sh: a minimal C host that starts one shared-library plugin
// either in its own process (`inprocess`: a sealed memfd, dlopen of /proc/self/fd/N and the C ABI
// called directly, the route Vigil took before the helper process) or in vigil-plugin-helper
// (`helper`: posix_spawn and the protocol of vigil_helper.h, the route VigilSharedLibrary takes),
// prints how long the start took, idles SECONDS in poll(2) and stops it. Built by the script with cc.
// The helper applies POLICY (a file holding the wire encoding of vigil_confine.h) to itself first,
// as it does for the host.
//
//   confinement-driver header LIBRARY                     the descriptor's 16-byte header, in hex
//   confinement-driver inprocess LIBRARY HEADER SECONDS KEY=VALUE...
//   confinement-driver helper HELPER POLICY LIBRARY HEADER SECONDS KEY=VALUE...
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "vigil_helper.h"
#include "vigil_plugin.h"

static void die(const char *what) {
    fprintf(stderr, "confinement-driver: %s (%s)\n", what, strerror(errno));
    exit(1);
}

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int sealed_memfd(const char *path) {
    int in = open(path, O_RDONLY | O_CLOEXEC);
    if (in < 0) die("open library");
    struct stat st;
    fstat(in, &st);
    int fd = memfd_create("vigil-plugin:bench", MFD_CLOEXEC | MFD_ALLOW_SEALING | 0x0010U /* MFD_EXEC */);
    if (fd < 0) fd = memfd_create("vigil-plugin:bench", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0) die("memfd_create");
    char buffer[65536];
    ssize_t n;
    while ((n = read(in, buffer, sizeof buffer)) > 0) {
        if (write(fd, buffer, (size_t)n) != n) die("write memfd");
    }
    close(in);
    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL);
    return fd;
}

static void host_log(const vigil_host *host, int32_t level, const char *message) {
    (void)host;
    (void)level;
    (void)message;
}
static void ev_text(void *data, const char *reason) {
    (void)data;
    (void)reason;
}
static void ev_none(void *data) { (void)data; }

static int settings_from(int argc, char **argv, vigil_setting *out) {
    int count = 0;
    for (int i = 0; i < argc && count < 16; i++) {
        char *eq = strchr(argv[i], '=');
        if (eq == NULL) continue;
        *eq = '\0';
        out[count].key = argv[i];
        out[count].value = eq + 1;
        count++;
    }
    return count;
}

static void idle(int fd, int seconds) {
    struct pollfd p = {fd, POLLIN, 0};
    double end = now_us() + seconds * 1e6;
    while (now_us() < end) poll(fd >= 0 ? &p : NULL, fd >= 0 ? 1 : 0, (int)((end - now_us()) / 1000) + 1);
}

static int in_process(const char *library, int seconds, int argc, char **argv) {
    vigil_setting settings[16];
    int count = settings_from(argc, argv, settings);
    double t0 = now_us();
    int fd = sealed_memfd(library);
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (handle == NULL) {
        fprintf(stderr, "dlopen: %s\n", dlerror());
        return 1;
    }
    const vigil_plugin_descriptor *entry = dlsym(handle, VIGIL_PLUGIN_ENTRY_SYMBOL);
    vigil_host host = {sizeof host, 1, 0, "bench", NULL, host_log};
    if (entry == NULL || !entry->init(&host)) return 1;
    const vigil_keepalive_v1 *api = entry->get_interface(VIGIL_KEEPALIVE_INTERFACE_V1);
    vigil_keepalive_events events = {sizeof events, NULL, ev_text, ev_none, ev_text, ev_none};
    vigil_keepalive_config config = {sizeof config, entry->plugin_id, "bench", "/tmp", (size_t)count, settings};
    char error[1024] = {0};
    void *instance = api->create(&config, &events, error, sizeof error);
    if (instance == NULL || !api->start(instance, error, sizeof error)) {
        fprintf(stderr, "start: %s\n", error);
        return 1;
    }
    printf("start_us=%.0f\nready\n", now_us() - t0);
    fflush(stdout);
    idle(-1, seconds);
    api->stop(instance);
    api->destroy(instance);
    entry->deinit();
    return 0;
}

// ---- the helper's side of the protocol ------------------------------------------------------

static unsigned char record[VIGIL_HELPER_MESSAGE_MAX];
static size_t length;

static void begin(uint32_t type) {
    length = 0;
    memcpy(record, &type, 4);
    length = 4;
}
static void put_u32(uint32_t v) {
    memcpy(record + length, &v, 4);
    length += 4;
}
static void put_bytes(const void *bytes, uint32_t n) {
    put_u32(n);
    memcpy(record + length, bytes, n);
    length += n;
}
static void put_string(const char *s) { put_bytes(s, (uint32_t)strlen(s)); }

/// Sends the record and waits for the reply; exits on an error reply.
static void exchange(int sock, int attached) {
    if (vigil_helper_send(sock, record, length, attached) != 0) die("send");
    unsigned char in[VIGIL_HELPER_MESSAGE_MAX];
    for (;;) {
        struct pollfd p = {sock, POLLIN, 0};
        poll(&p, 1, 10000);
        long n = vigil_helper_receive(sock, in, sizeof in);
        if (n == -EAGAIN) continue;
        if (n <= 0) die("helper ended");
        uint32_t type, code_length;
        memcpy(&type, in, 4);
        if (type != VIGIL_HELPER_REPLY) continue;
        memcpy(&code_length, in + 4, 4);
        if (code_length != 0) {
            fprintf(stderr, "helper refused: %.*s\n", (int)code_length, (char *)in + 8);
            exit(1);
        }
        return;
    }
}

static int in_helper(const char *helper, const char *policy_path, const char *library, const unsigned char header[16],
                     int seconds, int argc, char **argv) {
    static char policy[1 << 16];
    FILE *file = fopen(policy_path, "r");
    if (file == NULL) die("open the policy");
    size_t policy_length = fread(policy, 1, sizeof policy, file);
    fclose(file);
    vigil_setting settings[16];
    int count = settings_from(argc, argv, settings);
    extern char **environ;
    double t0 = now_us();
    int pair[2];
    if (vigil_helper_socketpair(pair) != 0) die("socketpair");
    pid_t pid;
    int pidfd;
    if (vigil_helper_spawn(helper, pair[1], environ, &pid, &pidfd) != 0) die("spawn");
    close(pair[1]);
    int sock = pair[0];
    begin(VIGIL_HELPER_POLICY);
    put_bytes(policy, (uint32_t)policy_length);
    exchange(sock, -1);
    int fd = sealed_memfd(library);
    begin(VIGIL_HELPER_LIBRARY);
    put_string("libVigilHeartbeatExample.so");
    exchange(sock, fd);
    close(fd);
    begin(VIGIL_HELPER_CREATE);
    put_bytes(header, 16);
    put_string("heartbeat-example");
    put_string("bench");
    put_string("/tmp");
    put_u32((uint32_t)count);
    for (int i = 0; i < count; i++) {
        put_string(settings[i].key);
        put_string(settings[i].value);
    }
    exchange(sock, -1);
    begin(VIGIL_HELPER_START);
    exchange(sock, -1);
    printf("start_us=%.0f\nhelper_pid=%d\nready\n", now_us() - t0, (int)pid);
    fflush(stdout);
    idle(sock, seconds);
    begin(VIGIL_HELPER_STOP);
    exchange(sock, -1);
    begin(VIGIL_HELPER_DESTROY);
    exchange(sock, -1);
    close(sock);
    waitpid(pid, NULL, 0);
    return 0;
}

int main(int argc, char **argv) {
    if (argc >= 3 && strcmp(argv[1], "header") == 0) {
        void *handle = dlopen(argv[2], RTLD_NOW | RTLD_LOCAL);
        const unsigned char *entry = handle ? dlsym(handle, VIGIL_PLUGIN_ENTRY_SYMBOL) : NULL;
        if (entry == NULL) return 1;
        for (int i = 0; i < 16; i++) printf("%02x", entry[i]);
        printf("\n");
        return 0;
    }
    unsigned char header[16];
    const char *hex = argc >= 7 && strcmp(argv[1], "helper") == 0 ? argv[5] : argc >= 5 ? argv[3] : "";
    for (int i = 0; i < 16 && strlen(hex) == 32; i++) sscanf(hex + 2 * i, "%2hhx", &header[i]);
    if (argc >= 5 && strcmp(argv[1], "inprocess") == 0) return in_process(argv[2], atoi(argv[4]), argc - 5, argv + 5);
    if (argc >= 7 && strcmp(argv[1], "helper") == 0)
        return in_helper(argv[2], argv[3], argv[4], header, atoi(argv[6]), argc - 7, argv + 7);
    fprintf(stderr, "usage: see the comment at the top of bench/confinement-driver.c\n");
    return 64;
}
