#include "vigil_base.h"

#include <sys/prctl.h>

void vigil_set_thread_name(const char *name) {
    (void)prctl(PR_SET_NAME, name, 0, 0, 0);
}
