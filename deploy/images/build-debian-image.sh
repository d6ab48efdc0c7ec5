#!/usr/bin/env bash
# Builds a small Debian qcow2 base image for the agents (VM_BASE_IMAGE) from Debian's packages:
# a minbase system with the cloud kernel, systemd, cloud-init reading NoCloud only (the agent's
# seed ISO: hostname, SSH key), an SSH server, DHCP on the first NIC (QEMU's user network) and
# the console on the serial port (the agent's serial log). One ext4 partition booted by extlinux.
# cloud-init's default user is `debian`, with the key of VM_SSH_PUBKEY and sudo.
#
# Needs root (mmdebstrap as root, a loop device to install the boot loader) and, from Debian:
# mmdebstrap, extlinux, syslinux-common, fdisk, e2fsprogs, qemu-utils; the network to the mirror.
# No rootless path. Without root or a tool it exits 1, naming what is missing.
# Measured on Debian 12, 2 shared cores: 110 s (70 s of CPU), a qcow2 of 430 MB (4 GiB virtual).
#
#   deploy/images/build-debian-image.sh [--out FILE] [--owner USER] [--suite bookworm]
#                                       [--include pkg,pkg] [--mirror URL] [--size 4G]
#
# --out: default /var/lib/vm-fleet/images/debian-bookworm.qcow2 (what `npm start` looks for).
# The image is mode 0600: --owner gives it to the user the agent runs as (vm-host when installed
# from the package). --include adds packages. --mirror: Debian's archive, default
# http://deb.debian.org/debian (its -updates suite too, and the security archive at
# deb.debian.org/debian-security unless --mirror is given). --size: the guests' disk size (the
# qcow2 only holds what is written).
set -euo pipefail

out=/var/lib/vm-fleet/images/debian-bookworm.qcow2
owner=
suite=bookworm
# What the guest needs, nothing more: a kernel for a VM, an init, cloud-init and what it uses
# (ifupdown and a DHCP client for the network, sudo for the default user), an SSH server, fsck.
include=linux-image-cloud-amd64,systemd-sysv,udev,cloud-init,openssh-server,ifupdown,isc-dhcp-client,netbase,sudo,e2fsprogs
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

while [ $# -gt 0 ]; do
  case "$1" in
    --out) out=${2:?}; shift 2 ;;
    --owner) owner=${2:?}; shift 2 ;;
    --suite) suite=${2:?}; shift 2 ;;
    --include) extra=${2:?}; shift 2 ;;
    --mirror) mirror=${2:?}; shift 2 ;;
    --size) size=${2:?}; shift 2 ;;
    -h | --help) usage ;;
    *) echo "build-debian-image: unknown option $1" >&2; usage ;;
  esac
done
[ -n "$extra" ] && include="$include,$extra"

[ "$(id -u)" -eq 0 ] || fail "needs root (mmdebstrap and a loop device); run it with sudo"
for tool in mmdebstrap:mmdebstrap extlinux:extlinux sfdisk:fdisk mkfs.ext4:e2fsprogs \
  qemu-img:qemu-utils losetup:mount; do
  command -v "${tool%%:*}" >/dev/null ||
    fail "${tool%%:*} is missing: apt-get install ${tool#*:}"
done
mbr=/usr/lib/syslinux/mbr/mbr.bin
[ -r "$mbr" ] || fail "$mbr is missing: apt-get install syslinux-common"
if [ -n "$owner" ]; then id -u "$owner" >/dev/null 2>&1 || fail "--owner $owner: no such user"; fi

out_dir=$(dirname "$out")
mkdir -p "$out_dir"
# Next to the output: the raw image is as big as --size (sparse) and /tmp may be a small tmpfs.
work=$(mktemp -d "$out_dir/.build-debian-image.XXXXXX")
loop=
cleanup() {
  set +e
  mountpoint -q "$work/mnt" && umount "$work/mnt"
  [ -n "$loop" ] && losetup -d "$loop"
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

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
# No documentation, manual pages or translations: the guest does not need them.
mmdebstrap --quiet --variant=minbase --include="$include" \
  --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
  --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/info/*' \
  --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-include=/usr/share/locale/locale.alias' \
  "$suite" "$root" "${sources[@]}"

# cloud-init: NoCloud only (the agent's seed ISO), no probing of cloud metadata services. A quick
# first boot under emulation (TCG): no RSA or DSA host key (17 s there), no locale generation
# (no locales package; C.UTF-8 is built in, 13 s and an error otherwise).
cat >"$root/etc/cloud/cloud.cfg.d/90_vm-fleet.cfg" <<'EOF'
datasource_list: [ NoCloud ]
ssh_genkeytypes: [ ed25519, ecdsa ]
locale: false
EOF
cat >"$root/etc/ssh/sshd_config.d/vm-fleet.conf" <<'EOF'
HostKey /etc/ssh/ssh_host_ed25519_key
HostKey /etc/ssh/ssh_host_ecdsa_key
EOF
# DHCP on QEMU's user network: cloud-init writes the first NIC's stanza in interfaces.d.
cat >"$root/etc/network/interfaces" <<'EOF'
auto lo
iface lo inet loopback

source /etc/network/interfaces.d/*
EOF
# Each VM gets its own identity at first boot: machine id, SSH host keys (cloud-init makes
# them), hostname (cloud-init sets it from the seed).
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
mkfs.ext4 -q -L root "$part"
uuid=$(blkid -s UUID -o value "$part")
mkdir "$work/mnt"
mount "$part" "$work/mnt"
cp -a "$root/." "$work/mnt/"
echo "UUID=$uuid / ext4 errors=remount-ro 0 1" >"$work/mnt/etc/fstab"
mkdir -p "$work/mnt/boot/extlinux"
cat >"$work/mnt/boot/extlinux/extlinux.conf" <<EOF
DEFAULT debian
TIMEOUT 0
PROMPT 0
LABEL debian
  LINUX /boot/$kernel
  INITRD /boot/$initrd
  APPEND root=UUID=$uuid ro console=tty0 console=ttyS0,115200n8
EOF
extlinux --install "$work/mnt/boot/extlinux" 2>/dev/null
umount "$work/mnt"
losetup -d "$loop"
loop=
dd if="$mbr" of="$raw" bs=440 count=1 conv=notrunc status=none

# Readable by its owner only, from the start: written under umask 077, then moved in place.
(umask 077 && qemu-img convert -q -f raw -O qcow2 "$raw" "$work/disk.qcow2")
chmod 0600 "$work/disk.qcow2"
[ -z "$owner" ] || chown "$owner:" "$work/disk.qcow2"
mv -f "$work/disk.qcow2" "$out"
echo "build-debian-image: $out ($(du -m "$out" | cut -f1) MB, $(($(date +%s) - started)) s; user debian, NoCloud, console ttyS0)"
