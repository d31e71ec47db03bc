# Builds and installs the release `vigil` with everything around it.
#
#   make                                   the release build, man pages and completions (in .build-release/)
#   make install [PREFIX=/usr/local] [DESTDIR=]
#   make uninstall [PREFIX=…] [DESTDIR=]   removes exactly what `install` wrote
#   make install-units [PREFIX=…] [DESTDIR=]  the systemd units alone (part of install; no build)
#   make deb                               vigil_VERSION_ARCH.deb (scripts/package-deb.sh)
#   make check-package                     the .deb installed into a clean Debian 12 root (scripts/test-package.sh)
#
# Layout under PREFIX (docs/host-guide.md, "Install"):
#   bin/vigil                              the release build, Swift runtime linked statically
#   libexec/vigil/vigil-plugin-helper      the process each shared-library plugin runs in (plain C); vigil
#                                          finds it as ../libexec/vigil/ from its own directory
#   share/vigil/manifests/NAME/            the first-party signed manifests; an installed vigil finds
#                                          them as ../share/vigil/manifests from its own directory
#                                          and never looks at the source checkout it was built from
#   share/man/man1/vigil*.1                one page per command (swift-argument-parser's generate-manual)
#   share/bash-completion/completions/vigil, share/zsh/vendor-completions/_vigil (site-functions
#   outside /usr), share/fish/vendor_completions.d/vigil.fish
#   lib/systemd/user/vigil.service, vigil-plugin-update.{service,timer}    (from Examples/systemd; the
#   lib/systemd/system/vigil@.service, vigil-plugin-update@.{service,timer} timers are not enabled)
#   lib/systemd/catalog/vigil.catalog      the journal catalog of Vigil's MESSAGE_IDs (docs/logs.md); Debian's
#                                          systemd rebuilds the catalog database when a package installs one,
#                                          after `make install` run `journalctl --update-catalog`
#   share/doc/vigil/                       README, CHANGELOG, LICENSE and docs/*.md
#
# The build records the git revision (REVISION=… overrides it, e.g. when building from a tarball)
# in a header under .build-release/, read by Sources/CVigilBase alone: `vigil --version` shows it, and a new
# revision recompiles that one file. A plain `swift build` records none and stays a development build.

PREFIX ?= /usr/local
DESTDIR ?=
bindir ?= $(PREFIX)/bin
libexecdir ?= $(PREFIX)/libexec
datadir ?= $(PREFIX)/share
mandir ?= $(datadir)/man
docdir ?= $(datadir)/doc/vigil
manifestdir ?= $(datadir)/vigil/manifests
systemduserunitdir ?= $(PREFIX)/lib/systemd/user
systemdsystemunitdir ?= $(PREFIX)/lib/systemd/system
catalogdir ?= $(PREFIX)/lib/systemd/catalog
bashcompletiondir ?= $(datadir)/bash-completion/completions
fishcompletiondir ?= $(datadir)/fish/vendor_completions.d
# Debian's zsh reads vendor completions from /usr/share/zsh/vendor-completions; any zsh reads
# PREFIX/share/zsh/site-functions for other prefixes (/usr/local/share/zsh/site-functions).
ifeq ($(PREFIX),/usr)
zshcompletiondir ?= $(datadir)/zsh/vendor-completions
else
zshcompletiondir ?= $(datadir)/zsh/site-functions
endif

SWIFT ?= swift
INSTALL ?= install
# A scratch directory of its own: the release build neither waits for nor disturbs the debug
# build in .build that `swift test` uses.
build_dir := $(CURDIR)/.build-release
generated := $(build_dir)/vigil-generated
dist := $(build_dir)/vigil-dist
release_bin := $(build_dir)/release
# -z now: every symbol bound at start, so the GOT can be read-only (full RELRO, as Debian builds).
swift_release_flags := --scratch-path $(build_dir) -c release --static-swift-stdlib -Xcc -I$(generated) \
  -Xlinker -z -Xlinker now

# 12 hex digits of HEAD, with -dirty when tracked files differ from it; empty outside a git checkout.
REVISION ?= $(shell \
  if rev=$$(git -C '$(CURDIR)' rev-parse --short=12 HEAD 2>/dev/null); then \
    git -C '$(CURDIR)' diff --quiet HEAD -- 2>/dev/null || rev=$$rev-dirty; echo $$rev; fi)
# The man pages' date: the revision's commit date, so that a rebuild gives the same pages.
MAN_DATE ?= $(shell git -C '$(CURDIR)' log -1 --format=%cs 2>/dev/null || date -u +%F)

# The units of Examples/systemd the package installs (my-signer.service is an example to copy).
user_units := vigil.service vigil-plugin-update.service vigil-plugin-update.timer
system_units := vigil@.service vigil-plugin-update@.service vigil-plugin-update@.timer
docs := README.md CHANGELOG.md LICENSE $(wildcard docs/*.md)

.PHONY: all build dist install install-units uninstall deb check-package clean-dist FORCE

all: dist

# Rewritten only when its text changes, so an unchanged revision recompiles nothing.
$(generated)/vigil_build_info.h: FORCE
	@case '$(REVISION)' in *[!0-9A-Za-z._+-]*) \
	  echo "make: REVISION='$(REVISION)' may hold only letters, digits and . _ + -" >&2; exit 1;; esac
	@mkdir -p '$(generated)'
	@printf '/* Written by make: the build Sources/CVigilBase/vigil_base.c describes. */\n#define VIGIL_BUILD_REVISION "%s"\n#define VIGIL_BUILD_FOR_INSTALL 1\n' \
	  '$(REVISION)' >'$@.tmp'
	@if cmp -s '$@.tmp' '$@'; then rm -f '$@.tmp'; else mv '$@.tmp' '$@'; fi

build: $(generated)/vigil_build_info.h
	$(SWIFT) build $(swift_release_flags) --product vigil
	$(SWIFT) build $(swift_release_flags) --product vigil-plugin-helper

# Man pages and completion scripts, generated from the binary that is installed.
# swift-argument-parser's generate-manual is the tool its GenerateManual plugin runs; it is run
# here directly because `swift package generate-manual` first builds every product of the package
# again in release mode, without this build's flags (docs/host-guide.md, "Install").
dist: build
	$(SWIFT) build $(swift_release_flags) --product generate-manual
	rm -rf '$(dist)' && mkdir -p '$(dist)/man' '$(dist)/completions'
	'$(release_bin)/generate-manual' '$(release_bin)/vigil' --output-directory '$(dist)/man' \
	  --multi-page --date '$(MAN_DATE)' --section 1 --authors 'The Vigil authors'
	# A completion script is sourced, not run: no #! line (bash-completion's convention).
	'$(release_bin)/vigil' --generate-completion-script bash | sed '1{/^#!/d}' >'$(dist)/completions/vigil'
	'$(release_bin)/vigil' --generate-completion-script zsh >'$(dist)/completions/_vigil'
	'$(release_bin)/vigil' --generate-completion-script fish >'$(dist)/completions/vigil.fish'

install: dist install-units
	$(INSTALL) -d '$(DESTDIR)$(bindir)' '$(DESTDIR)$(manifestdir)' '$(DESTDIR)$(mandir)/man1' \
	  '$(DESTDIR)$(bashcompletiondir)' '$(DESTDIR)$(zshcompletiondir)' '$(DESTDIR)$(fishcompletiondir)' \
	  '$(DESTDIR)$(docdir)' '$(DESTDIR)$(libexecdir)/vigil'
	$(INSTALL) -m 0755 '$(release_bin)/vigil' '$(DESTDIR)$(bindir)/vigil'
	$(INSTALL) -m 0755 '$(release_bin)/vigil-plugin-helper' '$(DESTDIR)$(libexecdir)/vigil/vigil-plugin-helper'
	cd manifests && for plugin in */; do \
	  $(INSTALL) -d '$(DESTDIR)$(manifestdir)/'"$$plugin" && \
	  $(INSTALL) -m 0644 "$$plugin"* '$(DESTDIR)$(manifestdir)/'"$$plugin" || exit 1; done
	$(INSTALL) -m 0644 '$(dist)'/man/*.1 '$(DESTDIR)$(mandir)/man1/'
	$(INSTALL) -m 0644 '$(dist)/completions/vigil' '$(DESTDIR)$(bashcompletiondir)/vigil'
	$(INSTALL) -m 0644 '$(dist)/completions/_vigil' '$(DESTDIR)$(zshcompletiondir)/_vigil'
	$(INSTALL) -m 0644 '$(dist)/completions/vigil.fish' '$(DESTDIR)$(fishcompletiondir)/vigil.fish'
	$(INSTALL) -m 0644 $(docs) '$(DESTDIR)$(docdir)/'

# The units run /usr/bin/vigil: installed, they run $(bindir)/vigil. The catalog goes with them.
install-units:
	$(INSTALL) -d '$(DESTDIR)$(systemduserunitdir)' '$(DESTDIR)$(systemdsystemunitdir)' '$(DESTDIR)$(catalogdir)'
	for unit in $(user_units); do \
	  sed 's|/usr/bin/vigil|$(bindir)/vigil|g' "Examples/systemd/$$unit" >'$(DESTDIR)$(systemduserunitdir)/'"$$unit" && \
	  chmod 0644 '$(DESTDIR)$(systemduserunitdir)/'"$$unit" || exit 1; done
	for unit in $(system_units); do \
	  sed 's|/usr/bin/vigil|$(bindir)/vigil|g' "Examples/systemd/$$unit" >'$(DESTDIR)$(systemdsystemunitdir)/'"$$unit" && \
	  chmod 0644 '$(DESTDIR)$(systemdsystemunitdir)/'"$$unit" || exit 1; done
	$(INSTALL) -m 0644 Examples/systemd/vigil.catalog '$(DESTDIR)$(catalogdir)/vigil.catalog'

uninstall:
	rm -f '$(DESTDIR)$(bindir)/vigil' '$(DESTDIR)$(mandir)'/man1/vigil.1 '$(DESTDIR)$(mandir)'/man1/vigil.*.1 \
	  '$(DESTDIR)$(bashcompletiondir)/vigil' '$(DESTDIR)$(zshcompletiondir)/_vigil' \
	  '$(DESTDIR)$(fishcompletiondir)/vigil.fish' '$(DESTDIR)$(catalogdir)/vigil.catalog' \
	  $(foreach unit,$(user_units),'$(DESTDIR)$(systemduserunitdir)/$(unit)') \
	  $(foreach unit,$(system_units),'$(DESTDIR)$(systemdsystemunitdir)/$(unit)')
	rm -rf '$(DESTDIR)$(datadir)/vigil' '$(DESTDIR)$(docdir)' '$(DESTDIR)$(libexecdir)/vigil'

deb:
	scripts/package-deb.sh

check-package:
	scripts/test-package.sh

clean-dist:
	rm -rf '$(dist)' '$(generated)'
