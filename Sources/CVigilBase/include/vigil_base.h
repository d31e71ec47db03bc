#ifndef VIGIL_BASE_H
#define VIGIL_BASE_H

/// Names the calling thread (PR_SET_NAME; the kernel keeps at most 15 bytes). Opens no file.
void vigil_set_thread_name(const char *name);

#endif
