#!/usr/bin/env bash
# Builds the soft-RNIC lab: a Debian 6.12 kernel, siw built out of tree with
# its MPA knobs as module parameters, rxe, and an initramfs holding rdma-core,
# rping, perftest, iproute2, tcpdump and busybox. Everything comes from
# Debian packages; nothing else is downloaded.
#
#   interop/lab/build.sh            build (or reuse) the lab; prints its folder
#
# The result lives in $RDMACONF_LAB_CACHE (default /var/cache/rdmaconf-lab),
# outside the checkout, so that a fresh clone reuses it. The folder's name is
# a hash of every input (package versions, this script, the guest scripts and
# the siw patch): it is rebuilt only when one of them changes.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
cache=${RDMACONF_LAB_CACHE:-/var/cache/rdmaconf-lab}
kver=6.12.117+deb12-amd64
kabi=6.12.117+deb12
kpkgs=(linux-image-$kver linux-headers-$kver linux-headers-$kabi-common linux-kbuild-$kabi linux-source-6.12)
host_pkgs=(qemu-system-x86 busybox-static rdma-core ibverbs-providers rdmacm-utils perftest ibverbs-utils
           iproute2 tcpdump xz-utils cpio kmod make gcc-12 libelf-dev bc dropbear-bin openssh-client)

log() { printf 'lab: %s\n' "$*" >&2; }
die() { printf 'lab: error: %s\n' "$*" >&2; exit 1; }

missing=()
for p in "${host_pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
  log "installing ${missing[*]}"
  [[ $(id -u) == 0 ]] || die "packages missing (${missing[*]}) and not root to install them"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -q "${missing[@]}" >/dev/null 2>&1 || { apt-get update -q >/dev/null && apt-get install -y -q "${missing[@]}" >/dev/null; } \
    || die "apt-get install ${missing[*]} failed"
fi

mkdir -p "$cache/debs"
need=()
for p in "${kpkgs[@]}"; do compgen -G "$cache/debs/${p}_*.deb" >/dev/null || need+=("$p"); done
if ((${#need[@]})); then
  log "downloading ${need[*]} into $cache/debs"
  (cd "$cache/debs" && apt-get download -q -o APT::Sandbox::User=root "${need[@]}" >/dev/null 2>&1) \
    || (apt-get update -q >/dev/null && cd "$cache/debs" && apt-get download -q -o APT::Sandbox::User=root "${need[@]}" >/dev/null) \
    || die "apt-get download ${need[*]} failed"
fi
deb() { compgen -G "$cache/debs/${1}_*.deb" | sort -V | tail -1; }

# Userland that goes into the guest, each with its shared-library closure.
guest_bins=(/usr/bin/rping /usr/bin/ib_write_bw /usr/bin/ib_read_bw /usr/bin/ib_send_bw /usr/bin/ib_atomic_bw
            /usr/bin/ib_write_lat /usr/bin/ib_read_lat /usr/bin/ib_send_lat
            /usr/bin/ibv_devices /usr/bin/ibv_devinfo /usr/bin/rdma /usr/sbin/ip /usr/bin/tcpdump /usr/bin/kmod
            /usr/sbin/dropbear)
guest_mods=(siw rdma_rxe rdma_ucm rdma_cm iw_cm ib_cm ib_uverbs ib_core configfs crc32c_generic crc32c-intel libcrc32c
            crc32_generic crc32-pclmul udp_tunnel ip6_udp_tunnel veth dummy 9p 9pnet_virtio 9pnet netfs virtio_net)

key=$( {
  for p in "${kpkgs[@]}"; do basename "$(deb "$p")"; done
  # The user space the guest runs (the host's, copied in): what a bug report upstream asks for.
  dpkg-query -W -f='${Package}_${Version}\n' rdma-core ibverbs-providers rdmacm-utils perftest ibverbs-utils
  for b in "${guest_bins[@]}"; do dpkg -S "$b" 2>/dev/null | cut -d: -f1 | xargs -r dpkg-query -W -f='${Package} ${Version}\n'; done
  printf '%s\n' "${guest_mods[@]}"
  cat "$here/build.sh" "$here/init" "$here/guest.sh"
} | sha256sum | cut -c1-16)
out=$cache/lab-$key
if [[ -f $out/ready ]]; then
  echo "$out"
  exit 0
fi

work=$(mktemp -d "$cache/build.XXXXXX")
trap 'rm -rf "$work"' EXIT
t0=$SECONDS
log "building the lab in $out"

# --- kernel, headers, modules -------------------------------------------------
mkdir -p "$work/k"
for p in linux-image-$kver linux-headers-$kver linux-headers-$kabi-common linux-kbuild-$kabi; do
  dpkg -x "$(deb "$p")" "$work/k"
done
hdr=$work/k/usr/src/linux-headers-$kver
echo "include $work/k/usr/src/linux-headers-$kabi-common/Makefile" >"$hdr/Makefile"

# --- siw, out of tree, its MPA knobs turned into module parameters ------------
mkdir -p "$work/src"
dpkg -x "$(deb linux-source-6.12)" "$work/src"
tar -xf "$work/src/usr/src/linux-source-6.12.tar.xz" -C "$work/src" linux-source-6.12/drivers/infiniband/sw/siw
siw=$work/src/linux-source-6.12/drivers/infiniband/sw/siw
rm -f "$work/src/usr/src/linux-source-6.12.tar.xz"
# siw_main.c declares try_gso, mpa_crc_required, mpa_crc_strict and
# peer_to_peer as const bools and mpa_version as a u_char; make them writable
# and expose each as a read-only module parameter.
for v in try_gso mpa_crc_required mpa_crc_strict peer_to_peer; do
  grep -q "^const bool $v;" "$siw/siw_main.c" || die "siw_main.c: '$v' is no longer a const bool; adapt the patch"
  sed -i "s/^const bool $v;/bool $v;\nmodule_param($v, bool, 0444);/" "$siw/siw_main.c"
  sed -i "s/^extern const bool $v;/extern bool $v;/" "$siw/siw.h"
done
grep -q '^u_char mpa_version = MPA_REVISION_2;' "$siw/siw_main.c" || die "siw_main.c: mpa_version changed; adapt the patch"
sed -i 's/^u_char mpa_version = MPA_REVISION_2;/u_char mpa_version = MPA_REVISION_2;\nmodule_param(mpa_version, byte, 0444);/' "$siw/siw_main.c"
log "compiling siw.ko"
make -s -C "$hdr" M="$siw" CONFIG_RDMA_SIW=m CONFIG_DEBUG_INFO_BTF_MODULES= CC=x86_64-linux-gnu-gcc-12 modules >"$work/siw-build.log" 2>&1 \
  || { cat "$work/siw-build.log" >&2; die "building siw failed"; }
mkdir -p "$work/k/lib/modules/$kver/extra"
strip --strip-debug "$siw/siw.ko"
cp "$siw/siw.ko" "$work/k/lib/modules/$kver/extra/siw.ko"
depmod -b "$work/k" "$kver"

# --- initramfs ------------------------------------------------------------------
root=$work/root
mkdir -p "$root"/{bin,sbin,usr/bin,usr/sbin,lib,lib64,etc/libibverbs.d,proc,sys,dev,tmp,run,share,var/run,var/log,root}
cp /bin/busybox "$root/bin/busybox"
for a in $("$root/bin/busybox" --list); do [[ -e $root/bin/$a ]] || ln -s busybox "$root/bin/$a"; done
copy_with_libs() {
  local f=$1 l
  mkdir -p "$root$(dirname "$f")"
  cp -L "$f" "$root$f"
  for l in $(ldd "$f" 2>/dev/null | grep -o '/[^ ]*' | sort -u); do
    [[ -e $root$l ]] && continue
    mkdir -p "$root$(dirname "$l")"
    cp -L "$l" "$root$l"
  done
}
for b in "${guest_bins[@]}"; do copy_with_libs "$b"; done
for p in /usr/lib/x86_64-linux-gnu/libibverbs/lib{siw,rxe}-rdmav*.so; do copy_with_libs "$p"; done
cp /etc/libibverbs.d/{siw,rxe}.driver "$root/etc/libibverbs.d/"
# glibc loads libgcc_s at run time (pthread_exit, cancellation); ldd does not list it.
cp -L /lib/x86_64-linux-gnu/libgcc_s.so.1 "$root/lib/x86_64-linux-gnu/"
for a in modprobe insmod rmmod lsmod depmod modinfo; do ln -sf /usr/bin/kmod "$root/sbin/$a"; done
rm -f "$root/bin/ip" && ln -s /usr/sbin/ip "$root/bin/ip"
echo 'root:x:0:0:root:/root:/bin/sh' >"$root/etc/passwd"
echo 'root:x:0:' >"$root/etc/group"
echo 'tcpdump:x:0:0::/:/bin/sh' >>"$root/etc/passwd"

# Modules with everything they depend on, decompressed (the guest's kmod
# could read .ko.xz, but plain files load faster under emulation).
mdst=$root/lib/modules/$kver
for m in "${guest_mods[@]}"; do
  modprobe -d "$work/k" -S "$kver" --show-depends "$m" 2>/dev/null | awk '$1=="insmod"{print $2}'
done | sort -u | while read -r f; do
  rel=${f#"$work/k/lib/modules/$kver/"}
  mkdir -p "$mdst/$(dirname "$rel")"
  case $f in
    *.xz) xz -dc "$f" >"$mdst/${rel%.xz}" ;;
    *) cp "$f" "$mdst/$rel" ;;
  esac
done
cp "$work/k/lib/modules/$kver"/modules.{order,builtin,builtin.modinfo} "$mdst/" 2>/dev/null || true
depmod -b "$root" "$kver"
for m in siw rdma_rxe veth 9p virtio_net; do
  modprobe -d "$root" -S "$kver" --show-depends "$m" >/dev/null 2>&1 || die "module $m missing from the initramfs"
done

install -m 0755 "$here/init" "$root/init"
install -m 0755 "$here/guest.sh" "$root/bin/lab-guest"

mkdir -p "$out.tmp"
cp "$work/k/boot/vmlinuz-$kver" "$out.tmp/vmlinuz"
(cd "$root" && find . -print0 | cpio --null -o -H newc --quiet | gzip -1) >"$out.tmp/initrd.img"
cp "$siw/siw.ko" "$out.tmp/siw.ko"
{
  echo "kernel $kver"
  for p in "${kpkgs[@]}"; do basename "$(deb "$p")"; done
  # The user space the guest runs (the host's, copied in): what a bug report upstream asks for.
  dpkg-query -W -f='${Package}_${Version}\n' rdma-core ibverbs-providers rdmacm-utils perftest ibverbs-utils
  modinfo -F parm "$siw/siw.ko" | sed 's/^/siw parameter /'
} >"$out.tmp/manifest.txt"
rm -rf "$out" && mv "$out.tmp" "$out"
touch "$out/ready"
for old in "$cache"/lab-*; do [[ $old == "$out" ]] || rm -rf "$old"; done
log "lab ready in $((SECONDS - t0)) s: $out"
echo "$out"
