#!/usr/bin/env bash
# A Patroni cluster on loopback, for hierlock's Patroni tests
# (tests/tests/patroni): one etcd, three PostgreSQL 15 instances managed by
# Patroni, and HAProxy sending connections to the leader (Patroni's REST
# health check). Installed from Debian's packages (patroni, etcd-server,
# haproxy) on first use. Run as root.
#
#   tests/clusters/patroni.sh start        # idempotent: etcd, 3 members (a leader, 2 streaming replicas), HAProxy;
#                                          # a cluster left unhealthy by an earlier run is rebuilt after 45 s
#   tests/clusters/patroni.sh stop         # kills everything by pid (data is kept for the next start)
#   tests/clusters/patroni.sh status       # each member's role and state; exit 1 unless healthy
#   tests/clusters/patroni.sh leader       # the number (1-3) of the member that is the leader now
#   tests/clusters/patroni.sh kill         # kill -9 the leader's Patroni and its postmaster; prints its number
#   tests/clusters/patroni.sh partition    # cut the leader from etcd (clients still reach it); prints its number
#   tests/clusters/patroni.sh heal         # undo partition / kill / etcd-stop, rejoin, wait until healthy
#   tests/clusters/patroni.sh etcd-stop    # stop etcd itself: no member can hold the leader key
#   tests/clusters/patroni.sh sync on|off  # synchronous_mode in the cluster's dynamic configuration
#   tests/clusters/patroni.sh stall        # SIGSTOP the leader's WAL senders (replication lag, on demand)
#   tests/clusters/patroni.sh resume       # SIGCONT them (heal does too)
#
# Member N (1..3): PostgreSQL on 127.0.0.1:5450/5451/5452 (postgres, no
# password, database `test`), Patroni's REST API on 127.0.0.1:8008/8009/8010;
# HAProxy on 127.0.0.1:5460 goes to the member whose `GET /primary` answers
# 200. etcd: client 127.0.0.1:2379, peer 2380. Each Patroni reaches etcd
# through a TCP proxy of its own (an haproxy on 127.0.0.1:2381/2382/2383):
# `partition` kills the leader's, so that it alone loses etcd while its
# PostgreSQL still takes connections. Everything lives under
# /var/tmp/hierlock-patroni (configs, data, logs, pids).
#
# Timing (bootstrap.dcs): ttl 10 s, loop_wait 1 s, retry_timeout 4 s.
# `start` takes about 5 s with no data (after the packages' install on first
# use), 10 s from a stopped cluster, 0.4 s when it runs; `heal` 3-15 s.
set -euo pipefail
# The daemons started here outlive the caller: none keeps its working
# directory (a checkout that may be deleted while they run; Patroni starts
# PostgreSQL through Python's multiprocessing, which reads it, and fails
# once it is gone).
cd /

ROOT=${HIERLOCK_PATRONI_DIR:-/var/tmp/hierlock-patroni}
PGBIN=/usr/lib/postgresql/15/bin
MEMBERS=(1 2 3)
TIMEOUT=${HIERLOCK_PATRONI_TIMEOUT:-120} # seconds, for a whole start or heal
REBUILD_AFTER=45 # seconds a cluster left by an earlier run gets to become healthy
SCOPE=hierlock
ETCD_PORT=2379
ETCD_PEER_PORT=2380
HAPROXY_PORT=5460

pg_port() { echo $((5449 + $1)); }
rest_port() { echo $((8007 + $1)); }
proxy_port() { echo $((2380 + $1)); }
dir() { echo "$ROOT/pg$1"; }

die() {
    echo "patroni.sh: $*" >&2
    exit 1
}

proc_state() { awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null; } # PID: R, S, T (stopped), Z, ...

running() { # PID: alive, not a zombie
    local state
    state=$(proc_state "$1") && [ -n "$state" ] && [ "$state" != Z ]
}

pid_in() { # FILE: the pid it names, if that process runs
    local pid
    [ -s "$1" ] || return 1
    pid=$(head -n1 "$1")
    running "$pid" && echo "$pid"
}

kill_pid_file() { # FILE: SIGKILL the process it names, wait for it to go
    local pid
    pid=$(pid_in "$1") || { rm -f "$1"; return 0; }
    kill -9 "$pid" 2>/dev/null || true
    while running "$pid"; do sleep 0.05; done
    rm -f "$1"
}

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

show_logs() { # each log's last lines, without Patroni's heartbeats and REST tracebacks
    local f
    for f in "$ROOT/etcd.log" "$ROOT/haproxy.log" "$ROOT"/pg*/patroni.log; do
        [ -f "$f" ] || continue
        echo "===== $f (last 25 lines that are not heartbeats) =====" >&2
        grep -v -e 'INFO: no action' -e '^  ' -e 'Exception happened' -e 'Traceback (most recent' \
            -e 'During handling of the above' -e 'ConnectionResetError' -e 'BrokenPipeError' -e '^$' "$f" |
            tail -n 25 >&2 || true
    done
}

wait_until() { # deadline what command...: 1 (after printing the logs) if it never holds
    local deadline=$1 what=$2
    shift 2
    until "$@" >/dev/null 2>&1; do
        if [ "$(date +%s)" -ge "$deadline" ]; then
            echo "patroni.sh: gave up waiting for $what" >&2
            show_logs
            return 1
        fi
        sleep 0.25
    done
}

install() {
    command -v patroni >/dev/null && command -v etcd >/dev/null && command -v haproxy >/dev/null &&
        [ -x "$PGBIN/postgres" ] && return 0
    echo "patroni.sh: installing patroni, etcd-server, haproxy, postgresql-15 (apt-get)" >&2
    DEBIAN_FRONTEND=noninteractive apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        patroni etcd-server haproxy postgresql-15 >/dev/null
}

# ---------------------------------------------------------------- etcd

etcd_up() {
    curl -fsS -m 1 -X POST -d '{}' "http://127.0.0.1:$ETCD_PORT/v3/maintenance/status" >/dev/null
}

start_etcd() {
    pid_in "$ROOT/etcd.pid" >/dev/null && return 0
    mkdir -p "$ROOT/etcd"
    setsid etcd --name hierlock-etcd --data-dir "$ROOT/etcd" \
        --listen-client-urls "http://127.0.0.1:$ETCD_PORT" \
        --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
        --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
        --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
        --initial-cluster "hierlock-etcd=http://127.0.0.1:$ETCD_PEER_PORT" \
        --initial-cluster-state new --enable-v2=true \
        </dev/null >>"$ROOT/etcd.log" 2>&1 9>&- &
    echo $! >"$ROOT/etcd.pid"
}

# ---------------------------------------------------------------- proxies

# Member N's own TCP proxy to etcd: killed by `partition`.
start_etcd_proxy() { # N
    local n=$1 cfg
    pid_in "$(dir "$n")/etcd-proxy.pid" >/dev/null && return 0
    cfg="$(dir "$n")/etcd-proxy.cfg"
    cat >"$cfg" <<EOF
global
    maxconn 100
defaults
    mode tcp
    timeout connect 1s
    timeout client 10m
    timeout server 10m
listen etcd
    bind 127.0.0.1:$(proxy_port "$n")
    server etcd 127.0.0.1:$ETCD_PORT
EOF
    setsid haproxy -f "$cfg" </dev/null >>"$(dir "$n")/etcd-proxy.log" 2>&1 9>&- &
    echo $! >"$(dir "$n")/etcd-proxy.pid"
}

start_haproxy() {
    pid_in "$ROOT/haproxy.pid" >/dev/null && return 0
    local n servers=
    for n in "${MEMBERS[@]}"; do
        servers+="    server pg$n 127.0.0.1:$(pg_port "$n") check port $(rest_port "$n")"$'\n'
    done
    cat >"$ROOT/haproxy.cfg" <<EOF
global
    maxconn 400
defaults
    mode tcp
    timeout connect 2s
    timeout client 30m
    timeout server 30m
    timeout check 1s
listen leader
    bind 127.0.0.1:$HAPROXY_PORT
    option httpchk GET /primary
    http-check expect status 200
    default-server inter 500ms fastinter 250ms fall 2 rise 1 on-marked-down shutdown-sessions
$servers
EOF
    setsid haproxy -f "$ROOT/haproxy.cfg" </dev/null >>"$ROOT/haproxy.log" 2>&1 9>&- &
    echo $! >"$ROOT/haproxy.pid"
}

# ---------------------------------------------------------------- members

write_config() { # N
    local n=$1 d
    d=$(dir "$n")
    mkdir -p "$d"
    cat >"$d/patroni.yml" <<EOF
scope: $SCOPE
name: pg$n
log:
  level: INFO
restapi:
  listen: 127.0.0.1:$(rest_port "$n")
  connect_address: 127.0.0.1:$(rest_port "$n")
etcd3:
  hosts: 127.0.0.1:$(proxy_port "$n")
  use_proxies: true
bootstrap:
  dcs:
    ttl: 10
    loop_wait: 1
    retry_timeout: 4
    maximum_lag_on_failover: 1048576
    synchronous_mode: false
    postgresql:
      use_pg_rewind: true
      parameters:
        wal_log_hints: "on"
        max_connections: 100
        shared_buffers: 32MB
        max_wal_senders: 10
        max_replication_slots: 10
        wal_keep_size: 128MB
  initdb:
    - encoding: UTF8
    - locale: C
  pg_hba:
    - local all all trust
    - host all all 127.0.0.1/32 trust
    - host replication all 127.0.0.1/32 trust
postgresql:
  listen: 127.0.0.1:$(pg_port "$n")
  connect_address: 127.0.0.1:$(pg_port "$n")
  data_dir: $d/data
  bin_dir: $PGBIN
  pgpass: $d/pgpass
  authentication:
    superuser:
      username: postgres
      password: postgres
    replication:
      username: replicator
      password: replicator
    rewind:
      username: postgres
      password: postgres
  # A replica's pg_basebackup asks for a fast checkpoint: the default, a
  # spread one, made a cold start wait 90 s for it.
  basebackup:
    - checkpoint: fast
  parameters:
    unix_socket_directories: $d
    logging_collector: "off"
  pg_hba:
    - local all all trust
    - host all all 127.0.0.1/32 trust
    - host replication all 127.0.0.1/32 trust
EOF
    chown -R postgres:postgres "$d"
    chmod 700 "$d"
}

start_member() { # N
    local n=$1 d
    d=$(dir "$n")
    pid_in "$d/patroni.pid" >/dev/null && return 0
    write_config "$n"
    start_etcd_proxy "$n"
    # Patroni as the postgres user (PostgreSQL refuses root); setpriv execs,
    # so $! is Patroni's pid.
    setsid setpriv --reuid=postgres --regid=postgres --init-groups \
        env PATRONI_LOG_DIR= patroni "$d/patroni.yml" \
        </dev/null >>"$d/patroni.log" 2>&1 9>&- &
    echo $! >"$d/patroni.pid"
}

postmaster_pid() { # N
    pid_in "$(dir "$1")/data/postmaster.pid"
}

sql() { # N SQL: as postgres over TCP, one value
    PGCONNECT_TIMEOUT=2 psql -X -q -A -t -h 127.0.0.1 -p "$(pg_port "$1")" -U postgres -d postgres -c "$2" 2>/dev/null
}

rest() { # N PATH: the member's REST answer (fails unless 200)
    curl -fsS -m 1 "http://127.0.0.1:$(rest_port "$1")$2" 2>/dev/null
}

is_primary() { rest "$1" /primary >/dev/null; }

leader() { # the member whose Patroni says it is the running leader
    local n
    for n in "${MEMBERS[@]}"; do
        is_primary "$n" && echo "$n" && return 0
    done
    return 1
}

# Why the cluster is not healthy (a leader; each other member in recovery,
# its WAL receiver streaming and its walsender on the leader streaming; its
# REST /replica 200; HAProxy on the leader), or nothing when it is. Both
# ends of each replication stream are asked: a stopped walsender (`stall`
# left by a killed test) still shows as streaming on the leader while its
# replica receives nothing.
unhealthy_reason() {
    local l n
    l=$(leader) || { echo "no member answers 200 on /primary"; return; }
    for n in "${MEMBERS[@]}"; do
        [ "$n" = "$l" ] && continue
        [ "$(sql "$n" "SELECT pg_is_in_recovery()")" = t ] || { echo "member $n is not in recovery"; return; }
        [ "$(sql "$n" "SELECT status FROM pg_stat_wal_receiver")" = streaming ] ||
            { echo "member $n has no streaming WAL receiver"; return; }
        [ "$(sql "$l" "SELECT count(*) FROM pg_stat_replication WHERE application_name = 'pg$n' AND state = 'streaming'")" = 1 ] ||
            { echo "leader $l has not exactly one streaming walsender for member $n"; return; }
        rest "$n" /replica >/dev/null || { echo "member $n does not answer 200 on /replica"; return; }
    done
    [ "$(PGCONNECT_TIMEOUT=2 psql -X -A -t -h 127.0.0.1 -p "$HAPROXY_PORT" -U postgres -d postgres \
        -c "SELECT pg_is_in_recovery()" 2>/dev/null)" = f ] || echo "HAProxy on $HAPROXY_PORT does not reach the leader"
}

healthy() { [ -z "$(unhealthy_reason)" ]; }

sync_standbys() { # N COUNT: member N has COUNT synchronous standbys
    [ "$(sql "$1" "SELECT count(*) FROM pg_stat_replication WHERE sync_state = 'sync'")" = "$2" ]
}

ensure_test_db() {
    local l
    l=$(leader) || return 1
    [ "$(sql "$l" "SELECT 1 FROM pg_database WHERE datname = 'test'")" = 1 ] ||
        sql "$l" "CREATE DATABASE test" >/dev/null
}

launch() { # etcd, the members and HAProxy, each unless it runs
    local n
    start_etcd
    wait_until "$1" "etcd on 127.0.0.1:$ETCD_PORT" etcd_up || die "etcd did not start"
    for n in "${MEMBERS[@]}"; do start_member "$n"; done
    start_haproxy
}

# Until healthy or DEADLINE: 1 (after the logs and the reason) if never.
wait_healthy() { # DEADLINE
    wait_until "$1" "a leader" leader &&
        wait_until "$1" "the test database" ensure_test_db &&
        wait_until "$1" "a leader with 2 streaming replicas behind HAProxy" healthy ||
        { status >&2 || true; return 1; }
}

# start: the cluster as an earlier run left it, else a new one. A cluster
# left unhealthy (a test killed mid-failover, a machine reused for CI) gets
# REBUILD_AFTER seconds to heal itself, then is wiped and bootstrapped anew
# (a new cluster has no data a test relies on: each test creates its own).
# heal: the same without the rebuild, so that a failover that leaves the
# cluster broken fails the test that caused it.
start() { # start|heal
    [ "$(id -u)" = 0 ] || die "starting the cluster needs root"
    install
    local deadline existing=false
    deadline=$(($(date +%s) + TIMEOUT))
    mkdir -p "$ROOT"
    [ -d "$(dir 1)/data" ] && existing=true
    resume_walsenders
    launch "$deadline"
    if [ "$1" = start ] && $existing; then
        local rebuild_deadline
        rebuild_deadline=$(($(date +%s) + REBUILD_AFTER))
        [ "$rebuild_deadline" -lt "$deadline" ] || rebuild_deadline=$deadline
        if ! wait_healthy "$rebuild_deadline"; then
            echo "patroni.sh: the cluster an earlier run left is not healthy after ${REBUILD_AFTER} s;" \
                "wiping it and bootstrapping a new one" >&2
            stop >/dev/null
            rm -rf "$ROOT/etcd" "$ROOT"/pg*/data "$ROOT/stalled"
            deadline=$(($(date +%s) + TIMEOUT))
            launch "$deadline"
        fi
    fi
    wait_healthy "$deadline" || die "the cluster is not healthy within ${TIMEOUT} s"
    echo "patroni.sh: member $(leader) leads, 2 replicas streaming, PostgreSQL on" \
        "127.0.0.1:$(pg_port 1),$(pg_port 2),$(pg_port 3), HAProxy (leader) on 127.0.0.1:$HAPROXY_PORT"
}

# kill -9 member N as a crash of its machine would: its Patroni (which
# alone would restart a killed postmaster in place), its postmaster and the
# postmaster's children (the backends, which would otherwise finish the
# statements they run), at once.
kill_member() { # N
    local d pm pids=() p
    d=$(dir "$1")
    pm=$(postmaster_pid "$1" || true)
    p=$(pid_in "$d/patroni.pid" || true)
    [ -n "$p" ] && pids+=("$p")
    if [ -n "$pm" ]; then
        pids+=("$pm")
        # shellcheck disable=SC2046
        pids+=($(cat /proc/"$pm"/task/*/children 2>/dev/null || true))
    fi
    [ ${#pids[@]} -gt 0 ] && kill -9 "${pids[@]}" 2>/dev/null || true
    for p in "${pids[@]}"; do
        while running "$p"; do sleep 0.05; done
    done
    rm -f "$d/patroni.pid"
}

stop() {
    local n pm
    kill_pid_file "$ROOT/haproxy.pid"
    for n in "${MEMBERS[@]}"; do
        kill_member "$n"
        # A postmaster whose Patroni is already gone.
        pm=$(postmaster_pid "$n" || true)
        [ -n "$pm" ] && { kill -9 "$pm" 2>/dev/null || true; }
        kill_pid_file "$(dir "$n")/etcd-proxy.pid"
    done
    kill_pid_file "$ROOT/etcd.pid"
    echo "patroni.sh: stopped"
}

status() {
    local n ok=0 role
    for n in "${MEMBERS[@]}"; do
        if pid_in "$(dir "$n")/patroni.pid" >/dev/null; then
            role=$(rest "$n" /patroni | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d.get("role"), d.get("state"))' 2>/dev/null || echo "no REST answer")
            echo "member $n (127.0.0.1:$(pg_port "$n"), REST $(rest_port "$n")): Patroni pid $(pid_in "$(dir "$n")/patroni.pid"), $role," \
                "etcd proxy $(pid_in "$(dir "$n")/etcd-proxy.pid" >/dev/null && echo up || echo DOWN)"
        else
            echo "member $n (127.0.0.1:$(pg_port "$n")): Patroni not running"
        fi
    done
    echo "etcd: $(etcd_up && echo up || echo DOWN); HAProxy: $(pid_in "$ROOT/haproxy.pid" >/dev/null && echo up || echo DOWN)"
    local reason
    reason=$(unhealthy_reason)
    [ -z "$reason" ] || { echo "not healthy: $reason"; ok=1; }
    return $ok
}

walsenders() { # the leader's WAL senders' pids
    local n
    n=$(leader) || return 0
    sql "$n" "SELECT pid FROM pg_stat_replication" || true
}

# SIGCONT what `stall` stopped, and any other stopped child of a member's
# postmaster: the list is lost when a test is killed between stall and heal.
resume_walsenders() {
    local pid n pm
    for pid in $(cat "$ROOT/stalled" 2>/dev/null); do kill -CONT "$pid" 2>/dev/null || true; done
    rm -f "$ROOT/stalled"
    for n in "${MEMBERS[@]}"; do
        pm=$(postmaster_pid "$n") || continue
        for pid in $(cat /proc/"$pm"/task/*/children 2>/dev/null); do
            [ "$(proc_state "$pid")" = T ] && kill -CONT "$pid" 2>/dev/null
        done
    done
    return 0
}

case ${1:-} in
start | stop | kill | partition | heal | etcd-stop | sync | stall | resume)
    mkdir -p "$ROOT"
    exec 9>"$ROOT.lock"
    flock -w "$TIMEOUT" 9 || die "$ROOT.lock stayed locked for ${TIMEOUT} s"
    ;;
esac
case ${1:-} in
start) start start ;;
stop) stop ;;
status) status ;;
leader) leader ;;
kill)
    n=$(leader) || die "no leader to kill"
    kill_member "$n"
    echo "$n"
    ;;
partition)
    n=$(leader) || die "no leader to cut from etcd"
    kill_pid_file "$(dir "$n")/etcd-proxy.pid"
    echo "$n"
    ;;
stall)
    # A stopped sender sends nothing more: what the leader commits from now
    # on (asynchronously) reaches no replica, even from the socket buffers.
    walsenders >>"$ROOT/stalled"
    [ -s "$ROOT/stalled" ] || die "no WAL sender to stall"
    for pid in $(cat "$ROOT/stalled"); do kill -STOP "$pid" 2>/dev/null || true; done
    ;;
resume) resume_walsenders ;;
heal)
    # start resumes stalled walsenders.
    for n in "${MEMBERS[@]}"; do start_etcd_proxy "$n"; done
    start heal
    ;;
etcd-stop) kill_pid_file "$ROOT/etcd.pid" ;;
sync)
    case ${2:-} in on) v=true ;; off) v=false ;; *) die "sync takes on or off" ;; esac
    n=$(leader) || die "no leader"
    curl -fsS -m 5 -X PATCH -H 'Content-Type: application/json' \
        -d "{\"synchronous_mode\": $v}" "http://127.0.0.1:$(rest_port "$n")/config" >/dev/null ||
        die "cannot set synchronous_mode"
    # Until the leader has a synchronous standby (or none is required).
    deadline=$(($(date +%s) + 30))
    if [ "$v" = true ]; then want=1; else want=0; fi
    wait_until "$deadline" "$want synchronous standby(s) on member $n" sync_standbys "$n" "$want" ||
        die "synchronous_mode $v did not take effect"
    echo "patroni.sh: synchronous_mode $v"
    ;;
*) die "usage: $0 start|stop|status|leader|kill|partition|heal|etcd-stop|sync on|off|stall|resume" ;;
esac
