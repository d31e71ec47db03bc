#!/usr/bin/env bash
# The one Python virtual environment for TUF work: python-tuf's Metadata API and securesystemslib's
# signers (Tests/Fixtures/tuf/make-repo.py builds test repositories with them) and the conformance
# suite's pytest (scripts/tuf-conformance.sh). Creates or refreshes it, then prints its python's path.
#
#   python=$(scripts/tuf-venv.sh)
#
# The packages are the conformance suite's pinned dependencies, read from its pyproject.toml
# (../shared/tuf-conformance; TUF_CONFORMANCE_DIR overrides it), so the repositories the tests build
# and the suite's own use one python-tuf. Without the suite, its pins as of this writing. The venv is
# reinstalled when the list changes; it lives under .build/ (never committed).
set -euo pipefail
cd "$(dirname "$0")/.."

suite=${TUF_CONFORMANCE_DIR:-../shared/tuf-conformance}
if [[ -f "$suite/pyproject.toml" ]]; then
  requirements=$(python3 -c 'import sys, tomllib; print("\n".join(tomllib.load(open(sys.argv[1], "rb"))["project"]["dependencies"]))' "$suite/pyproject.toml")
else
  requirements=$'securesystemslib[crypto]==1.4.0\ntuf==7.0.0\npytest==9.1.1\npytest-json-report==1.5.0'
fi
venv=.build/tuf-venv
# One installer at a time (tests of several suites may ask at once).
mkdir -p .build
exec 9>.build/tuf-venv.lock
flock 9
if [[ ! -x $venv/bin/python || "$(cat "$venv/requirements.txt" 2>/dev/null)" != "$requirements" ]]; then
  echo "vigil: installing TUF's Python packages into $venv" >&2
  rm -rf "$venv"
  python3 -m venv "$venv"
  # shellcheck disable=SC2086 # one requirement per word
  "$venv/bin/python" -m pip install -q --disable-pip-version-check $requirements >&2
  printf '%s' "$requirements" >"$venv/requirements.txt"
fi
echo "$PWD/$venv/bin/python"
