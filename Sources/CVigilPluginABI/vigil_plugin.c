// The ABI is header-only; this file pins its layout on the platforms Vigil supports (LP64 Linux).
#include "vigil_plugin.h"

_Static_assert(sizeof(void *) == 8, "Vigil's plugin ABI is defined for 64-bit Linux");
_Static_assert(offsetof(vigil_plugin_descriptor, plugin_id) == 16, "descriptor header is 16 bytes");
_Static_assert(sizeof(vigil_plugin_descriptor) == 48, "vigil_plugin_descriptor 1.0 is 48 bytes");
_Static_assert(sizeof(vigil_keepalive_v1) == 48, "vigil_keepalive_v1 is 48 bytes");
