#!/usr/bin/env bash
# The lab's guest as a device under test across a real link (docs/lab.md, "A
# device under test over SSH"): a network namespace of ours on this host
# holds a tap device, the guest's virtio-net NIC sits on it, and the guest's
# siw and rxe are reached over SSH (dropbear in the guest, a key made here).
#
#   interop/lab/dut-guest.sh start DIR [MINUTES]   boot it (at most MINUTES, default 60); DIR gets the key,
#                                                  ssh_config, the console and guest logs
#   interop/lab/dut-guest.sh restart DIR           a guest that stopped answering: power it off and boot it
#                                                  again (its console appended to the same log; the same
#                                                  deadline); what `lab run --dut-recover` runs here
#   interop/lab/dut-guest.sh stop DIR              power it off, remove the namespace
#   interop/lab/dut-guest.sh ns                    the namespace's name (run rdmaconf there)
#
# Addresses: the guest's eth0 192.0.2.1, the tap device (our side) 192.0.2.2.
# Nothing leaves the namespace: the tap device is its only link.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
ns=${RDMACONF_DUT_NS:-rdmaconf-dut}
guest_addr=192.0.2.1
our_addr=192.0.2.2
tap=tap0

die() { printf 'dut-guest: error: %s\n' "$*" >&2; exit 1; }
log() { printf 'dut-guest: %s\n' "$*" >&2; }

case "${1:-}" in
  ns) echo "$ns"; exit 0 ;;
  start|stop|restart) ;;
  *) die "usage: $0 start DIR [MINUTES] | restart DIR | stop DIR | ns" ;;
esac
dir=${2:?a folder}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)

# power_off SECONDS: qemu by the PID it wrote itself (-pidfile); the guest
# powers off on dut.stop, what does not within SECONDS is killed.
power_off() {
  touch "$dir/dut.stop"
  if [[ -f $dir/qemu.pid ]]; then
    local pid
    pid=$(cat "$dir/qemu.pid")
    for _ in $(seq 1 "$1"); do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
    kill -KILL "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    rm -f "$dir/qemu.pid"
  fi
}

if [[ $1 == stop ]]; then
  power_off 30
  ip netns del "$ns" 2>/dev/null || true
  log "stopped"
  exit 0
fi

lab=$(bash "$here/build.sh" | tail -n 1)
[[ -f $lab/vmlinuz ]] || die "the lab build gave no kernel ($lab)"

# boot SECONDS: starts qemu on the namespace's tap device for at most
# SECONDS, its console appended to console.log, and waits until the guest
# answers over SSH.
boot() {
  rm -f "$dir"/dut.ready "$dir"/dut.stop
  # tsc=reliable: see run_guest in interop/lab/lab.cpp.
  ip netns exec "$ns" timeout -k 10 "$1" qemu-system-x86_64 -accel tcg -smp 2 -m 1024 -nographic -no-reboot \
    -serial stdio -monitor none -kernel "$lab/vmlinuz" -initrd "$lab/initrd.img" \
    -append 'console=ttyS0 quiet panic=-1 tsc=reliable' \
    -netdev tap,id=n0,ifname="$tap",script=no,downscript=no -device virtio-net-pci,netdev=n0 \
    -fsdev local,id=share,path="$dir",security_model=none -device virtio-9p-pci,fsdev=share,mount_tag=share \
    -pidfile "$dir/qemu.pid" >>"$dir/console.log" 2>&1 </dev/null &
  local booting=$!
  for _ in $(seq 1 240); do
    if [[ -f $dir/dut.ready ]] &&
       ip netns exec "$ns" ssh -F "$dir/ssh_config" -o BatchMode=yes -o ConnectTimeout=5 "$guest_addr" true 2>/dev/null; then
      log "the guest answers over SSH at $guest_addr (namespace $ns, $tap $our_addr); kernel $(cat "$dir/kernel.txt" 2>/dev/null)"
      return 0
    fi
    kill -0 "$booting" 2>/dev/null || { tail -n 20 "$dir/console.log" >&2; die "the guest died while booting"; }
    sleep 1
  done
  tail -n 20 "$dir/console.log" >&2
  die "the guest did not answer over SSH within 240 s"
}

if [[ $1 == restart ]]; then
  [[ -f $dir/deadline && -f $dir/dut-key ]] || die "no guest was started in $dir"
  left=$(($(cat "$dir/deadline") - $(date +%s)))
  ((left > 60)) || die "the guest's time is up (its deadline was $(date -u -d "@$(cat "$dir/deadline")" +%T))"
  power_off 5
  printf '\n== rdmaconf: the guest restarted at %s ==\n' "$(date -u +%FT%TZ)" >>"$dir/console.log"
  log "restarting the guest"
  boot "$left"
  exit 0
fi

minutes=${3:-60}

# A key for this boot only; the guest takes its public half from the shared folder.
rm -f "$dir"/dut-key "$dir"/dut-key.pub "$dir"/guest.log "$dir"/console.log
ssh-keygen -q -t ed25519 -N '' -C rdmaconf-lab-dut -f "$dir/dut-key"
printf 'DUT_ADDR=%s\nDUT_PREFIX=24\n' "$guest_addr" >"$dir/dut.conf"
echo $(($(date +%s) + minutes * 60)) >"$dir/deadline"
cat >"$dir/ssh_config" <<EOF
Host $guest_addr
  User root
  IdentityFile $dir/dut-key
  IdentitiesOnly yes
  StrictHostKeyChecking no
  UserKnownHostsFile /dev/null
  LogLevel ERROR
EOF

ip netns del "$ns" 2>/dev/null || true
ip netns add "$ns"
ip netns exec "$ns" ip link set lo up
ip netns exec "$ns" ip tuntap add "$tap" mode tap
ip netns exec "$ns" ip addr add "$our_addr/24" dev "$tap"
ip netns exec "$ns" ip link set "$tap" up
boot $((minutes * 60))
