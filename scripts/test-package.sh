#!/usr/bin/env bash
# Tests the install layout and the Debian package as a user would meet them (scripts/test.sh runs it
# when CI=true or VIGIL_PACKAGE_TEST=1; it needs root for the chroot).
#
# 1. The release build, `make install` into a temporary PREFIX and the .deb (scripts/package-deb.sh).
# 2. On this machine, the installed tree: `vigil --version [--json]` reports an install build with
#    the checkout's revision; the first-party manifests come from PREFIX/share/vigil/manifests and,
#    once that directory is gone, still not from the source checkout; every man page renders with
#    `MANWIDTH=80 man --warnings -l` without a warning; bash completes `vigil plugin tr<TAB>`;
#    `systemd-analyze verify` accepts the installed units in system and --user mode; `make
#    uninstall` removes every file `make install` wrote;
#    `journalctl --update-catalog` accepts the installed journal catalog and lists its five ids.
# 3. In a clean Debian 12 root (debootstrap --variant=minbase from Debian's mirror, plus man-db,
#    bash-completion and systemd as test tools; the root is cached as a tarball in
#    $VIGIL_PACKAGE_CACHE, default /var/cache/vigil-test-package, with the downloaded .debs), as a
#    user would: `apt-get install ./vigil_….deb`, then `vigil --version`, `vigil check` and
#    `vigil up` (supervisor only: no sound server) on an example vigil.toml as an ordinary user,
#    `vigil plugin list` finding /usr/share/vigil/manifests, `man vigil`, bash completion through
#    bash-completion's loader, `systemd-analyze verify` on the installed units (the hosts' and the
#    plugin-update units and timers) and none of them enabled, the journal catalog
#    in journalctl's database (systemd's dpkg trigger); `apt-get purge
#    --autoremove vigil` must leave the root as it was before. Then the audio part: the package and
#    PulseAudio installed again, and the example host (silent-engine and supervisor) kept up with a
#    private PulseAudio server (a null sink) inside the root, until the sink is RUNNING.
# Prints how long each part took.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD

say() { echo "test-package: $*" >&2; }
fail() {
  say "FAILED: $*"
  exit 1
}
t0=$SECONDS
work=$(mktemp -d "${TMPDIR:-/tmp}/vigil-test-package-XXXXXX")
chmod 0755 "$work"
cleanup() {
  # A step that failed may leave its processes running in the root (vigil up, pulseaudio): end them.
  local p
  for p in /proc/[0-9]*; do
    [[ $(readlink "$p/root" 2>/dev/null) == "$work/root" ]] && kill -KILL "${p#/proc/}" 2>/dev/null || true
  done
  rm -rf "$work"
}
trap cleanup EXIT

# ---- 1. the build, the install tree, the package -------------------------------------------------
scripts/install-deps.sh --package
deb=$(scripts/package-deb.sh | tail -1)
[[ -f "$deb" ]] || fail "scripts/package-deb.sh made no .deb"
t_build=$((SECONDS - t0))
say "release build + .deb: ${t_build}s ($deb)"

prefix=$work/prefix
make --no-print-directory install PREFIX="$prefix" >"$work/make-install.log" 2>&1 || {
  cat "$work/make-install.log" >&2
  fail "make install PREFIX=$prefix"
}
vigil=$prefix/bin/vigil

# ---- 2. the installed tree on this machine --------------------------------------------------------
t1=$SECONDS
revision=$(git rev-parse --short=12 HEAD)
version_json=$("$vigil" --version --json | tr -d ' \n')
[[ "$version_json" == *'"build":"install"'* ]] || fail "vigil --version --json: not an install build: $version_json"
[[ "$version_json" == *"\"revision\":\"$revision"* ]] || fail "vigil --version --json lacks revision $revision: $version_json"
[[ $("$vigil" --version) == "vigil "*" (revision $revision"* ]] || fail "vigil --version: $("$vigil" --version)"
dpkg-deb -f "$deb" Version | grep -qx "$("$vigil" --version | awk '{print $2}')" || fail "the .deb's version"
depends=$(dpkg-deb -f "$deb" Depends)
for lib in libsodium23 libpulse0 libasound2 libsystemd0 libsndfile1 libespeak-ng1 libc6; do
  [[ "$depends" == *"$lib"* ]] || fail "Depends lacks $lib: $depends"
done
[[ "$depends" != *libswift* && "$depends" != *swiftlang* ]] || fail "Depends names a Swift runtime: $depends"
ldd "$vigil" | grep -q 'libswiftCore' && fail "vigil links the Swift runtime dynamically"

# The first-party manifests: the installed ones, and never the checkout's (run from inside it, where
# the default plugin_paths, manifests/ beside the working directory, names nothing).
list=$(cd "$repo/Sources" && env -u VIGIL_FIRST_PARTY_MANIFESTS "$vigil" plugin list --json | tr -d ' \n')
[[ "$list" == *"\"first_party_manifests\":{\"path\":\"$prefix/share/vigil/manifests\",\"origin\":\"installed\"}"* ]] ||
  fail "plugin list does not use $prefix/share/vigil/manifests: $list"
mv "$prefix/share/vigil/manifests" "$work/manifests-away"
list=$(cd "$repo/Sources" && env -u VIGIL_FIRST_PARTY_MANIFESTS "$vigil" plugin list --json | tr -d ' \n')
[[ "$list" != *"$repo/manifests"* ]] || fail "an installed vigil looked at the source checkout: $list"
[[ "$list" == *"\"path\":\"$prefix/share/vigil/manifests\",\"origin\":\"installed\""* ]] || fail "$list"
mv "$work/manifests-away" "$prefix/share/vigil/manifests"

# Every man page renders at 80 columns without a warning.
pages=("$prefix"/share/man/man1/*.1)
((${#pages[@]} >= 8)) || fail "only ${#pages[@]} man pages: ${pages[*]}"
for page in "${pages[@]}"; do
  warnings=$(MANWIDTH=80 man --warnings -l "$page" 2>&1 >/dev/null) || fail "man -l $page failed: $warnings"
  [[ -z "$warnings" ]] || fail "man --warnings -l $page: $warnings"
done
MANWIDTH=80 man -l "$prefix/share/man/man1/vigil.1" 2>/dev/null | grep -q 'plugin' || fail "vigil.1 lists no subcommand"

# bash completes `vigil plugin tr<TAB>` (and a variant) from the installed script.
complete_words() { # LINE → the completions bash offers at its end
  bash --norc --noprofile -c '
    source "$1"; line=$2
    read -ra COMP_WORDS <<<"$line"; [[ "$line" == *" " ]] && COMP_WORDS+=("")
    COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); COMP_LINE=$line; COMP_POINT=${#line}
    fn=$(complete -p vigil | sed -n "s/.*-F \([^ ]*\) .*/\1/p")
    "$fn" vigil "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
    printf "%s\n" "${COMPREPLY[@]}"' _ "$prefix/share/bash-completion/completions/vigil" "$1"
}
[[ $(complete_words "vigil plugin tr") == trust ]] || fail "vigil plugin tr<TAB>: $(complete_words "vigil plugin tr")"
[[ $(complete_words "vigil pl") == plugin ]] || fail "vigil pl<TAB>: $(complete_words "vigil pl")"
complete_words "vigil plugin " | grep -qx untrust || fail "vigil plugin <TAB> lacks untrust"

# The installed units, as systemd reads them (ExecStart= is PREFIX/bin/vigil, the man pages exist):
# the hosts' units and the plugin-update units and timers beside them.
units=(user/vigil.service user/vigil-plugin-update.service user/vigil-plugin-update.timer
  system/vigil@.service system/vigil-plugin-update@.service system/vigil-plugin-update@.timer)
mkdir -m 0700 "$work/runtime"  # --user verify wants a user runtime directory
for scope in "" --user; do
  for unit in "${units[@]/#/$prefix/lib/systemd/}"; do
    [[ -f "$unit" ]] || fail "make install did not install $unit"
    out=$(XDG_RUNTIME_DIR="$work/runtime" MANPATH="$prefix/share/man" systemd-analyze $scope verify "$unit" 2>&1) || fail "systemd-analyze $scope verify $unit: $out"
    [[ -z "$out" ]] || fail "systemd-analyze $scope verify $unit: $out"
  done
done
# The journal catalog, as journalctl builds its database from it (in a root of its own).
catalog_root=$work/catalog-root
mkdir -p "$catalog_root/usr/lib/systemd/catalog"
cp "$prefix/lib/systemd/catalog/vigil.catalog" "$catalog_root/usr/lib/systemd/catalog/"
out=$(journalctl --root="$catalog_root" --update-catalog 2>&1) || fail "journalctl --update-catalog: $out"
# As many ids as the shipped catalog file has entries (each starts with a `-- ID` line).
ids=$(grep -c '^-- ' "$prefix/lib/systemd/catalog/vigil.catalog")
[[ $(journalctl --root="$catalog_root" --list-catalog | grep -c ' vigil: ') == "$ids" && $ids -gt 0 ]] ||
  fail "the catalog does not list its $ids vigil ids: $(journalctl --root="$catalog_root" --list-catalog 2>&1)"
# make uninstall removes every file make install wrote.
make --no-print-directory uninstall PREFIX="$prefix" >"$work/make-uninstall.log" 2>&1 || {
  cat "$work/make-uninstall.log" >&2
  fail "make uninstall PREFIX=$prefix"
}
left=$(find "$prefix" ! -type d)
[[ -z "$left" ]] || fail "make uninstall left files behind: $left"
t_host=$((SECONDS - t1))
say "install tree on this machine (version, manifests, man, completion, units, uninstall): ${t_host}s"

# ---- 3. a clean Debian 12 root ----------------------------------------------------------------------
[[ $(id -u) -eq 0 ]] || fail "the chroot part needs root (debootstrap, chroot, mounts)"
t2=$SECONDS
cache=${VIGIL_PACKAGE_CACHE:-/var/cache/vigil-test-package}
mirror=${VIGIL_DEBIAN_MIRROR:-http://deb.debian.org/debian}
tools=man-db,bash-completion,systemd
tarball=$cache/bookworm-minbase-$(echo "$tools" | tr , +).tar
mkdir -p "$cache/archives/partial"
if [[ ! -f "$tarball" ]]; then
  say "no cached Debian 12 root: debootstrap from $mirror (once; cached as $tarball)"
  debootstrap --variant=minbase --include="$tools" --cache-dir="$cache/archives" bookworm "$work/boot" "$mirror" \
    >"$work/debootstrap.log" 2>&1 || {
    tail -30 "$work/debootstrap.log" >&2
    fail "debootstrap"
  }
  rm -f "$work/boot/var/cache/apt/archives/"*.deb
  # With the package lists: a later `apt-get update` then only asks whether they changed.
  cp /etc/resolv.conf "$work/boot/etc/resolv.conf"
  unshare --mount --propagation private bash -c 'mount -t proc proc "$1/proc" && chroot "$1" apt-get update -qq' _ \
    "$work/boot" || fail "apt-get update in the new root"
  tar -C "$work/boot" -cf "$tarball.tmp" . && mv "$tarball.tmp" "$tarball"
  rm -rf "$work/boot"
fi
root=$work/root
mkdir "$root" && tar -C "$root" -xf "$tarball"
cp /etc/resolv.conf "$root/etc/resolv.conf"
cp "$deb" "$root/tmp/"
mkdir -p "$root/tmp/example"
cp Examples/ExampleHost/vigil.toml "$root/tmp/example/vigil.toml"
t_root=$((SECONDS - t2))
say "clean Debian 12 root ready: ${t_root}s"

# The steps inside the root, as root; `as_user` runs a command as the ordinary user `op`.
cat >"$root/tmp/inside.sh" <<'INSIDE'
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive LC_ALL=C.UTF-8 PATH=/usr/sbin:/usr/bin:/sbin:/bin
say() { echo "test-package (chroot): $*" >&2; }
fail() { say "FAILED: $*"; exit 1; }
deb=$(ls /tmp/vigil_*.deb)
as_user() { runuser -u op -- env HOME=/home/op XDG_RUNTIME_DIR=/run/op "$@"; }
# As the user, exec'd in place (for background jobs only: a backgrounded function runs in a subshell,
# which exec replaces): $! is then the program itself, and SIGTERM reaches it.
as_user_exec() { exec setpriv --reuid=op --regid=op --init-groups env HOME=/home/op XDG_RUNTIME_DIR=/run/op "$@"; }
snapshot() { # every path outside the package manager's own records, caches, logs and scratch space
  find / -xdev \( -path /proc -o -path /sys -o -path /dev -o -path /tmp -o -path /run -o -path /home \
    -o -path /var/lib/dpkg -o -path /var/lib/apt -o -path /var/cache -o -path /var/log \) -prune -o -print | sort
}

useradd --create-home --shell /bin/bash op
install -d -o op -m 0700 /run/op
apt-get update -qq
snapshot >/tmp/before

apt-get install -y -qq --no-install-recommends "$deb" >/tmp/apt.log 2>&1 || { cat /tmp/apt.log >&2; fail "apt-get install ./vigil.deb"; }
say "installed: $(dpkg-query -W -f='${Package} ${Version}' vigil), with $(grep -c '^Setting up' /tmp/apt.log) packages"
dpkg -L vigil >/tmp/vigil-files

vigil --version | grep -q "^vigil .* (revision " || fail "vigil --version: $(vigil --version)"
as_user vigil --version --json | tr -d ' \n' | grep -q '"build":"install"' || fail "vigil --version --json"

# The example host's vigil.toml, as the user keeps it.
as_user mkdir -p /home/op/host
cp /tmp/example/vigil.toml /home/op/host/vigil.toml && chown op: /home/op/host/vigil.toml
cd /home/op/host
check=$(as_user vigil check 2>&1) && status=0 || status=$?
echo "$check" | sed 's/^/  vigil check: /' >&2
((status == 0)) || fail "vigil check exited $status"
list=$(as_user vigil plugin list)
echo "$list" | grep -qx 'first-party manifests: /usr/share/vigil/manifests (installed)' || fail "plugin list: $list"
for plugin in silent-engine soundscape supervisor; do
  echo "$list" | grep -qx "    directory: /usr/share/vigil/manifests/$plugin" || fail "plugin list lacks $plugin: $list"
done
[[ $(echo "$list" | grep -c '    signature: valid   trust: trusted') == 3 ]] || fail "not 3 valid, trusted plugins: $list"

man -w vigil | grep -qx /usr/share/man/man1/vigil.1.gz || fail "man -w vigil: $(man -w vigil)"
MANWIDTH=80 man vigil 2>/dev/null | grep -q '^NAME' || fail "man vigil shows no page"

completions=$(bash --norc --noprofile -c '
  source /usr/share/bash-completion/bash_completion
  COMP_WORDS=(vigil plugin tr); COMP_CWORD=2; COMP_LINE="vigil plugin tr"; COMP_POINT=${#COMP_LINE}
  _completion_loader vigil   # what bash-completion does on the first <TAB> after "vigil"
  fn=$(complete -p vigil | sed -n "s/.*-F \([^ ]*\) .*/\1/p")
  "$fn" vigil tr plugin; printf "%s\n" "${COMPREPLY[@]}"')
[[ "$completions" == trust ]] || fail "vigil plugin tr<TAB> gave: $completions"

units=(user/vigil.service user/vigil-plugin-update.service user/vigil-plugin-update.timer
  system/vigil@.service system/vigil-plugin-update@.service system/vigil-plugin-update@.timer)
for scope in "" --user; do
  for unit in "${units[@]/#//usr/lib/systemd/}"; do
    grep -qx "$unit" /tmp/vigil-files || fail "the package does not install $unit"
    # In a chroot, systemd 252 also reports ordering cycles among Debian's own early-boot units
    # (systemd-pcrphase, sysinit.target); only what concerns vigil counts here. The strict check
    # (no output at all) is the one on this machine above.
    out=$(XDG_RUNTIME_DIR=/run/op systemd-analyze $scope verify "$unit" 2>&1) || fail "systemd-analyze $scope verify $unit: $out"
    if echo "$out" | grep -i vigil >&2; then fail "systemd-analyze $scope verify $unit (above)"; fi
  done
done

# Installed, enabled for nobody: the operator enables the update timers (and the hosts' units).
for unit in vigil.service vigil-plugin-update.timer; do
  state=$(systemctl --global is-enabled "$unit" 2>&1) || true
  [[ "$state" == disabled ]] || fail "systemctl --global is-enabled $unit: $state"
done
for unit in vigil@op.service vigil-plugin-update@op.timer; do
  state=$(systemctl is-enabled "$unit" 2>&1) || true
  [[ "$state" == disabled ]] || fail "systemctl is-enabled $unit: $state"
done

# systemd's dpkg trigger on /usr/lib/systemd/catalog added the journal catalog to the database.
ids=$(grep -c '^-- ' /usr/lib/systemd/catalog/vigil.catalog)
[[ $(journalctl --list-catalog | grep -c ' vigil: ') == "$ids" && $ids -gt 0 ]] ||
  fail "journalctl --list-catalog lacks some of vigil's $ids ids"

# vigil up on a supervisor-only host (no sound server here), until its worker runs.
as_user mkdir -p /home/op/headless
cat >/home/op/headless/vigil.toml <<'TOML'
plugins = ["supervisor"]

[host]
name = "headless"
services = ["supervisor"]

[trusted_plugins]
supervisor = "ed25519:ioJy7E9uRlLYcMlKTGdQlzdNRh9asTxdtsoQBInw4sk="

[supervisor]
workers = [{ name = "beat", command = "/bin/sh", args = ["-c", "while sleep 60; do :; done"] }]
TOML
chown op: /home/op/headless/vigil.toml
up_until_running() { # CONFIG PLUGIN…: vigil up until each plugin is running (deadline 60 s), then SIGTERM
  local config=$1; shift
  as_user_exec vigil up --config "$config" >/tmp/up.log 2>&1 &
  local pid=$! ok=0
  for _ in $(seq 1 120); do
    status=$(as_user vigil status --json 2>/dev/null || true)
    ok=1
    for p in "$@"; do
      echo "$status" | tr -d ' \n' | grep -q "\"name\":\"$p\",\"since\":\"[^\"]*\",\"state\":\"running\"" || ok=0
    done
    ((ok)) && break
    sleep 0.5
  done
  kill -TERM "$pid"
  wait "$pid" && rc=0 || rc=$?
  ((ok)) || { cat /tmp/up.log >&2; echo "$status" >&2; fail "vigil up --config $config: $* not running within 60 s"; }
  ((rc == 0)) || { cat /tmp/up.log >&2; fail "vigil up exited $rc on SIGTERM"; }
  say "vigil up --config $config: $* running, stopped cleanly"
}
up_until_running /home/op/headless/vigil.toml supervisor

apt-get purge -y -qq --autoremove vigil >/tmp/apt.log 2>&1 || { cat /tmp/apt.log >&2; fail "apt-get purge vigil"; }
snapshot >/tmp/after
if ! diff /tmp/before /tmp/after >/tmp/left; then
  cat /tmp/left >&2
  fail "apt-get purge --autoremove vigil left the root changed (above: < gone, > left behind)"
fi
while read -r path; do
  [[ -d "$path" || ! -e "$path" ]] || fail "$path is still there after the purge"
done </tmp/vigil-files
say "apt-get purge --autoremove vigil: nothing left behind"
INSIDE

cat >"$root/tmp/audio.sh" <<'AUDIO'
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive LC_ALL=C.UTF-8 PATH=/usr/sbin:/usr/bin:/sbin:/bin
say() { echo "test-package (chroot): $*" >&2; }
fail() { say "FAILED: $*"; exit 1; }
as_user() { runuser -u op -- env HOME=/home/op XDG_RUNTIME_DIR=/run/op "$@"; }
as_user_exec() { exec setpriv --reuid=op --regid=op --init-groups env HOME=/home/op XDG_RUNTIME_DIR=/run/op "$@"; }
apt-get install -y -qq --no-install-recommends /tmp/vigil_*.deb pulseaudio pulseaudio-utils >/tmp/apt.log 2>&1 ||
  { cat /tmp/apt.log >&2; fail "apt-get install vigil pulseaudio"; }
# A private PulseAudio of the user's: one null sink that suspends after 1 s when nothing plays.
as_user_exec pulseaudio --daemonize=no --exit-idle-time=-1 --use-pid-file=no --system=no -n \
  --load="module-native-protocol-unix" --load="module-null-sink sink_name=vigil_test" \
  --load="module-suspend-on-idle timeout=1" >/tmp/pulse.log 2>&1 &
pulse=$!
for _ in $(seq 1 40); do as_user pactl info >/dev/null 2>&1 && break; sleep 0.25; done
as_user pactl info >/dev/null 2>&1 || { cat /tmp/pulse.log >&2; fail "the private PulseAudio did not start"; }
cd /home/op/host
up_until_running() {
  as_user_exec vigil up --config /home/op/host/vigil.toml >/tmp/up.log 2>&1 &
  local pid=$! ok=0
  for _ in $(seq 1 120); do
    status=$(as_user vigil status --json 2>/dev/null | tr -d ' \n' || true)
    sink=$(as_user pactl list short sinks | awk '$2 == "vigil_test" {print $NF}')
    if echo "$status" | grep -q '"name":"silent-engine","since":"[^"]*","state":"running"' &&
      echo "$status" | grep -q '"name":"supervisor","since":"[^"]*","state":"running"' && [[ "$sink" == RUNNING ]]; then
      ok=1
      break
    fi
    sleep 0.5
  done
  # Still RUNNING 3 s later: past the 1 s idle timeout, the silent engine keeps it awake.
  sleep 3
  sink=$(as_user pactl list short sinks | awk '$2 == "vigil_test" {print $NF}')
  kill -TERM "$pid"
  wait "$pid" && rc=0 || rc=$?
  ((ok)) && [[ "$sink" == RUNNING ]] || { cat /tmp/up.log >&2; fail "the example host: plugins or sink not running ($sink): $status"; }
  ((rc == 0)) || { cat /tmp/up.log >&2; fail "vigil up exited $rc on SIGTERM"; }
}
up_until_running
kill -TERM "$pulse"; wait "$pulse" || true
say "vigil up with the example host: silent-engine and supervisor running, the null sink kept RUNNING"
AUDIO

# In a mount namespace of its own: the mounts vanish with it, whatever happens.
t3=$SECONDS
unshare --mount --propagation private bash -euo pipefail -c '
  root=$1 cache=$2
  mount -t proc proc "$root/proc"
  mount --rbind /dev "$root/dev"
  mount -t sysfs sysfs "$root/sys"
  mount -t tmpfs -o mode=0755 tmpfs "$root/run"
  mount --bind "$cache/archives" "$root/var/cache/apt/archives"
  chroot "$root" /bin/bash /tmp/inside.sh
  chroot "$root" /bin/bash /tmp/audio.sh
' _ "$root" "$cache" || fail "the tests inside the Debian 12 root (above)"
t_chroot=$((SECONDS - t3))
say "inside the Debian 12 root (install, check, up, man, completion, units, purge, audio): ${t_chroot}s"
say "passed in $((SECONDS - t0))s: build+deb ${t_build}s, install tree ${t_host}s, root ${t_root}s, chroot ${t_chroot}s"
