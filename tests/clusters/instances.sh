#!/usr/bin/env bash
# Servers of the chaos run's own (tests/src/chaos), which it may crash and
# restart while a workload runs: never the shared ones.
#
#   tests/clusters/instances.sh start                 # idempotent; fails with the logs after 60 s
#   tests/clusters/instances.sh crash mariadb|postgres # kill -9 the server, start it again, wait until it serves
#   tests/clusters/instances.sh restart mariadb|postgres # shut it down cleanly (SIGTERM; pg_ctl -m fast), start it again
#   tests/clusters/instances.sh stop
#   tests/clusters/instances.sh status
#
#   mysql://root@127.0.0.1:3340/test          MariaDB (Debian's mariadbd)
#   postgres://postgres@127.0.0.1:5440/test   PostgreSQL 15
#
# Data, sockets and logs live under /var/tmp/hierlock-instances
# (HIERLOCK_INSTANCES_DIR). MariaDB runs as root (--user=root), PostgreSQL
# as the `postgres` OS user. Needs root.
set -u
BASE=${HIERLOCK_INSTANCES_DIR:-/var/tmp/hierlock-instances}
PGBIN=/usr/lib/postgresql/15/bin
LOG=$BASE/log
M_PORT=3340
PG_PORT=5440
WAIT_STEPS=240 # × 0.25 s = 60 s for every wait

say() { echo "instances: $*"; }
fail() {
    say "FAILED: $*" >&2
    for f in "$LOG"/*.err "$LOG"/*.log; do
        [ -f "$f" ] && { echo "--- $f (last 15 lines)" >&2; tail -n 15 "$f" >&2; }
    done
    exit 1
}
alive() { local p; p=$(cat "$1" 2>/dev/null) && kill -0 "$p" 2>/dev/null; }
wait_until() { # "what" command...: retry for at most 60 s
    local what=$1; shift
    for _ in $(seq 1 $WAIT_STEPS); do "$@" >/dev/null 2>&1 && return 0; sleep 0.25; done
    fail "$what (waited 60 s)"
}

# ---------------------------------------------------------------- MariaDB

M_DIR=$BASE/mariadb
m_sql() { mariadb --no-defaults -uroot -S "$M_DIR/mysqld.sock" -N -B -e "$1"; }
m_launch() {
    alive "$M_DIR/mysqld.pid" && return 0
    setsid /usr/sbin/mariadbd --no-defaults --user=root --datadir="$M_DIR/data" --tmpdir="$M_DIR/tmp" \
        --socket="$M_DIR/mysqld.sock" --pid-file="$M_DIR/mysqld.pid" --port=$M_PORT \
        --bind-address=127.0.0.1 --log-error="$LOG/mariadb.err" \
        --innodb-buffer-pool-size=64M --max-connections=300 \
        </dev/null >>"$LOG/mariadb.out" 2>&1 &
    wait_until "MariaDB on $M_PORT to accept connections" m_sql "SELECT 1"
}
m_start() {
    if [ ! -f "$BASE/mariadb.ready" ]; then
        rm -rf "$M_DIR"
        mkdir -p "$M_DIR/tmp"
        mariadb-install-db --no-defaults --user=root --datadir="$M_DIR/data" --tmpdir="$M_DIR/tmp" \
            --auth-root-authentication-method=normal --skip-test-db \
            >"$LOG/mariadb.install" 2>&1 || fail "mariadb-install-db"
        m_launch
        m_sql "CREATE USER IF NOT EXISTS 'root'@'127.0.0.1';
            GRANT ALL ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION;
            CREATE DATABASE IF NOT EXISTS test" || fail "accounts on MariaDB $M_PORT"
        touch "$BASE/mariadb.ready"
    fi
    m_launch
    say "MariaDB on $M_PORT"
}
m_kill() {
    local p; p=$(cat "$M_DIR/mysqld.pid" 2>/dev/null) || return 0
    kill -KILL "$p" 2>/dev/null
    for _ in $(seq 1 $WAIT_STEPS); do kill -0 "$p" 2>/dev/null || break; sleep 0.25; done
    rm -f "$M_DIR/mysqld.pid"
}
m_stop() {
    local p; p=$(cat "$M_DIR/mysqld.pid" 2>/dev/null) || return 0
    kill -TERM "$p" 2>/dev/null
    for _ in $(seq 1 $WAIT_STEPS); do kill -0 "$p" 2>/dev/null || return 0; sleep 0.25; done
    fail "MariaDB (pid $p) did not stop"
}

# ---------------------------------------------------------------- PostgreSQL

PG_DIR=$BASE/pg
as_pg() { runuser -u postgres -- "$@"; }
pg_sql() { as_pg "$PGBIN/psql" -h 127.0.0.1 -p $PG_PORT -U postgres -d "${2:-postgres}" -tAc "$1"; }
pg_running() { as_pg "$PGBIN/pg_ctl" -D "$PG_DIR" status >/dev/null 2>&1; }
pg_launch() {
    pg_running && return 0
    as_pg "$PGBIN/pg_ctl" -D "$PG_DIR" -l "$LOG/pg.log" -w -t 60 start >/dev/null || fail "pg_ctl start"
}
pg_start() {
    mkdir -p "$BASE/pg-run"
    chown postgres:postgres "$BASE/pg-run"
    if [ ! -f "$BASE/pg.ready" ]; then
        pg_running && as_pg "$PGBIN/pg_ctl" -D "$PG_DIR" -m immediate -w stop >/dev/null
        rm -rf "$PG_DIR"
        mkdir -p "$PG_DIR"
        chown postgres:postgres "$PG_DIR"
        chmod 700 "$PG_DIR"
        as_pg "$PGBIN/initdb" -D "$PG_DIR" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 \
            >"$LOG/pg-initdb.log" 2>&1 || fail "initdb"
        cat >>"$PG_DIR/postgresql.conf" <<EOF
# hierlock chaos run
port = $PG_PORT
listen_addresses = '127.0.0.1'
unix_socket_directories = '$BASE/pg-run'
shared_buffers = 32MB
max_connections = 200
EOF
        pg_launch
        pg_sql "CREATE DATABASE test" >/dev/null || fail "CREATE DATABASE test"
        touch "$BASE/pg.ready"
    fi
    pg_launch
    say "PostgreSQL on $PG_PORT"
}
pg_kill() {
    # The postmaster and every backend at once, as a machine crash would.
    local p; p=$(head -1 "$PG_DIR/postmaster.pid" 2>/dev/null) || return 0
    pkill -KILL -P "$p" 2>/dev/null
    kill -KILL "$p" 2>/dev/null
    for _ in $(seq 1 $WAIT_STEPS); do kill -0 "$p" 2>/dev/null || break; sleep 0.25; done
}
pg_stop() {
    pg_running || return 0
    as_pg "$PGBIN/pg_ctl" -D "$PG_DIR" -m fast -w -t 60 stop >/dev/null || fail "pg_ctl stop"
}

# ---------------------------------------------------------------- main

[ "$(id -u)" = 0 ] || { echo "instances: needs root" >&2; exit 1; }
mkdir -p "$LOG"
chmod 1777 "$LOG" # PostgreSQL writes its log as the postgres user
case "${1:-}" in
start)
    m_start
    pg_start
    ;;
crash)
    case "${2:-}" in
    mariadb) m_kill; m_launch; say "MariaDB crashed and restarted" ;;
    postgres) pg_kill; pg_launch; say "PostgreSQL crashed and restarted" ;;
    *) echo "usage: $0 crash mariadb|postgres" >&2; exit 2 ;;
    esac
    ;;
restart)
    case "${2:-}" in
    mariadb) m_stop; rm -f "$M_DIR/mysqld.pid"; m_launch; say "MariaDB restarted" ;;
    postgres) pg_stop; pg_launch; say "PostgreSQL restarted" ;;
    *) echo "usage: $0 restart mariadb|postgres" >&2; exit 2 ;;
    esac
    ;;
stop)
    m_stop
    pg_stop
    say "stopped"
    ;;
status)
    alive "$M_DIR/mysqld.pid" && say "MariaDB up on $M_PORT" || say "MariaDB down"
    pg_running && say "PostgreSQL up on $PG_PORT" || say "PostgreSQL down"
    ;;
*)
    echo "usage: $0 start|crash mariadb|postgres|restart mariadb|postgres|stop|status" >&2
    exit 2
    ;;
esac
