#ifndef VIGIL_BASE_H
#define VIGIL_BASE_H

/// Names the calling thread (PR_SET_NAME; the kernel keeps at most 15 bytes). Opens no file.
void vigil_set_thread_name(const char *name);

/// The git revision `make` recorded for this build (see vigil_base.c), or "" when none was.
const char *vigil_build_revision(void);

/// 1 when `make` built this binary for an install layout (PREFIX/bin beside PREFIX/share/vigil), else 0.
int vigil_build_for_install(void);

/// A new eventfd, close-on-exec and non-blocking from its creation (one atomic call, so a
/// concurrent fork+exec never inherits it); -1 with errno set on failure.
int vigil_base_eventfd(void);

/// accept4(2) of a connection on `listener`, close-on-exec and non-blocking from its creation;
/// -1 with errno set on failure.
int vigil_base_accept(int listener);

/// renameat2(2) with RENAME_EXCHANGE: swaps `a` and `b` (both must exist) in one atomic step, so
/// a reader of either path sees the old tree or the new one, never a mix; -1 with errno set.
int vigil_base_exchange(const char *a, const char *b);

#endif
