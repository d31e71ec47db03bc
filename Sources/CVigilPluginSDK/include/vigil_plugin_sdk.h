// The C half of VigilPluginSDK: the exported `vigil_plugin_entry` descriptor and keep-alive table
// of a plugin written in Swift (Swift cannot define a C data symbol). Its functions are
// implemented in Swift by VigilPluginSDK; the plugin author writes only `vigil_swift_plugin`.
#ifndef VIGIL_PLUGIN_SDK_H
#define VIGIL_PLUGIN_SDK_H

#include "vigil_plugin.h"

#define VIGIL_SDK_ID_SIZE 128

/// Sets the descriptor's plugin_id (from the author's registration, during `init`); false when
/// `id` does not fit.
bool vigil_sdk_set_plugin_id(const char *id);

/// Written by the plugin author, in Swift:
///     @_cdecl("vigil_swift_plugin") public func vigilSwiftPlugin() { NativePlugin.export(…) }
void vigil_swift_plugin(void);

// Implemented by VigilPluginSDK (Swift, @_cdecl).
bool vigil_sdk_init(const vigil_host *host);
void vigil_sdk_deinit(void);
void *vigil_sdk_create(const vigil_keepalive_config *config, const vigil_keepalive_events *events, char *error,
                       size_t error_size);
bool vigil_sdk_start(void *instance, char *error, size_t error_size);
void vigil_sdk_stop(void *instance);
void vigil_sdk_details(void *instance, vigil_detail_sink sink, void *context);
void vigil_sdk_destroy(void *instance);

#endif
