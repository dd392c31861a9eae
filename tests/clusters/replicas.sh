#!/usr/bin/env bash
# Replicated servers for hierlock's topology tests (tests/tests/topologies),
# on their own loopback ports, beside (never touching) the shared servers.
#
#   tests/clusters/replicas.sh start    # idempotent; fails with the logs after 60 s
#   tests/clusters/replicas.sh stop
#   tests/clusters/replicas.sh status
#
#   mysql://root@127.0.0.1:3308/test      MariaDB primary (log-bin, server-id 1)
#   mysql://root@127.0.0.1:3309/test      MariaDB replica of 3308 (server-id 2, --read-only, replicating)
#   mysql://root@127.0.0.1:3310/test      MariaDB replica of 3308 whose replication is stopped
#                                         (server-id 3, --read-only, --skip-slave-start): read-only only
#   postgres://postgres@127.0.0.1:5434/test   PostgreSQL 15 primary
#   postgres://postgres@127.0.0.1:5435/test   PostgreSQL 15 hot standby of 5434 (pg_basebackup -R)
#
# Data, sockets and logs live under /var/tmp/hierlock-replicas (HIERLOCK_REPLICAS_DIR).
# MariaDB runs as root (--user=root), PostgreSQL as the `postgres` OS user. Needs root.
set -u
BASE=${HIERLOCK_REPLICAS_DIR:-/var/tmp/hierlock-replicas}
PGBIN=/usr/lib/postgresql/15/bin
LOG=$BASE/log
WAIT_STEPS=240 # × 0.25 s = 60 s for every wait

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
alive() { local p; p=$(cat "$1" 2>/dev/null) && kill -0 "$p" 2>/dev/null; }
say() { echo "replicas: $*"; }
fail() {
    say "FAILED: $*" >&2
    for f in "$LOG"/*.err "$LOG"/*.log; do
        [ -f "$f" ] && { echo "--- $f (last 15 lines)" >&2; tail -n 15 "$f" >&2; }
    done
    exit 1
}
# wait_until "what" command...: retry for at most 60 s.
wait_until() {
    local what=$1; shift
    for _ in $(seq 1 $WAIT_STEPS); do "$@" >/dev/null 2>&1 && return 0; sleep 0.25; done
    fail "$what (waited 60 s)"
}

# ---------------------------------------------------------------- MariaDB

M_PORTS=(3308 3309 3310)
m_dir() { echo "$BASE/mariadb-$1"; }
m_sql() { mariadb --no-defaults -uroot -S "$(m_dir "$1")/mysqld.sock" -N -B -e "$2"; }

m_launch() { # port server-id extra mariadbd options...
    local port=$1 id=$2; shift 2
    local dir; dir=$(m_dir "$port")
    alive "$dir/mysqld.pid" && return 0
    mkdir -p "$dir/tmp"
    setsid /usr/sbin/mariadbd --no-defaults --user=root --datadir="$dir/data" --tmpdir="$dir/tmp" \
        --socket="$dir/mysqld.sock" --pid-file="$dir/mysqld.pid" --port="$port" \
        --bind-address=127.0.0.1 --server-id="$id" --log-error="$LOG/mariadb-$port.err" \
        --innodb-buffer-pool-size=32M --innodb-log-file-size=16M --max-connections=200 \
        "$@" </dev/null >>"$LOG/mariadb-$port.out" 2>&1 &
}

m_start_all() {
    m_launch 3308 1 --log-bin="$(m_dir 3308)/binlog" --binlog-format=ROW
    m_launch 3309 2 --read-only --relay-log="$(m_dir 3309)/relay"
    m_launch 3310 3 --read-only --relay-log="$(m_dir 3310)/relay" --skip-slave-start
    for port in "${M_PORTS[@]}"; do
        wait_until "MariaDB on $port to accept connections" m_sql "$port" "SELECT 1"
    done
}

m_setup() { # first start only
    rm -rf "$(m_dir 3308)" "$(m_dir 3309)" "$(m_dir 3310)" "$BASE/mariadb.ready"
    # One at a time, each with a temporary directory of its own: three
    # bootstraps at once sharing /tmp were seen failing ("Could not remove
    # temporary table", then 1051 on mysql.tmp_user_sys).
    for port in "${M_PORTS[@]}"; do
        mkdir -p "$(m_dir "$port")/tmp"
        mariadb-install-db --no-defaults --user=root --datadir="$(m_dir "$port")/data" \
            --tmpdir="$(m_dir "$port")/tmp" \
            --auth-root-authentication-method=normal --skip-test-db \
            >"$LOG/mariadb-$port.install" 2>&1 || fail "mariadb-install-db for $port"
    done
    m_start_all
    # Local accounts and database on every server (the replicas' copies are
    # theirs, not replicated: 3310 never replicates).
    for port in "${M_PORTS[@]}"; do
        m_sql "$port" "SET SESSION sql_log_bin = 0;
            CREATE USER IF NOT EXISTS 'root'@'127.0.0.1';
            GRANT ALL ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION;
            CREATE DATABASE IF NOT EXISTS test" || fail "accounts on MariaDB $port"
    done
    for port in 3309 3310; do
        m_sql "$port" "CHANGE MASTER TO MASTER_HOST = '127.0.0.1', MASTER_PORT = 3308,
            MASTER_USER = 'root', MASTER_PASSWORD = '', MASTER_USE_GTID = slave_pos,
            MASTER_CONNECT_RETRY = 1" || fail "CHANGE MASTER on $port"
    done
    m_sql 3309 "START SLAVE" || fail "START SLAVE on 3309"
    touch "$BASE/mariadb.ready"
}

m_replicating() {
    [ "$(m_sql 3309 "SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS
        WHERE VARIABLE_NAME = 'SLAVES_RUNNING'")" = 1 ] || return 1
    # A write on the primary arrives on the replica.
    local mark; mark=$(date +%s%N)
    m_sql 3308 "CREATE TABLE IF NOT EXISTS test.replication_probe (mark BIGINT);
        INSERT INTO test.replication_probe VALUES ($mark)" || return 1
    for _ in $(seq 1 40); do
        [ "$(m_sql 3309 "SELECT COUNT(*) FROM test.replication_probe WHERE mark = $mark" 2>/dev/null)" = 1 ] && return 0
        sleep 0.25
    done
    return 1
}

m_start() {
    if [ -f "$BASE/mariadb.ready" ]; then m_start_all; else m_setup; fi
    wait_until "the MariaDB replica 3309 to replicate from 3308" m_replicating
    [ "$(m_sql 3310 "SELECT @@GLOBAL.read_only")" = 1 ] || fail "MariaDB 3310 is not read-only"
    say "MariaDB primary 3308, replica 3309 (replicating), stopped replica 3310 (read-only)"
}

m_stop() {
    for port in "${M_PORTS[@]}"; do
        local pidfile; pidfile="$(m_dir "$port")/mysqld.pid"
        alive "$pidfile" || continue
        local p; p=$(cat "$pidfile")
        kill -TERM "$p"
        for _ in $(seq 1 $WAIT_STEPS); do kill -0 "$p" 2>/dev/null || break; sleep 0.25; done
        kill -0 "$p" 2>/dev/null && fail "MariaDB $port (pid $p) did not stop"
    done
    say "MariaDB stopped"
}

# ---------------------------------------------------------------- PostgreSQL

PG_PRIMARY=$BASE/pg-primary
PG_STANDBY=$BASE/pg-standby
as_pg() { runuser -u postgres -- "$@"; }
pg_sql() { as_pg "$PGBIN/psql" -h 127.0.0.1 -p "$1" -U postgres -d "${3:-postgres}" -tAc "$2"; }
pg_running() { as_pg "$PGBIN/pg_ctl" -D "$1" status >/dev/null 2>&1; }
pg_launch() { # datadir name
    pg_running "$1" && return 0
    as_pg "$PGBIN/pg_ctl" -D "$1" -l "$LOG/$2.log" -w -t 60 start >/dev/null ||
        fail "pg_ctl start $2"
}

pg_setup() {
    pg_stop_quiet
    rm -rf "$PG_PRIMARY" "$PG_STANDBY" "$BASE/pg.ready"
    mkdir -p "$PG_PRIMARY" "$PG_STANDBY"
    chown postgres:postgres "$PG_PRIMARY" "$PG_STANDBY"
    chmod 700 "$PG_PRIMARY" "$PG_STANDBY"
    as_pg "$PGBIN/initdb" -D "$PG_PRIMARY" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 \
        >"$LOG/pg-initdb.log" 2>&1 || fail "initdb"
    cat >>"$PG_PRIMARY/postgresql.conf" <<EOF
# hierlock topology tests
port = 5434
listen_addresses = '127.0.0.1'
unix_socket_directories = '$BASE/pg-run'
wal_level = replica
max_wal_senders = 5
hot_standby = on
shared_buffers = 32MB
max_connections = 100
fsync = off
EOF
    cat >"$PG_PRIMARY/pg_hba.conf" <<EOF
local all         all                trust
host  replication all 127.0.0.1/32   trust
host  all         all 127.0.0.1/32   trust
EOF
    pg_launch "$PG_PRIMARY" pg-primary
    pg_sql 5434 "CREATE DATABASE test" >/dev/null || fail "CREATE DATABASE test on 5434"
    as_pg "$PGBIN/pg_basebackup" -h 127.0.0.1 -p 5434 -U postgres -D "$PG_STANDBY" -R -X stream \
        -c fast >"$LOG/pg-basebackup.log" 2>&1 || fail "pg_basebackup"
    echo "port = 5435" >>"$PG_STANDBY/postgresql.conf"
    pg_launch "$PG_STANDBY" pg-standby
    touch "$BASE/pg.ready"
}

pg_streaming() {
    [ "$(pg_sql 5435 "SELECT pg_is_in_recovery()")" = t ] || return 1
    [ "$(pg_sql 5434 "SELECT COUNT(*) FROM pg_stat_replication WHERE state = 'streaming'")" -ge 1 ]
}

pg_start() {
    mkdir -p "$BASE/pg-run"
    chown postgres:postgres "$BASE/pg-run"
    if [ -f "$BASE/pg.ready" ]; then
        pg_launch "$PG_PRIMARY" pg-primary
        pg_launch "$PG_STANDBY" pg-standby
    else
        pg_setup
    fi
    wait_until "the PostgreSQL standby 5435 to stream from 5434" pg_streaming
    say "PostgreSQL primary 5434, hot standby 5435 (streaming)"
}

pg_stop_quiet() {
    for dir in "$PG_STANDBY" "$PG_PRIMARY"; do
        [ -d "$dir" ] && pg_running "$dir" && as_pg "$PGBIN/pg_ctl" -D "$dir" -m fast -w -t 60 stop >/dev/null
    done
    return 0
}

pg_stop() {
    pg_stop_quiet
    for dir in "$PG_STANDBY" "$PG_PRIMARY"; do
        [ -d "$dir" ] && pg_running "$dir" && fail "PostgreSQL in $dir did not stop"
    done
    say "PostgreSQL stopped"
}

# ---------------------------------------------------------------- main

[ "$(id -u)" = 0 ] || { say "needs root (MariaDB runs as root, PostgreSQL as postgres)" >&2; exit 1; }
mkdir -p "$BASE" "$LOG"
chown postgres:postgres "$LOG"
chmod 755 "$BASE"

case "${1:-status}" in
    start) m_start; pg_start ;;
    stop) pg_stop; m_stop ;;
    status)
        for port in "${M_PORTS[@]}" 5434 5435; do
            if port_open "$port"; then say "127.0.0.1:$port up"; else say "127.0.0.1:$port down"; fi
        done
        ;;
    *) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
