// A keep-alive plugin (or, with HELPER_LIBRARY, a helper library it links) for the shared-library
// loader's tests, compiled by the tests with the system cc. WHO names the build; SENTINEL, when
// defined, is a file the constructor appends to, so a test can tell whether any code of this
// library ran. start/stop append "start WHO" / "stop WHO" to the file named by the "marker" setting.
// Built with ATTACKS and linked with the confinement tests' AttackPlugin.c, start also runs the
// attack named by the "attack" setting ("WHAT ARGUMENT"; the argument "parent" is the host's PID)
// and appends "attack WHAT ok" or "attack WHAT refused" to the marker.
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vigil_plugin.h"

static void append(const char *path, const char *text) {
    if (path == NULL || path[0] == '\0') return;
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) return;
    ssize_t ignored = write(fd, text, strlen(text));
    (void)ignored;
    close(fd);
}

#ifdef SENTINEL
__attribute__((constructor)) static void constructor(void) { append(SENTINEL, "constructor " WHO " ran\n"); }
#endif

#ifdef HELPER_LIBRARY

const char *vigil_test_helper(void) { return "helper " WHO; }

#else

#ifdef USE_HELPER
extern const char *vigil_test_helper(void);
#endif

typedef struct {
    char marker[4096];
    char self[256];
    const vigil_keepalive_events *events;
    bool report_events;
    bool hang_details;
    bool crash;
    pthread_t reporter;
    bool reporting;
#ifdef ATTACKS
    char attack[4096];
#endif
} instance;

#ifdef ATTACKS
extern int vigil_attack(const char *what, const char *argument);

static void run_attack(instance *self) {
    char what[64] = {0};
    char argument[4096] = {0};
    if (sscanf(self->attack, "%63s %4095s", what, argument) != 2) return;
    if (strcmp(argument, "parent") == 0) snprintf(argument, sizeof argument, "%d", (int)getppid());
    char line[128];
    snprintf(line, sizeof line, "attack %s %s\n", what, vigil_attack(what, argument) == 0 ? "ok" : "refused");
    append(self->marker, line);
}
#endif

// With the "events" setting: after start returned, report an interruption, then recovery.
static void *report(void *opaque) {
    instance *self = opaque;
    usleep(100000);
    self->events->interrupted(self->events->host_data, "test cable pulled");
    append(self->marker, "interrupted\n");
    usleep(300000);
    self->events->resumed(self->events->host_data);
    append(self->marker, "resumed\n");
    return NULL;
}

// With the "crash" setting: a while after start returned, the plugin's code crashes (abort).
static void *crash(void *opaque) {
    (void)opaque;
    usleep(200000);
    abort();
    return NULL;
}

static int init_depth;

static bool plugin_init(const vigil_host *host) {
    init_depth++;
    if (host->log) host->log(host, VIGIL_LOG_INFO, "test plugin " WHO " initialised");
    return true;
}

static void plugin_deinit(void) {
    if (init_depth > 0) init_depth--;
}

static void *keepalive_create(const vigil_keepalive_config *config, const vigil_keepalive_events *events, char *error,
                              size_t error_size) {
    instance *made = calloc(1, sizeof *made);
    if (made == NULL) return NULL;
    made->events = events;
    for (size_t i = 0; i < config->setting_count; i++) {
        if (strcmp(config->settings[i].key, "marker") == 0)
            snprintf(made->marker, sizeof made->marker, "%s", config->settings[i].value);
        if (strcmp(config->settings[i].key, "events") == 0) made->report_events = strcmp(config->settings[i].value, "true") == 0;
        if (strcmp(config->settings[i].key, "hang_details") == 0) made->hang_details = strcmp(config->settings[i].value, "true") == 0;
        if (strcmp(config->settings[i].key, "crash") == 0) made->crash = strcmp(config->settings[i].value, "true") == 0;
#ifdef ATTACKS
        if (strcmp(config->settings[i].key, "attack") == 0)
            snprintf(made->attack, sizeof made->attack, "%s", config->settings[i].value);
#endif
    }
    if (made->marker[0] == '\0') {
        snprintf(error, error_size, "the \"marker\" setting is missing — set it in the manifest");
        free(made);
        return NULL;
    }
    Dl_info info;
    if (dladdr((void *)keepalive_create, &info) && info.dli_fname)
        snprintf(made->self, sizeof made->self, "%s", info.dli_fname);
    return made;
}

static bool keepalive_start(void *opaque, char *error, size_t error_size) {
    (void)error;
    (void)error_size;
    instance *self = opaque;
    append(self->marker, "start " WHO "\n");
#ifdef ATTACKS
    run_attack(self);
#endif
#ifdef USE_HELPER
    append(self->marker, vigil_test_helper());
    append(self->marker, "\n");
#endif
    if (self->report_events) self->reporting = pthread_create(&self->reporter, NULL, report, self) == 0;
    if (self->crash) {
        pthread_t thread;
        if (pthread_create(&thread, NULL, crash, self) == 0) pthread_detach(thread);
    }
    return true;
}

static void keepalive_stop(void *opaque) {
    instance *self = opaque;
    if (self->reporting) pthread_join(self->reporter, NULL);
    self->reporting = false;
    append(self->marker, "stop " WHO "\n");
}

static void keepalive_details(void *opaque, vigil_detail_sink sink, void *context) {
    instance *self = opaque;
    // With the "hang_details" setting: details never returns (a plugin stuck in its own code).
    while (self->hang_details) pause();
    sink(context, "who", WHO);
    sink(context, "object", self->self);
}

static void keepalive_destroy(void *opaque) { free(opaque); }

static const vigil_keepalive_v1 keepalive = {
    sizeof(vigil_keepalive_v1), keepalive_create, keepalive_start, keepalive_stop, keepalive_details, keepalive_destroy,
};

static const void *plugin_get_interface(const char *id) {
    return strcmp(id, VIGIL_KEEPALIVE_INTERFACE_V1) == 0 ? &keepalive : NULL;
}

#ifndef DESCRIPTOR_PADDING
#define DESCRIPTOR_PADDING 0
#endif

// The Vigil note (checked before mapping): by default the plugin id and the descriptor's ABI, as
// VIGIL_PLUGIN_NOTE emits them; NO_NOTE leaves it out, NOTE_ID / NOTE_ABI_MINOR change it.
#ifndef NOTE_ID
#define NOTE_ID PLUGIN_ID
#endif
#ifndef NOTE_ABI_MINOR
#define NOTE_ABI_MINOR ABI_MINOR
#endif
#ifndef NO_NOTE
#undef VIGIL_PLUGIN_ABI_MAJOR
#undef VIGIL_PLUGIN_ABI_MINOR
#define VIGIL_PLUGIN_ABI_MAJOR ABI_MAJOR
#define VIGIL_PLUGIN_ABI_MINOR NOTE_ABI_MINOR
VIGIL_PLUGIN_NOTE(NOTE_ID);
#endif

// A descriptor built by a newer header of the same major would be larger; DESCRIPTOR_PADDING
// simulates that (the host reads the fields it knows).
const struct {
    vigil_plugin_descriptor descriptor;
    char newer_fields[DESCRIPTOR_PADDING + 1];
} vigil_plugin_entry = {
    {VIGIL_PLUGIN_MAGIC, ABI_MAJOR, ABI_MINOR, sizeof(vigil_plugin_descriptor) + DESCRIPTOR_PADDING, 0, PLUGIN_ID,
     plugin_init, plugin_deinit, plugin_get_interface},
    {0},
};

#endif
