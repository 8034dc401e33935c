#!/bin/sh
# lab-dut PLAN: runs a lab plan on the test host against a device under test
# (docs/lab.md, "A device under test over SSH"). The plan is the one the
# guest runs (interop/lab/guest.sh implements the same functions): our side
# ("our") runs here, the device's side ("dut") through the DUT driver: SSH to
# DUT (user@host), or this host itself when DUT is "local".
#
# From rdmaconf lab run, in the environment:
#   DUT           user@host (ssh's own destination syntax), or local
#   DUT_SSH       the ssh client (default ssh); DUT_SSH_OPTS its options
#   OUT           the cells' folder on this host
#   DUT_INFO      the folder for what the device says of itself (device.txt) and the configure log
#   ENGINE        our rdmaconf executable
#   DUT_ADDR OUR_ADDR OUR_IFACE DUT_DEV DUT_GID_OPT   what the plan's lines name
#   CELL_TIMEOUT  seconds a device-side program may run (its deadline)
#   DUT_KERNEL_LOG  a device command whose output is the cell's kernel log (optional)
#   DUT_RECOVER   a command on this host that brings a lost device back (power
#                 cycle, restart; optional): run when the device stops answering,
#                 at most DUT_RECOVER_MAX times (default 3), each within
#                 DUT_RECOVER_TIMEOUT seconds (default 600)
#   DUT_CONSOLE   a file on this host that the device's console is written to
#                 (optional): what it printed in a cell that lost the device is
#                 kept as the cell's console.txt
#
# Everything started on the device runs in a process group of its own; its
# number is kept on the device (/tmp/rdmaconf-dut/CELL/NAME.pgid), and that
# group, never a program's name, is what is killed when the cell ends.
set -u
export PATH=/sbin:/bin:/usr/sbin:/usr/bin:$PATH
: "${DUT:?}" "${OUT:?}" "${ENGINE:?}" "${DUT_ADDR:?}" "${OUR_ADDR:?}" "${OUR_IFACE:?}"
DUT_SSH=${DUT_SSH:-ssh}
DUT_SSH_OPTS=${DUT_SSH_OPTS:-}
DUT_DEV=${DUT_DEV:-}
DUT_GID_OPT=${DUT_GID_OPT:-}
CELL_TIMEOUT=${CELL_TIMEOUT:-60}
DUT_INFO=${DUT_INFO:-$OUT}
DUT_RECOVER=${DUT_RECOVER:-}
DUT_RECOVER_MAX=${DUT_RECOVER_MAX:-3}
DUT_RECOVER_TIMEOUT=${DUT_RECOVER_TIMEOUT:-600}
DUT_CONSOLE=${DUT_CONSOLE:-}
RTOP=/tmp/rdmaconf-dut
DUT_DOWN=0  # the device could not be reached when the cell began: its steps are not tried
RECOVERED=0       # times DUT_RECOVER ran
RECOVERING=0      # 1 while a recovery makes the device's setting again
LAST_CONFIGURE=""  # the device's setting, made again after a recovery
CONSOLE_AT=0      # the console's size when the cell began
CELL=""
DIR=""
SERVERS=""

say() { echo "lab-dut: $*"; }

# A word for the device's shell, quoted.
q() {
  for a; do printf "'%s' " "$(printf '%s' "$a" | sed "s/'/'\\\\''/g")"; done
}

# dut_sh SECONDS SCRIPT: runs SCRIPT with the device's shell, the whole
# exchange bounded by SECONDS here; the exit status of SCRIPT (ssh: 255 when
# the connection failed).
dut_sh() {
  t=$1
  shift
  if [ "$DUT" = local ]; then
    timeout -s KILL "$t" sh -c "$1"
  else
    # shellcheck disable=SC2086
    timeout -s KILL "$t" "$DUT_SSH" $DUT_SSH_OPTS -o BatchMode=yes -o ServerAliveInterval=2 -o ServerAliveCountMax=3 \
      -o ConnectTimeout=10 -o ControlMaster=auto -o ControlPath=/tmp/rdmaconf-ssh-%C -o ControlPersist=30 \
      "$DUT" "$1" </dev/null
  fi
}

# The device-side runner: RUN PGIDFILE SECONDS CMD... runs CMD in a process
# group of its own (a new session unless the shell already leads one) whose
# number goes to PGIDFILE, and kills it after SECONDS.
RUNNER='#!/bin/sh
f=$1 t=$2
shift 2
set -- "$f" "$t" "$@"
pgrp=$(cut -d" " -f5 /proc/$$/stat)
if [ "$pgrp" != "$$" ] && [ -z "${RDMACONF_NEW_SESSION:-}" ]; then
  RDMACONF_NEW_SESSION=1 exec setsid "$0" "$@"
fi
shift 2
echo $$ >"$f"
exec timeout -s KILL "$t" "$@"'

# Puts the runner on the device; says who the device is (device.txt).
dut_begin() {
  if ! dut_sh 30 "mkdir -p $RTOP && cat >$RTOP/run <<'RDMACONF_EOF'
$RUNNER
RDMACONF_EOF
chmod +x $RTOP/run" >"$DUT_INFO/dut-begin.err" 2>&1; then
    say "cannot reach the device ($DUT): $(tail -n 1 "$DUT_INFO/dut-begin.err")"
    return 1
  fi
  dut_sh 30 "PATH=\$PATH:/sbin:/usr/sbin; echo kernel \$(uname -r); echo host \$(uname -n);
    d=/sys/class/infiniband/$DUT_DEV; [ -d \$d ] || exit 0
    echo fw_ver \$(cat \$d/fw_ver 2>/dev/null); echo hca_type \$(cat \$d/hca_type 2>/dev/null)
    echo node_desc \$(cat \$d/node_desc 2>/dev/null)
    [ -e \$d/device/driver ] && echo driver \$(basename \$(readlink \$d/device/driver))" >"$DUT_INFO/device.txt" 2>/dev/null
  return 0
}

# configure SCRIPT: sets the device's knobs (the profile's configure command).
# A device the setting leaves without its RDMA device (DUT_DEV), as a kernel
# an earlier run upset can, is recovered and configured once more.
configure() {
  LAST_CONFIGURE=$1
  say "configure: $1"
  dut_sh "$CELL_TIMEOUT" "PATH=\$PATH:/sbin:/usr/sbin; $1" >>"$DUT_INFO/configure.log" 2>&1 || {
    say "configuring the device failed: $1 (see $DUT_INFO/configure.log)"
    tail -n 3 "$DUT_INFO/configure.log"
  }
  # The device's RDMA name and description again: loading may have made it.
  dut_begin >/dev/null 2>&1
  [ -z "$DUT_DEV" ] || [ "$RECOVERING" = 1 ] && return 0
  if ! dut_sh 20 "[ -d /sys/class/infiniband/$DUT_DEV ]" >/dev/null 2>&1; then
    recover "after configure the device has no RDMA device $DUT_DEV" || true
  fi
}

# recover [WHY]: brings a device that stopped answering (or lost its RDMA
# device) back with DUT_RECOVER (at most DUT_RECOVER_MAX times in a plan),
# puts the runner on it again and gives it the setting it had. False when
# there is no way back.
recover() {
  [ "$DUT" != local ] && [ -n "$DUT_RECOVER" ] && [ "$RECOVERED" -lt "$DUT_RECOVER_MAX" ] || return 1
  RECOVERED=$((RECOVERED + 1))
  why=${1:-the device does not answer}
  say "$why; recovering it ($RECOVERED of at most $DUT_RECOVER_MAX): $DUT_RECOVER"
  t0=$(date +%s)
  echo "== recovery $RECOVERED before cell ${CELL:-(none)} ($why): $DUT_RECOVER" >>"$DUT_INFO/recover.log"
  if ! timeout -s KILL "$DUT_RECOVER_TIMEOUT" sh -c "$DUT_RECOVER" >>"$DUT_INFO/recover.log" 2>&1; then
    say "recovering the device failed (see $DUT_INFO/recover.log)"
    return 1
  fi
  # The command may return before the device is up (a power cycle): it has
  # the rest of DUT_RECOVER_TIMEOUT to answer.
  until dut_begin >/dev/null; do
    if [ $(($(date +%s) - t0)) -ge "$DUT_RECOVER_TIMEOUT" ]; then
      say "the device did not answer within $DUT_RECOVER_TIMEOUT s of its recovery"
      return 1
    fi
    sleep 5
  done
  RECOVERING=1
  [ -z "$LAST_CONFIGURE" ] || configure "$LAST_CONFIGURE"
  RECOVERING=0
  say "the device answers again after $(($(date +%s) - t0)) s"
  printf "\nrecovered after %s s\n" $(($(date +%s) - t0)) >>"$DUT_INFO/recover.log"
}

# What the device's console printed since the cell began (DUT_CONSOLE), its
# last 80 lines.
console_since_cell() {
  [ -n "$DUT_CONSOLE" ] && [ -f "$DUT_CONSOLE" ] || return 0
  tail -c +$((CONSOLE_AT + 1)) "$DUT_CONSOLE" | tr -d '\r' | tail -n 80
}

# A device-side program's end: exit status 255 with the connection gone
# names the connection as the cause (DIR/dut-error), and the cell goes red.
dut_ended() {
  name=$1 rc=$2
  [ "$DUT" = local ] && return 0
  [ "$rc" = 255 ] || [ "$rc" = 137 ] || return 0
  if ! dut_sh 15 true >/dev/null 2>&1; then
    echo "the SSH connection to $DUT dropped while $name ran: $(tail -n 1 "$DIR/$name.err" 2>/dev/null)" >>"$DIR/dut-error"
  fi
}

# cell ID [IFACE [FILTER]]: starts a cell: its folder here and on the device,
# and a capture of our interface (the plan's IFACE is the guest's) with the
# tcpdump FILTER (tcp; rxe cells: udp, or tcp for perftest's exchange),
# limited to the device's address and without SSH.
cell() {
  CELL=$1
  FILTER=${3:-tcp}
  [ "$FILTER" = udp ] && FILTER="udp or tcp"
  DIR=$OUT/$CELL
  SERVERS=""
  mkdir -p "$DIR"
  DUT_DOWN=0
  if ! dut_sh 20 "mkdir -p $RTOP/$CELL" >/dev/null 2>"$DIR/dut-mkdir.err" &&
     ! { recover && dut_sh 20 "mkdir -p $RTOP/$CELL" >/dev/null 2>"$DIR/dut-mkdir.err"; }; then
    echo "the device could not be reached when the cell began: $(tail -n 1 "$DIR/dut-mkdir.err")" >>"$DIR/dut-error"
    DUT_DOWN=1
  fi
  CONSOLE_AT=0
  [ -n "$DUT_CONSOLE" ] && [ -f "$DUT_CONSOLE" ] && CONSOLE_AT=$(wc -c <"$DUT_CONSOLE")
  tcpdump --immediate-mode -B 65536 -s 0 -U -n -i "$OUR_IFACE" -w "$DIR/wire.pcap" \
    "($FILTER) and host $DUT_ADDR and not port 22" 2>"$DIR/tcpdump.err" &
  TCPDUMP=$!
  i=0
  while ! grep -q "listening on" "$DIR/tcpdump.err" 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
  say "cell $CELL"
}

# The device-side command line of one program: the runner, its pgid file,
# the deadline, the command (each word quoted).
dut_line() {
  name=$1
  shift
  echo "PATH=\$PATH:/sbin:/usr/sbin; exec $RTOP/run $RTOP/$CELL/$name.pgid $CELL_TIMEOUT $(q "$@")"
}

# server NAME SIDE CMD...: starts CMD in the background (SIDE our: here; dut: on the device).
server() {
  name=$1 side=$2
  shift 2
  echo "$*" >"$DIR/$name.cmd"
  if [ "$side" = our ]; then
    # In a process group of its own (setsid: its PID is the group's), so
    # that finish kills the program with its deadline's timeout.
    (
      setsid timeout -s KILL "$CELL_TIMEOUT" "$@" >"$DIR/$name.out" 2>"$DIR/$name.err" &
      echo $! >"$DIR/$name.pid"
      wait $!
      echo $? >"$DIR/$name.rc"
    ) &
  elif [ $DUT_DOWN = 1 ]; then
    echo 255 >"$DIR/$name.rc"
  else
    line=$(dut_line "$name" "$@")
    (
      dut_sh $((CELL_TIMEOUT + 15)) "$line" >"$DIR/$name.out" 2>"$DIR/$name.err" &
      echo $! >"$DIR/$name.pid"
      wait $!
      rc=$?
      dut_ended "$name" "$rc"
      echo $rc >"$DIR/$name.rc"
    ) &
  fi
  SERVERS="$SERVERS $name:$side"
}

# client NAME SIDE CMD...: runs CMD and waits for it.
client() {
  name=$1 side=$2
  shift 2
  echo "$*" >"$DIR/$name.cmd"
  if [ "$side" = our ]; then
    timeout -s KILL "$CELL_TIMEOUT" "$@" >"$DIR/$name.out" 2>"$DIR/$name.err"
    rc=$?
  elif [ $DUT_DOWN = 1 ]; then
    rc=255
  else
    dut_sh $((CELL_TIMEOUT + 15)) "$(dut_line "$name" "$@")" >"$DIR/$name.out" 2>"$DIR/$name.err"
    rc=$?
    dut_ended "$name" "$rc"
  fi
  echo $rc >"$DIR/$name.rc"
}

# wait_listen SIDE PORT: until something listens on PORT (at most 10 s): a
# TCP socket, or (the device) an rdma_cm listener, which an RNIC that
# offloads TCP keeps out of the host's tables.
LISTEN_TCP='hex=$(printf %04X "$1"); awk -v p=":$hex" '"'"'$4 == "0A" && substr($2, length($2) - 4) == p { f = 1 } END { exit !f }'"'"' /proc/net/tcp /proc/net/tcp6 2>/dev/null'
LISTEN_RDMA='rdma res show cm_id 2>/dev/null | grep -q "LISTEN.*:$1\b"'
wait_listen() {
  if [ "$1" = our ]; then
    i=0
    while [ $i -lt 100 ]; do
      sh -c "$LISTEN_TCP" sh "$2" && return 0
      sleep 0.1
      i=$((i + 1))
    done
  elif [ $DUT_DOWN = 0 ]; then
    dut_sh 20 "PATH=\$PATH:/sbin:/usr/sbin; set -- $2; i=0; while [ \$i -lt 100 ]; do
      { $LISTEN_TCP; } && exit 0; { $LISTEN_RDMA; } && exit 0; sleep 0.1; i=\$((i + 1)); done; exit 1" && return 0
  fi
  say "nothing listens on port $2 ($1)"
  return 1
}
wait_rdma() { wait_listen "$@"; }

# port_counters NAME DEV: the port attributes of the device's RDMA device, as
# counters-NAME.txt. Only a read, so asked again (three tries a second apart)
# when nothing came back: in a CI run the read right after a fault cell's
# client ended came back empty with no error, on both attempts of the cell,
# and the next run read it at once. Each empty try is noted in
# counters-NAME.err with the exit status.
port_counters() {
  [ $DUT_DOWN = 1 ] && return 1
  for try in 1 2 3; do
    dut_sh 20 "PATH=\$PATH:/sbin:/usr/sbin; ibv_devinfo -v -d $(q "$2")" >"$DIR/counters-$1.txt" 2>&1
    rc=$?
    [ -s "$DIR/counters-$1.txt" ] && return 0
    echo "try $try: nothing read (exit status $rc)" >>"$DIR/counters-$1.err"
    [ $try = 3 ] || sleep 1
  done
  return 1
}

# alive PGID, on the device: whether a process of group PGID runs (not a zombie).
GROUP_ALIVE='alive() { g0=$1; for p in /proc/[0-9]*/stat; do s=$(cat "$p" 2>/dev/null) || continue;
  s=${s##*") "}; set -- $s; [ "$3" = "$g0" ] || continue; [ "$1" = Z ] || return 0; done; return 1; }'

# finish GRACE: waits up to GRACE seconds for the servers (they end with
# their client), kills what is left by its process group (on the device: the
# group the runner made), checks that nothing of the cell still runs there,
# stops the capture and collects the device's kernel log.
finish() {
  grace=${1:-30}
  i=0
  while [ $i -lt $((grace * 10)) ]; do
    all=1
    for s in $SERVERS; do [ -e "$DIR/${s%%:*}.rc" ] || all=0; done
    [ $all = 1 ] && break
    sleep 0.1
    i=$((i + 1))
  done
  for s in $SERVERS; do
    n=${s%%:*} side=${s#*:}
    [ -e "$DIR/$n.rc" ] && continue
    killed="${killed:-} $n"
    if [ "$side" != our ]; then
      dut_sh 20 "g=\$(cat $RTOP/$CELL/$n.pgid 2>/dev/null) && kill -9 -\$g 2>/dev/null; true" >/dev/null 2>&1
    fi
    pid=$(cat "$DIR/$n.pid")
    if [ "$side" = our ]; then kill -KILL "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null; else kill -KILL "$pid" 2>/dev/null; fi
  done
  # Nothing of the cell may outlive it on the device: no process of the
  # groups it started (zombies aside) may remain.
  left=""
  [ $DUT_DOWN = 0 ] && left=$(dut_sh 20 "$GROUP_ALIVE
    for f in $RTOP/$CELL/*.pgid; do [ -e \"\$f\" ] || continue; g=\$(cat \"\$f\");
      alive \$g || continue; sleep 1; kill -9 -\$g 2>/dev/null; sleep 0.5
      alive \$g && echo \"\$(basename \$f .pgid) (process group \$g)\"; done" 2>/dev/null)
  [ -n "$left" ] && echo "still running on the device after the cell: $left" >>"$DIR/dut-error"
  sleep 0.3
  kill -INT "$TCPDUMP" 2>/dev/null
  wait
  # Said once every writer of the program's stderr is gone.
  for n in ${killed:-}; do echo "killed after ${grace} s" >>"$DIR/$n.err"; done
  killed=""
  # A device that answered when the cell began and no longer does went down
  # in this cell: said here, with what its console printed (the next cell
  # or the next plan recovers it). Asked twice, a second apart: one SSH
  # session can fail (status 255, nothing said) while the device answers the
  # next, as a counter read showed (port_counters).
  if [ "$DUT" != local ] && [ $DUT_DOWN = 0 ] && ! dut_sh 15 true >/dev/null 2>"$DIR/dut-alive.err" &&
    ! { sleep 1; dut_sh 15 true >/dev/null 2>>"$DIR/dut-alive.err"; }; then
    sleep 1
    console_since_cell >"$DIR/console.txt"
    panic=$(grep -m 1 -E 'Kernel panic|BUG: |Oops|general protection fault|watchdog: ' "$DIR/console.txt" | sed 's/^\[[^]]*\] *//')
    echo "the device stopped answering during the cell: $(tail -n 1 "$DIR/dut-alive.err")${panic:+; its console: $panic}" >>"$DIR/dut-error"
    DUT_DOWN=1
  fi
  if [ -n "${DUT_KERNEL_LOG:-}" ] && [ $DUT_DOWN = 0 ]; then
    dut_sh 20 "PATH=\$PATH:/sbin:/usr/sbin; $DUT_KERNEL_LOG" >"$DIR/dmesg.txt" 2>/dev/null
  fi
  echo done >"$DIR/finished"
}

dut_begin || recover || exit 3
. "$1"
