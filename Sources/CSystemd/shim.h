#include <systemd/sd-bus.h>
/* sd_journal_sendv itself, not the macro that adds this header's own CODE_FILE/CODE_LINE: the
   caller sends its location (VigilDBus/Journal.swift). */
#define SD_JOURNAL_SUPPRESS_LOCATION
#include <systemd/sd-journal.h>
