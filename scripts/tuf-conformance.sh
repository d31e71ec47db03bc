#!/usr/bin/env bash
# Runs the TUF conformance suite against Vigil's TUF client (`vigil-tuf-client`), and in the same
# run against the reference clients the suite ships (python-tuf's; go-tuf's when `go` is
# installed), then prints each client's counts and the machine.
#
#   scripts/tuf-conformance.sh            Vigil's client and the reference clients
#   scripts/tuf-conformance.sh --vigil    Vigil's client only (what scripts/test.sh runs)
#
# The suite is read from ../shared/tuf-conformance (a copy of theupdateframework/tuf-conformance;
# TUF_CONFORMANCE_DIR overrides it) and copied to a temporary directory, never into the repository.
# Its Python dependencies (its pyproject.toml: tuf, securesystemslib, pytest, pytest-json-report)
# go into the virtual environment scripts/tuf-venv.sh keeps under .build/; `faketime` comes from Debian (install-deps.sh).
# Tests Vigil's client is expected to fail are listed, each with its reason, in
# scripts/tuf-conformance.xfails; an expected failure that passes fails the run (strict xfail).
# Exit status: 0 when Vigil's client passes everything but those lines.
set -euo pipefail
cd "$(dirname "$0")/.."

only_vigil=0
[[ "${1:-}" == "--vigil" ]] && only_vigil=1

suite=${TUF_CONFORMANCE_DIR:-../shared/tuf-conformance}
if [[ ! -f "$suite/pyproject.toml" ]]; then
  echo "vigil: $suite is absent: the TUF conformance suite is skipped"
  exit 0
fi
command -v faketime >/dev/null || { echo "vigil: faketime is missing: run scripts/install-deps.sh" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -r "$suite" "$work/suite"
chmod -R u+w "$work/suite"

# The suite's pinned dependencies, in the one TUF virtual environment (scripts/tuf-venv.sh).
python=$(TUF_CONFORMANCE_DIR=$suite scripts/tuf-venv.sh)

echo "vigil: building vigil-tuf-client"
swift build --product vigil-tuf-client >/dev/null
bin=$(swift build --show-bin-path)

# Each client is an entrypoint file with its `.xfails` file beside it (the suite's convention).
ln -s "$bin/vigil-tuf-client" "$work/vigil-tuf-client"
cp scripts/tuf-conformance.xfails "$work/vigil-tuf-client.xfails"
clients=(vigil-tuf-client)
if ((only_vigil == 0)); then
  printf '#!/bin/sh\nexec "%s" "%s" "$@"\n' "$python" "$work/suite/clients/python-tuf/python_tuf.py" >"$work/python-tuf"
  chmod +x "$work/python-tuf"
  cp "$work/suite/clients/python-tuf/python_tuf.py.xfails" "$work/python-tuf.xfails"
  clients+=(python-tuf)
  if command -v go >/dev/null; then
    (cd "$work/suite/clients/go-tuf" && go build -o "$work/go-tuf" .)
    cp "$work/suite/clients/go-tuf/go-tuf.xfails" "$work/go-tuf.xfails"
    clients+=(go-tuf)
  else
    echo "vigil: go is not installed: go-tuf's client is not built or run"
  fi
fi

status=0
summary=()
for client in "${clients[@]}"; do
  echo "vigil: TUF conformance suite against $client"
  start=$SECONDS
  set +e
  (cd "$work/suite" && PYTHONDONTWRITEBYTECODE=1 "$python" -m pytest -q -p no:cacheprovider tuf_conformance \
    --entrypoint "$work/$client" --json-report --json-report-file="$work/$client.json" \
    >"$work/$client.log" 2>&1)
  rc=$?
  set -e
  counts=$("$python" -c 'import json, sys
s = json.load(open(sys.argv[1]))["summary"]
print(" ".join(f"{k}={s.get(k, 0)}" for k in ("total", "passed", "failed", "xfailed", "xpassed", "error")))' "$work/$client.json" 2>/dev/null || echo "no report")
  summary+=("$client: $counts ($((SECONDS - start)) s)")
  if ((rc != 0)); then
    grep -E '^(FAILED|ERROR|XPASS)' "$work/$client.log" | head -40 >&2 || tail -40 "$work/$client.log" >&2
    [[ $client == vigil-tuf-client ]] && status=1
  fi
done

echo "vigil: TUF conformance suite $(cat "$work/suite/UPSTREAM-REVISION" 2>/dev/null | head -c 12), $(date -u +%Y-%m-%d), $(nproc) cores, $(uname -m)"
printf '  %s\n' "${summary[@]}"
exit $status
