#!/usr/bin/env python3
"""python-tuf's ngclient doing what `vigil plugin update` does with nothing new: refresh the
repository's metadata, then look up every plugin's manifest target (its delegated role is loaded
and verified), for bench/repository.sh.

    tuf-ngclient.py METADATA_DIR METADATA_URL TARGETS_URL NAME...

METADATA_DIR holds the trusted root.json (and the metadata of earlier runs). Prints the number of
targets found; exits 1 when one is missing.
"""

import sys

from tuf.ngclient import Updater


def main():
    metadata_dir, metadata_url, targets_url, *names = sys.argv[1:]
    # bootstrap=None: the trusted root is METADATA_DIR/root.json (as Vigil keeps it).
    updater = Updater(metadata_dir, metadata_url, target_base_url=targets_url, bootstrap=None)
    updater.refresh()
    for name in names:
        if updater.get_targetinfo(f"{name}/plugin.json") is None:
            print(f"tuf-ngclient: {name}/plugin.json not found", file=sys.stderr)
            return 1
    print(len(names))
    return 0


if __name__ == "__main__":
    sys.exit(main())
