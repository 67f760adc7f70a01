#!/usr/bin/env bash
# scripts/vm.sh: a small Debian VM under qemu (KVM where it can), for tests that need kernel facilities the
# build machine's own kernel lacks (first of all /dev/uhid, for the FIDO2 authenticator's
# virtual HID device). The guest runs Debian's own kernel and the same Debian release as
# this machine, so binaries built here (same glibc) run there unchanged.
#
#   scripts/vm.sh image
#       Builds the image once and prints its directory. It is cached under the checkout's
#       .build-vm/ (git-ignored), keyed by the archive, the suite, the package list and the
#       guest's init stub and initramfs, so a second call returns at once (the first takes
#       about 1-1.5 minutes, mostly debootstrap; downloaded packages stay in .build-vm/debs).
#
#   scripts/vm.sh run [--share HOST[:GUEST]]... [--share-rw HOST[:GUEST]]...
#                     [--env NAME=VALUE]... [--cwd DIR] -- COMMAND [ARG]...
#       Boots the VM (building the image first when needed), shares the host directories
#       into it over 9p (read-only with --share, writable with --share-rw; GUEST defaults to
#       HOST's absolute path), waits for udev and `modprobe uhid`, runs COMMAND as root with
#       standard input from /dev/null, streams its standard output and error here, powers
#       the guest off and exits with COMMAND's status. The Swift runtime directory
#       (/opt/swift/usr/lib/swift/linux, the RUNPATH of the project's debug binaries) is
#       shared read-only at the same path unless VM_SWIFT_RUNTIME names another one (an
#       empty value shares none).
#
# Environment:
#   VM_TIMEOUT   seconds the whole run may take (boot included), 300 by default; a guest
#                still running then is killed and vm.sh exits 124.
#   VM_CACHE     image cache directory, <checkout>/.build-vm by default.
#   VM_MIRROR, VM_SUITE  Debian archive and suite for debootstrap; by default the ones this
#                machine's apt sources name for its own release (VERSION_CODENAME), the way
#                Tests/TouchgateCLITests/DebianPackageTests.swift picks them.
#   VM_ACCEL     auto (the default), kvm or tcg: see choose_accelerator below. With kvm, a
#                missing or unusable /dev/kvm is an error that names it; auto emulates then.
#   VM_CPU       qemu's -cpu: host under KVM, max under TCG by default.
#   VM_KERNEL_ARGS  more kernel command line (e.g. loglevel=7 to see the whole boot).
#   VM_VERBOSE=1 prints the guest's console (kernel and init messages) after the run.
#   VM_EXTRA_PACKAGES  more Debian packages for the image (space-separated), which then is an
#                image of its own, named by VM_IMAGE_NAME (required with them), cached beside
#                the others: e.g. the browser test's chromium.
#   VM_MEMORY    the guest's memory in MiB, 1024 by default.
#
# Exit status of `run`: COMMAND's; 124 when VM_TIMEOUT ran out; 125 when the VM could not
# run the command at all (no qemu, VM_ACCEL=kvm without a usable /dev/kvm, a boot failure:
# then the console's tail is printed).
#
# How the guest is made: debootstrap --variant=minbase with the packages below (Debian's
# linux-image-amd64 among them) on an ext4 disk image, root.img; beside it the kernel,
# uncompressed, and a small initramfs of klibc's tools that loads the few modules the root
# needs and mounts it. qemu opens root.img with snapshot=on, so every run starts from the
# same pristine root and what a run writes is thrown away. The kernel's first program is
# /sbin/touchgate-vm-init (a stub baked into the image), which mounts the run's own 9p
# directory (tag vmrun) and hands over to the init.sh that this script writes there for
# each run; COMMAND's output and status come back through files in that directory
# (stdout and stderr are streamed separately, so their relative order is not kept).
#
# KVM or emulation: see choose_accelerator. On this project's machines /dev/kvm is PVM,
# which cannot run Debian's kernel, so runs there use qemu's TCG: boot to command takes
# about 6-8 s and programs run several times slower than natively.
set -euo pipefail

self=$(basename "$0")
checkout=$(cd "$(dirname "$0")/.." && pwd)
cache=${VM_CACHE:-$checkout/.build-vm}
timeout_seconds=${VM_TIMEOUT:-300}

die() { echo "$self: $*" >&2; exit 125; }
note() { echo "$self: $*" >&2; }

# What the guest has besides debootstrap's minbase: the kernel and what makes its initramfs,
# udev and kmod (modprobe uhid, hidraw nodes), procps (pkill, pgrep), libfido2's tools to look at the virtual
# authenticator from a real client, python3 for small probes, and the shared libraries the
# project's binaries link (libgio is in libglib2.0-0), and a D-Bus daemon with python3-dbusmock
# for logind's stand-in (the guest's PID 1 is not systemd) and a notification server, which
# desktop notices reach with gdbus (libglib2.0-bin).
packages=(
    ${VM_EXTRA_PACKAGES:-}
    linux-image-amd64 initramfs-tools
    udev kmod procps
    fido2-tools libfido2-1
    python3
    dbus-daemon python3-dbusmock libglib2.0-bin
    libfprint-2-2 libsodium23 libsqlite3-0 libglib2.0-0 libpwquality1
    libnettle8 libhogweed6 libgmp10 libpam0g cracklib-runtime
    ca-certificates
)

# The guest's PID 1. The kernel starts it after the initramfs has mounted the root (and moved
# /dev, /proc, /sys and /run onto it). It mounts this run's directory and runs the init.sh
# that `run` wrote there; if it cannot, it powers the guest off at once, so the host side sees
# no status and prints the console instead of waiting for the timeout.
read -r -d '' init_stub <<'STUB' || true
#!/bin/sh
# PID 1 of the Touchgate test VM (scripts/vm.sh): mounts the run directory, runs its init.sh.
off() { echo "touchgate-vm-init: $*" >&2; echo o > /proc/sysrq-trigger; sleep 60; }
mountpoint -q /proc || mount -t proc proc /proc
mountpoint -q /sys || mount -t sysfs sysfs /sys
mountpoint -q /dev || mount -t devtmpfs devtmpfs /dev
mountpoint -q /run || mount -t tmpfs -o mode=0755 tmpfs /run
[ -d /sys/module/9p ] || modprobe -q -a 9pnet_virtio 9p || off "cannot load the 9p modules"
mkdir -p /run/vm
mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 vmrun /run/vm || off "cannot mount the run directory"
[ -r /run/vm/init.sh ] || off "no init.sh in the run directory"
exec /bin/bash /run/vm/init.sh
STUB

# The /init of the guest's initramfs, run by klibc's sh (from klibc-utils, which
# initramfs-tools brings): it loads the modules the root needs, in the order of
# /modules.list (virtio PCI and block, crc32c, ext4, 9p: Debian builds them as modules), mounts
# the root disk and hands over to the init stub. No udev and no module tools are needed
# that early, which saves seconds under emulation against initramfs-tools' own initramfs.
read -r -d '' initramfs_init <<'INIT' || true
#!/bin/sh
# Touchgate test VM's initramfs (scripts/vm.sh): mounts the root disk, starts its init stub.
off() { echo "touchgate-vm initramfs: $*"; poweroff -f; sleep 60; }
mount -t devtmpfs devtmpfs /dev || off "cannot mount /dev"
for module in $(cat /modules.list); do
    insmod "/modules/$module" || echo "touchgate-vm initramfs: insmod $module failed"
done
n=0
while [ ! -b /dev/vda ] && [ $n -lt 200 ]; do sleep 0.05; n=$((n + 1)); done
mount -t ext4 -o rw /dev/vda /newroot || off "cannot mount the root disk /dev/vda"
umount /dev
exec run-init /newroot /sbin/touchgate-vm-init
INIT

# Modules of the initramfs (their dependencies come along): the root's, and 9p's for the
# shared directories (klibc's insmod loads them faster than a modprobe from the root).
initramfs_modules=(virtio_pci virtio_blk crc32c_generic ext4 9pnet_virtio 9p)

# --- The archive ---------------------------------------------------------------------

# This machine's release, e.g. bookworm.
codename() {
    sed -n 's/^VERSION_CODENAME=//p' /etc/os-release | tr -d '"'
}

# The first archive URI that this machine's apt sources give for suite $1 (deb lines of
# *.list files and deb822 stanzas of *.sources files; disabled stanzas are skipped).
archive_uri() {
    local suite=$1 file files=()
    [ -f /etc/apt/sources.list ] && files+=(/etc/apt/sources.list)
    for file in /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
        [ -f "$file" ] && files+=("$file")
    done
    for file in "${files[@]}"; do
        case $file in
        *.sources)
            awk -v suite="$suite" '
                function flush() {
                    if (types ~ /(^| )deb( |$)/ && (" " suites " ") ~ (" " suite " ") && enabled != "no" && uris != "") {
                        split(uris, u, " "); print u[1]; found = 1; exit
                    }
                    types = suites = uris = enabled = ""
                }
                /^[ \t]*$/ { flush(); next }
                /^#/ || /^[ \t]/ { next }
                {
                    key = tolower($0); sub(/:.*/, "", key)
                    value = $0; sub(/^[^:]*:[ \t]*/, "", value); gsub(/[ \t]+/, " ", value)
                    if (key == "types") types = value
                    else if (key == "suites") suites = value
                    else if (key == "uris") uris = value
                    else if (key == "enabled") enabled = tolower(value)
                }
                END { if (!found) flush() }' "$file"
            ;;
        *)
            sed -e 's/#.*//' -e 's/\[[^]]*\]//' "$file" | awk -v suite="$suite" '$1 == "deb" && $3 == suite { print $2; exit }'
            ;;
        esac | head -n 1 | grep . && return 0
    done
    return 1
}

# --- The image -----------------------------------------------------------------------

suite=${VM_SUITE:-}
variant=${VM_IMAGE_NAME:-base}
[ -z "${VM_EXTRA_PACKAGES:-}" ] || [ -n "${VM_IMAGE_NAME:-}" ] || die "VM_EXTRA_PACKAGES makes an image of its own: name it with VM_IMAGE_NAME"
[[ $variant =~ ^[a-z0-9-]+$ ]] || die "VM_IMAGE_NAME is lowercase letters, digits and dashes, not '$variant'"
mirror=${VM_MIRROR:-}

resolve_archive() {
    [ -n "$suite" ] || suite=$(codename)
    [ -n "$suite" ] || die "no VERSION_CODENAME in /etc/os-release: set VM_SUITE"
    [ -n "$mirror" ] || mirror=$(archive_uri "$suite") ||
        die "no apt source of this machine names its own suite, $suite: set VM_MIRROR"
}

# The image's directory: its name holds a digest of everything the image is made from.
image_dir() {
    local key
    key=$({
        echo "format 3"
        echo "$mirror $suite"
        printf '%s\n' "${packages[@]}" | sort
        echo "$init_stub"
        echo "$initramfs_init"
        echo "${initramfs_modules[*]}"
    } | sha256sum | cut -c1-16)
    echo "$cache/image-$suite-$variant-$key"
}

build_image() {
    local image=$1
    [ "$(id -u)" = 0 ] || die "building the image needs root (debootstrap, chroot)"
    command -v debootstrap >/dev/null || die "debootstrap is missing: apt-get install debootstrap"
    command -v mkfs.ext4 >/dev/null || die "mkfs.ext4 is missing: apt-get install e2fsprogs"
    local work="$image.tmp.$$"
    local root="$work/root"
    rm -rf "$work"
    mkdir -p "$work" "$cache/debs"
    # Whatever goes wrong, no half-made image is left behind; the log stays in the cache.
    trap 'cp "$work/debootstrap.log" "$cache/last-build.log" 2>/dev/null; rm -rf "$work"' EXIT
    local started=$SECONDS
    note "building the VM image ($suite from $mirror) in $image"

    # Stage one only unpacks, so that the initramfs configuration is in place before the
    # kernel's postinst makes the initramfs in stage two.
    debootstrap --variant=minbase --foreign --cache-dir="$cache/debs" \
        --include="$(IFS=,; echo "${packages[*]}")" "$suite" "$root" "$mirror" >"$work/debootstrap.log" 2>&1 ||
        { tail -n 30 "$work/debootstrap.log" >&2; die "debootstrap (stage one) failed; log: $cache/last-build.log"; }
    # initramfs-tools makes an initramfs for the kernel's postinst that the VM does not use
    # (it boots with the one made below): with only the modules listed, a quick one.
    mkdir -p "$root/etc/initramfs-tools/conf.d"
    printf 'MODULES=list\n' >"$root/etc/initramfs-tools/conf.d/touchgate-vm.conf"
    # In a mount namespace of its own, so nothing debootstrap mounts outlives it.
    unshare --mount --propagation private -- chroot "$root" /debootstrap/debootstrap --second-stage \
        >>"$work/debootstrap.log" 2>&1 ||
        { tail -n 30 "$work/debootstrap.log" >&2; die "debootstrap (stage two) failed; log: $cache/last-build.log"; }

    # The guest's own settings: a name, no fstab entries (the initramfs mounts the root),
    # the init stub, and no package caches.
    echo touchgate-vm >"$root/etc/hostname"
    printf '127.0.0.1 localhost\n127.0.1.1 touchgate-vm\n' >"$root/etc/hosts"
    : >"$root/etc/fstab"
    printf '%s\n' "$init_stub" >"$root/sbin/touchgate-vm-init"
    chmod 755 "$root/sbin/touchgate-vm-init"
    rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/* "$root/debootstrap"

    local kver
    kver=$(ls "$root/lib/modules" | sort -V | tail -n 1)
    [ -n "$kver" ] && [ -f "$root/boot/vmlinuz-$kver" ] || die "the root has no kernel"

    # The kernel uncompressed (an ELF that qemu boots through its PVH entry): under emulation
    # the bzImage's own xz decompression takes seconds of every boot. Should that fail, the
    # bzImage itself.
    if ! chroot "$root" python3 -c '
import lzma, sys
data = open(sys.argv[1], "rb").read()
start = data.find(b"\xfd7zXZ\x00")
if start < 0:
    sys.exit("no xz stream in " + sys.argv[1])
sys.stdout.buffer.write(lzma.LZMADecompressor().decompress(data[start:]))' "/boot/vmlinuz-$kver" >"$work/kernel" ||
        [ "$(head -c 4 "$work/kernel" | od -An -tx1 | tr -d ' ')" != 7f454c46 ]; then
        cp "$root/boot/vmlinuz-$kver" "$work/kernel"
    fi

    # The initramfs: klibc's tools, the modules in load order, /init, and a console node;
    # an uncompressed cpio (the kernel then has nothing to decompress). The guest's own
    # modprobe orders the modules and its cpio packs them.
    local initramfs=$root/tmp/touchgate-initramfs module
    mkdir -p "$initramfs/dev" "$initramfs/newroot" "$initramfs/modules" "$initramfs/lib"
    cp -a "$root/usr/lib/klibc/bin" "$initramfs/bin"
    cp -a "$root"/usr/lib/klibc-*.so "$initramfs/lib/"
    mknod -m 600 "$initramfs/dev/console" c 5 1
    chroot "$root" modprobe --all --set-version="$kver" --show-depends "${initramfs_modules[@]}" |
        awk '$1 == "insmod" && !seen[$2]++ { print $2 }' >"$work/modules.txt"
    [ -s "$work/modules.txt" ] || die "modprobe found none of ${initramfs_modules[*]}"
    while read -r module; do
        cp "$root$module" "$initramfs/modules/"
        basename "$module" >>"$initramfs/modules.list"
    done <"$work/modules.txt"
    rm "$work/modules.txt"
    printf '%s\n' "$initramfs_init" >"$initramfs/init"
    chmod 755 "$initramfs/init"
    chroot "$root" sh -c 'cd /tmp/touchgate-initramfs && find . | sort | cpio --quiet -o -H newc -R 0:0' >"$work/initrd.img" ||
        die "cpio could not pack the initramfs"
    rm -rf "$initramfs"
    chroot "$root" dpkg-query -W -f '${Package} ${Version}\n' >"$work/packages.txt"

    # An ext4 disk with the root's files: their size and a gigabyte for what a run writes
    # (sparse, and thrown away after each run).
    local megabytes
    megabytes=$(( $(du -sm "$root" | cut -f1) + 1024 ))
    mkfs.ext4 -q -F -L touchgate-vm -d "$root" "$work/root.img" "${megabytes}M" >/dev/null ||
        die "mkfs.ext4 could not make the root disk"
    rm -rf "$root" "$work/debootstrap.log"
    mv "$work" "$image"
    trap - EXIT
    # Images of this name made from an earlier package list or stub are of no more use.
    local old
    for old in "$cache/image-$suite-$variant-"*; do
        [ "$old" = "$image" ] || [[ $old == *.tmp.* ]] || rm -rf "$old"
    done
    note "image ready in $((SECONDS - started)) s: $image"
}

# Makes the image unless it is there; one builder at a time.
ensure_image() {
    resolve_archive
    image=$(image_dir)
    [ -f "$image/root.img" ] && return 0
    mkdir -p "$cache"
    exec 9>"$cache/image.lock"
    flock 9
    [ -f "$image/root.img" ] || build_image "$image"
    exec 9>&-
}

# --- Running a command ---------------------------------------------------------------

usage() {
    sed -n '2,/^set -euo/p' "$0" | sed -e '/^set -euo/d' -e 's/^# \{0,1\}//' >&2
    exit 125
}

# kvm or tcg, from VM_ACCEL (auto, kvm or tcg; auto by default).
#
# KVM is used when /dev/kvm is there and is hardware virtualization (the kvm_intel or kvm_amd
# module). Some cloud machines, this project's among them, offer a /dev/kvm from kvm_pvm
# (PVM, "pagetable-based virtual machine"): it runs only guest kernels built as PVM guests,
# and Debian's kernel under it does not even get through its decompressor in minutes. There,
# and where /dev/kvm is missing, auto falls back to qemu's TCG emulation: the same guest, a
# boot of about ten seconds instead of two, and programs some times slower.
choose_accelerator() {
    local wanted=${VM_ACCEL:-auto} why=""
    case $wanted in
    tcg) echo tcg; return ;;
    kvm|auto) ;;
    *) die "VM_ACCEL must be auto, kvm or tcg, not $wanted" ;;
    esac
    if [ ! -e /dev/kvm ]; then
        why="/dev/kvm is missing: this machine offers no KVM"
    elif [ ! -r /dev/kvm ] || [ ! -w /dev/kvm ]; then
        why="/dev/kvm is not readable and writable by $(id -un) (join the kvm group)"
    elif [ ! -d /sys/module/kvm_intel ] && [ ! -d /sys/module/kvm_amd ]; then
        why="/dev/kvm is not hardware virtualization (no kvm_intel or kvm_amd module)"
        [ ! -d /sys/module/kvm_pvm ] || why="/dev/kvm is kvm_pvm, which runs only PVM guest kernels, not Debian's"
    fi
    if [ -z "$why" ]; then
        echo kvm
    elif [ "$wanted" = kvm ]; then
        die "$why; VM_ACCEL=kvm cannot be had (VM_ACCEL=auto or tcg emulates instead)"
    else
        [ "${VM_VERBOSE:-}" != 1 ] || note "$why; emulating with TCG"
        echo tcg
    fi
}

# Globals of a run, for cleanup: its host directory and the pid of timeout(1) running qemu
# (timeout passes a TERM on to qemu).
run=""
qemu=""
cleanup() {
    [ -z "$qemu" ] || kill -TERM "$qemu" 2>/dev/null || true
    [ -z "$run" ] || rm -rf "$run"
}

run_command() {
    local shares=() envs=() cwd=/
    while [ $# -gt 0 ]; do
        case $1 in
        --share|--share-rw)
            [ $# -ge 2 ] || usage
            shares+=("$1 $2"); shift 2 ;;
        --env)
            [ $# -ge 2 ] || usage
            [[ $2 == [A-Za-z_]*=* ]] || die "--env wants NAME=VALUE, not $2"
            envs+=("$2"); shift 2 ;;
        --cwd)
            [ $# -ge 2 ] || usage
            cwd=$2; shift 2 ;;
        --) shift; break ;;
        *) usage ;;
        esac
    done
    [ $# -gt 0 ] || usage
    [[ $timeout_seconds =~ ^[0-9]+$ ]] && [ "$timeout_seconds" -gt 0 ] || die "VM_TIMEOUT must be a number of seconds"

    # What the VM needs from this machine, said plainly.
    command -v qemu-system-x86_64 >/dev/null ||
        die "qemu-system-x86_64 is missing: apt-get install qemu-system-x86"
    local accel cpu
    accel=$(choose_accelerator)
    if [ "$accel" = kvm ]; then
        cpu=${VM_CPU:-host}
        local accel_options=(-enable-kvm -cpu "$cpu")
    else
        cpu=${VM_CPU:-max}
        local accel_options=(-accel tcg,thread=multi -cpu "$cpu")
    fi

    ensure_image

    local verbose=${VM_VERBOSE:-0}
    # The host side's files of this run, and qemu, go with vm.sh, whatever ends it.
    run=$(mktemp -d "${TMPDIR:-/tmp}/touchgate-vm.XXXXXX")
    trap cleanup EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM HUP
    : >"$run/stdout"
    : >"$run/stderr"

    # The Swift runtime at the path the project's binaries have as their RUNPATH.
    local runtime=${VM_SWIFT_RUNTIME-/opt/swift/usr/lib/swift/linux}
    [ -n "$runtime" ] && [ -d "$runtime" ] && shares=("--share $runtime" "${shares[@]}")

    # qemu's 9p devices, and the guest's lines that mount them.
    local qemu_shares=() mounts="" index=0 entry kind spec host guest options
    for entry in "${shares[@]}"; do
        kind=${entry%% *}
        spec=${entry#* }
        host=${spec%%:*}
        guest=${spec#*:}
        [ "$guest" != "$spec" ] || guest=""
        [ -d "$host" ] || die "$kind $host: no such directory"
        # By default the guest sees the directory at the path given (made absolute, symlinks
        # kept: .build/debug is one), while qemu exports what it resolves to.
        [ -n "$guest" ] || guest=$(realpath -s "$host")
        host=$(realpath "$host")
        [[ $guest == /* ]] || die "$kind: the guest path $guest is not absolute"
        options="local,path=$host,mount_tag=share$index,security_model=none,multidevs=remap"
        if [ "$kind" = --share ]; then
            qemu_shares+=(-virtfs "$options,readonly=on")
            mounts+="mount_share share$index $(printf '%q' "$guest") ro"$'\n'
        else
            qemu_shares+=(-virtfs "$options")
            mounts+="mount_share share$index $(printf '%q' "$guest") rw"$'\n'
        fi
        index=$((index + 1))
    done

    local exports="" assignment
    for assignment in "${envs[@]}"; do
        exports+="export ${assignment%%=*}=$(printf '%q' "${assignment#*=}")"$'\n'
    done

    # The guest's side of the run, started by /sbin/touchgate-vm-init as PID 1.
    cat >"$run/init.sh" <<EOF
# Written by scripts/vm.sh for one run.
set -u
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 TERM=dumb
fail() { echo "vm init: \$*" > /dev/console; sync; echo o > /proc/sysrq-trigger; sleep 60; }
# With VM_VERBOSE=1, when each step was reached (seconds since the kernel started).
stage() { [ ${verbose} != 1 ] || echo "vm init: \$(cut -d' ' -f1 /proc/uptime) s: \$*" > /dev/console; }
stage "init.sh started"
hostname touchgate-vm
mount_share() {
    mkdir -p "\$2" || fail "cannot make \$2"
    mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144,cache=loose,\$3 "\$1" "\$2" || fail "cannot mount \$2"
}
mkdir -p /dev/pts /dev/shm
mountpoint -q /dev/pts || mount -t devpts -o gid=5,mode=620,ptmxmode=666 devpts /dev/pts
mountpoint -q /dev/shm || mount -t tmpfs -o mode=1777 tmpfs /dev/shm
mountpoint -q /tmp || mount -t tmpfs -o mode=1777 tmpfs /tmp
[ -e /dev/fd ] || ln -s /proc/self/fd /dev/fd
# udev as on a booted system for what appears from now on: it names devices, applies the
# rules (hidraw permissions among them) and loads drivers for what appears (hid-generic for a
# uhid device). The devices already there are not replayed ("coldplug" takes seconds under
# emulation, and devtmpfs has made their nodes); only the HID-related subsystems are.
/lib/systemd/systemd-udevd --daemon || fail "systemd-udevd did not start"
udevadm trigger --action=add --subsystem-match=misc --subsystem-match=hid --subsystem-match=hidraw --subsystem-match=usbmisc
udevadm settle --timeout=30
stage "udev settled"
modprobe uhid || fail "modprobe uhid failed"
[ -c /dev/uhid ] || fail "no /dev/uhid after modprobe uhid"
# The loopback interface up (nothing else configures the network): localhost for the tests'
# servers. SIOCSIFFLAGS with IFF_UP and IFF_RUNNING, as "ip link set lo up" (iproute2 is not
# in the image) would.
python3 -c 'import fcntl, socket, struct; fcntl.ioctl(socket.socket(), 0x8914, struct.pack("16sH", b"lo", 0x41))' ||
    fail "cannot bring the loopback interface up"
$mounts
$exports
stage "running the command"
cd $(printf '%q' "$cwd") || fail "cannot change to $(printf '%q' "$cwd")"
$(printf '%q ' "$@") </dev/null >>/run/vm/stdout 2>>/run/vm/stderr
echo \$? > /run/vm/status.new
mv /run/vm/status.new /run/vm/status
sync
echo o > /proc/sysrq-trigger
sleep 60
EOF

    local append="console=ttyS0 quiet loglevel=3 panic=-1 mitigations=off ${VM_KERNEL_ARGS:-}"
    # -nodefaults: no default monitor, serial, network or display; the serial console goes to a file.
    timeout --kill-after=5 "$timeout_seconds" \
        qemu-system-x86_64 "${accel_options[@]}" -m "${VM_MEMORY:-1024}" -smp 2 -M q35 \
        -nodefaults -nographic -no-reboot \
        -serial "file:$run/console.log" \
        -kernel "$image/kernel" -initrd "$image/initrd.img" -append "$append" \
        -drive "file=$image/root.img,if=virtio,format=raw,snapshot=on,cache=unsafe" \
        -virtfs "local,path=$run,mount_tag=vmrun,security_model=none" \
        "${qemu_shares[@]}" \
        </dev/null >"$run/qemu.log" 2>&1 &
    qemu=$!
    # COMMAND's output as it comes; tail ends once qemu (under timeout) has exited.
    tail -s 0.1 -n +1 -f --pid="$qemu" "$run/stdout" &
    local out=$!
    tail -s 0.1 -n +1 -f --pid="$qemu" "$run/stderr" >&2 &
    local err=$!
    local qemu_status=0
    wait "$qemu" || qemu_status=$?
    qemu=""
    wait "$out" "$err" || true

    if [ "${VM_VERBOSE:-}" = 1 ]; then
        note "guest console:"
        cat "$run/console.log" >&2
    fi
    if [ "$qemu_status" = 124 ] || [ "$qemu_status" = 137 ]; then
        note "the VM did not finish within VM_TIMEOUT=$timeout_seconds s and was killed; console's tail:"
        tail -n 20 "$run/console.log" >&2 || true
        exit 124
    fi
    if [ ! -f "$run/status" ]; then
        note "the VM ended without running the command (qemu exit status $qemu_status)"
        cat "$run/qemu.log" >&2
        note "console's tail:"
        tail -n 40 "$run/console.log" >&2 || true
        exit 125
    fi
    exit "$(cat "$run/status")"
}

case ${1:-} in
image)
    shift
    [ $# -eq 0 ] || usage
    ensure_image
    echo "$image"
    ;;
run)
    shift
    run_command "$@"
    ;;
*)
    usage
    ;;
esac
