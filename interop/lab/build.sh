#!/usr/bin/env bash
# Builds the soft-RNIC lab for one kernel: Debian's kernel of that kernel
# file (interop/lab/kernels/NAME.kernel), siw built out of tree with its MPA
# knobs as module parameters, rxe, and an initramfs holding rdma-core,
# rping, perftest, iproute2, tcpdump and busybox from the same Debian suite.
# Everything comes from Debian's archive; nothing else is downloaded.
#
#   interop/lab/build.sh [KERNEL_FILE]   build (or reuse) the lab; prints its folder
#                                        (default: the kernel file that says "default: yes")
#
# The archive is named by the kernel file and read through a private apt
# configuration (tools/build-root), so the lab builds the same on any host.
# siw is compiled, and the guest's user space taken, from a build root that
# mmdebstrap makes from that archive (the kernel's own compiler and kbuild:
# 7.2's need a newer glibc and GCC than Debian 12's).
#
# The result lives in $RDMACONF_LAB_CACHE (default /var/cache/rdmaconf-lab),
# outside the checkout, so that a fresh clone reuses it: lab-NAME-HASH, the
# hash of every input (package versions, the root, this script, the guest
# scripts, the kernel file), rebuilt only when one of them changes.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
cache=${RDMACONF_LAB_CACHE:-/var/cache/rdmaconf-lab}
# Without an argument: the kernel file that says "default: yes".
kfile=${1:-$(grep -l '^default: *yes' "$here"/kernels/*.kernel 2>/dev/null | head -1)}
[[ -n $kfile ]] || { printf 'lab: error: no kernel file given and none in %s says "default: yes"\n' "$here/kernels" >&2; exit 1; }
# What this host needs: qemu and the tools that pack the initramfs and make
# build roots; and, for the device-under-test runner that runs here
# (dut.sh: tcpdump, ssh; with --dut local the device's programs too), the
# RDMA user space of the host's own release.
host_pkgs=(qemu-system-x86 xz-utils cpio kmod mmdebstrap openssh-client iproute2 tcpdump rdma-core ibverbs-providers
           rdmacm-utils perftest ibverbs-utils)

log() { printf 'lab: %s\n' "$*" >&2; }
die() { printf 'lab: error: %s\n' "$*" >&2; exit 1; }
build_root=$here/build-root
[[ -x $build_root ]] || build_root=$here/../../tools/build-root
[[ -x $build_root ]] || die "tools/build-root not found beside $here"

# --- the kernel file --------------------------------------------------------------
[[ -f $kfile ]] || die "no kernel file $kfile"
declare -A K=()
archive=()
n=0
while IFS= read -r line || [[ -n $line ]]; do
  n=$((n + 1))
  [[ $line =~ ^[[:space:]]*(#|$) ]] && continue
  [[ $line =~ ^([a-z]+):[[:space:]]*(.*[^[:space:]])[[:space:]]*$ ]] || die "$kfile:$n: expected 'field: value', got '$line'"
  f=${BASH_REMATCH[1]} v=${BASH_REMATCH[2]}
  case $f in
    archive) archive+=("$v") ;;
    name | about | abi | packages | vmlinuz | source | compiler | root | load | ondemand | gate | default)
      [[ -z ${K[$f]:-} ]] || die "$kfile:$n: field '$f' given twice"
      K[$f]=$v ;;
    *) die "$kfile:$n: unknown field '$f' (known: name about archive abi packages vmlinuz source compiler root load ondemand gate default)" ;;
  esac
done <"$kfile"
for f in name about abi packages vmlinuz source compiler root load gate; do
  [[ -n ${K[$f]:-} ]] || die "$kfile: field '$f' is missing"
done
((${#archive[@]})) || die "$kfile: no 'archive' line"
[[ ${K[name]} =~ ^[A-Za-z0-9._-]+$ ]] || die "$kfile: name: letters, digits, '.', '_' and '-' only, got '${K[name]}'"
[[ ${K[gate]} == yes || ${K[gate]} == no ]] || die "$kfile: gate: expected yes or no, got '${K[gate]}'"
kname=${K[name]}
# One build of a kernel's lab at a time (CI starts them in the background
# early, and `lab run` then waits here for the one under way).
mkdir -p "$cache"
exec 9>"$cache/.build-$kname.lock"
flock 9

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

# --- the archive, and the newest kernel it holds ----------------------------------
mkdir -p "$cache/debs"
aptconf=$("$build_root" apt "$cache/apt-$kname" "${archive[@]}") || die "cannot read the archive of $kfile"
fill() { local v=${1//\{abi\}/$2}; v=${v//\{kver\}/$2-amd64}; echo "${v//\{major\}/$(sed -E 's/^([0-9]+\.[0-9]+).*/\1/' <<<"$2")}"; }
version_of() { APT_CONFIG=$aptconf apt-cache show --no-all-versions "$1" 2>/dev/null | sed -n 's/^Version: //p' | head -1; }
# The newest ABI for which the archive holds every package, the source of the
# very version of the image among them (a new kernel's packages reach a
# suite one by one).
abi=
for a in $(APT_CONFIG=$aptconf apt-cache pkgnames linux-headers- | sed -nE "s/^linux-headers-(${K[abi]})-amd64\$/\\1/p" | sort -rV); do
  read -ra want <<<"$(fill "${K[packages]}" "$a") $(fill "${K[source]}" "$a") linux-headers-$a-amd64"
  v0=$(version_of "${want[0]}") ok=1
  for p in "${want[@]}"; do [[ -n $(version_of "$p") ]] || ok=0; done
  [[ $ok == 1 && $(version_of "${want[-2]}") == "$v0" ]] && { abi=$a; break; }
  log "kernel ${kname}: skipping $a (the archive does not hold all of ${want[*]} at version ${v0:-none})"
done
[[ -n $abi ]] || die "$kfile: the archive holds no ABI matching '${K[abi]}' with all of its packages"
kver=$abi-amd64
read -ra kpkgs <<<"$(fill "${K[packages]}" "$abi") $(fill "${K[source]}" "$abi")"
read -ra root_pkgs <<<"$(fill "${K[root]}" "$abi") ${K[compiler]}"
read -ra load_mods <<<"${K[load]}"
# Modules the kernel asks modprobe for itself (optional field): rxe's CRC32
# helpers on 6.12, which no module depends on by symbol.
read -ra ondemand_mods <<<"${K[ondemand]:-}"
log "kernel ${kname}: $kver"

# Exact versions, downloaded once into the cache (the image packages are
# unpacked, never installed).
debs=()
for p in "${kpkgs[@]}"; do
  v=$(version_of "$p")
  [[ -n $v ]] || die "$kfile: the archive holds no $p"
  f=$(compgen -G "$cache/debs/${p}_${v/*:/}_*.deb" | head -1 || true)
  if [[ -z $f ]]; then
    log "downloading $p $v into $cache/debs"
    (cd "$cache/debs" && APT_CONFIG=$aptconf apt-get download -q "$p=$v" >/dev/null) || die "apt-get download $p=$v failed"
    f=$(compgen -G "$cache/debs/${p}_${v/*:/}_*.deb" | head -1) || die "the download of $p left no .deb"
  fi
  debs+=("$f")
done
root=$("$build_root" make "${aptconf%/apt.conf}" "$cache/roots" "$kname" "${root_pkgs[@]}") || die "the build root of $kname failed"

# Userland that goes into the guest, each with its shared-library closure.
guest_bins=(/usr/bin/rping /usr/bin/ib_write_bw /usr/bin/ib_read_bw /usr/bin/ib_send_bw /usr/bin/ib_atomic_bw
            /usr/bin/ib_write_lat /usr/bin/ib_read_lat /usr/bin/ib_send_lat
            /usr/bin/ibv_devices /usr/bin/ibv_devinfo /usr/bin/rdma /usr/sbin/ip /usr/bin/tcpdump /usr/bin/kmod
            /usr/sbin/dropbear)
plumbing_mods=(veth dummy 9p 9pnet_virtio 9pnet netfs virtio_net)
guest_mods=(siw rdma_rxe rdma_ucm udp_tunnel ip6_udp_tunnel "${load_mods[@]%\?}" "${ondemand_mods[@]}" "${plumbing_mods[@]}")
# What the guest runs, as a bug report upstream asks for it.
userspace() { chroot "$root" dpkg-query -W -f='${Package}_${Version}\n' rdma-core ibverbs-providers rdmacm-utils perftest ibverbs-utils iproute2 tcpdump busybox-static; }

key=$( {
  for d in "${debs[@]}"; do basename "$d"; done
  basename "$root"
  printf '%s\n' "${guest_mods[@]}"
  cat "$here/build.sh" "$here/init" "$here/guest.sh" "$kfile"
} | sha256sum | cut -c1-16)
out=$cache/lab-$kname-$key
if [[ -f $out/ready ]]; then
  echo "$out"
  exit 0
fi

work=$(mktemp -d "$cache/build.XXXXXX")
build_dir=$root/tmp/lab-siw.$$
cleanup() {
  mountpoint -q "$root/proc" && umount "$root/proc"
  rm -rf "$work" "$build_dir"
}
trap cleanup EXIT
t0=$SECONDS
log "building the lab in $out"

# --- kernel and modules ------------------------------------------------------------
mkdir -p "$work/k"
for d in "${debs[@]::${#debs[@]}-1}"; do dpkg -x "$d" "$work/k"; done
# Debian's newer packages keep the modules under usr/lib only; depmod and
# modprobe -d read BASE/lib/modules.
[[ -e $work/k/lib/modules/$kver || ! -d $work/k/usr/lib/modules/$kver ]] || { mkdir -p "$work/k/lib/modules" && ln -s "../../usr/lib/modules/$kver" "$work/k/lib/modules/$kver"; }
vmlinuz=$work/k/$(fill "${K[vmlinuz]}" "$abi")
[[ -f $vmlinuz ]] || die "$kfile: vmlinuz: no $(fill "${K[vmlinuz]}" "$abi") in ${kpkgs[*]}"

# --- the sources the lab builds and its findings cite -------------------------------
# siw (built here), iw_cm and the rest of the RDMA core, rxe: kept in the lab
# folder as src/, so that a finding's citation is held against this kernel.
mkdir -p "$work/src"
dpkg --fsys-tarfile "${debs[-1]}" | tar -x -C "$work/src" --wildcards './usr/src/linux-source-*.tar.xz'
tarball=$(compgen -G "$work/src/usr/src/linux-source-*.tar.xz" | head -1) || die "${kpkgs[-1]} holds no source tarball"
top=$(basename "$tarball" .tar.xz)
tar -xf "$tarball" -C "$work/src" "$top/drivers/infiniband/sw/siw" "$top/drivers/infiniband/sw/rxe" "$top/drivers/infiniband/core"
rm -f "$tarball"
mv "$work/src/$top" "$work/src/linux"
siw=$work/src/linux/drivers/infiniband/sw/siw
cp -r "$siw" "$work/siw-build"
siw_build=$work/siw-build
# siw_main.c declares try_gso, mpa_crc_required, mpa_crc_strict and
# peer_to_peer as const bools and mpa_version as a u_char; make them writable
# and expose each as a read-only module parameter.
for v in try_gso mpa_crc_required mpa_crc_strict peer_to_peer; do
  grep -q "^const bool $v;" "$siw_build/siw_main.c" || die "siw_main.c: '$v' is no longer a const bool; adapt the patch"
  sed -i "s/^const bool $v;/bool $v;\nmodule_param($v, bool, 0444);/" "$siw_build/siw_main.c"
  sed -i "s/^extern const bool $v;/extern bool $v;/" "$siw_build/siw.h"
done
grep -q '^u_char mpa_version = MPA_REVISION_2;' "$siw_build/siw_main.c" || die "siw_main.c: mpa_version changed; adapt the patch"
sed -i 's/^u_char mpa_version = MPA_REVISION_2;/u_char mpa_version = MPA_REVISION_2;\nmodule_param(mpa_version, byte, 0444);/' "$siw_build/siw_main.c"
log "compiling siw.ko with ${K[compiler]} in $root"
cp -r "$siw_build" "$build_dir"
mount -t proc proc "$root/proc"
chroot "$root" make -s -C "/usr/src/linux-headers-$kver" M="/tmp/$(basename "$build_dir")" CONFIG_RDMA_SIW=m \
  CONFIG_DEBUG_INFO_BTF_MODULES= CC="x86_64-linux-gnu-${K[compiler]}" modules >"$work/siw-build.log" 2>&1 \
  || { cat "$work/siw-build.log" >&2; die "building siw failed"; }
umount "$root/proc"
cp "$build_dir/siw.ko" "$siw_build/siw.ko"
mkdir -p "$work/k/lib/modules/$kver/extra"
strip --strip-debug "$siw_build/siw.ko"
cp "$siw_build/siw.ko" "$work/k/lib/modules/$kver/extra/siw.ko"
depmod -b "$work/k" "$kver"

# --- initramfs ------------------------------------------------------------------
# Everything in it comes from the build root: its paths are the root's, and a
# symbolic link is followed inside the root, never on the host.
ird=$work/initramfs
mkdir -p "$ird"/{bin,sbin,usr/bin,usr/sbin,lib,lib64,usr/lib,etc/libibverbs.d,proc,sys,dev,tmp,run,share,var/run,var/log,root}
in_root() { chroot "$root" "$@"; }
copy_from_root() {
  local f=$1 real
  real=$(in_root readlink -f "$f") || die "the build root has no $f"
  [[ -f $root$real ]] || die "the build root has no $f"
  mkdir -p "$ird$(dirname "$f")"
  cp "$root$real" "$ird$f"
}
copy_with_libs() {
  local f=$1 l
  copy_from_root "$f"
  for l in $(in_root ldd "$f" 2>/dev/null | grep -o '/[^ ]*' | sort -u); do
    [[ -e $ird$l ]] || copy_from_root "$l"
  done
}
copy_from_root /bin/busybox
for a in $("$ird/bin/busybox" --list); do [[ -e $ird/bin/$a ]] || ln -s busybox "$ird/bin/$a"; done
for b in "${guest_bins[@]}"; do copy_with_libs "$b"; done
for p in "$root"/usr/lib/x86_64-linux-gnu/libibverbs/lib{siw,rxe}-rdmav*.so; do copy_with_libs "${p#"$root"}"; done
for d in siw rxe; do copy_from_root "/etc/libibverbs.d/$d.driver"; done
# glibc loads libgcc_s at run time (pthread_exit, cancellation); ldd does not list it.
copy_from_root /lib/x86_64-linux-gnu/libgcc_s.so.1
for a in modprobe insmod rmmod lsmod depmod modinfo; do ln -sf /usr/bin/kmod "$ird/sbin/$a"; done
rm -f "$ird/bin/ip" && ln -s /usr/sbin/ip "$ird/bin/ip"
echo 'root:x:0:0:root:/root:/bin/sh' >"$ird/etc/passwd"
echo 'root:x:0:' >"$ird/etc/group"
echo 'tcpdump:x:0:0::/:/bin/sh' >>"$ird/etc/passwd"
# The RDMA stack this kernel loads before any peer (guest.sh reads it); a
# name ending in ? is loaded where it can be.
printf '%s\n' "${load_mods[@]}" >"$ird/etc/lab-modules"

# Modules with everything they depend on, decompressed (the guest's kmod
# could read .ko.xz, but plain files load faster under emulation). Newer
# kmod looks under usr/lib/modules: both paths lead there.
mdst=$ird/lib/modules/$kver
ln -s ../../lib/modules "$ird/usr/lib/modules"
for m in "${guest_mods[@]}"; do
  modprobe -d "$work/k" -S "$kver" --show-depends "$m" 2>/dev/null | awk '$1=="insmod"{print $2}'
done | sort -u | while read -r f; do
  rel=${f#"$work/k/lib/modules/$kver/"}
  rel=${rel#"$work/k/usr/lib/modules/$kver/"}
  mkdir -p "$mdst/$(dirname "$rel")"
  case $f in
    *.xz) xz -dc "$f" >"$mdst/${rel%.xz}" ;;
    *) cp "$f" "$mdst/$rel" ;;
  esac
done
cp "$work/k/lib/modules/$kver"/modules.{order,builtin,builtin.modinfo} "$mdst/" 2>/dev/null || true
depmod -b "$ird" "$kver"
for m in siw rdma_rxe veth 9p virtio_net "${load_mods[@]%\?}" "${ondemand_mods[@]}"; do
  modprobe -d "$ird" -S "$kver" --show-depends "$m" >/dev/null 2>&1 || [[ " ${load_mods[*]} " == *" $m? "* ]] \
    || die "module $m missing from the initramfs"
done

install -m 0755 "$here/init" "$ird/init"
install -m 0755 "$here/guest.sh" "$ird/bin/lab-guest"

mkdir -p "$out.tmp"
cp "$vmlinuz" "$out.tmp/vmlinuz"
(cd "$ird" && find . -print0 | cpio --null -o -H newc --quiet | gzip -1) >"$out.tmp/initrd.img"
cp "$siw_build/siw.ko" "$out.tmp/siw.ko"
mv "$work/src" "$out.tmp/src"
{
  echo "kernel $kver"
  echo "kernel file ${kname}: ${K[about]}"
  for d in "${debs[@]}"; do basename "$d"; done
  echo "build root $(basename "$root") (${K[compiler]}: $(in_root "x86_64-linux-gnu-${K[compiler]}" -dumpfullversion))"
  # The user space the guest runs (from the build root): what a bug report upstream asks for.
  userspace
  modinfo -F parm "$siw_build/siw.ko" | sed 's/^/siw parameter /'
} >"$out.tmp/manifest.txt"
printf '%s\n' "$kname" >"$out.tmp/kernel-name"
printf '%s\n' "${K[gate]}" >"$out.tmp/gate"
rm -rf "$out" && mv "$out.tmp" "$out"
touch "$out/ready"
for old in "$cache/lab-$kname"-*; do [[ $old == "$out" ]] || rm -rf "$old"; done
# Labs of the layout before kernel files (lab-HASH), never reused.
for old in "$cache"/lab-*; do [[ -f $old/kernel-name ]] || rm -rf "$old"; done
log "lab ready in $((SECONDS - t0)) s: $out"
echo "$out"
