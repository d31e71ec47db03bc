// vigil-plugin-helper: the process one shared-library plugin runs in.
//
// The host starts it with a fresh exec (posix_spawn), the socket of a SOCK_SEQPACKET pair on
// descriptor 3 and nothing else open but 0-2. It sends the confinement policy, which the helper
// applies to itself, then the plugin's libraries as sealed memfds holding the bytes the host
// verified, then the keep-alive requests; the helper maps the libraries, drives the C ABI of
// vigil_plugin.h and sends back replies, the plugin's events and log lines and the denials the
// confinement reports. It blocks in poll(2) until the host or the confinement has something to
// say, and dies with the host: PR_SET_PDEATHSIG(SIGKILL), and exit at end-of-file on the socket.
// Plain C with no runtime of its own, so it starts in a millisecond and costs little memory.
// The protocol is vigil_helper.h's; docs/native-plugins.md describes the process model.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "vigil_confine.h"
#include "vigil_confine_interpose.h"
#include "vigil_helper.h"
#include "vigil_plugin.h"

#define MAX_LIBRARIES 64
#define ERROR_SIZE 1024

static int sock = VIGIL_HELPER_SOCKET_FD;

// ---- no Swift runtime ---------------------------------------------------------------------------

// SwiftPM links every executable with swiftrt.o, whose constructor registers the image's Swift
// metadata with the runtime (swift_addNewDSOImage), and with the Swift runtime. The helper has no
// Swift code: these two definitions satisfy swiftrt.o, so a build with --static-swift-stdlib (the
// release build `make` and the package ship) takes nothing from the runtime's archives, and the
// helper starts without it (a debug build still names libswiftCore.so, which is then loaded but
// unused). Hidden: never exported, so a Swift plugin's own swiftrt.o binds to the real runtime its
// library loads.
__attribute__((visibility("hidden"))) void swift_addNewDSOImage(const void *image) { (void)image; }
__attribute__((visibility("hidden"))) bool _swift_backtrace_isThunkFunction(const char *name) {
    (void)name;
    return false;
}

// ---- records ----------------------------------------------------------------------------------

typedef struct {
    unsigned char bytes[VIGIL_HELPER_MESSAGE_MAX];
    size_t length;
    bool overflow;
} writer;

static void put_bytes(writer *w, const void *data, size_t n) {
    if (w->overflow || n > sizeof w->bytes - w->length) {
        w->overflow = true;
        return;
    }
    memcpy(w->bytes + w->length, data, n);
    w->length += n;
}

static void put_u32(writer *w, uint32_t value) { put_bytes(w, &value, sizeof value); }

static void put_string(writer *w, const char *text) {
    if (text == NULL) text = "";
    size_t n = strnlen(text, VIGIL_HELPER_MESSAGE_MAX / 2);
    put_u32(w, (uint32_t)n);
    put_bytes(w, text, n);
}

typedef struct {
    const unsigned char *bytes;
    size_t length, offset;
    bool bad;
} reader;

static uint32_t get_u32(reader *r) {
    uint32_t value = 0;
    if (r->bad || r->length - r->offset < sizeof value) {
        r->bad = true;
        return 0;
    }
    memcpy(&value, r->bytes + r->offset, sizeof value);
    r->offset += sizeof value;
    return value;
}

/// A string of the record, copied NUL-terminated into malloc'd memory (NULL when malformed).
static char *get_string(reader *r) {
    uint32_t n = get_u32(r);
    if (r->bad || r->length - r->offset < n) {
        r->bad = true;
        return NULL;
    }
    char *text = malloc((size_t)n + 1);
    if (text == NULL) {
        r->bad = true;
        return NULL;
    }
    memcpy(text, r->bytes + r->offset, n);
    text[n] = '\0';
    r->offset += n;
    return text;
}

/// Sends a record; a host that went away ends the helper.
static void send_record(writer *w) {
    if (w->overflow) {
        // Only a plugin's own text can be this long: cut, not lost.
        w->length = sizeof w->bytes;
        w->overflow = false;
    }
    if (vigil_helper_send(sock, w->bytes, w->length, -1) == -EPIPE) _exit(0);
}

static void reply(const char *code, const char *variant, const char *detail) {
    static writer w;
    w.length = 0;
    w.overflow = false;
    put_u32(&w, VIGIL_HELPER_REPLY);
    put_string(&w, code);
    put_string(&w, variant);
    put_string(&w, detail);
    send_record(&w);
}

static void ok(void) { reply("", "", ""); }

// ---- what the plugin calls (any thread) ---------------------------------------------------------

static void send_event(uint32_t kind, const char *reason) {
    writer *w = malloc(sizeof *w);
    if (w == NULL) return;
    w->length = 0;
    w->overflow = false;
    put_u32(w, VIGIL_HELPER_EVENT);
    put_u32(w, kind);
    put_string(w, reason);
    send_record(w);
    free(w);
}

static void host_log(const vigil_host *host, int32_t level, const char *message) {
    (void)host;
    if (message == NULL) return;
    writer *w = malloc(sizeof *w);
    if (w == NULL) return;
    w->length = 0;
    w->overflow = false;
    put_u32(w, VIGIL_HELPER_LOG);
    put_u32(w, (uint32_t)level);
    put_string(w, message);
    send_record(w);
    free(w);
}

static void event_interrupted(void *data, const char *reason) {
    (void)data;
    send_event(VIGIL_HELPER_EVENT_INTERRUPTED, reason);
}
static void event_resumed(void *data) {
    (void)data;
    send_event(VIGIL_HELPER_EVENT_RESUMED, NULL);
}
static void event_resume_failed(void *data, const char *reason) {
    (void)data;
    send_event(VIGIL_HELPER_EVENT_RESUME_FAILED, reason);
}
static void event_details_changed(void *data) {
    (void)data;
    send_event(VIGIL_HELPER_EVENT_DETAILS_CHANGED, NULL);
}

// ---- the plugin ---------------------------------------------------------------------------------

static struct {
    void *handles[MAX_LIBRARIES];
    char paths[MAX_LIBRARIES][32];
    int count;
    vigil_plugin_descriptor entry;
    bool initialised;
    vigil_keepalive_v1 interface;
    void *instance;
    vigil_host host;
    vigil_keepalive_events events;
    char *host_name;
} plugin;

/// Copies a struct that carries its size: the fields that fit in `declared`, the rest zero.
static void load_growable(void *out, size_t size, const void *raw, size_t declared) {
    memset(out, 0, size);
    memcpy(out, raw, declared < size ? declared : size);
}

static void map_library(reader *r, int fd) {
    char *soname = get_string(r);
    if (r->bad || fd < 0 || plugin.count == MAX_LIBRARIES || plugin.instance != NULL) {
        free(soname);
        if (fd >= 0) close(fd);
        reply("plugin-helper-protocol", "library", "a library record without its descriptor, or too many");
        return;
    }
    char *path = plugin.paths[plugin.count];
    snprintf(path, sizeof plugin.paths[0], "/proc/self/fd/%d", fd);
    void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (handle == NULL) {
        const char *why = dlerror();
        close(fd);
        reply("library-load-failed", "", why != NULL ? why : "unknown error");
        free(soname);
        return;
    }
    // The SONAME must now resolve to exactly this object, so DT_NEEDED of what follows binds here.
    void *by_soname = dlopen(soname, RTLD_LAZY | RTLD_NOLOAD);
    if (by_soname != NULL) dlclose(by_soname);
    free(soname);
    if (by_soname != handle) {
        dlclose(handle);
        reply("library-stale-handle", "soname", "");
        return;
    }
    plugin.handles[plugin.count++] = handle;
    ok();
}

static void create(reader *r) {
    // The descriptor header as checked in the bytes: 16 raw bytes.
    unsigned char header[16];
    bool header_ok = get_u32(r) == sizeof header && !r->bad && r->length - r->offset >= sizeof header;
    if (header_ok) {
        memcpy(header, r->bytes + r->offset, sizeof header);
        r->offset += sizeof header;
    }
    char *plugin_name = get_string(r);
    char *host_name = get_string(r);
    char *state = get_string(r);
    uint32_t count = get_u32(r);
    vigil_setting *settings = NULL;
    if (!r->bad && count <= VIGIL_HELPER_MESSAGE_MAX / 8) settings = calloc(count + 1, sizeof *settings);
    for (uint32_t i = 0; settings != NULL && i < count && !r->bad; i++) {
        settings[i].key = get_string(r);
        settings[i].value = get_string(r);
    }
    if (r->bad || settings == NULL || !header_ok || plugin.count == 0
        || plugin.instance != NULL) {
        reply("plugin-helper-protocol", "create", "a malformed create record");
        goto out;
    }
    void *main_handle = plugin.handles[plugin.count - 1];
    const char *main_path = plugin.paths[plugin.count - 1];
    void *raw = dlsym(main_handle, VIGIL_PLUGIN_ENTRY_SYMBOL);
    Dl_info info;
    if (raw == NULL || dladdr(raw, &info) == 0 || info.dli_fname == NULL || strcmp(info.dli_fname, main_path) != 0) {
        reply("abi-no-descriptor", "unresolved", "");
        goto out;
    }
    // The header again, from memory: it must be what was checked in the bytes.
    if (memcmp(raw, header, sizeof header) != 0) {
        reply("abi-no-descriptor", "changed", "");
        goto out;
    }
    uint32_t declared;
    memcpy(&declared, (const char *)raw + 8, sizeof declared);
    load_growable(&plugin.entry, sizeof plugin.entry, raw, declared);
    if (plugin.entry.init == NULL || plugin.entry.get_interface == NULL || plugin.entry.deinit == NULL) {
        reply("abi-no-descriptor", "empty", "");
        goto out;
    }
    plugin.host_name = strdup(host_name);
    plugin.host = (vigil_host){sizeof(vigil_host), VIGIL_PLUGIN_ABI_MAJOR, VIGIL_PLUGIN_ABI_MINOR, plugin.host_name,
                               NULL, host_log};
    if (!plugin.entry.init(&plugin.host)) {
        reply("plugin-init-failed", "", "");
        goto out;
    }
    plugin.initialised = true;
    if (plugin.entry.plugin_id == NULL || strcmp(plugin.entry.plugin_id, plugin_name) != 0) {
        reply("plugin-id-mismatch", plugin.entry.plugin_id == NULL ? "none" : "", plugin.entry.plugin_id);
        goto out;
    }
    const void *found = plugin.entry.get_interface(VIGIL_KEEPALIVE_INTERFACE_V1);
    if (found == NULL) {
        reply("interface-missing", "absent", "");
        goto out;
    }
    uint32_t size;
    memcpy(&size, found, sizeof size);
    load_growable(&plugin.interface, sizeof plugin.interface, found, size);
    if (size < sizeof(vigil_keepalive_v1) || plugin.interface.create == NULL || plugin.interface.start == NULL
        || plugin.interface.stop == NULL || plugin.interface.details == NULL || plugin.interface.destroy == NULL) {
        char text[32];
        snprintf(text, sizeof text, "%u", size);
        reply("interface-missing", "incomplete", text);
        goto out;
    }
    plugin.events = (vigil_keepalive_events){sizeof(vigil_keepalive_events), NULL, event_interrupted, event_resumed,
                                             event_resume_failed, event_details_changed};
    vigil_keepalive_config config = {sizeof(vigil_keepalive_config), plugin_name, host_name, state, count, settings};
    char error[ERROR_SIZE] = {0};
    plugin.instance = plugin.interface.create(&config, &plugin.events, error, sizeof error);
    if (plugin.instance == NULL) {
        error[sizeof error - 1] = '\0';
        reply("plugin-create-failed", "", error);
        goto out;
    }
    ok();
out:
    for (uint32_t i = 0; settings != NULL && i < count; i++) {
        free((void *)settings[i].key);
        free((void *)settings[i].value);
    }
    free(settings);
    free(plugin_name);
    free(host_name);
    free(state);
}

static void start(void) {
    if (plugin.instance == NULL) {
        reply("plugin-helper-protocol", "start", "start before create");
        return;
    }
    char error[ERROR_SIZE] = {0};
    bool started = plugin.interface.start(plugin.instance, error, sizeof error);
    error[sizeof error - 1] = '\0';
    if (started) {
        ok();
    } else {
        reply("plugin-start-failed", "", error);
    }
}

static writer details_record;

static void detail_sink(void *context, const char *key, const char *value) {
    uint32_t *count = context;
    if (key == NULL || value == NULL) return;
    put_string(&details_record, key);
    put_string(&details_record, value);
    if (!details_record.overflow) (*count)++;
}

static void details(void) {
    writer *w = &details_record;
    w->length = 0;
    w->overflow = false;
    put_u32(w, VIGIL_HELPER_REPLY);
    put_string(w, "");
    put_string(w, "");
    put_string(w, "");
    size_t count_at = w->length;
    uint32_t count = 0;
    put_u32(w, 0);
    if (plugin.instance != NULL) plugin.interface.details(plugin.instance, detail_sink, &count);
    if (w->overflow) {
        // Keep the pairs that fit whole: cut at the last complete pair.
        w->overflow = false;
        reader r = {w->bytes, w->length, count_at + 4, false};
        for (uint32_t i = 0; i < count; i++) {
            free(get_string(&r));
            free(get_string(&r));
        }
        w->length = r.offset;
    }
    memcpy(w->bytes + count_at, &count, sizeof count);
    send_record(w);
}

/// destroy, deinit and unmap: what the host asks at stop, and what end-of-file on the socket
/// (the host went away) does before the helper exits.
static void release(void) {
    if (plugin.instance != NULL) {
        plugin.interface.destroy(plugin.instance);
        plugin.instance = NULL;
    }
    if (plugin.initialised) {
        plugin.entry.deinit();
        plugin.initialised = false;
    }
    while (plugin.count > 0) dlclose(plugin.handles[--plugin.count]);
}

// ---- confinement --------------------------------------------------------------------------------

/// Applies the policy the host sent to this process, before any plugin byte is mapped
/// (CVigilConfine: Landlock, seccomp, no_new_privs). The host always sends one: an empty policy is
/// an error, not "no confinement".
static int confine_apply(const char *policy, size_t length, int report_fd, char *error, size_t error_size) {
    if (length == 0) {
        snprintf(error, error_size, "the host sent no confinement policy");
        return -1;
    }
    vigil_confine_policy *decoded = NULL;
    if (vigil_confine_decode(policy, length, &decoded, error, error_size) != 0) return -1;
    int result = vigil_confine_apply(decoded, report_fd, error, error_size);
    vigil_confine_policy_free(decoded);
    return result;
}

static void apply_policy(reader *r, int report_fd) {
    uint32_t length = get_u32(r);
    if (r->bad || r->length - r->offset < length || plugin.count != 0) {
        reply("plugin-helper-protocol", "policy", "a malformed policy record, or one after a library");
        return;
    }
    char error[ERROR_SIZE] = {0};
    if (confine_apply((const char *)r->bytes + r->offset, length, report_fd, error, sizeof error) != 0) {
        reply("confinement-failed", "", error);
        return;
    }
    ok();
}

// ---- main loop ----------------------------------------------------------------------------------

int main(int argc, char **argv) {
    // Die with the host's thread that started us; if it is already gone, leave.
    if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) return 126;
    if (argc > 1 && getppid() != (pid_t)strtol(argv[1], NULL, 10)) return 125;
    int type = 0;
    socklen_t type_size = sizeof type;
    if (getsockopt(sock, SOL_SOCKET, SO_TYPE, &type, &type_size) != 0 || type != SOCK_SEQPACKET) {
        fprintf(stderr, "vigil-plugin-helper: run by Vigil only (descriptor 3 must be its socket)\n");
        return 2;
    }
    // The plugin's children (if its policy lets it spawn) get neither the socket nor the report pipe.
    (void)fcntl(sock, F_SETFD, FD_CLOEXEC);
    int report[2];
    if (pipe2(report, O_CLOEXEC) != 0) return 124;

    static unsigned char in[VIGIL_HELPER_MESSAGE_MAX];
    static char line[1024];
    size_t line_length = 0;
    for (;;) {
        struct pollfd fds[2] = {{sock, POLLIN, 0}, {report[0], POLLIN, 0}};
        if (poll(fds, 2, -1) < 0) {
            if (errno == EINTR) continue;
            return 123;
        }
        if (fds[1].revents & POLLIN) {
            ssize_t n = read(report[0], line + line_length, sizeof line - 1 - line_length);
            if (n > 0) line_length += (size_t)n;
            char *end;
            while ((end = memchr(line, '\n', line_length)) != NULL || line_length == sizeof line - 1) {
                size_t cut = end != NULL ? (size_t)(end - line) : line_length;
                line[cut] = '\0';
                writer *w = malloc(sizeof *w);
                if (w != NULL) {
                    w->length = 0;
                    w->overflow = false;
                    put_u32(w, VIGIL_HELPER_DENIAL);
                    put_string(w, line);
                    send_record(w);
                    free(w);
                }
                size_t rest = line_length - (end != NULL ? cut + 1 : cut);
                memmove(line, line + line_length - rest, rest);
                line_length = rest;
            }
        }
        if (!(fds[0].revents & (POLLIN | POLLHUP | POLLERR))) continue;

        // One record; a descriptor may come with it (a library's memfd).
        struct iovec part = {in, sizeof in};
        union {
            char buffer[CMSG_SPACE(sizeof(int))];
            struct cmsghdr align;
        } control;
        struct msghdr message;
        memset(&message, 0, sizeof message);
        message.msg_iov = &part;
        message.msg_iovlen = 1;
        message.msg_control = control.buffer;
        message.msg_controllen = sizeof control.buffer;
        ssize_t n = recvmsg(sock, &message, MSG_CMSG_CLOEXEC);
        if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        if (n <= 0) {
            // The host closed its end or died: release the plugin and leave.
            release();
            return 0;
        }
        int fd = -1;
        struct cmsghdr *header = CMSG_FIRSTHDR(&message);
        if (header != NULL && header->cmsg_level == SOL_SOCKET && header->cmsg_type == SCM_RIGHTS
            && header->cmsg_len == CMSG_LEN(sizeof(int))) {
            memcpy(&fd, CMSG_DATA(header), sizeof fd);
        }
        if (message.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) {
            if (fd >= 0) close(fd);
            reply("plugin-helper-protocol", "size", "a record larger than the protocol allows");
            continue;
        }
        reader r = {in, (size_t)n, 0, false};
        uint32_t kind = get_u32(&r);
        if (kind != VIGIL_HELPER_LIBRARY && fd >= 0) {
            close(fd);
            fd = -1;
        }
        switch (kind) {
        case VIGIL_HELPER_POLICY: apply_policy(&r, report[1]); break;
        case VIGIL_HELPER_LIBRARY: map_library(&r, fd); break;
        case VIGIL_HELPER_CREATE: create(&r); break;
        case VIGIL_HELPER_START: start(); break;
        case VIGIL_HELPER_STOP:
            if (plugin.instance != NULL) plugin.interface.stop(plugin.instance);
            ok();
            break;
        case VIGIL_HELPER_DETAILS: details(); break;
        case VIGIL_HELPER_DESTROY:
            release();
            ok();
            return 0;
        default: reply("plugin-helper-protocol", "type", "an unknown request"); break;
        }
    }
}
