#include "vigil_plugin_sdk.h"

#include <string.h>

static char vigil_sdk_plugin_id[VIGIL_SDK_ID_SIZE];

bool vigil_sdk_set_plugin_id(const char *id) {
    size_t n = strlen(id);
    if (n >= VIGIL_SDK_ID_SIZE) return false;
    memcpy(vigil_sdk_plugin_id, id, n + 1);
    return true;
}

static const vigil_keepalive_v1 keepalive = {
    sizeof(vigil_keepalive_v1), vigil_sdk_create, vigil_sdk_start, vigil_sdk_stop, vigil_sdk_details, vigil_sdk_destroy,
};

static const void *get_interface(const char *id) {
    return id != NULL && strcmp(id, VIGIL_KEEPALIVE_INTERFACE_V1) == 0 ? &keepalive : NULL;
}

// A Swift library cannot be unmapped safely (the runtime keeps pointers into its metadata), so
// it asks the host to keep it loaded; the host then reuses the mapping and calls init again.
const vigil_plugin_descriptor vigil_plugin_entry = {
    VIGIL_PLUGIN_MAGIC,
    VIGIL_PLUGIN_ABI_MAJOR,
    VIGIL_PLUGIN_ABI_MINOR,
    sizeof(vigil_plugin_descriptor),
    VIGIL_PLUGIN_FLAG_KEEP_LOADED,
    vigil_sdk_plugin_id,
    vigil_sdk_init,
    vigil_sdk_deinit,
    get_interface,
};
