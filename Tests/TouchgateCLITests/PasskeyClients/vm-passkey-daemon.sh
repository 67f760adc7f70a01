#!/bin/bash
# Runs as root inside scripts/vm.sh's guest (Debian's kernel, with /dev/uhid): touchgated's own
# passkey devices, one per user at the seat.
#   vm-passkey-daemon.sh BIN_DIR FIXTURES RULES_FILE [DEBS_DIR]
# With DEBS_DIR, the touchgate and touchgated packages built there are installed and used
# (their udev rule, their touchgate and touchgated); BIN_DIR then gives virtual-finger only.
# touchgate passkey enable (as root) sets the machine up; touchgated runs as its own user with
# logind's stand-in (python3-dbusmock's logind template on a private system bus: the guest's
# PID 1 is not systemd); two users, tester (4242) and second (4243), each with a store in
# touchgated. A session at the seat makes that user's device, hers alone; libfido2's tools
# register and sign in on it with the finger played on the daemon's virtual reader; the end
# of her session removes it while the other user's stays; disable undoes enable. Her
# `touchgate passkey prompts` shows each request for her finger as a desktop notice naming the
# site (python3-dbusmock's notification server on a session bus), and withdraws it; the other
# user's sees nothing of hers.
# Prints "check NAME ok|FAILED" lines and exits 1 if any failed.
set -uo pipefail
bin=$1 fixtures=$2 rules=$3 debs=${4:-}
failed=0
check() { local name=$1; shift; if "$@"; then echo "check $name ok"; else echo "check $name FAILED"; failed=1; fi; }
# Waits up to 15 s for a command to succeed.
within() { for _ in $(seq "${tenths:-150}"); do "$@" && return 0; sleep 0.1; done; return 1; }
# A daemon's start under emulation, then its first look at the seat: 45 s at most.
within_start() { tenths=450 within "$@"; }

if [ -n "$debs" ]; then
  # The packages as a machine gets them: their postinst makes touchgated's user.
  check packages-installed sh -c "dpkg -i $debs/touchgate_*.deb $debs/touchgated_*.deb >/run/dpkg.log 2>&1 \
    || { tail -20 /run/dpkg.log; false; }"
  cli=/usr/libexec/touchgate/touchgate-cli daemon_program=/usr/sbin/touchgated
  check packaged-node-rule test -f /lib/udev/rules.d/69-touchgate-passkey.rules
  check packaged-prompts-unit test -f /usr/lib/systemd/user/touchgate-passkey-prompts.service
else
  cp "$rules" /etc/udev/rules.d/69-touchgate-passkey.rules
  groupadd --system touchgated && useradd --system -g touchgated -M -s /usr/sbin/nologin touchgated
  cli=$bin/touchgate-cli daemon_program=$bin/touchgated
fi
udevadm control --reload-rules
useradd -u 4242 -m -s /bin/bash tester
useradd -u 4243 -m -s /bin/bash second

# --- enable -------------------------------------------------------------------------
enabled=$("$cli" passkey enable --json 2>&1); echo "enable: $enabled"
check enable-exit sh -c "echo '$enabled' | grep -q '\"enabled\" *: *true'"
check enable-files test -f /etc/modules-load.d/touchgate-passkey.conf -a -f /etc/udev/rules.d/69-touchgate-uhid.rules \
  -a -f /etc/systemd/system/touchgated.service.d/touchgate-passkey.conf
udevadm settle
echo "/dev/uhid: $(stat -c '%U %G %a' /dev/uhid)"
check uhid-daemon-group test "$(stat -c '%U %G %a' /dev/uhid)" = "root touchgated 660"
check uhid-not-users sh -c "! runuser -u tester -- sh -c 'exec 3<>/dev/uhid' 2>/dev/null"

# --- logind's stand-in and touchgated -----------------------------------------------
# The system bus where GLib looks without being told (/run/dbus/system_bus_socket): the
# packaged touchgated is set-group-ID, and GLib ignores DBUS_SYSTEM_BUS_ADDRESS there.
mkdir -p /run/bus /run/dbus /run/vi && chmod 0755 /run/bus /run/dbus && chmod 0777 /run/vi
cat >/run/bus/bus.conf <<CONF
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-BUS Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig><type>system</type><listen>unix:path=/run/dbus/system_bus_socket</listen><auth>EXTERNAL</auth>
<policy context="default"><allow user="*"/><allow own="*"/><allow send_type="method_call"/><allow send_type="signal"/>
<allow send_type="method_return"/><allow send_type="error"/><allow receive_type="method_call"/>
<allow receive_type="signal"/><allow receive_type="method_return"/><allow receive_type="error"/></policy></busconfig>
CONF
dbus-daemon --config-file=/run/bus/bus.conf --nofork >/run/bus/dbus.log 2>&1 &
within test -S /run/dbus/system_bus_socket; chmod 0666 /run/dbus/system_bus_socket
export DBUS_SYSTEM_BUS_ADDRESS=unix:path=/run/dbus/system_bus_socket
python3 -m dbusmock --system --template logind >/run/bus/logind.log 2>&1 &
logind() {
  python3 - "$@" <<'PY'
import sys, dbus
manager = dbus.SystemBus().get_object('org.freedesktop.login1', '/org/freedesktop/login1')
mock = 'org.freedesktop.DBus.Mock'
if sys.argv[1] == 'add':
    manager.AddSession(sys.argv[2], 'seat0', dbus.UInt32(int(sys.argv[3])), sys.argv[4], sys.argv[5] == 'active',
                       dbus_interface=mock)
elif sys.argv[1] == 'remove':
    manager.RemoveObject('/org/freedesktop/login1/session/' + sys.argv[2], dbus_interface=mock)
else:
    manager.ListSessions(dbus_interface='org.freedesktop.login1.Manager')
PY
}
check logind-up within logind list 2>/dev/null
# A session bus with a notification server, which both users' prompts watchers reach.
sed -e 's|<type>system</type>|<type>session</type>|' -e 's|/run/dbus/system_bus_socket|/run/bus/session.socket|' /run/bus/bus.conf >/run/bus/session.conf
dbus-daemon --config-file=/run/bus/session.conf --nofork >/run/bus/session.log 2>&1 &
within test -S /run/bus/session.socket; chmod 0666 /run/bus/session.socket
session_bus=unix:path=/run/bus/session.socket
DBUS_SESSION_BUS_ADDRESS=$session_bus python3 -m dbusmock --session --template notification_daemon \
  -l /run/bus/notifications.log >/run/bus/notifier.log 2>&1 &
check notifier-up within sh -c "DBUS_SESSION_BUS_ADDRESS=$session_bus gdbus call --session --dest org.freedesktop.Notifications \
  --object-path /org/freedesktop/Notifications --method org.freedesktop.Notifications.GetServerInformation >/dev/null 2>&1"

export FP_DRIVERS_WHITELIST=virtual_image FP_VIRTUAL_IMAGE=/run/vi/reader.sock
TOUCHGATED_PASSKEYS=seat "$daemon_program" --user touchgated --socket /run/touchgate/socket \
  --state-dir /var/lib/touchgate --finger-timeout 60 >/run/touchgated.log 2>&1 &
daemon=$!
check daemon-up within test -S /run/touchgate/socket
as() {
  local user=$1; shift
  runuser -u "$user" -- env HOME="/home/$user" TOUCHGATE_SOCKET=/run/touchgate/socket "$@"
}
export TOUCHGATE_FIXTURES=$fixtures
finger() {
  pkill -f virtual-finger 2>/dev/null; sleep 0.3
  rm -f /run/vi/finger.log
  "$bin/virtual-finger" --watch --socket /run/vi/reader.sock --print "$1" 2>/run/vi/finger.log &
  for _ in $(seq 300); do grep -q presenting /run/vi/finger.log 2>/dev/null && break; sleep 0.1; done
}
printf 'correct horse battery staple\n' >/run/passphrase; chmod 0644 /run/passphrase
for user in tester second; do
  check "init-$user" sh -c "runuser -u $user -- env HOME=/home/$user TOUCHGATE_SOCKET=/run/touchgate/socket \
    '$cli' init --kdf minimum --passphrase-fd 3 3</run/passphrase >/run/init-$user.log 2>&1 \
    || { cat /run/init-$user.log; false; }"
done
finger whorl
check enroll sh -c "runuser -u tester -- env HOME=/home/tester TOUCHGATE_SOCKET=/run/touchgate/socket \
  '$cli' enroll --finger right-index --yes --passphrase-fd 3 3</run/passphrase >/run/enroll.log 2>&1 \
  || { tail -3 /run/enroll.log; false; }"
pkill -f virtual-finger 2>/dev/null

# Each user's device: its hidraw node, by the uid udev read from the device's uniq.
node_of() {
  local node
  for node in /dev/hidraw*; do
    [ -e "$node" ] && [ "$(stat -c %u "$node" 2>/dev/null)" = "$1" ] && { echo "$node"; return 0; }
  done
  return 1
}
has_node() { node_of "$1" >/dev/null; }
no_node_of() { ! has_node "$1"; }
nodes() { ls /dev/hidraw* 2>/dev/null | wc -l; }

# --- sessions make and remove devices ----------------------------------------------
check no-session-no-device test "$(nodes)" = 0
# A session of USER (uid UID) at the seat, SESSION in STATE: her device appears, hers alone;
# its node in $node.
session_device() {
  local user=$1 uid=$2 session=$3 state=$4
  logind add "$session" "$uid" "$user" "$state"
  check "$user-device" within has_node "$uid"
  udevadm settle
  node=$(node_of "$uid")
  echo "$user's node $node: $(stat -c '%U %a' "$node" 2>&1)"
  check "$user-owner-only" test "$(stat -c '%U %a' "$node")" = "$user 600"
}
session_device tester 4242 c1 active
tester_node=$node
check no-seat-mark sh -c "! udevadm info '$tester_node' | grep -q 'ID_SECURITY_TOKEN=1'"
# The second user switches in at the seat (tester's session stays, in the background).
session_device second 4243 c2 online
second_node=$node
check two-devices test "$(nodes)" = 2
check second-cannot-open-testers sh -c "! runuser -u second -- sh -c 'exec 3<>$tester_node' 2>/dev/null"
listed=$(as tester fido2-token -L 2>&1); echo "tester's fido2-token -L: $listed"
check tester-lists-own sh -c "echo '$listed' | grep -q '^$tester_node: vendor=0x1209, product=0x7467' \
  && ! echo '$listed' | grep -q '$second_node'"

# --- a ceremony through touchgated ---------------------------------------------------
for user in tester second; do
  install -o "$user" -m 0600 /dev/null "/run/prompts-$user.log"
  runuser -u "$user" -- env HOME="/home/$user" TOUCHGATE_SOCKET=/run/touchgate/socket DBUS_SESSION_BUS_ADDRESS=$session_bus \
    "$cli" passkey prompts --json >"/run/prompts-$user.log" 2>&1 &
done
check prompts-watching within sh -c "grep -q 'Ctrl-C stops' /run/prompts-tester.log && grep -q 'Ctrl-C stops' /run/prompts-second.log"
head -c 32 /dev/urandom | base64 >/run/cred.in
{ echo example.org; echo alice; head -c 16 /dev/urandom | base64; } >>/run/cred.in
chmod 0644 /run/cred.in
finger whorl
check cred-made as tester fido2-cred -M -r -v -i /run/cred.in -o /home/tester/cred.out "$tester_node" es256
credential=$(sed -n 5p /home/tester/cred.out)
{ head -c 32 /dev/urandom | base64; echo example.org; echo "$credential"; } >/run/assert.in
finger whorl
check assert-uv as tester fido2-assert -G -t uv=true -i /run/assert.in -o /home/tester/assert.out "$tester_node"
pkill -f virtual-finger 2>/dev/null
echo "tester's prompts: $(cat /run/prompts-tester.log)"
echo "notifications: $(cat /run/bus/notifications.log)"
check prompt-names-site grep -q '"event":"touch-needed".*sign in to example.org' /run/prompts-tester.log
check prompt-ended grep -q '"event":"touch-ended"' /run/prompts-tester.log
check notice-names-site grep -q 'Notify .*example.org' /run/bus/notifications.log
check notice-withdrawn grep -q 'CloseNotification' /run/bus/notifications.log
check other-user-sees-nothing sh -c "! grep -q 'example.org' /run/prompts-second.log"
pkill -f "passkey prompts" 2>/dev/null
trail=$(as tester "$cli" audit show 2>&1)
check trail-sign-in sh -c "echo \"\$0\" | grep -q 'passkey sign-in at example.org as alice (user verified)'" "$trail"
listing=$(as tester "$cli" passkey list 2>&1); echo "tester's passkeys: $listing"
check passkey-in-store sh -c "echo \"\$0\" | grep -q 'example.org  alice'" "$listing"
check second-has-none sh -c "as_second=\$(runuser -u second -- env HOME=/home/second TOUCHGATE_SOCKET=/run/touchgate/socket \
  '$cli' passkey list 2>&1); echo \"\$as_second\" | grep -q 'No passkeys'"

# --- the end of a session removes its device; the other user's stays ------------------
logind remove c1
check tester-device-removed within no_node_of 4242
check second-device-stays test -n "$(node_of 4243)"

# --- kill -9: the kernel takes the devices with the daemon; a new daemon makes them again --
kill -KILL "$daemon"
check killed-devices-gone within test "$(nodes)" = 0
TOUCHGATED_PASSKEYS=seat "$daemon_program" --user touchgated --socket /run/touchgate/socket \
  --state-dir /var/lib/touchgate --finger-timeout 60 >>/run/touchgated.log 2>&1 &
daemon=$!
check restarted-device-back within_start has_node 4243
check restarted-no-ended-session no_node_of 4242
kill -TERM "$daemon"
check daemon-stops within sh -c "! kill -0 $daemon 2>/dev/null"
check devices-gone-with-daemon within test "$(nodes)" = 0

# --- disable --------------------------------------------------------------------------
disabled=$("$cli" passkey disable 2>&1); echo "disable: $disabled"
check disable-files test ! -e /etc/modules-load.d/touchgate-passkey.conf -a ! -e /etc/udev/rules.d/69-touchgate-uhid.rules \
  -a ! -e /etc/systemd/system/touchgated.service.d/touchgate-passkey.conf
check uhid-root-again test "$(stat -c '%U %G %a' /dev/uhid)" = "root root 600"

[ "$failed" = 0 ] || { echo "--- touchgated.log"; tail -30 /run/touchgated.log; echo "--- finger.log"; tail -5 /run/vi/finger.log
  echo "--- logind.log"; tail -5 /run/bus/logind.log; echo "--- trail"; echo "$trail" | tail -8; }
exit "$failed"
