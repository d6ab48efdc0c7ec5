#!/usr/bin/env bash
# Builds a small Debian qcow2 base image for the agents (VM_BASE_IMAGE) from Debian's packages:
# a minbase system with the cloud kernel, systemd, an SSH server (keys only, no root login), the
# first NIC on QEMU's user network (10.0.2.15, as its DHCP server would give) and the console on
# the serial port (the agent's serial log). One ext4 partition booted by extlinux. No cloud-init
# (nor Python): a shell unit, vm-fleet-seed, reads the agent's seed ISO (volume cidata, its plain
# vm-fleet/ files) before sshd at each boot: hostname, the key of VM_SSH_PUBKEY for user `debian`
# (sudo, no password), host keys made at the first boot. sshd is up before the rest of the boot
# (udev's coldplug, logind, getty...) runs: under emulation (TCG) that is half of it.
#
# Needs root (mmdebstrap as root, a loop device to install the boot loader) and, from Debian:
# mmdebstrap, extlinux, syslinux-common, fdisk, e2fsprogs, qemu-utils; the network to the mirror.
# No rootless path. Without root or a tool it exits 1, naming what is missing.
# Measured on Debian 12, 2 shared cores: 75-100 s, a qcow2 of 330 MB (4 GiB virtual).
#
#   deploy/images/build-debian-image.sh [--out FILE] [--group GROUP] [--owner USER] [--force]
#                                       [--suite bookworm] [--include pkg,pkg] [--mirror URL]
#                                       [--size 4G]
#
# --out: default /var/lib/vm-fleet-images/debian-<suite>-<YYYYMMDD-HHMMSS>.qcow2, UTC (npm start
# takes the last written debian-*.qcow2 there). A new file each time, a rebuild the same day too:
# every VM's disk is an overlay that names its base by path, so an image VMs use must never be
# replaced. An existing --out is refused
# unless --force; a folder, or a link to one, always.
# Access: root's, mode 0600, unless --group (root:GROUP, 0640: the group reads it, e.g. vm-host,
# the packaged agent's, which so cannot write it; a name, or a numeric gid where no such group is) or --owner (USER owns it, 0600; 0640 with
# --group), e.g. the user who runs `npm start`.
# --include adds packages. --mirror: Debian's archive, default http://deb.debian.org/debian (its
# -updates suite too, and the security archive at deb.debian.org/debian-security unless --mirror
# is given). --size: the guests' disk size (the qcow2 only holds what is written).
set -euo pipefail

images_dir=/var/lib/vm-fleet-images
out=
owner=
group=
force=
suite=bookworm
# What the guest needs, nothing more: a kernel for a VM, an init, iproute2 for the network, sudo
# for the user, an SSH server, fsck, and dbus, without which systemd-logind does not run and the
# guest ignores the ACPI power button that `ppn-fleet vm stop` presses (it would then be ended
# after the stop's timeout).
include=linux-image-cloud-amd64,systemd-sysv,udev,dbus,openssh-server,iproute2,netbase,sudo,e2fsprogs
extra=
mirror=
size=4G

usage() {
  sed -n '/^#   deploy/,/^set -e/p' "$0" | sed '$d; s/^# \{0,3\}//' >&2
  exit 2
}
fail() {
  echo "build-debian-image: $*" >&2
  exit 1
}
# The value of option $1, or usage.
value() {
  if [ "$#" -lt 2 ] || [ -z "$2" ]; then
    echo "build-debian-image: $1 needs a value" >&2
    usage
  fi
  printf '%s' "$2"
}
# Fails unless option $1's value $2 matches the extended regular expression $3.
check() {
  [[ "$2" =~ $3 ]] || fail "$1 '$2' is not valid (expected $3)"
}

while [ $# -gt 0 ]; do
  case "$1" in
    --force) force=1; shift; continue ;;
    -h | --help) usage ;;
    --out) out=$(value "$@") ;;
    --owner) owner=$(value "$@") ;;
    --group) group=$(value "$@") ;;
    --suite) suite=$(value "$@") ;;
    --include) extra=$(value "$@") ;;
    --mirror) mirror=$(value "$@") ;;
    --size) size=$(value "$@") ;;
    *) echo "build-debian-image: unknown option $1" >&2; usage ;;
  esac
  shift 2
done
# They end up in mmdebstrap's arguments, the guest's sources.list and the image's name.
check --suite "$suite" '^[a-z][a-z0-9-]*$'
# No whitespace or control character: a tab or newline would add words or lines to sources.
# No user:password@ either: the sources end up in every guest's /etc/apt.
[ -z "$mirror" ] || check --mirror "$mirror" '^(https?|file)://[^[:space:][:cntrl:]@]+$'
check --size "$size" '^[0-9]+[KMG]$'
# Each name as Debian's policy has it (no leading hyphen: none can be an option of mmdebstrap).
[ -z "$extra" ] || check --include "$extra" '^[a-z0-9][a-z0-9.+-]*(,[a-z0-9][a-z0-9.+-]*)*$'
[ -n "$extra" ] && include="$include,$extra"
[ -n "$out" ] || out=$images_dir/debian-$suite-$(date -u +%Y%m%d-%H%M%S).qcow2

[ "$(id -u)" -eq 0 ] || fail "needs root (mmdebstrap and a loop device); run it as root or with sudo"
for tool in mmdebstrap:mmdebstrap extlinux:extlinux sfdisk:fdisk mkfs.ext4:e2fsprogs \
  qemu-img:qemu-utils losetup:mount findmnt:util-linux setsid:util-linux unshare:util-linux; do
  command -v "${tool%%:*}" >/dev/null ||
    fail "${tool%%:*} is missing: apt-get install ${tool#*:}"
done
mbr=/usr/lib/syslinux/mbr/mbr.bin
[ -r "$mbr" ] || fail "$mbr is missing: apt-get install syslinux-common"
if [ -n "$owner" ]; then id -u "$owner" >/dev/null 2>&1 || fail "--owner $owner: no such user"; fi
# A numeric gid needs no such group here: the builder's machine may have no vm-host (the agent's).
if [ -n "$group" ] && ! [[ "$group" =~ ^[0-9]+$ ]]; then
  getent group "$group" >/dev/null ||
    fail "--group $group: no such group here (give its numeric gid, or copy the image to each node with install -g $group)"
fi

[ ! -d "$out" ] || fail "--out $out is a folder (or a link to one); name the image file"
if [ -e "$out" ] || [ -L "$out" ]; then
  [ -n "$force" ] || fail "$out exists: VMs' disks may be overlays on it, which replacing it" \
    "would corrupt; pick a new --out (or --force, when no VM uses it)"
fi
out_dir=$(dirname "$out")
(umask 022 && mkdir -p "$out_dir")
# Root writes there: a folder someone else could change (swap the file, plant a link) is refused.
read -r dir_uid dir_mode < <(stat -L -c '%u %a' "$out_dir")
[ "$dir_uid" -eq 0 ] || fail "$out_dir is not owned by root; choose a root-owned folder for --out"
(((8#$dir_mode & 8#022) == 0)) ||
  fail "$out_dir is writable by its group or others (mode $dir_mode); choose another folder for --out"

# Next to the output: the raw image is as big as --size (sparse) and /tmp may be a small tmpfs.
work=$(mktemp -d "$out_dir/.build-debian-image.XXXXXX")
loop=
# The running step, in a process group of its own (setsid), so that a signal ends all of it.
child=
# Runs a step as $child and waits for it; the wait (unlike a foreground command) lets the traps
# below run as soon as a signal comes.
step() {
  setsid "$@" &
  child=$!
  local status=0
  wait "$child" || status=$?
  child=
  return "$status"
}
# Mount points under the work folder, deepest last (findmnt -r escapes blanks as \x20).
mounts_under_work() {
  local target
  findmnt -rn -o TARGET | while read -r target; do
    target=$(printf '%b' "$target")
    case "$target" in "$work"/*) echo "$target" ;; esac
  done
}
cleanup() {
  set +e
  local target left
  # Whatever is mounted there: the image's file system, or what mmdebstrap mounts in the root
  # (/proc, /sys, /dev) when stopped midway. Lazily when busy.
  mounts_under_work | sort -r | while read -r target; do
    umount -R "$target" 2>/dev/null || umount -R -l "$target"
  done
  [ -n "$loop" ] && losetup -d "$loop"
  left=$(mounts_under_work)
  if [ -n "$left" ]; then
    echo "build-debian-image: still mounted, so $work is left in place:" "$left" >&2
    return
  fi
  # Never into another file system, should something be mounted there meanwhile.
  rm -rf --one-file-system "$work"
}
trap cleanup EXIT
# Stops the running step's whole process group, waiting up to 10 s before SIGKILL.
interrupted() {
  set +e
  trap - INT TERM
  if [ -n "$child" ]; then
    kill -TERM -- "-$child" 2>/dev/null || kill -TERM "$child" 2>/dev/null
    for _ in $(seq 50); do
      kill -0 -- "-$child" 2>/dev/null || break
      sleep 0.2
    done
    kill -KILL -- "-$child" 2>/dev/null
    wait "$child" 2>/dev/null
  fi
  echo "build-debian-image: $1; stopped" >&2
  exit "$2"
}
trap 'interrupted SIGINT 130' INT
trap 'interrupted SIGTERM 143' TERM

# The suite, its updates and its security fixes: the guest's sources.list says the same.
sources=("deb ${mirror:-http://deb.debian.org/debian} $suite main")
case "$suite" in
  sid | unstable | experimental) ;;
  *)
    sources+=("deb ${mirror:-http://deb.debian.org/debian} $suite-updates main")
    [ -n "$mirror" ] || sources+=("deb http://deb.debian.org/debian-security $suite-security main")
    ;;
esac

started=$(date +%s)
root=$work/root
# The initramfs with only what finds the root file system (virtio's disk; ext4 is built into the
# cloud kernel), virtio's NIC (eth0 there before sshd's network unit) and virtio's RNG (the
# agent gives every VM one: without, the kernel's random pool took 10 s of a TCG boot to be ready
# and ssh-keygen waited for it), not most of the kernel's drivers (15 MB): less to read and
# unpack at every boot. MODULES=dep would look at the build machine's disks, so the list is
# explicit; gzip, as there is no zstd.
# And no udev there (its daemon and coldplug took 2-3 s of a TCG boot): the modules are loaded
# in order and the root found by blkid (hooks/vm-fleet). udev's initramfs parts are diverted
# (dpkg-divert: an upgrade of udev does not put them back), not deleted.
initramfs_hook=$(
  cat <<'HOOK'
set -e
root=$1
printf 'MODULES=list\nCOMPRESS=gzip\n' >"$root/etc/initramfs-tools/conf.d/vm-fleet"
printf 'virtio_pci\nvirtio_blk\nvirtio_net\nvirtio_rng\n' >>"$root/etc/initramfs-tools/modules"
cat >"$root/etc/initramfs-tools/hooks/vm-fleet" <<'EOF'
#!/bin/sh
# blkid, which finds root=UUID=... where no udev runs.
[ "$1" = prereqs ] && exit 0
. /usr/share/initramfs-tools/hook-functions
copy_exec /sbin/blkid /sbin
EOF
chmod 0755 "$root/etc/initramfs-tools/hooks/vm-fleet"
mkdir -p "$root/usr/lib/vm-fleet/initramfs-off"
for part in hooks/udev scripts/init-top/udev scripts/init-bottom/udev; do
  chroot "$root" dpkg-divert --quiet --local --rename --add \
    --divert "/usr/lib/vm-fleet/initramfs-off/$(echo "$part" | tr / -)" "/usr/share/initramfs-tools/$part"
done
chroot "$root" update-initramfs -u -k all >/dev/null
HOOK
)
# In a mount namespace of its own: mmdebstrap, as root, makes every mount of the namespace it runs
# in private (mount --make-rprivate /); in the machine's own, that broke every service started
# afterwards with LoadCredential= (systemd 257 on Debian 13: its files missing) until a reboot.
# No documentation, manual pages or translations: the guest does not need them.
step unshare --mount --propagation private mmdebstrap --quiet --variant=minbase --include="$include" \
  --customize-hook="$initramfs_hook" \
  --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
  --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/info/*' \
  --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-include=/usr/share/locale/locale.alias' \
  "$suite" "$root" "${sources[@]}"
# Its /proc, /sys and /dev unmounted (not so when something held them busy): else they would be
# copied into the image.
leftover=$(mounts_under_work)
[ -z "$leftover" ] || fail "mmdebstrap left mounted:" $leftover

# The seed, without cloud-init: under emulation (TCG) its Python took most of a boot (45 s of
# 57). This unit reads the plain files the agent puts next to meta-data and user-data.
mkdir -p "$root/usr/local/sbin"
cat >"$root/usr/local/sbin/vm-fleet-seed" <<'EOF'
#!/bin/sh
# Before sshd, at each boot: the VM's hostname and the user's SSH key from the agent's seed ISO
# (volume cidata: vm-fleet/hostname, vm-fleet/authorized_keys), and the host keys, made once.
# Runs before udev's coldplug: blkid finds the seed by scanning the disks the initramfs's
# virtio_blk found.
set -u
seed=/run/vm-fleet-seed
# To the journal and, at once, to the console (the agent's serial log, `ppn-fleet vm console`):
# the journal's own copy would wait for journald, which may start after sshd.
say() {
  echo "vm-fleet-seed: $*"
  echo "vm-fleet-seed: $*" >/dev/console 2>/dev/null || true
}
# Its own host keys for each VM, kept across boots (ssh-keygen -A would make RSA too: seconds).
made=
for type in ed25519 ecdsa; do
  key=/etc/ssh/ssh_host_${type}_key
  if [ ! -s "$key" ] || [ ! -s "$key.pub" ]; then
    rm -f "$key" "$key.pub"
    ssh-keygen -q -t "$type" -N '' -C root@vm -f "$key"
    made=1
  fi
done
[ -z "$made" ] || sync
if ! device=$(blkid -L cidata); then
  say "no seed (no volume cidata): hostname and key unchanged"
else
  mkdir -p "$seed"
  if mount -t iso9660 -o ro,nosuid,nodev,noexec "$device" "$seed"; then
    name=$(head -n 1 "$seed/vm-fleet/hostname" 2>/dev/null || true)
    # One label: letters, digits and hyphens, at most 63, no leading hyphen.
    if printf '%s\n' "$name" | grep -Eqx '[A-Za-z0-9][A-Za-z0-9-]{0,62}'; then
      echo "$name" >/etc/hostname
      echo "$name" >/proc/sys/kernel/hostname
      printf '127.0.0.1\tlocalhost\n127.0.1.1\t%s\n::1\tlocalhost ip6-localhost ip6-loopback\nff02::1\tip6-allnodes\nff02::2\tip6-allrouters\n' \
        "$name" >/etc/hosts
    else
      say "no valid hostname in the seed: kept $(cat /etc/hostname)"
    fi
    if [ -f "$seed/vm-fleet/authorized_keys" ]; then
      install -d -m 0700 -o debian -g debian /home/debian/.ssh
      install -m 0600 -o debian -g debian "$seed/vm-fleet/authorized_keys" \
        /home/debian/.ssh/authorized_keys
    fi
    umount "$seed"
  else
    say "cannot mount $device"
  fi
fi
# As cloud-init did: the host keys' fingerprints on the console, to check at the first login.
cat /etc/ssh/ssh_host_ed25519_key.pub /etc/ssh/ssh_host_ecdsa_key.pub | ssh-keygen -l -f - |
  while read -r line; do say "host key $line"; done
EOF
# QEMU's user network as its DHCP server would set it (the agent runs every VM on it, with its
# defaults): no DHCP client to start and wait for. eth0 by net.ifnames=0 on the kernel's command
# line, whatever PCI slot QEMU gives; IPv6 by the router's advertisements, as the kernel does.
cat >"$root/usr/local/sbin/vm-fleet-network" <<'EOF'
#!/bin/sh
exec ip -batch - <<IP
link set lo up
link set eth0 up
address replace 10.0.2.15/24 dev eth0
route replace default via 10.0.2.2
IP
EOF
# Replaced, not written through: it may be a link (systemd-resolved's, with --include).
rm -f "$root/etc/resolv.conf"
echo 'nameserver 10.0.2.3' >"$root/etc/resolv.conf"
chmod 0755 "$root/usr/local/sbin/vm-fleet-seed" "$root/usr/local/sbin/vm-fleet-network"
# Network, seed and sshd first, each as soon as the root file system and the journal's socket
# are there (DefaultDependencies=no), with most of the one vCPU while the system starts
# (StartupCPUWeight); udev's coldplug and the rest after sshd listens. Under TCG that brought
# create → SSH from 34 to under 20 s.
install_unit() {
  cat >"$root/etc/systemd/system/$1"
  mkdir -p "$root/etc/systemd/system/$2.wants"
  ln -sfn "../$1" "$root/etc/systemd/system/$2.wants/$1"
}
install_unit vm-fleet-network.service sysinit.target <<'EOF'
[Unit]
Description=Address on QEMU's user network (10.0.2.15)
DefaultDependencies=no
After=systemd-journald.socket
Wants=network.target
Before=network.target ssh.service shutdown.target
Conflicts=shutdown.target

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/usr/local/sbin/vm-fleet-network
StartupCPUWeight=1000

[Install]
WantedBy=sysinit.target
EOF
install_unit vm-fleet-seed.service sysinit.target <<'EOF'
[Unit]
Description=VM identity from the agent's seed (hostname, SSH key, host keys)
DefaultDependencies=no
After=systemd-journald.socket
Before=ssh.service systemd-user-sessions.service shutdown.target
Conflicts=shutdown.target

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/usr/local/sbin/vm-fleet-seed
StandardOutput=journal
StartupCPUWeight=1000

[Install]
WantedBy=sysinit.target
EOF
# Debian's own unit (/lib/systemd/system/ssh.service) is replaced whole: its ordering after
# network.target and basic.target cannot be taken back by a drop-in. So a later openssh-server's
# change to its unit does not reach the guests: a new image does. No `sshd -t` first (another
# second or two).
install_unit ssh.service sysinit.target <<'EOF'
[Unit]
Description=OpenBSD Secure Shell server
Documentation=man:sshd(8) man:sshd_config(5)
DefaultDependencies=no
Wants=vm-fleet-seed.service vm-fleet-network.service
After=vm-fleet-seed.service vm-fleet-network.service systemd-journald.socket
Before=shutdown.target
Conflicts=shutdown.target
ConditionPathExists=!/etc/ssh/sshd_not_to_be_run

[Service]
EnvironmentFile=-/etc/default/ssh
ExecStart=/usr/sbin/sshd -D $SSHD_OPTS
ExecReload=/usr/sbin/sshd -t
ExecReload=/bin/kill -HUP $MAINPID
KillMode=process
Restart=on-failure
RestartPreventExitStatus=255
Type=notify
RuntimeDirectory=sshd
RuntimeDirectoryMode=0755
StartupCPUWeight=1000

[Install]
WantedBy=sysinit.target
Alias=sshd.service
EOF
rm -f "$root/etc/systemd/system/multi-user.target.wants/ssh.service"
ln -sfn ssh.service "$root/etc/systemd/system/sshd.service"
mkdir -p "$root/etc/systemd/system/systemd-udev-trigger.service.d"
printf '[Unit]\nAfter=ssh.service\n' \
  >"$root/etc/systemd/system/systemd-udev-trigger.service.d/vm-fleet.conf"
# Logins while the system still starts: pam_nologin refuses users until the boot ends, and
# sshd is up well before (the file systemd-tmpfiles would write then is not).
ln -sfn /dev/null "$root/etc/tmpfiles.d/systemd-nologin.conf"
# The user the agent's key logs in as, as in Debian's cloud images: sudo without a password, no
# password of its own (locked).
chroot "$root" useradd --create-home --shell /bin/bash --groups adm,sudo debian
echo 'debian ALL=(ALL) NOPASSWD:ALL' >"$root/etc/sudoers.d/90-vm-fleet"
chmod 0440 "$root/etc/sudoers.d/90-vm-fleet"
# Keys only, whatever a later package writes into sshd_config: a drop-in's first
# value wins (sshd_config includes sshd_config.d/*.conf before its own settings).
cat >"$root/etc/ssh/sshd_config.d/vm-fleet.conf" <<'EOF'
HostKey /etc/ssh/ssh_host_ed25519_key
HostKey /etc/ssh/ssh_host_ecdsa_key
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin no
EOF
# Not started at boot, each seconds of a 1-vCPU guest under TCG: waits for the network to be
# online, users made from sysusers.d at each boot (the packages made them), scrubs and trims of
# LVM/ext4, apt's and dpkg's timers, modules for hardware QEMU does not emulate here, binfmt, the
# VGA console's getty (the serial console keeps its own), huge pages' and the kernel's debug,
# tracing and configfs file systems (each a mount systemd runs before the network and sshd).
for unit in systemd-networkd-wait-online.service systemd-sysusers.service \
  e2scrub_reap.service e2scrub_all.timer fstrim.timer \
  apt-daily.timer apt-daily-upgrade.timer dpkg-db-backup.timer systemd-pstore.service \
  systemd-binfmt.service proc-sys-fs-binfmt_misc.automount getty@tty1.service \
  modprobe@drm.service modprobe@efi_pstore.service modprobe@dm_mod.service \
  modprobe@fuse.service modprobe@loop.service modprobe@configfs.service \
  dev-hugepages.mount sys-kernel-debug.mount sys-kernel-tracing.mount sys-kernel-config.mount; do
  ln -sfn /dev/null "$root/etc/systemd/system/$unit"
done
# Nor systemd's generators for what this guest has not (encrypted, verity or GPT-found disks,
# hibernation, SysV scripts, rc.local...): each is a process systemd waits for before starting
# any unit. fstab's and getty's (the serial console's login) stay.
mkdir -p "$root/etc/systemd/system-generators"
for generator in cryptsetup gpt-auto hibernate-resume integritysetup veritysetup system-update \
  sysv rc-local run debug; do
  ln -sfn /dev/null "$root/etc/systemd/system-generators/systemd-$generator-generator"
done
# Each VM gets its own identity at first boot: machine id, SSH host keys and hostname (from
# vm-fleet-seed).
: >"$root/etc/machine-id"
rm -f "$root"/etc/ssh/ssh_host_*
echo localhost >"$root/etc/hostname"

kernel=$(cd "$root/boot" && ls vmlinuz-* | sort -V | tail -n 1)
initrd=initrd.img-${kernel#vmlinuz-}
[ -f "$root/boot/$initrd" ] || fail "mmdebstrap made no $initrd"

raw=$work/disk.raw
qemu-img create -q -f raw "$raw" "$size"
# One bootable Linux partition from 1 MiB to the end.
echo 'start=2048, type=83, bootable' | sfdisk --quiet "$raw"
# The partition through a loop device of its own, at its offset: partition scanning of loop
# devices is not available everywhere (containers, VMs without udev).
loop=$(losetup --find --show --offset $((2048 * 512)) "$raw")
part=$loop
step mkfs.ext4 -q -L root "$part"
uuid=$(blkid -s UUID -o value "$part")
mkdir "$work/mnt"
mount "$part" "$work/mnt"
step cp -a "$root/." "$work/mnt/"
# No fsck at boot (pass 0), seconds under TCG: ext4's journal, replayed at mount, covers a power
# cut; errors found at run time remount it read-only. So the kernel mounts it read-write (rw)
# from the start: nothing needs it read-only first. No self-tests of the kernel's crypto
# algorithms at boot (cryptomgr.notests): a second of a TCG boot; they guard a FIPS mode this
# guest does not run in.
echo "UUID=$uuid / ext4 errors=remount-ro 0 0" >"$work/mnt/etc/fstab"
mkdir -p "$work/mnt/boot/extlinux"
cat >"$work/mnt/boot/extlinux/extlinux.conf" <<EOF
DEFAULT debian
TIMEOUT 0
PROMPT 0
LABEL debian
  LINUX /boot/$kernel
  INITRD /boot/$initrd
  APPEND root=UUID=$uuid rw console=ttyS0,115200n8 quiet net.ifnames=0 cryptomgr.notests
EOF
# Its stdout only says where it installed; its stderr stays, should it fail.
extlinux --install "$work/mnt/boot/extlinux" >/dev/null
umount "$work/mnt"
losetup -d "$loop"
loop=
dd if="$mbr" of="$raw" bs=440 count=1 conv=notrunc status=none

# Private from the start: written under umask 077, then given its access and moved in place.
image=$work/disk.qcow2
umask_was=$(umask)
umask 077
step qemu-img convert -q -f raw -O qcow2 "$raw" "$image"
umask "$umask_was"
chown "${owner:-root}:${group:-$(id -gn "${owner:-root}")}" "$image"
if [ -n "$group" ]; then chmod 0640 "$image"; else chmod 0600 "$image"; fi
# -T: onto --out itself, never into a folder of that name made meanwhile.
mv -fT "$image" "$out"
echo "build-debian-image: $out ($(du -m "$out" | cut -f1) MB, $(($(date +%s) - started)) s; user debian, seed cidata, console ttyS0)"
