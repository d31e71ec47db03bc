#!/usr/bin/env bash
# Installs the Debian packages Vigil needs to build, run and test.
#   scripts/install-deps.sh          build + run + test dependencies
#   scripts/install-deps.sh --bench  also the peers the benchmark scripts compare against
#   scripts/install-deps.sh --package  also what scripts/package-deb.sh and scripts/test-package.sh use
# Idempotent: packages already present are skipped, so a second run costs a dpkg query.
set -euo pipefail

build=(pkg-config libsodium-dev libasound2-dev libpulse-dev libsystemd-dev libsndfile1-dev libespeak-ng-dev libseccomp-dev)
run=(pulseaudio pulseaudio-utils libasound2-plugins alsa-utils dbus)
test=(minisign sox playerctl python3-dbus python3-gi systemd procps pipewire pipewire-pulse wireplumber gcc libc6-dev
  faketime python3-venv curl prometheus prometheus-node-exporter make)
package=(dpkg-dev fakeroot binutils lintian debootstrap man-db bash-completion)
bench=(runit s6 supervisor jq gstreamer1.0-tools gstreamer1.0-plugins-base gstreamer1.0-plugins-good gstreamer1.0-pulseaudio)

want=("${build[@]}" "${run[@]}" "${test[@]}")
for option in "$@"; do
  case "$option" in
    --bench) want+=("${bench[@]}") ;;
    --package) want+=("${package[@]}") ;;
    *) echo "install-deps: unknown option $option (--bench, --package)" >&2; exit 64 ;;
  esac
done

missing=()
for p in "${want[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  exit 0
fi
echo "vigil: installing ${missing[*]}" >&2
sudo_cmd=()
[[ $(id -u) -ne 0 ]] && sudo_cmd=(sudo)
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
