// A stand-in for the helper process (the host's `vigil-plugin-helper` maps plugins the same way),
// for the confinement tests: copies the plugin into a memfd, applies the policy (unless it is "-"),
// maps the memfd and calls the plugin's vigil_attack(WHAT, ARGUMENT). Linked with -rdynamic and
// vigil_confine_interpose.h, as the helper is, so refusals that come back as errors are reported.
//   launcher POLICY-FILE|- REPORT-FILE PLUGIN.so WHAT ARGUMENT
// WHAT "keepalive" runs a real keep-alive plugin instead (vigil_plugin.h: init, create with
// ARGUMENT as its state directory and interval_ms = 100, start, wait until it has written its
// third beat or 10 s pass, stop, destroy, deinit), printing "result keepalive ok" or why not.
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "vigil_confine.h"
#include "vigil_confine_interpose.h"
#include "vigil_plugin.h"

static void host_log(const vigil_host *host, int32_t level, const char *message) {
    (void)host;
    printf("log %d %s\n", level, message);
    fflush(stdout);
}

static void interrupted(void *data, const char *reason) {
    (void)data;
    printf("event interrupted %s\n", reason);
    fflush(stdout);
}
static void resumed(void *data) { (void)data; }
static void resume_failed(void *data, const char *reason) {
    (void)data;
    printf("event resume-failed %s\n", reason);
    fflush(stdout);
}
static void details_changed(void *data) { (void)data; }

/// The beat number in the heartbeat file ("beat N"), or -1.
static long beats(const char *path) {
    char text[64] = {0};
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t n = read(fd, text, sizeof text - 1);
    close(fd);
    return n > 5 && !strncmp(text, "beat ", 5) ? strtol(text + 5, NULL, 10) : -1;
}

static int keepalive(void *handle, const char *state_directory) {
    const vigil_plugin_descriptor *entry = dlsym(handle, VIGIL_PLUGIN_ENTRY_SYMBOL);
    vigil_host host = {sizeof host, VIGIL_PLUGIN_ABI_MAJOR, VIGIL_PLUGIN_ABI_MINOR, "confine-test", NULL, host_log};
    if (!entry || !entry->init(&host)) {
        printf("result keepalive refused init\n");
        return 1;
    }
    const vigil_keepalive_v1 *keepalive = entry->get_interface(VIGIL_KEEPALIVE_INTERFACE_V1);
    vigil_setting settings[] = {{"interval_ms", "100"}};
    vigil_keepalive_config config = {sizeof config, entry->plugin_id, "confine-test", state_directory, 1, settings};
    vigil_keepalive_events events = {sizeof events, NULL, interrupted, resumed, resume_failed, details_changed};
    char error[512] = {0};
    void *instance = keepalive ? keepalive->create(&config, &events, error, sizeof error) : NULL;
    if (!instance) {
        printf("result keepalive refused create: %s\n", error);
        return 1;
    }
    if (!keepalive->start(instance, error, sizeof error)) {
        printf("result keepalive refused start: %s\n", error);
        keepalive->destroy(instance);
        return 1;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/heartbeat", state_directory);
    long beat = -1;
    for (int i = 0; i < 200 && (beat = beats(path)) < 3; i++) usleep(50000);
    keepalive->stop(instance);
    keepalive->destroy(instance);
    entry->deinit();
    if (beat < 3) printf("result keepalive refused beats %ld\n", beat);
    else printf("result keepalive ok\n");
    fflush(stdout);
    return beat < 3;
}

static int copy_into_memfd(const char *path) {
    int source = open(path, O_RDONLY | O_CLOEXEC);
    int memory = memfd_create("plugin", MFD_CLOEXEC);
    if (source < 0 || memory < 0) return -1;
    char buffer[65536];
    ssize_t n;
    while ((n = read(source, buffer, sizeof buffer)) > 0)
        if (write(memory, buffer, (size_t)n) != n) return -1;
    close(source);
    return n < 0 ? -1 : memory;
}

int main(int argc, char **argv) {
    if (argc != 6) {
        fprintf(stderr, "usage: launcher POLICY-FILE|- REPORT-FILE PLUGIN.so WHAT ARGUMENT\n");
        return 64;
    }
    int report = open(argv[2], O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    int library = copy_into_memfd(argv[3]);
    if (report < 0 || library < 0) {
        perror("launcher");
        return 70;
    }
    if (strcmp(argv[1], "-") != 0) {
        char text[65536];
        int fd = open(argv[1], O_RDONLY | O_CLOEXEC);
        ssize_t length = fd < 0 ? -1 : read(fd, text, sizeof text);
        if (length < 0) {
            perror("launcher: policy");
            return 70;
        }
        close(fd);
        char error[256];
        vigil_confine_policy *policy = NULL;
        if (vigil_confine_decode(text, (size_t)length, &policy, error, sizeof error) != 0 ||
            vigil_confine_apply(policy, report, error, sizeof error) != 0) {
            fprintf(stderr, "launcher: %s\n", error);
            return 71;
        }
        vigil_confine_policy_free(policy);
    }
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", library);
    void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        fprintf(stderr, "launcher: %s\n", dlerror());
        return 72;
    }
    if (!strcmp(argv[4], "keepalive")) return keepalive(handle, argv[5]);
    int (*attack)(const char *, const char *) = (int (*)(const char *, const char *))dlsym(handle, "vigil_attack");
    if (!attack) {
        fprintf(stderr, "launcher: no vigil_attack\n");
        return 72;
    }
    return attack(argv[4], argv[5]);
}
