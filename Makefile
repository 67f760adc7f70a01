# Touchgate: build, install and benchmark.
#
#   make                  release build of touchgate, its man pages and shell completions
#   make install          installs them under $(PREFIX): touchgate in bin/ (with the helpers
#                         touchgate-askpass, git-credential-touchgate and pinentry-touchgate,
#                         symlinks to it) and touchgate-client and touchgate-cli, which it runs,
#                         in libexec/touchgate/;
#                         a man page per command in share/man/man1, bash, zsh and fish completions
#   make install-udev     the udev rules and hwdb that give the user at the seat the reader
#                         (udev/README.md); reloads udev unless DESTDIR is set
#   make daemon           release build of the system daemon, touchgated
#   make install-daemon   the system daemon touchgated (docs/DAEMON.md): the binary in
#                         libexec/, its systemd socket and service units, its sysusers.d user,
#                         the hwdb and the udev rule giving its group the readers; on the
#                         running system (no DESTDIR) also creates the user and reloads
#                         systemd and udev. It does not enable or start anything:
#                         scripts/install-daemon.sh does, or `systemctl enable --now touchgated.socket`
#   make uninstall        removes what install put there (uninstall-udev: the udev files;
#                         uninstall-daemon: the daemon's files, after stopping it; its state
#                         in /var/lib/touchgate and its user stay)
#   make collector        release build of touchgate-collector, the fleet's auditor tool (docs/FLEET.md)
#   make install-collector  installs it into bin/ with a man page per subcommand;
#                         uninstall-collector removes them
#   make deb              Debian packages (debian/, dpkg-buildpackage) into $(DEBOUT), default dist/:
#                         touchgate, touchgated, libpam-touchgate and touchgate-collector, the
#                         Swift runtime linked in statically; `sudo apt install ./dist/*.deb`
#   make bench            the benchmark suite (bench/run.sh), every section; writes BENCHMARKS.md
#   make pam              pam_touchgate.so, the PAM module (C, libpam only), into $(PAMBUILD)
#   make install-pam      installs it into $(DESTDIR)$(PAMDIR) (docs/INTEGRATIONS.md, "PAM");
#                         uninstall-pam removes it. No PAM stack is changed: that is yours to edit
#   make sk               libtouchgate-sk.so, the OpenSSH security-key provider (C, libc only),
#                         into $(SKBUILD); `make install` puts it in $(LIBDIR)/touchgate/
#   make fuzz             coverage-guided fuzzing (libFuzzer, `swiftc -sanitize=fuzzer,address`)
#                         of the socket protocol decoder and receive buffer, the policy-string
#                         parser, the stored policy-state and reader-ledger decoders, the
#                         audit records' cleaning and encoding, the SSH agent protocol's
#                         messages and the C readers of the PAM module and the security-key
#                         provider, FUZZ_SECONDS (default 60) each, from the seeds in
#                         fuzz/corpus/; FUZZ_RUNS=N runs N inputs each instead;
#                         FUZZ_OPTIMIZE=-Onone (default -O) keeps the standard library's debug
#                         checks (bounds of unsafe buffers), at about a fiftieth of the speed.
#                         Builds outside SwiftPM, into .build-fuzz/; a crash fails make and
#                         leaves the input in .build-fuzz/crash-<target>-*
#
# PREFIX (default /usr/local) and DESTDIR (a staging root, for packages) as usual; the
# udev files go to $(DESTDIR)$(UDEVDIR), /etc/udev by default. `make && sudo make install`
# builds as you and only copies as root: install rebuilds only what is out of date.
# SCRATCH (the build directory, default .build), CONFIGURATION=debug and SWIFTPM_FLAGS
# (--ignore-lock, as `swift test` holds the build directory while tests run) are for tests.

PREFIX        ?= /usr/local
DESTDIR       ?=
BINDIR        ?= $(PREFIX)/bin
MAN1DIR       ?= $(PREFIX)/share/man/man1
MAN8DIR       ?= $(PREFIX)/share/man/man8
BASHCOMPDIR   ?= $(PREFIX)/share/bash-completion/completions
ZSHCOMPDIR    ?= $(PREFIX)/share/zsh/site-functions
FISHCOMPDIR   ?= $(PREFIX)/share/fish/vendor_completions.d
UDEVDIR       ?= /etc/udev
METAINFODIR   ?= $(PREFIX)/share/metainfo
LIBEXECDIR    ?= $(PREFIX)/libexec
SBINDIR       ?= $(PREFIX)/sbin
# Both are on systemd's own search paths for PREFIX /usr/local and /usr.
SYSTEMDUNITDIR ?= $(PREFIX)/lib/systemd/system
SYSTEMDUSERUNITDIR ?= $(PREFIX)/lib/systemd/user
SYSUSERSDIR   ?= $(PREFIX)/lib/sysusers.d
TMPFILESDIR   ?= $(PREFIX)/lib/tmpfiles.d
SWIFT         ?= swift
CC            ?= cc
# Where Linux-PAM looks for modules (Debian: /lib/<multiarch>/security).
PAMDIR        ?= /lib/$(shell $(CC) -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)/security
PAMBUILD      ?= $(SCRATCH)/pam
PAM_CFLAGS    ?= -O2 -g
LIBDIR        ?= $(PREFIX)/lib
SKBUILD       ?= $(SCRATCH)/sk
SCRATCH       ?= .build
CONFIGURATION ?= release
SWIFTPM_FLAGS ?=

SWIFTPM  = $(SWIFT) $(1) --scratch-path $(SCRATCH) $(SWIFTPM_FLAGS)
SOURCES := Package.swift $(shell find Sources -type f)
BINARY   = $(SCRATCH)/$(CONFIGURATION)/touchgate
# Every command, which `touchgate` (a small static front) execs for all but verify and secret
# get through the daemon; installed in $(LIBEXECDIR)/touchgate/, where the front looks for it
# (../libexec/touchgate/ from its own directory, so BINDIR and LIBEXECDIR stay siblings).
CLI      = $(SCRATCH)/$(CONFIGURATION)/touchgate-cli
# The same commands through the daemon only, without the service (no libfprint, GLib, SQLite or
# libsodium): what the front execs when touchgated serves. Installed beside touchgate-cli.
CLIENT   = $(SCRATCH)/$(CONFIGURATION)/touchgate-client
DAEMON   = $(SCRATCH)/$(CONFIGURATION)/touchgated
COLLECTOR = $(SCRATCH)/$(CONFIGURATION)/touchgate-collector
# Where generate-manual writes the pages, a directory per binary (touchgate-cli: touchgate.*).
MANOUT   = $(SCRATCH)/man/touchgate-cli
# swift-argument-parser's page generator, a product of that package, run on each binary.
GENMAN   = $(SCRATCH)/$(CONFIGURATION)/generate-manual
COMPOUT  = $(SCRATCH)/completions
# The pages carry the date of the last commit, so a rebuild gives the same pages.
MANDATE := $(shell git log -1 --format=%cs 2>/dev/null || date +%F)

.PHONY: all daemon collector pam sk deb install install-udev install-daemon install-pam install-collector uninstall uninstall-udev uninstall-daemon uninstall-pam uninstall-collector bench fuzz
# touchgate run under these names speaks for ssh, git and gpg-agent.
HELPERS = touchgate-askpass git-credential-touchgate pinentry-touchgate

all: $(BINARY) $(MANOUT)/touchgate.1 $(COMPOUT)/touchgate

$(BINARY): $(SOURCES) $(CLI) $(CLIENT)
	$(call SWIFTPM,build) -c $(CONFIGURATION) --product touchgate
	touch $@

$(CLI): $(SOURCES)
	$(call SWIFTPM,build) -c $(CONFIGURATION) --product touchgate-cli
	touch $@

$(CLIENT): $(SOURCES)
	$(call SWIFTPM,build) -c $(CONFIGURATION) --product touchgate-client
	touch $@

# One page per command (touchgate.1, touchgate.secret.get.1, …, and touchgated.1), from the
# command definitions in the built binaries.
$(GENMAN): Package.swift
	$(call SWIFTPM,build) -c $(CONFIGURATION) --product generate-manual
	touch $@

# generate-manual is run here rather than through its package plugin: the plugin started it
# from a thread with every signal blocked, so its own wait for the binary it asks never saw
# SIGCHLD and it hung (twice in a row in clean-clone package builds here).
$(MANOUT)/touchgate.1: $(BINARY) $(CLI) $(DAEMON) $(COLLECTOR) $(GENMAN) man/extend.awk man/names.awk $(wildcard man/extra/*.mdoc)
	rm -rf $(dir $(MANOUT))
	# Each run takes about a second; one hung for good in a clean-clone package build (its
	# child had exited, unreaped, while it still waited for it), so a run that takes a minute
	# is stopped and tried again, twice at most.
	for product in touchgate-cli touchgated touchgate-collector; do \
		mkdir -p $(dir $(MANOUT))$$product && \
		for attempt in 1 2 3; do \
			timeout 60 $(GENMAN) $(SCRATCH)/$(CONFIGURATION)/$$product --multi-page --date $(MANDATE) \
				--output-directory $(dir $(MANOUT))$$product && break; \
			[ $$attempt -lt 3 ] || exit 1; \
			echo "generate-manual for $$product did not finish; trying again" >&2; \
		done || exit 1; \
	done
	# Names whatis can index, and no empty lines (man/names.awk).
	for page in $(dir $(MANOUT))*/*.1; do awk -f man/names.awk $$page > $$page.new && mv $$page.new $$page || exit 1; done
	# ENVIRONMENT, FILES, the exit statuses and EXAMPLES, which the generator does not write.
	for extra in man/extra/*.mdoc; do \
		name=$$(basename $$extra .mdoc); page=; \
		for product in touchgate-cli touchgated touchgate-collector; do \
			[ -f $(dir $(MANOUT))$$product/$$name.1 ] && page=$(dir $(MANOUT))$$product/$$name.1 && break; \
		done; \
		[ -n "$$page" ] || { echo "make: no generated page $$name.1 for $$extra" >&2; exit 1; }; \
		awk -v extra=$$extra -f man/extend.awk $$page > $$page.new && mv $$page.new $$page || exit 1; \
	done

$(COMPOUT)/touchgate: $(BINARY)
	mkdir -p $(COMPOUT)
	$(BINARY) --generate-completion-script zsh > $(COMPOUT)/_touchgate
	$(BINARY) --generate-completion-script fish > $(COMPOUT)/touchgate.fish
	# Completions are sourced, not run: no #! line (Debian's bash-completion policy).
	$(BINARY) --generate-completion-script bash | sed '1{/^#!/d}' > $@

install: all sk
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBEXECDIR)/touchgate $(DESTDIR)$(MAN1DIR) $(DESTDIR)$(BASHCOMPDIR) \
		$(DESTDIR)$(ZSHCOMPDIR) $(DESTDIR)$(FISHCOMPDIR)
	install -m 0755 $(BINARY) $(DESTDIR)$(BINDIR)/touchgate
	install -m 0755 $(CLI) $(DESTDIR)$(LIBEXECDIR)/touchgate/touchgate-cli
	# touchgate-client (and touchgated) are names of touchgate-cli: one copy of the Swift runtime
	# and of the code, each running as the name it was started by.
	ln -sf touchgate-cli $(DESTDIR)$(LIBEXECDIR)/touchgate/touchgate-client
	# touchgate agent's program, set-group-ID to touchgate-agent (a group with no members),
	# by which touchgated knows the agent's Secret Service requests (docs/SECURITY.md): on the
	# running system as root; the packages do it in touchgate.postinst.
	@if [ -z "$(DESTDIR)" ] && [ "$$(id -u)" = 0 ]; then \
		getent group touchgate-agent >/dev/null || groupadd --system touchgate-agent; \
		chgrp touchgate-agent $(LIBEXECDIR)/touchgate/touchgate-cli && chmod 2755 $(LIBEXECDIR)/touchgate/touchgate-cli; \
	fi
	# The helpers are touchgate under other names (docs/INTEGRATIONS.md).
	for helper in $(HELPERS); do ln -sf touchgate $(DESTDIR)$(BINDIR)/$$helper; done
	install -m 0644 $(MANOUT)/*.1 $(DESTDIR)$(MAN1DIR)/
	# The helpers' pages point at their commands' (man touchgate-askpass: touchgate.askpass.1).
	for helper in $(HELPERS); do install -m 0644 man/$$helper.1 $(DESTDIR)$(MAN1DIR)/; done
	install -m 0644 $(COMPOUT)/touchgate $(DESTDIR)$(BASHCOMPDIR)/touchgate
	install -m 0644 $(COMPOUT)/_touchgate $(DESTDIR)$(ZSHCOMPDIR)/_touchgate
	install -m 0644 $(COMPOUT)/touchgate.fish $(DESTDIR)$(FISHCOMPDIR)/touchgate.fish
	# touchgate agent in each user's systemd instance (docs/INTEGRATIONS.md, "ssh").
	install -d $(DESTDIR)$(SYSTEMDUSERUNITDIR)
	install -m 0644 systemd/touchgate-agent.socket $(DESTDIR)$(SYSTEMDUSERUNITDIR)/touchgate-agent.socket
	sed 's|^ExecStart=/usr/local/bin/touchgate |ExecStart=$(BINDIR)/touchgate |' systemd/touchgate-agent.service \
		> $(DESTDIR)$(SYSTEMDUSERUNITDIR)/touchgate-agent.service
	chmod 0644 $(DESTDIR)$(SYSTEMDUSERUNITDIR)/touchgate-agent.service
	# The Secret Service, which D-Bus starts once `touchgate secret-service enable` names it.
	sed 's|^ExecStart=/usr/local/bin/touchgate |ExecStart=$(BINDIR)/touchgate |' systemd/touchgate-secret-service.service \
		> $(DESTDIR)$(SYSTEMDUSERUNITDIR)/touchgate-secret-service.service
	chmod 0644 $(DESTDIR)$(SYSTEMDUSERUNITDIR)/touchgate-secret-service.service
	# touchgated's passkey devices' prompts, enabled for everyone by `touchgate passkey enable`.
	sed 's|^ExecStart=/usr/local/bin/touchgate |ExecStart=$(BINDIR)/touchgate |' systemd/touchgate-passkey-prompts.service \
		> $(DESTDIR)$(SYSTEMDUSERUNITDIR)/touchgate-passkey-prompts.service
	chmod 0644 $(DESTDIR)$(SYSTEMDUSERUNITDIR)/touchgate-passkey-prompts.service
	# The security-key provider ssh loads (docs/INTEGRATIONS.md, "ssh").
	install -d $(DESTDIR)$(LIBDIR)/touchgate
	install -m 0644 $(SKBUILD)/libtouchgate-sk.so $(DESTDIR)$(LIBDIR)/touchgate/libtouchgate-sk.so

uninstall:
	rm -f $(addprefix $(DESTDIR)$(BINDIR)/,$(HELPERS)) $(addprefix $(DESTDIR)$(MAN1DIR)/,$(addsuffix .1,$(HELPERS)))
	rm -f $(DESTDIR)$(LIBEXECDIR)/touchgate/touchgate-cli $(DESTDIR)$(LIBEXECDIR)/touchgate/touchgate-client
	-rmdir $(DESTDIR)$(LIBEXECDIR)/touchgate
	rm -f $(DESTDIR)$(BINDIR)/touchgate $(DESTDIR)$(MAN1DIR)/touchgate.1 $(DESTDIR)$(MAN1DIR)/touchgate.*.1 \
		$(DESTDIR)$(BASHCOMPDIR)/touchgate $(DESTDIR)$(ZSHCOMPDIR)/_touchgate $(DESTDIR)$(FISHCOMPDIR)/touchgate.fish \
		$(DESTDIR)$(SYSTEMDUSERUNITDIR)/touchgate-agent.socket $(DESTDIR)$(SYSTEMDUSERUNITDIR)/touchgate-agent.service \
		$(DESTDIR)$(SYSTEMDUSERUNITDIR)/touchgate-secret-service.service \
		$(DESTDIR)$(SYSTEMDUSERUNITDIR)/touchgate-passkey-prompts.service \
		$(DESTDIR)$(LIBDIR)/touchgate/libtouchgate-sk.so
	-rmdir $(DESTDIR)$(LIBDIR)/touchgate

# Reloading is for the running system only: a staged install (DESTDIR) stays files.
UDEV_RELOAD = if [ -z "$(DESTDIR)" ]; then \
	{ systemd-hwdb update && udevadm control --reload-rules && udevadm trigger --subsystem-match=usb; } \
	|| echo "make: udev was not reloaded; replug the reader or reboot" >&2; fi

install-udev:
	install -d $(DESTDIR)$(UDEVDIR)/hwdb.d $(DESTDIR)$(UDEVDIR)/rules.d $(DESTDIR)$(METAINFODIR)
	install -m 0644 udev/60-touchgate-fingerprint-reader.hwdb $(DESTDIR)$(UDEVDIR)/hwdb.d/
	install -m 0644 udev/70-touchgate-fingerprint-reader.rules $(DESTDIR)$(UDEVDIR)/rules.d/
	# The passkey authenticator's hidraw node: its owner's alone, never the seat's (touchgate passkey serve --uhid).
	install -m 0644 udev/69-touchgate-passkey.rules $(DESTDIR)$(UDEVDIR)/rules.d/
	# The same readers as AppStream modaliases (usb:vXXXXpYYYY* becomes usb:vXXXXpYYYYd*).
	awk 'NR == FNR { if ($$0 ~ /^usb:v.*\*$$/) m[++n] = substr($$0, 1, length($$0) - 1) "d*"; next } \
		/^@MODALIASES@$$/ { for (i = 1; i <= n; i++) printf "    <modalias>%s</modalias>\n", m[i]; next } { print }' \
		udev/60-touchgate-fingerprint-reader.hwdb udev/touchgate.metainfo.xml.in \
		> $(DESTDIR)$(METAINFODIR)/io.github.touchgate.touchgate.metainfo.xml
	chmod 0644 $(DESTDIR)$(METAINFODIR)/io.github.touchgate.touchgate.metainfo.xml
	@$(UDEV_RELOAD)

# The hwdb serves both rules files: it goes with the last of them.
uninstall-udev:
	rm -f $(DESTDIR)$(UDEVDIR)/rules.d/70-touchgate-fingerprint-reader.rules \
		$(DESTDIR)$(UDEVDIR)/rules.d/69-touchgate-passkey.rules \
		$(DESTDIR)$(METAINFODIR)/io.github.touchgate.touchgate.metainfo.xml
	[ -e $(DESTDIR)$(UDEVDIR)/rules.d/71-touchgated-fingerprint-reader.rules ] \
		|| rm -f $(DESTDIR)$(UDEVDIR)/hwdb.d/60-touchgate-fingerprint-reader.hwdb
	@$(UDEV_RELOAD)

daemon: $(DAEMON)

$(DAEMON): $(SOURCES)
	$(call SWIFTPM,build) -c $(CONFIGURATION) --product touchgated
	touch $@

# On the running system only, and only with the tools there: the user first (udev
# needs the group to exist when it applies the rule), then systemd and udev reload.
SYSTEMD_RUNNING = [ -z "$(DESTDIR)" ] && [ -d /run/systemd/system ] && command -v systemctl >/dev/null

install-daemon: $(CLI) $(DAEMON) $(MANOUT)/touchgate.1
	install -d $(DESTDIR)$(LIBEXECDIR)/touchgate $(DESTDIR)$(SBINDIR) $(DESTDIR)$(SYSTEMDUNITDIR) $(DESTDIR)$(SYSUSERSDIR) \
		$(DESTDIR)$(UDEVDIR)/hwdb.d $(DESTDIR)$(UDEVDIR)/rules.d $(DESTDIR)$(MAN1DIR)
	# touchgated is touchgate-cli started by that name (install puts it there too; not again
	# here, which would take its set-group-ID bit), in libexec for the unit and in sbin for
	# the administrator.
	[ -e $(DESTDIR)$(LIBEXECDIR)/touchgate/touchgate-cli ] || \
		install -m 0755 $(CLI) $(DESTDIR)$(LIBEXECDIR)/touchgate/touchgate-cli
	ln -sf touchgate/touchgate-cli $(DESTDIR)$(LIBEXECDIR)/touchgated
	ln -sf $(shell realpath -m --relative-to=$(SBINDIR) $(LIBEXECDIR))/touchgate/touchgate-cli $(DESTDIR)$(SBINDIR)/touchgated
	# Made by the same generate-manual run as touchgate's pages.
	install -m 0644 $(dir $(MANOUT))touchgated/touchgated.1 $(DESTDIR)$(MAN1DIR)/touchgated.1
	sed 's|^ExecStart=/usr/local/libexec/touchgated|ExecStart=$(LIBEXECDIR)/touchgated|' systemd/touchgated.service \
		> $(DESTDIR)$(SYSTEMDUNITDIR)/touchgated.service
	chmod 0644 $(DESTDIR)$(SYSTEMDUNITDIR)/touchgated.service
	install -m 0644 systemd/touchgated.socket $(DESTDIR)$(SYSTEMDUNITDIR)/touchgated.socket
	install -m 0644 systemd/touchgated.sysusers $(DESTDIR)$(SYSUSERSDIR)/touchgated.conf
	install -d $(DESTDIR)$(TMPFILESDIR)
	install -m 0644 systemd/touchgated.tmpfiles $(DESTDIR)$(TMPFILESDIR)/touchgated.conf
	install -m 0644 udev/60-touchgate-fingerprint-reader.hwdb $(DESTDIR)$(UDEVDIR)/hwdb.d/
	install -m 0644 udev/71-touchgated-fingerprint-reader.rules $(DESTDIR)$(UDEVDIR)/rules.d/
	@if [ -z "$(DESTDIR)" ] && command -v systemd-sysusers >/dev/null; then \
		systemd-sysusers $(SYSUSERSDIR)/touchgated.conf; fi
	@if $(SYSTEMD_RUNNING); then systemctl daemon-reload; fi
	@$(UDEV_RELOAD)

uninstall-daemon:
	@if $(SYSTEMD_RUNNING); then systemctl disable --now touchgated.socket touchgated.service || true; fi
	rm -f $(DESTDIR)$(LIBEXECDIR)/touchgated $(DESTDIR)$(SBINDIR)/touchgated $(DESTDIR)$(MAN1DIR)/touchgated.1 $(DESTDIR)$(SYSTEMDUNITDIR)/touchgated.service \
		$(DESTDIR)$(SYSTEMDUNITDIR)/touchgated.socket $(DESTDIR)$(SYSUSERSDIR)/touchgated.conf \
		$(DESTDIR)$(TMPFILESDIR)/touchgated.conf \
		$(DESTDIR)$(UDEVDIR)/rules.d/71-touchgated-fingerprint-reader.rules
	[ -e $(DESTDIR)$(UDEVDIR)/rules.d/70-touchgate-fingerprint-reader.rules ] \
		|| rm -f $(DESTDIR)$(UDEVDIR)/hwdb.d/60-touchgate-fingerprint-reader.hwdb
	# The program touchgated was a name of stays while touchgate (make install) uses it.
	[ -e $(DESTDIR)$(BINDIR)/touchgate ] || { rm -f $(DESTDIR)$(LIBEXECDIR)/touchgate/touchgate-cli; \
		rmdir $(DESTDIR)$(LIBEXECDIR)/touchgate 2>/dev/null || true; }
	@if $(SYSTEMD_RUNNING); then systemctl daemon-reload; fi
	@$(UDEV_RELOAD)
	@echo "make: the daemon's state (/var/lib/touchgate) and its user touchgated were kept" >&2

# The fleet's auditor tool, for the machines that verify and query the collected trails.
collector: $(COLLECTOR)

$(COLLECTOR): $(SOURCES)
	$(call SWIFTPM,build) -c $(CONFIGURATION) --product touchgate-collector
	touch $@

install-collector: $(COLLECTOR) $(MANOUT)/touchgate.1
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MAN1DIR)
	install -m 0755 $(COLLECTOR) $(DESTDIR)$(BINDIR)/touchgate-collector
	# Made by the same generate-manual run as touchgate's pages: one per subcommand.
	install -m 0644 $(dir $(MANOUT))touchgate-collector/*.1 $(DESTDIR)$(MAN1DIR)/

uninstall-collector:
	rm -f $(DESTDIR)$(BINDIR)/touchgate-collector $(DESTDIR)$(MAN1DIR)/touchgate-collector.1 \
		$(DESTDIR)$(MAN1DIR)/touchgate-collector.*.1

# The PAM module: no Swift, GLib or libfprint inside sudo, login or a screen locker.
pam: $(PAMBUILD)/pam_touchgate.so

$(PAMBUILD)/pam_touchgate.so: pam/pam_touchgate.c pam/json.c pam/json.h pam/reader.c pam/reader.h
	@mkdir -p $(PAMBUILD)
	$(CC) $(PAM_CFLAGS) -std=c11 -Wall -Wextra -Werror -fPIC -shared -fvisibility=hidden \
		-pthread -Wl,-z,relro,-z,now -Wl,--no-undefined -o $@ pam/pam_touchgate.c pam/json.c pam/reader.c -lpam

install-pam: pam
	install -d $(DESTDIR)$(PAMDIR) $(DESTDIR)$(MAN8DIR)
	install -m 0644 $(PAMBUILD)/pam_touchgate.so $(DESTDIR)$(PAMDIR)/pam_touchgate.so
	install -m 0644 man/pam_touchgate.8 $(DESTDIR)$(MAN8DIR)/pam_touchgate.8

uninstall-pam:
	rm -f $(DESTDIR)$(PAMDIR)/pam_touchgate.so $(DESTDIR)$(MAN8DIR)/pam_touchgate.8

# The OpenSSH security-key provider: loaded by ssh-sk-helper, so C with libc only; it asks
# touchgate agent over its socket and holds no key.
sk: $(SKBUILD)/libtouchgate-sk.so

$(SKBUILD)/libtouchgate-sk.so: sk/touchgate_sk.c sk/sk_wire.c sk/sk_wire.h sk/sk_api.h
	@mkdir -p $(SKBUILD)
	$(CC) $(PAM_CFLAGS) -std=c11 -Wall -Wextra -Werror -fPIC -shared -fvisibility=hidden \
		-Wl,-z,relro,-z,now -Wl,--no-undefined -o $@ sk/touchgate_sk.c sk/sk_wire.c

# Sections 1-7 in one run, then each later section by its own script, each replacing its
# section of BENCHMARKS.md: every section is measured by `make bench`.
BENCH_LATER = fleet ssh secret-service tpm agent passkeys install
# BENCH_ONLY=SECTION runs that section alone (bench/run.sh); without it, every section.
bench:
	bench/run.sh
	set -e; [ -n "$$BENCH_ONLY" ] || for section in $(BENCH_LATER); do BENCH_ONLY=$$section bench/run.sh; done

# Debian packages (debian/): dpkg-buildpackage writes them beside the checkout, from where
# they are moved into $(DEBOUT) with the .changes and .buildinfo that list them.
DEBOUT        ?= dist
DEBVERSION     = $(shell dpkg-parsechangelog -S Version)
DEBARCH        = $(shell dpkg-architecture -qDEB_HOST_ARCH)
DEBCHANGES     = touchgate_$(DEBVERSION)_$(DEBARCH).changes

deb:
	@command -v dpkg-buildpackage >/dev/null && command -v dh >/dev/null \
		|| { echo "make: deb needs dpkg-dev and debhelper: run scripts/setup.sh --build" >&2; exit 1; }
	@command -v $(SWIFT) >/dev/null \
		|| { echo "make: deb needs a Swift 6 toolchain on PATH: scripts/setup.sh --build says where to get one" >&2; exit 1; }
	dpkg-buildpackage -us -uc -b
	@mkdir -p $(DEBOUT)
	@for f in $$(sed -n '/^Files:/,/^[^ ]/s/^ [0-9a-f]* [0-9]* [^ ]* [^ ]* //p' ../$(DEBCHANGES)) $(DEBCHANGES); do \
		mv ../$$f $(DEBOUT)/ || exit 1; done
	@echo "make: the packages are in $(DEBOUT)/; install them with: sudo apt install ./$(DEBOUT)/*.deb"

# Fuzzing. Each target is one file in fuzz/ compiled with the sources of the one
# dependency-free module it exercises, so SwiftPM's build is untouched. New inputs the
# fuzzer finds go to .build-fuzz/corpus/<target> (fuzz/corpus stays the committed seeds).
SWIFTC        ?= swiftc
FUZZDIR       ?= .build-fuzz
FUZZ_SECONDS  ?= 60
FUZZ_RUNS     ?=
FUZZ_OPTIMIZE ?= -O
FUZZ_TARGETS   = protocol policy stored-state frame-buffer reader-ledger audit front-json pam-reader ssh-agent sk-reader tpm-blob \
                 fleet-formats ctap
# The Foundation-free TouchgateBasics without what needs the C module CTouchgateSys (the
# process protections, threads, detached processes, the kernel's facts about sockets and
# the requester's terminal found through them;
# secret memory compiles without its fatal-signal registry).
BASICS_SOURCES = $(filter-out Sources/TouchgateBasics/ProcessProtection.swift Sources/TouchgateBasics/SystemThread.swift \
	Sources/TouchgateBasics/DetachedProcess.swift Sources/TouchgateBasics/ProcessFacts.swift \
	Sources/TouchgateBasics/AgentGroup.swift Sources/TouchgateBasics/StartedName.swift \
	Sources/TouchgateBasics/RequesterTerminal.swift,\
	$(wildcard Sources/TouchgateBasics/*.swift))
# TouchgateAPI's sources with those compiled in (one module here, so its re-export is left out).
WIRE_SOURCES   = $(filter-out Sources/TouchgateAPI/Exports.swift,$(wildcard Sources/TouchgateAPI/*.swift)) $(BASICS_SOURCES)
FUZZ_LIMIT     = $(if $(FUZZ_RUNS),-runs=$(FUZZ_RUNS),-max_total_time=$(FUZZ_SECONDS))
FUZZ_SWIFTC    = rm -f $(1); $(SWIFTC) -sanitize=fuzzer,address -parse-as-library $(FUZZ_OPTIMIZE) -package-name Touchgate -module-name $(2) $(3) -o $(1) 2>&1 \
	| { grep -v 'ld.gold: warning: Cannot export local symbol' || true; }; test -x $(1)

fuzz: $(FUZZ_TARGETS:%=$(FUZZDIR)/fuzz-%)
	@for t in $(FUZZ_TARGETS); do \
		mkdir -p $(FUZZDIR)/corpus/$$t; \
		$(FUZZDIR)/fuzz-$$t $(FUZZ_LIMIT) -max_len=4096 -print_final_stats=1 \
			-artifact_prefix=$(FUZZDIR)/crash-$$t- $(FUZZDIR)/corpus/$$t fuzz/corpus/$$t \
			> $(FUZZDIR)/$$t.log 2>&1; status=$$?; \
		runs=$$(sed -n 's/^stat::number_of_executed_units: *//p' $(FUZZDIR)/$$t.log); \
		secs=$$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' $(FUZZDIR)/$$t.log); \
		if [ $$status -ne 0 ]; then \
			tail -40 $(FUZZDIR)/$$t.log >&2; \
			echo "fuzz: $$t FAILED after $${runs:-?} executions; the input is in $(FUZZDIR)/crash-$$t-*, the log in $(FUZZDIR)/$$t.log" >&2; \
			exit 1; \
		fi; \
		echo "fuzz: $$t: $$runs executions in $${secs:-?} s, no crash"; \
	done

# A module several targets exercise is compiled once, instrumented, into a static library
# they import: the wire sources compiled into each of three targets took two thirds of the
# fuzz build's CPU (100 of 150 s here). $(call FUZZ_LIBRARY,library,module,sources)
FUZZ_LIBRARY   = @mkdir -p $(dir $(1)); rm -f $(1); $(SWIFTC) -sanitize=fuzzer,address -parse-as-library $(FUZZ_OPTIMIZE) \
	-package-name Touchgate -module-name $(2) -emit-module -emit-module-path $(dir $(1))$(2).swiftmodule \
	-emit-library -static -o $(1) $(3)
WIRE_LIBRARY   = $(FUZZDIR)/wire/libTouchgateAPI.a
POLICY_LIBRARY = $(FUZZDIR)/policy/libTouchgatePolicy.a
BASICS_LIBRARY = $(FUZZDIR)/basics/libTouchgateBasics.a
$(WIRE_LIBRARY): $(WIRE_SOURCES)
	$(call FUZZ_LIBRARY,$@,TouchgateAPI,$^)
$(POLICY_LIBRARY): $(wildcard Sources/TouchgatePolicy/*.swift)
	$(call FUZZ_LIBRARY,$@,TouchgatePolicy,$^)
# A module of its own, as SwiftPM builds it, because TouchgateSSH's files import it by name.
$(BASICS_LIBRARY): $(BASICS_SOURCES)
	$(call FUZZ_LIBRARY,$@,TouchgateBasics,$^)

$(FUZZDIR)/fuzz-protocol: fuzz/protocol.swift $(WIRE_LIBRARY)
	@mkdir -p $(FUZZDIR)
	$(call FUZZ_SWIFTC,$@,FuzzProtocol,-I $(FUZZDIR)/wire $^)

$(FUZZDIR)/fuzz-policy: fuzz/policy.swift $(POLICY_LIBRARY)
	@mkdir -p $(FUZZDIR)
	$(call FUZZ_SWIFTC,$@,FuzzPolicy,-I $(FUZZDIR)/policy $^)

$(FUZZDIR)/fuzz-stored-state: fuzz/stored-state.swift $(POLICY_LIBRARY)
	@mkdir -p $(FUZZDIR)
	$(call FUZZ_SWIFTC,$@,FuzzStoredState,-I $(FUZZDIR)/policy $^)

$(FUZZDIR)/fuzz-frame-buffer: fuzz/frame-buffer.swift $(WIRE_LIBRARY)
	@mkdir -p $(FUZZDIR)
	$(call FUZZ_SWIFTC,$@,FuzzFrameBuffer,-I $(FUZZDIR)/wire $^)

# The SSH agent protocol: TouchgateSSH's sources compiled with the target, over TouchgateBasics.
$(FUZZDIR)/fuzz-ssh-agent: fuzz/ssh-agent.swift $(wildcard Sources/TouchgateSSH/*.swift) $(BASICS_LIBRARY)
	@mkdir -p $(FUZZDIR)
	$(call FUZZ_SWIFTC,$@,TouchgateSSH,-I $(FUZZDIR)/basics $^)

# The fleet log's formats: TouchgateShipping's FleetLog sources compiled with the target, over
# TouchgatePolicy, TouchgateBasics and libsodium.
$(FUZZDIR)/fuzz-ctap: fuzz/ctap.swift $(wildcard Sources/TouchgateFIDO/*.swift)
	@mkdir -p $(FUZZDIR)
	$(call FUZZ_SWIFTC,$@,TouchgateFIDO,$^)

$(FUZZDIR)/fuzz-fleet-formats: fuzz/fleet-formats.swift $(wildcard Sources/TouchgateShipping/FleetLog/*.swift) \
		$(POLICY_LIBRARY) $(BASICS_LIBRARY)
	@mkdir -p $(FUZZDIR)
	$(call FUZZ_SWIFTC,$@,TouchgateShipping,-I $(FUZZDIR)/policy -I $(FUZZDIR)/basics -I Sources/CSodium $^)

# The thin front's JSON reader and writer (no imports), against Foundation's and WireCoding's.
$(FUZZDIR)/fuzz-front-json: fuzz/front-json.swift Sources/touchgate/JSONText.swift $(WIRE_LIBRARY)
	@mkdir -p $(FUZZDIR)
	$(call FUZZ_SWIFTC,$@,TouchgateFront,-I $(FUZZDIR)/wire $^)

# The PAM module's reader of daemon answers (C), against Foundation and the framing rules:
# its C files compiled for the fuzzer, imported through their header.
PAM_READER_C   = pam/reader.c pam/json.c
$(FUZZDIR)/fuzz-pam-reader: fuzz/pam-reader.swift $(PAM_READER_C) pam/reader.h pam/json.h
	@mkdir -p $(FUZZDIR)/pam-reader
	for c in $(PAM_READER_C); do \
		$(dir $(realpath $(shell command -v $(SWIFTC))))clang -std=c11 -Wall -Wextra -Werror -O1 -g \
			-fsanitize=fuzzer-no-link,address -c $$c -o $(FUZZDIR)/pam-reader/$$(basename $$c .c).o || exit 1; \
	done
	$(call FUZZ_SWIFTC,$@,PAMReader,-import-objc-header pam/reader.h fuzz/pam-reader.swift $(PAM_READER_C:pam/%.c=$(FUZZDIR)/pam-reader/%.o))

# The security-key provider's reader of agent answers (C), the same way.
$(FUZZDIR)/fuzz-sk-reader: fuzz/sk-reader.swift sk/sk_wire.c sk/sk_wire.h
	@mkdir -p $(FUZZDIR)/sk-reader
	$(dir $(realpath $(shell command -v $(SWIFTC))))clang -std=c11 -Wall -Wextra -Werror -O1 -g \
		-fsanitize=fuzzer-no-link,address -c sk/sk_wire.c -o $(FUZZDIR)/sk-reader/sk_wire.o
	$(call FUZZ_SWIFTC,$@,SKReader,-import-objc-header sk/sk_wire.h fuzz/sk-reader.swift $(FUZZDIR)/sk-reader/sk_wire.o)

$(FUZZDIR)/fuzz-tpm-blob: fuzz/tpm-blob.swift Sources/CTouchgateTPM/tg_tpm.c Sources/CTouchgateTPM/include/tg_tpm.h
	@mkdir -p $(FUZZDIR)/tpm-blob
	$(dir $(realpath $(shell command -v $(SWIFTC))))clang -std=c11 -Wall -Wextra -Werror -O1 -g \
		-fsanitize=fuzzer-no-link,address -ISources/CTouchgateTPM/include -c Sources/CTouchgateTPM/tg_tpm.c \
		-o $(FUZZDIR)/tpm-blob/tg_tpm.o
	$(call FUZZ_SWIFTC,$@,TPMBlob,-import-objc-header Sources/CTouchgateTPM/include/tg_tpm.h fuzz/tpm-blob.swift $(FUZZDIR)/tpm-blob/tg_tpm.o -Xlinker -ldl)

$(FUZZDIR)/fuzz-reader-ledger: fuzz/reader-ledger.swift Sources/TouchgateService/ReaderLedger.swift
	@mkdir -p $(FUZZDIR)
	$(call FUZZ_SWIFTC,$@,TouchgateService,$^)

$(FUZZDIR)/fuzz-audit: fuzz/audit.swift Sources/TouchgateVault/AuditEntry.swift Sources/TouchgateVault/AuditEvent.swift Sources/TouchgateVault/AuditMAC.swift
	@mkdir -p $(FUZZDIR)
	$(call FUZZ_SWIFTC,$@,TouchgateVault,-I Sources/CSodium $^)
