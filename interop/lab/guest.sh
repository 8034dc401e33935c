#!/bin/sh
# lab-guest PLAN: runs a lab plan inside the guest. The plan is a shell script
# written by `rdmaconf lab run`; it calls the functions below.
# lab-guest --dut CONF: the guest as a device under test (docs/lab.md, "A
# device under test over SSH"): its virtio-net NIC eth0 gets the address CONF
# names, sshd (dropbear) takes the key CONF's folder holds, and the guest
# waits for the host; the host runs the cells (interop/lab/dut.sh).
# lab-guest --call FUNCTION ARGS...: one function below, over SSH (siw_load,
# rxe_load: the device profiles' configure commands).
#
# Topology: veth0 (192.0.2.1, the initial namespace, where siw/rxe devices
# attach) <-> veth1 (192.0.2.2, namespace "eng", where our engine runs); for
# siw against siw, veth2 (192.0.2.3) <-> veth3 (192.0.2.4), both in the
# initial namespace. Every cell is captured by tcpdump (veth0 unless named).
set -u
export PATH=/sbin:/bin:/usr/sbin:/usr/bin
OUT=/share/cells
ENGINE="/share/engine/ld-linux-x86-64.so.2 --library-path /share/engine /share/engine/rdmaconf"
CELL=""
DIR=""
SERVERS=""
# What the plan's lines name: the device's address, ours, the RDMA device
# (set when siw or rxe is loaded) and perftest's GID option (none here).
DUT_ADDR=192.0.2.1
OUR_ADDR=192.0.2.2
DUT_DEV=""
DUT_GID_OPT=""
DUT_NETDEV=veth0

say() { echo "lab-guest: $*"; }

# The RDMA stack of this kernel, as its kernel file names it (build.sh wrote
# /etc/lab-modules); a name ending in ? is loaded where it can be.
modules() {
  while read -r m; do
    case $m in
      *\?) modprobe "${m%\?}" 2>/dev/null ;;
      *) modprobe "$m" || say "modprobe $m failed" ;;
    esac
  done </etc/lab-modules
  mount -t configfs none /sys/kernel/config 2>/dev/null
  /usr/sbin/ip link set lo up
}

setup() {
  modules
  /usr/sbin/ip link add veth0 type veth peer name veth1
  /usr/sbin/ip netns add eng
  /usr/sbin/ip link set veth1 netns eng
  /usr/sbin/ip addr add 192.0.2.1/24 dev veth0
  /usr/sbin/ip link set veth0 up
  /usr/sbin/ip netns exec eng /usr/sbin/ip addr add 192.0.2.2/24 dev veth1
  /usr/sbin/ip netns exec eng /usr/sbin/ip link set veth1 up
  /usr/sbin/ip netns exec eng /usr/sbin/ip link set lo up
  mkdir -p "$OUT"
  uname -r >/share/kernel.txt
  # Our engine from the guest's memory rather than the shared folder: loaded
  # over 9p (no page cache) it took 1.2 s more of each cell under TCG (an
  # engine cell 1.6-2.4 s against 0.3-0.9 s, ten cells measured).
  if [ -d /share/engine ] && cp -r /share/engine /tmp/engine; then
    ENGINE="/tmp/engine/ld-linux-x86-64.so.2 --library-path /tmp/engine /tmp/engine/rdmaconf"
  fi
}

# A second veth pair with both ends in the initial namespace, for siw
# against siw: siw1 on veth2 (192.0.2.3) and siw2 on veth3 (192.0.2.4). Policy
# routing sends traffic between the two addresses across the pair instead
# of through lo (no rule uses "iif lo": rdma_cm would reject the connection).
pair_setup() {
  /usr/sbin/ip link add veth2 type veth peer name veth3
  /usr/sbin/ip addr add 192.0.2.3/32 dev veth2
  /usr/sbin/ip addr add 192.0.2.4/32 dev veth3
  /usr/sbin/ip link set veth2 up
  /usr/sbin/ip link set veth3 up
  for i in all default veth2 veth3; do
    echo 1 >/proc/sys/net/ipv4/conf/$i/accept_local
    echo 0 >/proc/sys/net/ipv4/conf/$i/rp_filter
  done
  /usr/sbin/ip rule add pref 1000 lookup local
  /usr/sbin/ip rule del pref 0 lookup local
  /usr/sbin/ip rule add pref 10 iif veth2 lookup local
  /usr/sbin/ip rule add pref 10 iif veth3 lookup local
  /usr/sbin/ip rule add pref 20 to 192.0.2.4 lookup 24
  /usr/sbin/ip rule add pref 20 to 192.0.2.3 lookup 23
  /usr/sbin/ip route add 192.0.2.4 dev veth2 src 192.0.2.3 table 24
  /usr/sbin/ip route add 192.0.2.3 dev veth3 src 192.0.2.4 table 23
}

# siw_load CRC_REQUIRED CRC_STRICT MPA_VERSION PEER_TO_PEER TRY_GSO: siw0 on
# veth0 (as a device under test, on eth0), siw1 and siw2 on veth2 and veth3.
siw_load() {
  for d in siw0 siw1 siw2 rxe0 rxe1 rxe2; do rdma link delete $d 2>/dev/null; done
  rmmod siw 2>/dev/null
  if ! modprobe siw mpa_crc_required="$1" mpa_crc_strict="$2" mpa_version="$3" peer_to_peer="$4" try_gso="$5"; then
    say "modprobe siw $* failed"
    return 1
  fi
  rdma link add siw0 type siw netdev "$DUT_NETDEV" || { say "rdma link add siw0 failed"; return 1; }
  DUT_DEV=siw0
  if [ -e /sys/class/net/veth2 ]; then
    rdma link add siw1 type siw netdev veth2 || { say "rdma link add siw1 failed"; return 1; }
    rdma link add siw2 type siw netdev veth3 || { say "rdma link add siw2 failed"; return 1; }
  fi
  SIW_PARAMS="mpa_crc_required=$1 mpa_crc_strict=$2 mpa_version=$3 peer_to_peer=$4 try_gso=$5"
  say "siw loaded: $SIW_PARAMS"
}

# rxe_load: rxe1 on veth2 and rxe2 on veth3 (RoCEv2 between 192.0.2.3 and
# 192.0.2.4), and rxe0 on veth0 (192.0.2.1, facing our engine in namespace
# eng; as a device under test, on eth0), in place of any siw device (one RDMA
# device per address).
rxe_load() {
  for d in siw0 siw1 siw2 rxe0 rxe1 rxe2; do rdma link delete $d 2>/dev/null; done
  modprobe rdma_rxe || { say "modprobe rdma_rxe failed"; return 1; }
  if [ -e /sys/class/net/veth2 ]; then
    rdma link add rxe1 type rxe netdev veth2 || { say "rdma link add rxe1 failed"; return 1; }
    rdma link add rxe2 type rxe netdev veth3 || { say "rdma link add rxe2 failed"; return 1; }
  fi
  rdma link add rxe0 type rxe netdev "$DUT_NETDEV" || { say "rdma link add rxe0 failed"; return 1; }
  DUT_DEV=rxe0
  SIW_PARAMS=""
  say "rxe loaded on veth2 and veth3"
}

# cell ID [IFACE [FILTER]]: starts a cell: its folder and a capture of IFACE
# (veth0) with the tcpdump FILTER (tcp; rxe cells: udp, or tcp for perftest's exchange).
cell() {
  CELL=$1
  CAPIF=${2:-veth0}
  FILTER=${3:-tcp}
  [ "$FILTER" = udp ] && FILTER="udp or tcp"
  DIR=$OUT/$CELL
  SERVERS=""
  mkdir -p "$DIR"
  echo "${SIW_PARAMS:-}" >"$DIR/siw-params"
  tcpdump --immediate-mode -B 65536 -s 0 -U -n -i "$CAPIF" -w "/tmp/$CELL.pcap" $FILTER 2>"$DIR/tcpdump.err" &
  TCPDUMP=$!
  i=0
  while ! grep -q "listening on" "$DIR/tcpdump.err" 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
  say "cell $CELL"
}

# in SIDE CMD...: runs CMD on SIDE (dut: the initial namespace; our: namespace eng).
in_side() {
  side=$1
  shift
  if [ "$side" = our ]; then /usr/sbin/ip netns exec eng "$@"; else "$@"; fi
}

# server NAME SIDE CMD...: starts CMD in the background.
server() {
  name=$1 side=$2
  shift 2
  echo "$*" >"$DIR/$name.cmd"
  (
    in_side "$side" timeout -s KILL "${CELL_TIMEOUT:-60}" "$@" >"$DIR/$name.out" 2>"$DIR/$name.err" &
    echo $! >"$DIR/$name.pid"
    wait $!
    echo $? >"$DIR/$name.rc"
  ) &
  SERVERS="$SERVERS $name"
}

# client NAME SIDE CMD...: runs CMD and waits for it.
#
# Between two kernel peers only (the cell's server is the kernel side's
# program, "srv", and still running): perftest's client, refused by an
# rdma_cm listener that is still setting up, dies in librdmacm's retry path
# (SIGSEGV, docs/lab.md). It is run once more after a pause, provided the
# kernel logged nothing but that user-space fault; the first attempt's
# output and log stay in the cell's folder (*.first) and the guest log says so.
client() {
  name=$1 side=$2
  shift 2
  echo "$*" >"$DIR/$name.cmd"
  in_side "$side" timeout -s KILL "${CELL_TIMEOUT:-60}" "$@" >"$DIR/$name.out" 2>"$DIR/$name.err"
  rc=$?
  case " $SERVERS " in *" srv "*) kernel_pair=1 ;; *) kernel_pair=0 ;; esac
  if [ $rc = 139 ] && [ $kernel_pair = 1 ] && [ ! -e "$DIR/srv.rc" ] &&
     grep -q "Failed to connect through RDMA CM" "$DIR/$name.err" &&
     ! dmesg | grep -q -e "kernel BUG" -e "Oops" -e "WARNING: CPU" -e "BUG: "; then
    say "cell $CELL: the perftest client died after a refused rdma_cm connect; running it once more"
    mv "$DIR/$name.out" "$DIR/$name.out.first"
    mv "$DIR/$name.err" "$DIR/$name.err.first"
    dmesg -c >"$DIR/dmesg.first.txt" 2>/dev/null
    sleep 1
    in_side "$side" timeout -s KILL "${CELL_TIMEOUT:-60}" "$@" >"$DIR/$name.out" 2>"$DIR/$name.err"
    rc=$?
  fi
  echo $rc >"$DIR/$name.rc"
}

# wait_listen SIDE PORT: until something listens on TCP PORT (at most 10 s).
# wait_rdma SIDE PORT: waits until an rdma_cm listener on PORT shows (rxe
# listens without a TCP socket), at most 3 s.
wait_rdma() {
  i=0
  while [ $i -lt 30 ]; do
    rdma res show cm_id 2>/dev/null | grep -q "LISTEN.*:$2\b" && return 0
    sleep 0.1
    i=$((i + 1))
  done
  say "no rdma_cm listener seen on port $2; going on"
  return 0
}

wait_listen() {
  hex=$(printf '%04X' "$2")
  i=0
  while [ $i -lt 100 ]; do
    if in_side "$1" cat /proc/net/tcp | awk -v p=":$hex" '$4 == "0A" && substr($2, length($2) - 4) == p { f = 1 } END { exit !f }'; then
      return 0
    fi
    sleep 0.1
    i=$((i + 1))
  done
  say "nothing listens on port $2 ($1)"
  return 1
}

# port_counters NAME DEV: the port attributes of RDMA device DEV, with its
# bad P_Key and Q_Key violation counters, as counters-NAME.txt.
port_counters() {
  ibv_devinfo -v -d "$2" >"$DIR/counters-$1.txt" 2>&1
}

# finish GRACE: waits up to GRACE seconds for the servers (they end with
# their client), kills what is left, stops the capture and copies it out.
finish() {
  grace=${1:-30}
  i=0
  while [ $i -lt $((grace * 10)) ]; do
    all=1
    for n in $SERVERS; do [ -e "$DIR/$n.rc" ] || all=0; done
    [ $all = 1 ] && break
    sleep 0.1
    i=$((i + 1))
  done
  for n in $SERVERS; do
    [ -e "$DIR/$n.rc" ] || { echo "killed after ${grace} s" >>"$DIR/$n.err"; kill -KILL "$(cat "$DIR/$n.pid")" 2>/dev/null; }
  done
  sleep 0.3
  kill -INT "$TCPDUMP" 2>/dev/null
  wait
  cp "/tmp/$CELL.pcap" "$DIR/wire.pcap" 2>/dev/null
  rm -f "/tmp/$CELL.pcap"
  dmesg -c >"$DIR/dmesg.txt" 2>/dev/null
  echo done >"$DIR/finished"
}

# The guest as a device under test: eth0 gets DUT_ADDR (CONF sets it and
# DUT_PREFIX), dropbear takes the public key CONF's folder holds
# (dut-key.pub); the guest says it is ready and waits for dut.stop there.
dut_serve() {
  conf=$1
  share=$(dirname "$conf")
  . "$conf"
  modules
  modprobe virtio_net || say "modprobe virtio_net failed"
  DUT_NETDEV=eth0
  cp "$conf" /etc/lab-dut.conf
  /usr/sbin/ip addr add "$DUT_ADDR/${DUT_PREFIX:-24}" dev eth0
  /usr/sbin/ip link set eth0 up
  mkdir -p /root/.ssh /etc/dropbear
  chmod 700 /root /root/.ssh
  cp "$share/dut-key.pub" /root/.ssh/authorized_keys
  chmod 600 /root/.ssh/authorized_keys
  echo /bin/sh >/etc/shells
  uname -r >"$share/kernel.txt"
  dmesg -c >"$share/dmesg-boot.txt" 2>/dev/null
  /usr/sbin/dropbear -R -F -E -s -p 22 2>"$share/dropbear.log" &
  say "device under test on eth0 ($DUT_ADDR); sshd started"
  echo ready >"$share/dut.ready"
  while [ ! -e "$share/dut.stop" ]; do sleep 1; done
  say "stop asked; powering off"
}

case "${1:-}" in
  --dut) dut_serve "$2" ;;
  --call)
    shift
    [ -e /etc/lab-dut.conf ] && . /etc/lab-dut.conf && DUT_NETDEV=eth0
    "$@"
    ;;
  *)
    setup
    pair_setup
    dmesg -c >/share/dmesg-boot.txt 2>/dev/null
    . "$1"
    ;;
esac
