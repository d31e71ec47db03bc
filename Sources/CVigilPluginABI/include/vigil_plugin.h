/*
 * vigil_plugin.h — the C ABI between Vigil and a keep-alive plugin shipped as a shared library.
 *
 * A plugin library exports exactly one symbol, `vigil_plugin_entry`, a const `vigil_plugin_entry`
 * descriptor, and carries one Vigil note (`.note.vigil`) with its plugin id and ABI version. Write
 *
 *     VIGIL_PLUGIN_ENTRY("my-plugin", 0, my_init, my_deinit, my_get_interface);
 *
 * which defines both, or put `VIGIL_PLUGIN_NOTE("my-plugin");` next to a descriptor you write out.
 * Vigil reads the note and the descriptor's magic, ABI version and size from the library's verified
 * bytes BEFORE it maps the library (so a plugin built for another ABI, or naming another plugin, runs
 * no code at all, not even its constructors), then maps it from a sealed memfd, calls `init`, asks
 * `get_interface` for the keep-alive interface and drives it. See docs/native-plugins.md.
 *
 * Versioning (the rules Vigil enforces):
 *   - VIGIL_PLUGIN_ABI_MAJOR changes only when an existing field changes meaning or place. Vigil
 *     refuses a plugin whose major differs from its own.
 *   - VIGIL_PLUGIN_ABI_MINOR grows when fields are added. Vigil refuses a plugin whose minor is
 *     NEWER than its own (the plugin may rely on host fields this Vigil does not fill); an older
 *     minor is accepted.
 *   - Every struct carries its own size in its first field and only ever grows at the end. A reader
 *     uses the fields that fit in the size the writer declared and treats the rest as absent (zero).
 *   - Interfaces are named by versioned string ids ("vigil.keepalive/1"); a changed interface gets a
 *     new id, and a plugin may offer several.
 *
 * Threading: Vigil calls init, deinit, get_interface and every interface function from one thread
 * that it owns for the plugin, never concurrently. The event callbacks in
 * `vigil_keepalive_events` may be called from any thread at any time between `create` returning and
 * `destroy` being called; they never block.
 *
 * Memory: strings passed by Vigil are valid only during the call that receives them (copy what you
 * keep). Strings returned by the plugin (`plugin_id`, error texts written into the caller's buffer)
 * stay owned by the plugin.
 */
#ifndef VIGIL_PLUGIN_H
#define VIGIL_PLUGIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The descriptor's first field: the bytes "VGPL" read as a little-endian uint32_t. */
#define VIGIL_PLUGIN_MAGIC 0x4C504756u
/** The ABI this header describes. */
#define VIGIL_PLUGIN_ABI_MAJOR 1
#define VIGIL_PLUGIN_ABI_MINOR 0
/** The name of the one exported symbol. */
#define VIGIL_PLUGIN_ENTRY_SYMBOL "vigil_plugin_entry"
/** The keep-alive interface, version 1 (`vigil_keepalive_v1`). */
#define VIGIL_KEEPALIVE_INTERFACE_V1 "vigil.keepalive/1"

/** The Vigil note: owner "Vigil", this type, contents `uint16_t abi_major, abi_minor` and the
 *  NUL-terminated plugin id (at most 127 bytes) padded with zeros to a multiple of 4 bytes. */
#define VIGIL_PLUGIN_NOTE_TYPE 1

/** Emits the Vigil note for plugin `plugin_id` (a string literal equal to the manifest's "name") into the
 *  allocated SHT_NOTE section `.note.vigil`, which the linker places in a PT_NOTE segment. Use it
 *  once per plugin library, at file scope. */
#define VIGIL_PLUGIN_NOTE(plugin_id)                                                                         \
    __attribute__((section(".note.vigil"), used, aligned(4))) static const struct {                          \
        uint32_t namesz, descsz, type;                                                                       \
        char name[8];                                                                                        \
        uint16_t abi_major, abi_minor;                                                                       \
        char text[(sizeof(plugin_id) + 3) & ~(size_t)3];                                                     \
    } vigil_plugin_note = {6, 4 + ((sizeof(plugin_id) + 3) & ~(size_t)3), VIGIL_PLUGIN_NOTE_TYPE, "Vigil",   \
                           VIGIL_PLUGIN_ABI_MAJOR, VIGIL_PLUGIN_ABI_MINOR, plugin_id}

/** Defines the note and the const descriptor `vigil_plugin_entry` of plugin `id` (a string literal
 *  equal to the manifest's "name") in one go. */
#define VIGIL_PLUGIN_ENTRY(id, flags, init, deinit, get_interface)                                           \
    VIGIL_PLUGIN_NOTE(id);                                                                                   \
    const vigil_plugin_descriptor vigil_plugin_entry = {                                                     \
        VIGIL_PLUGIN_MAGIC, VIGIL_PLUGIN_ABI_MAJOR, VIGIL_PLUGIN_ABI_MINOR, sizeof(vigil_plugin_descriptor), \
        (flags), id, init, deinit, get_interface}

/** Descriptor flag: never unmap this library once loaded (set it when the library cannot be
 *  unloaded safely, for example one written in Swift). Vigil then keeps it mapped for the life of
 *  the process and calls `init` again when the plugin starts again. */
#define VIGIL_PLUGIN_FLAG_KEEP_LOADED 0x1u

/** Log levels for `vigil_host.log`. */
enum {
    VIGIL_LOG_DEBUG = 0,
    VIGIL_LOG_INFO = 1,
    VIGIL_LOG_WARNING = 2,
    VIGIL_LOG_ERROR = 3,
};

/** What the host offers a plugin; passed to `init`, valid until `deinit` returns. */
typedef struct vigil_host {
    uint32_t struct_size;     /**< sizeof(vigil_host) of the host that filled it. */
    uint16_t abi_major;       /**< The host's VIGIL_PLUGIN_ABI_MAJOR. */
    uint16_t abi_minor;       /**< The host's VIGIL_PLUGIN_ABI_MINOR. */
    const char *host_name;    /**< The host application's name (UTF-8). */
    void *host_data;          /**< Opaque; pass `host` back to `log`. */
    /** Writes one line to the host's log, attributed to the plugin. Any thread. */
    void (*log)(const struct vigil_host *host, int32_t level, const char *message);
} vigil_host;

/** The descriptor a plugin exports as `const vigil_plugin_descriptor vigil_plugin_entry`. */
typedef struct vigil_plugin_descriptor {
    uint32_t magic;           /**< VIGIL_PLUGIN_MAGIC. */
    uint16_t abi_major;       /**< VIGIL_PLUGIN_ABI_MAJOR the plugin was built with. */
    uint16_t abi_minor;       /**< VIGIL_PLUGIN_ABI_MINOR the plugin was built with. */
    uint32_t struct_size;     /**< sizeof(vigil_plugin_descriptor) as the plugin was built. */
    uint32_t flags;           /**< VIGIL_PLUGIN_FLAG_* bits. */
    /** The plugin's name; must equal the manifest's "name". Vigil reads it after `init` succeeded. */
    const char *plugin_id;
    /** Called once per load before anything else; returns false to refuse (then `deinit` is not
     *  called). Must tolerate being called again after `deinit`. */
    bool (*init)(const vigil_host *host);
    /** Undoes `init`; must tolerate repeats. After it returns no plugin thread may still run. */
    void (*deinit)(void);
    /** Returns the table of the interface `interface_id` (for example
     *  VIGIL_KEEPALIVE_INTERFACE_V1), or NULL when the plugin does not offer it. */
    const void *(*get_interface)(const char *interface_id);
} vigil_plugin_descriptor;

/** One setting: the manifest's defaults overlaid by vigil.toml. Strings as they are; integers,
 *  numbers and booleans as their decimal/`true`/`false` text; arrays and tables as JSON. */
typedef struct vigil_setting {
    const char *key;
    const char *value;
} vigil_setting;

/** What `create` gets; valid only during the call. */
typedef struct vigil_keepalive_config {
    uint32_t struct_size;
    const char *plugin_name;      /**< As in the manifest and vigil.toml. */
    const char *host_name;        /**< The host application's name. */
    const char *state_directory;  /**< A directory the plugin may keep state in (create it 0700). */
    size_t setting_count;
    const vigil_setting *settings;
} vigil_keepalive_config;

/** The host's callbacks for changes after `start` returned; valid until `destroy` is called.
 *  Callable from any thread; they never block. Pass `host_data` as the first argument. */
typedef struct vigil_keepalive_events {
    uint32_t struct_size;
    void *host_data;
    /** What the plugin keeps alive was lost; it is trying to get it back. */
    void (*interrupted)(void *host_data, const char *reason);
    /** Fully working again after an interruption. */
    void (*resumed)(void *host_data);
    /** Gave up; the plugin stays stopped until the host starts it again. */
    void (*resume_failed)(void *host_data, const char *reason);
    /** What `details` reports changed. */
    void (*details_changed)(void *host_data);
} vigil_keepalive_events;

/** Receives one key/value pair of `details`; the strings are copied by the host. */
typedef void (*vigil_detail_sink)(void *context, const char *key, const char *value);

/** Interface VIGIL_KEEPALIVE_INTERFACE_V1. Errors are written NUL-terminated into `error`
 *  (at most `error_size` bytes, cause and remedy). */
typedef struct vigil_keepalive_v1 {
    uint32_t struct_size;
    /** Makes an instance (validate settings here); NULL on error. */
    void *(*create)(const vigil_keepalive_config *config, const vigil_keepalive_events *events, char *error,
                    size_t error_size);
    /** Starts keeping alive; returns once running. false on error. */
    bool (*start)(void *instance, char *error, size_t error_size);
    /** Stops everything `start` started; returns once released. Called after every `start`. */
    void (*stop)(void *instance);
    /** Reports details for `vigil status` by calling `sink` once per pair. */
    void (*details)(void *instance, vigil_detail_sink sink, void *context);
    /** Frees the instance; no event callback may be called after it returns. */
    void (*destroy)(void *instance);
} vigil_keepalive_v1;

#ifdef __cplusplus
}
#endif

#endif /* VIGIL_PLUGIN_H */
