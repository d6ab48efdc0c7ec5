#!/usr/bin/env bash
# Builds a small Debian qcow2 base image for the agents (VM_BASE_IMAGE) from Debian's packages:
# a minbase system with the cloud kernel, systemd, an SSH server (keys only, no root login), DHCP
# on the first NIC (QEMU's user network) and the console on the serial port (the agent's serial
# log). One ext4 partition booted by extlinux. No cloud-init (nor Python): a shell unit,
# vm-fleet-seed, reads the agent's seed ISO (volume cidata, its plain vm-fleet/ files) before
# sshd at each boot: hostname, the key of VM_SSH_PUBKEY for user `debian` (sudo, no password),
# host keys made at the first boot.
#
# Needs root (mmdebstrap as root, a loop device to install the boot loader) and, from Debian:
# mmdebstrap, extlinux, syslinux-common, fdisk, e2fsprogs, qemu-utils; the network to the mirror.
# No rootless path. Without root or a tool it exits 1, naming what is missing.
# Measured on Debian 12, 2 shared cores: 90-100 s, a qcow2 of 330 MB (4 GiB virtual).
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
# What the guest needs, nothing more: a kernel for a VM, an init, ifupdown and a DHCP client for
# the network, sudo for the user, an SSH server, fsck, and dbus, without which systemd-logind
# does not run and the guest ignores the ACPI power button that `ppn-fleet vm stop` presses (it
# would then be ended after the stop's timeout).
include=linux-image-cloud-amd64,systemd-sysv,udev,dbus,openssh-server,ifupdown,isc-dhcp-client,netbase,sudo,e2fsprogs
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
# cloud kernel) and virtio's NIC (eth0 there before udev's coldplug, which starts its DHCP), not
# most of the kernel's drivers (15 MB): less to read and unpack at every boot.
# MODULES=dep would look at the build machine's disks, so the list is explicit; gzip, as there is
# no zstd.
initramfs_hook='printf "MODULES=list\nCOMPRESS=gzip\n" >"$1/etc/initramfs-tools/conf.d/vm-fleet" &&
  printf "virtio_pci\nvirtio_blk\nvirtio_net\n" >>"$1/etc/initramfs-tools/modules" &&
  chroot "$1" update-initramfs -u -k all >/dev/null'
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
set -u
seed=/run/vm-fleet-seed
device=/dev/disk/by-label/cidata
say() { echo "vm-fleet-seed: $*"; }
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
# udev's event, not a poll; bounded, so that sshd starts without a seed too.
if ! udevadm wait --timeout=30 "$device" 2>/dev/null; then
  say "no seed ($device): hostname and key unchanged"
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
# As cloud-init did: the host keys' fingerprints on the console (the agent's serial log).
for type in ed25519 ecdsa; do ssh-keygen -l -f /etc/ssh/ssh_host_${type}_key.pub; done |
  sed 's/^/vm-fleet-seed: host key /'
EOF
chmod 0755 "$root/usr/local/sbin/vm-fleet-seed"
cat >"$root/etc/systemd/system/vm-fleet-seed.service" <<'EOF'
[Unit]
Description=VM identity from the agent's seed (hostname, SSH key, host keys)
After=local-fs.target systemd-udev-trigger.service
Before=ssh.service systemd-user-sessions.service

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/usr/local/sbin/vm-fleet-seed
StandardOutput=journal+console

[Install]
WantedBy=multi-user.target
EOF
mkdir -p "$root/etc/systemd/system/multi-user.target.wants"
ln -sfn ../vm-fleet-seed.service \
  "$root/etc/systemd/system/multi-user.target.wants/vm-fleet-seed.service"
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
# DHCP on QEMU's user network, in the background (ifup@eth0 when udev sees the NIC: nothing waits
# for the lease); eth0 by net.ifnames=0 on the kernel's command line, whatever PCI slot QEMU gives.
cat >"$root/etc/network/interfaces" <<'EOF'
auto lo
iface lo inet loopback

allow-hotplug eth0
iface eth0 inet dhcp

source /etc/network/interfaces.d/*
EOF
# Not started at boot, each seconds of a 1-vCPU guest under TCG: ifupdown's boot-time jobs
# (networking.service waits for udev to settle; eth0 comes up from udev alone, lo from
# systemd), waits for the
# network to be online, users made from sysusers.d at each boot (the packages made them), scrubs
# and trims of LVM/ext4, apt's and dpkg's timers, modules for hardware QEMU does not emulate
# here, binfmt, the VGA console's getty (the serial console keeps its own).
for unit in networking.service ifupdown-pre.service ifupdown-wait-online.service \
  systemd-networkd-wait-online.service systemd-sysusers.service \
  e2scrub_reap.service e2scrub_all.timer fstrim.timer \
  apt-daily.timer apt-daily-upgrade.timer dpkg-db-backup.timer systemd-pstore.service \
  systemd-binfmt.service proc-sys-fs-binfmt_misc.automount getty@tty1.service \
  modprobe@drm.service modprobe@efi_pstore.service modprobe@dm_mod.service \
  modprobe@fuse.service modprobe@loop.service; do
  ln -sfn /dev/null "$root/etc/systemd/system/$unit"
done
# sshd at once (no `sshd -t` first: another second or two).
mkdir -p "$root/etc/systemd/system/ssh.service.d"
printf '[Service]\nExecStartPre=\n' >"$root/etc/systemd/system/ssh.service.d/vm-fleet.conf"
# Each VM gets its own identity at first boot: machine id, SSH host keys and hostname (from
# vm-fleet-seed).
: >"$root/etc/machine-id"
rm -f "$root"/etc/ssh/ssh_host_*
echo localhost >"$root/etc/hostname"
rm -f "$root/etc/resolv.conf"

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
# cut; errors found at run time remount it read-only.
echo "UUID=$uuid / ext4 errors=remount-ro 0 0" >"$work/mnt/etc/fstab"
mkdir -p "$work/mnt/boot/extlinux"
cat >"$work/mnt/boot/extlinux/extlinux.conf" <<EOF
DEFAULT debian
TIMEOUT 0
PROMPT 0
LABEL debian
  LINUX /boot/$kernel
  INITRD /boot/$initrd
  APPEND root=UUID=$uuid ro console=ttyS0,115200n8 quiet net.ifnames=0
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
