#!/usr/bin/env bash
# A 3-node MariaDB Galera cluster on loopback, for hierlock's Galera tests
# (tests/tests/galera). Run as root (the nodes run as mysql); never touches
# other servers (3306-3310 are taken by the shared and replica servers).
#
#   tests/clusters/galera.sh start            # idempotent; waits until all 3 nodes are synced
#   tests/clusters/galera.sh stop             # kills the nodes (data is rebuilt by the next start)
#   tests/clusters/galera.sh status           # wsrep state of each node; exit 1 unless all synced
#   tests/clusters/galera.sh restart-node N   # (kill and) join node N (1-3) again, by SST
#
# Node N (1..3): SQL on 127.0.0.1:3320/3321/3322, gcomm 4567/4577/4587, IST
# 4568/4578/4588, SST (rsync) 4569/4579/4589; its config, socket, pid file and log under
# /var/tmp/hierlock-galera/nodeN/, its data in .../nodeN/data. Node 1 is
# bootstrapped with --wsrep-new-cluster, nodes 2 and 3 join by SST.
set -euo pipefail

ROOT=/var/tmp/hierlock-galera
NODES=(1 2 3)
TIMEOUT=${HIERLOCK_GALERA_TIMEOUT:-120} # seconds, for the whole start

sql_port() { echo $((3319 + $1)); }
gcomm_port() { echo $((4557 + 10 * $1)); }
ist_port() { echo $((4558 + 10 * $1)); }
sst_port() { echo $((4559 + 10 * $1)); }
dir() { echo "$ROOT/node$1"; }

die() {
    echo "galera.sh: $*" >&2
    exit 1
}

ensure_packages() {
    local missing=()
    [ -x /usr/sbin/mariadbd ] || missing+=(mariadb-server)
    [ -f /usr/lib/galera/libgalera_smm.so ] || missing+=(galera-4)
    command -v rsync >/dev/null || missing+=(rsync)
    command -v ss >/dev/null || command -v lsof >/dev/null || missing+=(iproute2)
    [ ${#missing[@]} -eq 0 ] && return 0
    echo "galera.sh: installing ${missing[*]}" >&2
    DEBIAN_FRONTEND=noninteractive apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
}

# The node's own option file: mariadbd and the SST script both read it.
write_config() { # N
    local n=$1 d cluster
    d=$(dir "$n")
    cluster="gcomm://127.0.0.1:$(gcomm_port 1),127.0.0.1:$(gcomm_port 2),127.0.0.1:$(gcomm_port 3)"
    mkdir -p "$d/data"
    chown mysql:mysql "$ROOT" "$d" "$d/data"
    cat >"$d/my.cnf" <<EOF
[mysqld]
# Not root: the rsync SST daemon a joiner runs would then drop to "nobody"
# and could not write the data dir.
user = mysql
bind-address = 127.0.0.1
port = $(sql_port "$n")
socket = $d/mariadbd.sock
pid-file = $d/mariadbd.pid
log-error = $d/node.log
datadir = $d/data
tmpdir = /tmp
skip-name-resolve
# Small and fast: a test cluster, not a durable one.
innodb_buffer_pool_size = 64M
innodb_log_file_size = 16M
innodb_flush_log_at_trx_commit = 2
performance_schema = OFF
binlog_format = ROW
default_storage_engine = InnoDB
innodb_autoinc_lock_mode = 2
wsrep_on = ON
wsrep_provider = /usr/lib/galera/libgalera_smm.so
wsrep_cluster_name = hierlock-galera
wsrep_cluster_address = $cluster
wsrep_node_name = node$n
wsrep_node_address = 127.0.0.1:$(gcomm_port "$n")
wsrep_node_incoming_address = 127.0.0.1:$(sql_port "$n")
wsrep_sst_method = rsync
wsrep_sst_receive_address = 127.0.0.1:$(sst_port "$n")
# A dead node is evicted after ~3 s instead of ~5-6 s.
wsrep_provider_options = "gmcast.listen_addr=tcp://127.0.0.1:$(gcomm_port "$n");ist.recv_addr=127.0.0.1:$(ist_port "$n");gcache.size=32M;evs.keepalive_period=PT0.5S;evs.suspect_timeout=PT2S;evs.inactive_timeout=PT3S"

[client]
socket = $d/mariadbd.sock
EOF
}

running() { # PID: alive, not a zombie
    local state
    state=$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null) && [ -n "$state" ] && [ "$state" != Z ]
}

pid_of() { # N: the running mariadbd's pid, or nothing
    local f pid
    f="$(dir "$1")/mariadbd.pid"
    [ -s "$f" ] || return 1
    pid=$(cat "$f")
    running "$pid" && grep -q mariadbd "/proc/$pid/comm" 2>/dev/null && echo "$pid"
}

client() { # N SQL...
    local n=$1
    shift
    mariadb --defaults-file="$(dir "$n")/my.cnf" -uroot -N -B --connect-timeout=2 -e "$*" 2>/dev/null
}

status_var() { # N VAR
    client "$1" "SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = '$2'"
}

synced() { # N: the node is in a 3-node primary component and takes queries
    [ "$(status_var "$1" WSREP_CLUSTER_SIZE)" = 3 ] &&
        [ "$(status_var "$1" WSREP_READY)" = ON ] &&
        [ "$(status_var "$1" WSREP_LOCAL_STATE_COMMENT)" = Synced ]
}

all_synced() {
    local n
    for n in "${NODES[@]}"; do synced "$n" || return 1; done
}

launch() { # N [extra mariadbd options]
    local n=$1
    shift
    write_config "$n"
    rm -f "$(dir "$n")/mariadbd.pid"
    setsid /usr/sbin/mariadbd --defaults-file="$(dir "$n")/my.cnf" "$@" \
        </dev/null >>"$(dir "$n")/node.log" 2>&1 9>&- &
    LAUNCHED[$n]=$!
}

declare -A LAUNCHED=() # node -> pid of a mariadbd this run started

launched_alive() { # every node this run started is still running
    local n
    for n in "${!LAUNCHED[@]}"; do
        running "${LAUNCHED[$n]}" || { echo "galera.sh: node $n exited" >&2; return 1; }
    done
}

wait_until() { # deadline(epoch s) what command...: 1 (after printing the logs) if it never holds
    local deadline=$1 what=$2
    shift 2
    until "$@"; do
        if ! launched_alive || [ "$(date +%s)" -ge "$deadline" ]; then
            echo "galera.sh: gave up waiting for $what" >&2
            show_logs
            return 1
        fi
        sleep 0.5
    done
}

show_logs() {
    local n
    for n in "${NODES[@]}"; do
        echo "===== node $n ($(dir "$n")/node.log) =====" >&2
        tail -n 60 "$(dir "$n")/node.log" >&2 2>/dev/null || true
    done
}

kill_node() { # N: SIGKILL, then wait for the process to go
    local pid
    pid=$(pid_of "$1") || return 0
    kill -9 "$pid" 2>/dev/null || true
    while running "$pid"; do sleep 0.1; done
    rm -f "$(dir "$1")/mariadbd.pid" "$(dir "$1")/mariadbd.sock"
}

# Join node N to the running cluster with a fresh data dir (a full SST).
join() { # N
    local n=$1
    rm -rf "$(dir "$n")/data"
    launch "$n"
}

answers() { # N: the node answers queries in a primary component
    [ "$(status_var "$1" WSREP_CLUSTER_STATUS)" = Primary ] && [ "$(status_var "$1" WSREP_READY)" = ON ]
}

primary_node() { # a node that answers in a primary component, if any
    local n
    for n in "${NODES[@]}"; do
        answers "$n" && echo "$n" && return 0
    done
    return 1
}

# The survivors have evicted every node that is gone: a node that joins
# while its dead predecessor is still suspected can leave them non-primary.
evicted() { # N...: the nodes that are gone
    local n up=()
    for n in "${NODES[@]}"; do
        [[ " $* " == *" $n "* ]] || up+=("$n")
    done
    [ "$(status_var "${up[0]}" WSREP_CLUSTER_SIZE)" = "${#up[@]}" ]
}

# Bring back the nodes that do not answer, by SST from the survivors.
repair() { # deadline
    local deadline=$1 n gone=()
    for n in "${NODES[@]}"; do
        answers "$n" || gone+=("$n")
    done
    for n in "${gone[@]}"; do kill_node "$n"; done
    wait_until "$deadline" "the survivors to evict node(s) ${gone[*]}" evicted "${gone[@]}" || return 1
    for n in "${gone[@]}"; do
        join "$n"
        wait_until "$deadline" "node $n to join" \
            eval "[ \"\$(status_var $n WSREP_LOCAL_STATE_COMMENT)\" = Synced ]" || return 1
    done
    wait_until "$deadline" "3 synced nodes" all_synced
}

# A new cluster: node 1 from mariadb-install-db, nodes 2 and 3 by SST.
rebuild() { # deadline
    local deadline=$1 n
    for n in "${NODES[@]}"; do kill_node "$n"; done
    LAUNCHED=()
    rm -rf "$ROOT"/node*/data # the logs stay, appended to
    write_config 1
    mariadb-install-db --defaults-file="$(dir 1)/my.cnf" --auth-root-authentication-method=normal \
        --skip-test-db --wsrep-on=OFF >"$(dir 1)/install.log" 2>&1 ||
        { cat "$(dir 1)/install.log" >&2; die "mariadb-install-db failed"; }
    launch 1 --wsrep-new-cluster
    wait_until "$deadline" "node 1 to bootstrap" \
        eval '[ "$(status_var 1 WSREP_READY)" = ON ]' || return 1
    # One joiner at a time: each SST blocks its donor.
    for n in 2 3; do
        join "$n"
        wait_until "$deadline" "node $n to join" \
            eval "[ \"\$(status_var $n WSREP_LOCAL_STATE_COMMENT)\" = Synced ]" || return 1
    done
    wait_until "$deadline" "3 synced nodes" all_synced
}

start() {
    if all_synced; then
        echo "galera.sh: already running (3 nodes synced)"
        return 0
    fi
    [ "$(id -u)" = 0 ] || die "starting the cluster needs root"
    ensure_packages
    local now
    now=$(date +%s)
    # Some nodes survived (a test killed one): bring back the others; if
    # that fails, or nothing survived, build the cluster from scratch.
    if ! { primary_node >/dev/null && repair $((now + TIMEOUT / 2)); }; then
        echo "galera.sh: no node survived or the repair failed: building a new cluster" >&2
        rebuild $((now + TIMEOUT)) || die "the cluster did not start within ${TIMEOUT} s"
    fi
    client 1 "CREATE DATABASE IF NOT EXISTS test" || die "cannot create database test"
    echo "galera.sh: 3 nodes synced on 127.0.0.1:$(sql_port 1),$(sql_port 2),$(sql_port 3)"
}

stop() {
    local n
    for n in "${NODES[@]}"; do kill_node "$n"; done
    echo "galera.sh: stopped"
}

status() {
    local n ok=0
    for n in "${NODES[@]}"; do
        if pid_of "$n" >/dev/null; then
            echo "node $n (127.0.0.1:$(sql_port "$n")): pid $(pid_of "$n"), size $(status_var "$n" WSREP_CLUSTER_SIZE)," \
                "ready $(status_var "$n" WSREP_READY), $(status_var "$n" WSREP_LOCAL_STATE_COMMENT)"
        else
            echo "node $n (127.0.0.1:$(sql_port "$n")): not running"
        fi
        synced "$n" || ok=1
    done
    return $ok
}

restart_node() { # N: kill node N if it runs, and join it again
    local n=$1
    case $n in 1 | 2 | 3) ;; *) die "restart-node takes 1, 2 or 3" ;; esac
    [ "$(id -u)" = 0 ] || die "needs root"
    kill_node "$n"
    start
}

# One start, stop or restart at a time (a test reviving a node while a
# second `tests/run` starts the cluster).
serialize() {
    mkdir -p "$(dirname "$ROOT")"
    exec 9>"$ROOT.lock"
    flock -w "$TIMEOUT" 9 || die "$ROOT.lock stayed locked for ${TIMEOUT} s"
}

case ${1:-} in
start | stop | restart-node) serialize ;;
esac
case ${1:-} in
start) start ;;
stop) stop ;;
status) status ;;
restart-node) restart_node "${2:-}" ;;
*) die "usage: $0 start|stop|status|restart-node N" ;;
esac
