#!/usr/bin/env bash
# Builds one version of the Trident test OS: a small bootable Debian bookworm
# as two filesystem images made without mounting anything:
#   OUTDIR/esp.img   FAT32 ESP booting the image by itself through the
#                    removable-media path EFI/BOOT/BOOTX64.EFI, as --bootloader says:
#                    systemd-boot (default): systemd-boot, loader.conf and a
#                      Type 1 entry with this version's kernel and initrd;
#                    grub: Debian's signed shim as BOOTX64.EFI, signed GRUB
#                      (grubx64.efi) and a grub.cfg beside them that finds the
#                      root by filesystem UUID (Azure Linux's layout);
#                    uki: systemd-boot and this version's Unified Kernel Image
#                      in EFI/Linux/ (kernel, initrd, command line and
#                      os-release on systemd's EFI stub, joined with objcopy)
#   OUTDIR/root.img  ext4 root filesystem (mkfs.ext4 -d)
#   OUTDIR/image.env what mkcosi needs to pack them (fs UUIDs, sizes, version,
#                    BOOTLOADER and, for systemd-boot, the entry: BOOT_ENTRY_TYPE
#                    config|uki-standalone, BOOT_ENTRY, KERNEL_RELEASE, CMDLINE)
#
#   tests/vm/build-image.sh [--sysext FILE] [--rcp DIR]
#       [--bootloader systemd-boot|grub|uki] [--systemd-backports] [--netplan]
#       [--verity] VERSION OUTDIR
#
# One package list serves every bootloader (systemd-boot-efi, shim-signed,
# grub-efi-amd64-signed, efibootmgr), so one cached tree serves them all.
#
# The root filesystem tree (mmdebstrap, ~100 s and a download) is cached under
# $TRIDENT_VM_CACHE (default /var/cache/trident-vm) by the hash of the
# mmdebstrap command line, so reruns and other versions skip it. Everything
# per version (os-release, units, the sysext) is applied to a copy.
#
# Versions differ in /usr/lib/os-release: IMAGE_VERSION=VERSION,
# TRIDENT_TEST_VERSION=VERSION and PRETTY_NAME (ID and VERSION_ID stay
# debian/12, so a sysext pinned to the host OS still matches).
#
# --sysext FILE puts FILE (packaging/sysext/build.sh's trident.raw) in
# /var/lib/extensions/ and enables systemd-sysext.service and tridentd.socket:
# the OS has no tridentd of its own, it only gets one by merging that image.
#
# --systemd-backports takes systemd (and udev, their libraries) from
# bookworm-backports (254 instead of 252): systemd-confext, which merges
# configuration extensions, is new in 254. A tree of its own in the cache.
#
# --netplan adds netplan (netplan.io), which applies `os.netplan` on the
# running system (a runtime update, `trident start-network`).
#
# --rcp DIR provisions the reverse-connect proxy agent (trident-rcp, from the
# sysext): DIR is what `trident-e2e-pki DIR trident-test` writes (ca.pem,
# trident-test.pem, trident-test.key; trident-test is the OS's hostname and
# its identity). They go to /etc/trident/rcp/ (key 0600) with
# /etc/trident/rcp.yaml: dial 10.0.2.100:7443 (an address in QEMU's user
# network that the VM harness forwards to its listener with guestfwd; the
# host's own 10.0.2.2 cannot be forwarded) and expect the orchestrator's
# certificate for orchestrator.test.
#
# --verity builds the verity test OS, for a root protected by dm-verity
# (upstream's `verity` sample): /boot and /var become filesystem images of
# their own (OUTDIR/boot.img, OUTDIR/var.img; upstream's verity rules need a
# separate /boot, and the sample takes /var from the image) beside a root
# that is never written once booted (pack it verity=yes). Its initrd opens
# /dev/mapper/root from exactly the kernel arguments tridentd writes (as
# upstream's osmodifier: roothash=, systemd.verity_root_data/hash/options=)
# and mounts the writable /etc overlay `rd.overlayfs=` asks for: Debian's
# initramfs-tools has neither, so tests/vm/verity/initramfs/ adds them (a
# hook copying veritysetup and dm_verity, a local-top/local-block script,
# a local-bottom script) and the initrd is made again in the tree (chroot,
# in a mount namespace of its own; ~20 s). No package beyond the default
# list (veritysetup is cryptsetup-bin's), so the cached tree is the default
# one. The root carries /usr/share/trident-test/canary (a unique pattern:
# TRIDENT-VERITY-CANARY-VERSION-NNNNN lines, ~16 KiB) that a test finds on
# the data partition to corrupt it, and a probe unit
# (tests/vm/verity/guest/) that prints the verity state at each boot.
# systemd-boot and grub only (a UKI would need the root hash before mkcosi
# computes it).
#
# Needs root (ownership in the tree), mmdebstrap, e2fsprogs, dosfstools, mtools
# (and objcopy, binutils, for --bootloader uki).

set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
SYSEXT=""
RCP=""
BOOTLOADER=systemd-boot
BACKPORTS=""
NETPLAN=""
VERITY=""
while [ $# -gt 0 ]; do
    case "$1" in
    --sysext) SYSEXT="$(realpath "$2")"; shift 2 ;;
    --bootloader) BOOTLOADER="$2"; shift 2 ;;
    --rcp) RCP="$(realpath "$2")"; shift 2 ;;
    --systemd-backports) BACKPORTS=1; shift ;;
    --netplan) NETPLAN=1; shift ;;
    --verity) VERITY=1; shift ;;
    -h | --help) sed -n '2,/^$/s/^# \{0,1\}//p' "$0"; exit 0 ;;
    *) break ;;
    esac
done
[ $# -eq 2 ] || { echo "usage: $0 [--sysext FILE] [--rcp DIR] [--bootloader systemd-boot|grub|uki] [--systemd-backports] [--netplan] [--verity] VERSION OUTDIR" >&2; exit 2; }
case "$BOOTLOADER" in
systemd-boot | grub | uki) ;;
*) echo "--bootloader is systemd-boot, grub or uki (not $BOOTLOADER)" >&2; exit 2 ;;
esac
if [ -n "$VERITY" ] && [ "$BOOTLOADER" = uki ]; then
    echo "--verity: systemd-boot or grub (a UKI must carry the root hash mkcosi computes)" >&2
    exit 2
fi
VERSION="$1"
OUTDIR="$2"
[[ "$VERSION" =~ ^[A-Za-z0-9._-]+$ ]] || { echo "VERSION must be [A-Za-z0-9._-]+" >&2; exit 2; }
[ -z "$SYSEXT" ] || [ -f "$SYSEXT" ] || { echo "no sysext at $SYSEXT" >&2; exit 2; }
RCP_HOST=trident-test
if [ -n "$RCP" ]; then
    [ -n "$SYSEXT" ] || { echo "--rcp needs --sysext (trident-rcp comes from it)" >&2; exit 2; }
    for file in ca.pem "$RCP_HOST.pem" "$RCP_HOST.key"; do
        [ -f "$RCP/$file" ] || { echo "no $RCP/$file (trident-e2e-pki $RCP $RCP_HOST)" >&2; exit 2; }
    done
fi
mkdir -p "$OUTDIR"
OUTDIR="$(realpath "$OUTDIR")"

CACHE="${TRIDENT_VM_CACHE:-/var/cache/trident-vm}"
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
ESP_MIB="${TRIDENT_VM_ESP_MIB:-128}"
STARTED=$SECONDS
STEP_STARTED=$SECONDS

timing() { # prints how long the step since the last call took
    echo "timing: $1 $((SECONDS - STEP_STARTED))s"
    STEP_STARTED=$SECONDS
}

# --- 1. root filesystem tree, cached ----------------------------------------

PACKAGES="systemd-sysv,linux-image-cloud-amd64,systemd-boot-efi,udev,kmod,e2fsprogs,iproute2"
# The GRUB test OS: Debian's signed shim and GRUB; efibootmgr shows the
# UEFI boot options on the console.
PACKAGES="$PACKAGES,shim-signed,grub-efi-amd64-signed,efibootmgr"
# mdadm: software RAID (its initramfs hook assembles arrays before the root
# is mounted); openssh-server and sudo: upstream's samples set
# `sshMode: key-only` and write /etc/sudoers.d, and apply unchanged.
PACKAGES="$PACKAGES,mdadm,openssh-server,sudo"
# Encrypted volumes sealed to the TPM 2.0 (the encryption scenarios; one
# list for every scenario keeps one cached tree): cryptsetup, and the TSS2
# libraries systemd 252 dlopens for systemd-cryptenroll, systemd-cryptsetup
# and cryptsetup's systemd-tpm2 token (libtss2-esys.so.0, -rc.so.0,
# -mu.so.0, the device TCTI); tpm2-tools extends a PCR in the guest.
PACKAGES="$PACKAGES,cryptsetup-bin,libtss2-esys-3.0.2-0,libtss2-rc0,libtss2-mu0,libtss2-tcti-device0,tpm2-tools"
# What upstream Trident's package pulls in for its binary (the takeover
# scenario runs it in the guest): its libraries and efivar, which sets
# systemd-boot's LoaderEntryOneShot/LoaderEntryDefault for its UKI volumes.
PACKAGES="$PACKAGES,libsqlite3-0,libssl3,efivar"
[ -z "$NETPLAN" ] || PACKAGES="$PACKAGES,netplan.io"
# Further apt sources after the main mirror (mmdebstrap's MIRROR...).
EXTRA_SOURCES=()
if [ -n "$BACKPORTS" ]; then
    # Every package of systemd's source that the tree has, or apt keeps
    # the 252 libraries and refuses the 254 binaries.
    for package in systemd systemd-sysv udev libsystemd-shared libsystemd0 libudev1; do
        PACKAGES="$PACKAGES,$package/bookworm-backports"
    done
    EXTRA_SOURCES+=("deb $MIRROR bookworm-backports main")
fi
MMDEBSTRAP_ARGS=(
    --variant=minbase
    --include="$PACKAGES"
    # Documentation, man pages and translations are dead weight in a test OS.
    --dpkgopt='path-exclude=/usr/share/man/*'
    --dpkgopt='path-exclude=/usr/share/doc/*'
    --dpkgopt='path-include=/usr/share/doc/*/copyright'
    --dpkgopt='path-exclude=/usr/share/locale/*'
    --dpkgopt='path-exclude=/usr/share/info/*'
    bookworm
)
# Cache key: everything that decides the tree's content.
KEY="$(printf '%s\n' "rootfs-v1" "$MIRROR" "${MMDEBSTRAP_ARGS[@]}" "${EXTRA_SOURCES[@]}" | sha256sum | cut -c1-16)"
ROOTFS_TAR="$CACHE/rootfs-$KEY.tar"
if [ -f "$ROOTFS_TAR" ]; then
    echo "rootfs: cached $ROOTFS_TAR"
else
    echo "rootfs: building $ROOTFS_TAR (mmdebstrap, downloads ~150 MB)"
    mkdir -p "$CACHE"
    mmdebstrap --quiet --format=tar "${MMDEBSTRAP_ARGS[@]}" "$ROOTFS_TAR.partial" "$MIRROR" "${EXTRA_SOURCES[@]}"
    mv "$ROOTFS_TAR.partial" "$ROOTFS_TAR"
fi
timing rootfs

# --- 2. this version's tree ---------------------------------------------------

WORK="$OUTDIR/.build"
rm -rf "$WORK"
mkdir -p "$WORK/root"
trap 'rm -rf "$WORK"' EXIT
ROOT="$WORK/root"
tar --numeric-owner -xpf "$ROOTFS_TAR" -C "$ROOT"
timing extract

# Deterministic identities per version: reruns give the same UUIDs.
hash_of() { printf '%s' "$1" | sha256sum | cut -c1-32; }
as_uuid() { local h="$1"; echo "${h:0:8}-${h:8:4}-4${h:13:3}-a${h:17:3}-${h:20:12}"; }
ROOT_UUID="$(as_uuid "$(hash_of "trident-test-os/$VERSION/root")")"
ESP_ID="$(hash_of "trident-test-os/$VERSION/esp" | cut -c1-8 | tr a-f A-F)"
ESP_UUID="${ESP_ID:0:4}-${ESP_ID:4:4}"
BOOT_UUID="$(as_uuid "$(hash_of "trident-test-os/$VERSION/boot")")"
VAR_UUID="$(as_uuid "$(hash_of "trident-test-os/$VERSION/var")")"

sed -i -e '/^PRETTY_NAME=/d' "$ROOT/usr/lib/os-release"
cat >>"$ROOT/usr/lib/os-release" <<OSR
PRETTY_NAME="Trident test OS $VERSION (Debian 12)"
IMAGE_ID=trident-test-os
IMAGE_VERSION=$VERSION
TRIDENT_TEST_VERSION=$VERSION
OSR
echo "$RCP_HOST" >"$ROOT/etc/hostname"
if [ -n "$VERITY" ]; then
    # Pass 0 for /: no fsck of a device nothing may write (nor one in
    # the initrd, whose fsck hook reads this).
    cat >"$ROOT/etc/fstab" <<FSTAB
UUID=$ROOT_UUID / ext4 ro 0 0
UUID=$BOOT_UUID /boot ext4 defaults 0 2
UUID=$ESP_UUID /boot/efi vfat umask=0077,nofail 0 2
UUID=$VAR_UUID /var ext4 defaults 0 2
FSTAB
else
    cat >"$ROOT/etc/fstab" <<FSTAB
UUID=$ROOT_UUID / ext4 defaults 0 1
UUID=$ESP_UUID /boot/efi vfat umask=0077,nofail 0 2
FSTAB
fi
mkdir -p "$ROOT/boot/efi" "$ROOT/etc/kernel"
# The OS's own kernel arguments: tridentd's UEFI boot control puts them in
# each volume's entry after root=PARTUUID=<volume>. no_timer_check: under
# TCG on a loaded host the kernel's check of the timer interrupt can miss
# it and panic ("IO-APIC + timer doesn't work"); the check proves nothing
# about a virtual machine's timer.
KERNEL_ARGS="console=ttyS0,115200 systemd.show_status=1 no_timer_check"
echo "$KERNEL_ARGS" >"$ROOT/etc/kernel/cmdline"
# The guest is reached only from the host through QEMU's user network.
passwd --root "$ROOT" --delete root >/dev/null

enable() { # enable UNIT in TARGET.wants (no systemctl inside a chroot needed)
    mkdir -p "$ROOT/etc/systemd/system/$2.wants"
    ln -sf "$3/$1" "$ROOT/etc/systemd/system/$2.wants/$1"
}
cp -r "$HERE/guest/." "$ROOT/"
enable systemd-networkd.service multi-user.target /lib/systemd/system
enable trident-test-ready.service multi-user.target /etc/systemd/system
if [ -n "$SYSEXT" ]; then
    mkdir -p "$ROOT/var/lib/extensions"
    cp "$SYSEXT" "$ROOT/var/lib/extensions/trident.raw"
    enable systemd-sysext.service sysinit.target /lib/systemd/system
    enable trident-sysext-reload.service sysinit.target /etc/systemd/system
    # Dangling until systemd-sysext merges /usr: the unit comes from the image.
    enable tridentd.socket sockets.target /usr/lib/systemd/system
    # The commit service: commits an install or update after its reboot.
    enable trident.service multi-user.target /usr/lib/systemd/system
fi
if [ -n "$RCP" ]; then
    install -d -m 0755 "$ROOT/etc/trident/rcp"
    install -m 0644 "$RCP/ca.pem" "$ROOT/etc/trident/rcp/ca.pem"
    install -m 0644 "$RCP/$RCP_HOST.pem" "$ROOT/etc/trident/rcp/host.pem"
    install -m 0600 "$RCP/$RCP_HOST.key" "$ROOT/etc/trident/rcp/host.key"
    cat >"$ROOT/etc/trident/rcp.yaml" <<RCPYAML
# Written by tests/vm/build-image.sh: the test harness's orchestrator.
connect: 10.0.2.100:7443
server-name: orchestrator.test
ca: /etc/trident/rcp/ca.pem
cert: /etc/trident/rcp/host.pem
key: /etc/trident/rcp/host.key
# A dial before the network is up fails; a short cap keeps the next one
# close (the default 60 s would add up to a minute to every boot).
backoff-max: 5s
RCPYAML
    # Dangling until systemd-sysext merges /usr, like tridentd.socket.
    enable trident-rcp.service multi-user.target /usr/lib/systemd/system
fi
if [ -n "$VERITY" ]; then
    cp -r "$HERE/verity/guest/." "$ROOT/"
    enable trident-test-verity.service multi-user.target /etc/systemd/system
    # /tmp a tmpfs (systemd's tmp.mount, which Debian ships unused): the
    # root is read-only, and PrivateTmp= units (trident-rcp) set up their
    # /tmp under it.
    cp "$ROOT/usr/share/systemd/tmp.mount" "$ROOT/etc/systemd/system/tmp.mount"
    enable tmp.mount local-fs.target /etc/systemd/system
    mkdir -p "$ROOT/usr/share/trident-test"
    for i in $(seq 1 528); do
        printf 'TRIDENT-VERITY-CANARY-%s-%05d\n' "$VERSION" "$i"
    done >"$ROOT/usr/share/trident-test/canary"
    initramfs="$ROOT/etc/initramfs-tools"
    install -D -m 0755 "$HERE/verity/initramfs/hook" "$initramfs/hooks/trident-verity"
    for phase in local-top local-block; do
        install -D -m 0755 "$HERE/verity/initramfs/verity-root" \
            "$initramfs/scripts/$phase/trident-verity-root"
    done
    install -D -m 0755 "$HERE/verity/initramfs/etc-overlay" \
        "$initramfs/scripts/local-bottom/trident-etc-overlay"
    kernel="$(find "$ROOT/boot" -maxdepth 1 -name 'vmlinuz-*' | sort | tail -n 1)"
    # The tree's own update-initramfs, with /dev and /proc only inside a
    # mount namespace that ends with it (nothing left mounted on failure).
    unshare --mount --propagation private sh -c '
        mount --rbind /dev "$1/dev" && mount -t proc proc "$1/proc" &&
        chroot "$1" update-initramfs -u -k "$2"' sh "$ROOT" "${kernel##*/vmlinuz-}" >/dev/null
    timing initrd
fi
timing customize

# --- 3. filesystem images -----------------------------------------------------

KERNEL="$(find "$ROOT/boot" -maxdepth 1 -name 'vmlinuz-*' | sort | tail -n 1)"
INITRD="$ROOT/boot/initrd.img-${KERNEL##*/vmlinuz-}"
[ -f "$KERNEL" ] && [ -f "$INITRD" ] || { echo "no kernel/initrd in $ROOT/boot" >&2; exit 1; }

ESP="$OUTDIR/esp.img"
rm -f "$ESP"
mkfs.vfat -F 32 -n ESP -i "$ESP_ID" -C "$ESP" $((ESP_MIB * 1024)) >/dev/null
mmd -i "$ESP" ::/EFI ::/EFI/BOOT
CMDLINE="root=UUID=$ROOT_UUID rw $KERNEL_ARGS"
# Where GRUB finds the kernel: the root's /boot, or /boot's own filesystem.
GRUB_BOOT_UUID=$ROOT_UUID
GRUB_BOOT_DIR=/boot
if [ -n "$VERITY" ]; then
    CMDLINE="root=UUID=$ROOT_UUID ro $KERNEL_ARGS"
    GRUB_BOOT_UUID=$BOOT_UUID
    GRUB_BOOT_DIR=""
fi
SYSTEMD_BOOT="$ROOT/usr/lib/systemd/boot/efi/systemd-bootx64.efi"
BOOT_ENTRY_TYPE=""
BOOT_ENTRY=""
case "$BOOTLOADER" in
systemd-boot)
    mmd -i "$ESP" ::/EFI/systemd ::/loader ::/loader/entries ::/trident "::/trident/$VERSION"
    mcopy -i "$ESP" "$SYSTEMD_BOOT" ::/EFI/BOOT/BOOTX64.EFI
    mcopy -i "$ESP" "$SYSTEMD_BOOT" ::/EFI/systemd/systemd-bootx64.efi
    mcopy -i "$ESP" "$KERNEL" "::/trident/$VERSION/vmlinuz"
    mcopy -i "$ESP" "$INITRD" "::/trident/$VERSION/initrd.img"
    printf 'default trident-*\ntimeout 0\neditor no\n' >"$WORK/loader.conf"
    cat >"$WORK/entry.conf" <<ENTRY
title   Trident test OS $VERSION
version $VERSION
linux   /trident/$VERSION/vmlinuz
initrd  /trident/$VERSION/initrd.img
options $CMDLINE
ENTRY
    mcopy -i "$ESP" "$WORK/loader.conf" ::/loader/loader.conf
    mcopy -i "$ESP" "$WORK/entry.conf" "::/loader/entries/trident-$VERSION.conf"
    BOOT_ENTRY_TYPE=config
    BOOT_ENTRY=/boot/efi/loader/entries/trident-$VERSION.conf
    ;;
grub)
    mcopy -i "$ESP" "$ROOT/usr/lib/shim/shimx64.efi.signed" ::/EFI/BOOT/BOOTX64.EFI
    mcopy -i "$ESP" "$ROOT/usr/lib/grub/x86_64-efi-signed/grubx64.efi.signed" ::/EFI/BOOT/grubx64.efi
    # Debian's signed GRUB sources the grub.cfg beside it ($cmdpath) when
    # its built-in prefix (/EFI/debian) is absent: top-level commands boot.
    cat >"$WORK/grub.cfg" <<GRUBCFG
search --no-floppy --fs-uuid --set=root $GRUB_BOOT_UUID
echo 'Booting Trident test OS $VERSION'
linux $GRUB_BOOT_DIR/${KERNEL##*/} $CMDLINE
initrd $GRUB_BOOT_DIR/${INITRD##*/}
boot
GRUBCFG
    mcopy -i "$ESP" "$WORK/grub.cfg" ::/EFI/BOOT/grub.cfg
    ;;
uki)
    mmd -i "$ESP" ::/EFI/systemd ::/EFI/Linux ::/loader
    mcopy -i "$ESP" "$SYSTEMD_BOOT" ::/EFI/BOOT/BOOTX64.EFI
    mcopy -i "$ESP" "$SYSTEMD_BOOT" ::/EFI/systemd/systemd-bootx64.efi
    printf '%s' "$CMDLINE" >"$WORK/cmdline"
    # systemd 252's stub: sections at the VMAs its documentation gives, the
    # initrd after the kernel (rounded up to 1 MiB), whatever its size.
    INITRD_VMA=$(printf '0x%x' $(( (0x2000000 + $(stat -c %s "$KERNEL") + 0xfffff) & ~0xfffff )))
    objcopy \
        --add-section .osrel="$ROOT/usr/lib/os-release" --change-section-vma .osrel=0x20000 \
        --add-section .cmdline="$WORK/cmdline" --change-section-vma .cmdline=0x30000 \
        --add-section .linux="$KERNEL" --change-section-vma .linux=0x2000000 \
        --add-section .initrd="$INITRD" --change-section-vma .initrd="$INITRD_VMA" \
        "$ROOT/usr/lib/systemd/boot/efi/linuxx64.efi.stub" "$WORK/uki.efi"
    mcopy -i "$ESP" "$WORK/uki.efi" "::/EFI/Linux/trident-test-$VERSION.efi"
    printf 'timeout 0\neditor no\n' >"$WORK/loader.conf"
    mcopy -i "$ESP" "$WORK/loader.conf" ::/loader/loader.conf
    BOOT_ENTRY_TYPE=uki-standalone
    BOOT_ENTRY=/boot/efi/EFI/Linux/trident-test-$VERSION.efi
    ;;
esac
timing esp

# The verity test OS: /boot and /var out of the root, each an image.
# tree_mib DIR EXTRA: 25% + EXTRA MiB over DIR's tree, in whole MiB.
tree_mib() { echo $(( ($(du -s --block-size=1K "$1" | cut -f1) * 5 / 4) / 1024 + $2 )); }
if [ -n "$VERITY" ]; then
    for part in boot var; do
        mkdir -p "$WORK/$part"
        find "$ROOT/$part" -mindepth 1 -maxdepth 1 -exec mv -t "$WORK/$part" {} +
    done
    mkdir -p "$WORK/boot/efi"
    BOOT_MIB=$(tree_mib "$WORK/boot" 16)
    VAR_MIB=$(tree_mib "$WORK/var" 64)
    rm -f "$OUTDIR/boot.img" "$OUTDIR/var.img"
    mkfs.ext4 -q -L boot -U "$BOOT_UUID" -d "$WORK/boot" "$OUTDIR/boot.img" "${BOOT_MIB}M"
    mkfs.ext4 -q -L var -U "$VAR_UUID" -d "$WORK/var" "$OUTDIR/var.img" "${VAR_MIB}M"
    timing boot-var
fi

# Room to breathe: 25% + 64 MiB over the tree, in whole MiB.
USED_KIB="$(du -s --block-size=1K "$ROOT" | cut -f1)"
ROOT_MIB=$(( (USED_KIB * 5 / 4) / 1024 + 64 ))
RIMG="$OUTDIR/root.img"
rm -f "$RIMG"
# A verity root: 4 KiB blocks (mke2fs picks 1 KiB for a small image), the
# block size of the dm-verity device it is mounted from.
ROOT_BLOCK=()
[ -z "$VERITY" ] || ROOT_BLOCK=(-b 4096)
mkfs.ext4 -q -L root -U "$ROOT_UUID" "${ROOT_BLOCK[@]}" -d "$ROOT" "$RIMG" "${ROOT_MIB}M"
timing root

cat >"$OUTDIR/image.env" <<ENV
VERSION=$VERSION
ESP_IMAGE=$ESP
ESP_FS_UUID=$ESP_UUID
ESP_SIZE=$(stat -c %s "$ESP")
ROOT_IMAGE=$RIMG
ROOT_FS_UUID=$ROOT_UUID
ROOT_SIZE=$(stat -c %s "$RIMG")
KERNEL=${KERNEL##*/}
KERNEL_RELEASE=${KERNEL##*/vmlinuz-}
BOOTLOADER=$BOOTLOADER
BOOT_ENTRY_TYPE=$BOOT_ENTRY_TYPE
BOOT_ENTRY=$BOOT_ENTRY
CMDLINE='$CMDLINE'
SYSEXT=${SYSEXT:+trident.raw}
RCP_HOST=${RCP:+$RCP_HOST}
ENV
if [ -n "$VERITY" ]; then
    cat >>"$OUTDIR/image.env" <<ENV
VERITY=1
BOOT_IMAGE=$OUTDIR/boot.img
BOOT_FS_UUID=$BOOT_UUID
VAR_IMAGE=$OUTDIR/var.img
VAR_FS_UUID=$VAR_UUID
CANARY=/usr/share/trident-test/canary
CANARY_PATTERN=TRIDENT-VERITY-CANARY-$VERSION-
ENV
fi
cp "$ROOT/usr/lib/os-release" "$OUTDIR/os-release"
echo "image $VERSION ($BOOTLOADER): $ESP (${ESP_MIB} MiB), $RIMG (${ROOT_MIB} MiB, UUID $ROOT_UUID)"
echo "timing: total $((SECONDS - STARTED))s"
