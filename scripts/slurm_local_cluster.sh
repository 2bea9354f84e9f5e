#!/usr/bin/env bash
# A one-node SLURM cluster on loopback, for tests and for trying profiles/slurm locally.
#
#   bash scripts/slurm_local_cluster.sh up      # install (Debian) if missing, configure, start
#   bash scripts/slurm_local_cluster.sh status  # exit 0 when the node is up and idle/mixed
#   bash scripts/slurm_local_cluster.sh down    # stop only the daemons `up` started
#
# Two partitions on the one node: `cpu` (default) and `gpu`; the GPU is fake (a GRES backed by
# /dev/null), enough for the scheduler to route and account GPU requests. Needs root (apt,
# daemons, /etc/slurm). No cgroups, no slurmdbd: see docs/cluster.md.
#
# `up` refuses to touch a slurm.conf it did not write, and never stops a daemon it did not
# start: pids of the daemons it started are kept in $STATE_DIR and checked before each kill.
set -euo pipefail

STATE_DIR=${PERSONALIR_SLURM_STATE:-/run/personalir-slurm}
VAR_DIR=/var/lib/personalir-slurm
LOG_DIR=/var/log/personalir-slurm
CONF_DIR=/etc/slurm  # fixed: the jobstep plugin strips SLURM_CONF before its inner srun
CONF=$CONF_DIR/slurm.conf
MARK="# Written by personalir scripts/slurm_local_cluster.sh"
PACKAGES=(slurmctld slurmd slurm-client munge)

log() { echo "[slurm-local] $*" >&2; }
die() { log "ERROR: $*"; exit 1; }

need_root() { [ "$(id -u)" = 0 ] || die "needs root (apt-get, daemons, $CONF_DIR)"; }

install_packages() {
  local missing=()
  for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" \
      || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  command -v apt-get >/dev/null || die "apt-get not found; install ${missing[*]} by hand"
  log "installing ${missing[*]} (Debian packages)"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" \
    >/dev/null
  # The packages enable systemd units; there is no systemd here, and we start daemons ourselves.
}

# A pid we recorded, still alive and still the program we started.
our_pid() {
  local name=$1 file=$STATE_DIR/$1.pid pid
  [ -f "$file" ] || return 1
  pid=$(cat "$file")
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 1
  [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$name" ] || return 1
  echo "$pid"
}

write_config() {
  if [ -f "$CONF" ] && ! grep -qF "$MARK" "$CONF"; then
    die "$CONF exists and was not written by this script: refusing to overwrite a real cluster"
  fi
  local cpus mem_mb
  cpus=$(nproc)
  # Leave headroom: slurmd drains a node whose configured memory exceeds what it finds.
  mem_mb=$(awk '/MemTotal/ {printf "%d", $2 / 1024 * 0.8}' /proc/meminfo)
  mkdir -p "$CONF_DIR" "$VAR_DIR/ctld" "$VAR_DIR/d" "$LOG_DIR" "$STATE_DIR"
  cat >"$CONF" <<EOF
$MARK (one node on loopback; 'down' leaves this file, 'up' rewrites it)
ClusterName=personalir-local
SlurmctldHost=localhost(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CommunicationParameters=NoInAddrAny
StateSaveLocation=$VAR_DIR/ctld
SlurmdSpoolDir=$VAR_DIR/d
SlurmctldPidFile=$STATE_DIR/slurmctld.pid
SlurmdPidFile=$STATE_DIR/slurmd.pid
SlurmctldLogFile=$LOG_DIR/slurmctld.log
SlurmdLogFile=$LOG_DIR/slurmd.log
# No cgroups in containers: plain process tracking, no task confinement.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=1000
SchedulerType=sched/backfill
# No slurmdbd: job status comes from squeue, which needs finished jobs kept for a while.
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
MinJobAge=600
MailProg=/bin/true
MpiDefault=none
ReturnToService=2
SlurmctldTimeout=30
SlurmdTimeout=30
GresTypes=gpu
NodeName=localhost NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem_mb Gres=gpu:fake:1 State=UNKNOWN
PartitionName=cpu Nodes=localhost Default=YES MaxTime=INFINITE State=UP
PartitionName=gpu Nodes=localhost Default=NO MaxTime=INFINITE State=UP
EOF
  cat >"$CONF_DIR/gres.conf" <<EOF
$MARK
# A fake GPU: without File= the node drains.
NodeName=localhost Name=gpu Type=fake File=/dev/null
EOF
}

start_munge() {
  if munge -n </dev/null 2>/dev/null | unmunge >/dev/null 2>&1; then
    log "munged already running (not ours to stop)"
    return 0
  fi
  [ -s /etc/munge/munge.key ] || die "/etc/munge/munge.key missing (reinstall munge)"
  mkdir -p /run/munge /var/lib/munge /var/log/munge
  chown munge:munge /run/munge /var/lib/munge /var/log/munge /etc/munge/munge.key
  chmod 0755 /run/munge
  chmod 0400 /etc/munge/munge.key
  # munged refuses to run as root; it must own /run/munge.
  runuser -u munge -- /usr/sbin/munged
  for _ in $(seq 50); do
    [ -s /run/munge/munged.pid ] && break
    sleep 0.1
  done
  cp /run/munge/munged.pid "$STATE_DIR/munged.pid"
  log "munged started (pid $(cat "$STATE_DIR/munged.pid"))"
}

wait_node_ready() {
  local state=""
  for _ in $(seq 60); do
    state=$(sinfo -h -N -n localhost -o %T 2>/dev/null | head -1 || true)
    case "$state" in
      idle | mixed | allocated) log "node localhost is $state"; return 0 ;;
    esac
    sleep 0.5
  done
  die "node did not come up (state '${state:-none}'); see $LOG_DIR/*.log"
}

cmd_up() {
  need_root
  install_packages
  mkdir -p "$STATE_DIR"
  if our_pid slurmctld >/dev/null && our_pid slurmd >/dev/null; then
    log "already up (started earlier by this script)"
    wait_node_ready
    return 0
  fi
  write_config
  start_munge
  if ! our_pid slurmctld >/dev/null; then
    # -i: ignore saved state (a fresh cluster each time).
    /usr/sbin/slurmctld -i
  fi
  if ! our_pid slurmd >/dev/null; then
    /usr/sbin/slurmd -N localhost
  fi
  for _ in $(seq 50); do
    our_pid slurmctld >/dev/null && our_pid slurmd >/dev/null && break
    sleep 0.1
  done
  our_pid slurmctld >/dev/null || die "slurmctld did not start; see $LOG_DIR/slurmctld.log"
  our_pid slurmd >/dev/null || die "slurmd did not start; see $LOG_DIR/slurmd.log"
  # A node left DOWN/DRAIN by an earlier run comes back.
  scontrol update nodename=localhost state=resume >/dev/null 2>&1 || true
  wait_node_ready
}

cmd_down() {
  need_root
  local name pid
  for name in slurmd slurmctld munged; do
    if pid=$(our_pid "$name"); then
      kill "$pid"
      for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -0 "$pid" 2>/dev/null && kill -9 "$pid"
      log "stopped $name (pid $pid)"
    fi
    rm -f "$STATE_DIR/$name.pid"
  done
}

cmd_status() {
  our_pid slurmctld >/dev/null || { log "slurmctld not running (started by this script)"; exit 1; }
  our_pid slurmd >/dev/null || { log "slurmd not running (started by this script)"; exit 1; }
  sinfo
}

case "${1:-}" in
  up) cmd_up ;;
  down) cmd_down ;;
  status) cmd_status ;;
  *) echo "usage: $0 up|down|status" >&2; exit 2 ;;
esac
