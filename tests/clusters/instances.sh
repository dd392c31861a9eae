#!/usr/bin/env bash
# Servers of the chaos run's own (tests/src/chaos), which it may crash and
# restart while a workload runs: never the shared ones.
#
#   tests/clusters/instances.sh start                 # idempotent; fails with the logs after 60 s
#   tests/clusters/instances.sh crash mariadb|mysql|postgres   # kill -9 the server, start it again, wait until it serves
#   tests/clusters/instances.sh restart mariadb|mysql|postgres # shut it down cleanly (SIGTERM; pg_ctl -m fast), start it again
#   tests/clusters/instances.sh stop
#   tests/clusters/instances.sh status
#
#   mysql://root@127.0.0.1:3340/test          MariaDB (Debian's mariadbd)
#   mysql://root@127.0.0.1:3341/test          MySQL 9 (mysqld of the tests/mysql-sid.sh chroot)
#   postgres://postgres@127.0.0.1:5440/test   PostgreSQL 15
#
# Data, sockets and logs live under /var/tmp/hierlock-instances
# (HIERLOCK_INSTANCES_DIR); MySQL's inside the chroot
# (/opt/mysql-sid/var/tmp/hierlock-instances/mysql, MYSQL_SID_ROOT).
# MariaDB runs as root (--user=root), MySQL as the chroot's mysql user,
# PostgreSQL as the `postgres` OS user. Needs root; MySQL needs the chroot
# (tests/mysql-sid.sh install).
set -u
BASE=${HIERLOCK_INSTANCES_DIR:-/var/tmp/hierlock-instances}
PGBIN=/usr/lib/postgresql/15/bin
LOG=$BASE/log
M_PORT=3340
MY_PORT=3341
CHROOT=${MYSQL_SID_ROOT:-/opt/mysql-sid}
MY_INNER=/var/tmp/hierlock-instances/mysql # MySQL's directory, as mysqld sees it inside the chroot
MY_DIR=$CHROOT$MY_INNER
PG_PORT=5440
WAIT_STEPS=240 # × 0.25 s = 60 s for every wait

say() { echo "instances: $*"; }
fail() {
    say "FAILED: $*" >&2
    for f in "$LOG"/*.err "$LOG"/*.log "$MY_DIR"/*.log; do
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

# The MySQL family's servers, by the pid file each writes.
pid_kill() { # PIDFILE: kill -9, as a crash would; wait until it is gone
    local p; p=$(cat "$1" 2>/dev/null) || return 0
    kill -KILL "$p" 2>/dev/null
    for _ in $(seq 1 $WAIT_STEPS); do kill -0 "$p" 2>/dev/null || break; sleep 0.25; done
    rm -f "$1"
}
pid_stop() { # PIDFILE NAME: SIGTERM (a clean shutdown); wait until it is gone
    local p; p=$(cat "$1" 2>/dev/null) || return 0
    kill -TERM "$p" 2>/dev/null
    for _ in $(seq 1 $WAIT_STEPS); do kill -0 "$p" 2>/dev/null || { rm -f "$1"; return 0; }; sleep 0.25; done
    fail "$2 (pid $p) did not stop"
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
m_kill() { pid_kill "$M_DIR/mysqld.pid"; }
m_stop() { pid_stop "$M_DIR/mysqld.pid" MariaDB; }

# ---------------------------------------------------------------- MySQL 9

my_sql() { chroot "$CHROOT" mysql -uroot -S "$MY_INNER/mysqld.sock" -N -B -e "$1"; }
my_launch() {
    alive "$MY_DIR/mysqld.pid" && return 0
    rm -f "$MY_DIR/mysqld.pid"
    # The chroot's mysql user owns what mysqld writes (its uid is not the host's).
    chroot "$CHROOT" chown -R mysql:mysql "$MY_INNER"
    setsid chroot "$CHROOT" /usr/sbin/mysqld --no-defaults --user=mysql --datadir="$MY_INNER/data" \
        --socket="$MY_INNER/mysqld.sock" --pid-file="$MY_INNER/mysqld.pid" --port=$MY_PORT \
        --bind-address=127.0.0.1 --mysqlx=OFF --log-error="$MY_INNER/error.log" \
        --secure-file-priv="" --innodb-buffer-pool-size=64M --max-connections=300 \
        </dev/null >>"$LOG/mysql.out" 2>&1 &
    wait_until "MySQL on $MY_PORT to accept connections" my_sql "SELECT 1"
}
my_start() {
    [ -x "$CHROOT/usr/sbin/mysqld" ] || fail "no MySQL chroot in $CHROOT (tests/mysql-sid.sh install)"
    if [ ! -f "$BASE/mysql.ready" ]; then
        alive "$MY_DIR/mysqld.pid" && my_kill
        rm -rf "$MY_DIR"
        mkdir -p "$MY_DIR"
        chroot "$CHROOT" chown -R mysql:mysql "$MY_INNER"
        chroot "$CHROOT" /usr/sbin/mysqld --no-defaults --initialize-insecure --user=mysql \
            --datadir="$MY_INNER/data" --log-error="$MY_INNER/init.log" ||
            { cp "$MY_DIR/init.log" "$LOG/mysql-init.log" 2>/dev/null; fail "mysqld --initialize-insecure"; }
        my_launch
        my_sql "CREATE USER IF NOT EXISTS 'root'@'127.0.0.1' IDENTIFIED BY '';
            GRANT ALL ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION;
            CREATE DATABASE IF NOT EXISTS test" || fail "accounts on MySQL $MY_PORT"
        touch "$BASE/mysql.ready"
    fi
    my_launch
    say "MySQL on $MY_PORT"
}
my_kill() { pid_kill "$MY_DIR/mysqld.pid"; }
my_stop() { pid_stop "$MY_DIR/mysqld.pid" MySQL; }

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
    my_start
    pg_start
    ;;
crash)
    case "${2:-}" in
    mariadb) m_kill; m_launch; say "MariaDB crashed and restarted" ;;
    mysql) my_kill; my_launch; say "MySQL crashed and restarted" ;;
    postgres) pg_kill; pg_launch; say "PostgreSQL crashed and restarted" ;;
    *) echo "usage: $0 crash mariadb|mysql|postgres" >&2; exit 2 ;;
    esac
    ;;
restart)
    case "${2:-}" in
    mariadb) m_stop; m_launch; say "MariaDB restarted" ;;
    mysql) my_stop; my_launch; say "MySQL restarted" ;;
    postgres) pg_stop; pg_launch; say "PostgreSQL restarted" ;;
    *) echo "usage: $0 restart mariadb|mysql|postgres" >&2; exit 2 ;;
    esac
    ;;
stop)
    m_stop
    my_stop
    pg_stop
    say "stopped"
    ;;
status)
    alive "$M_DIR/mysqld.pid" && say "MariaDB up on $M_PORT" || say "MariaDB down"
    alive "$MY_DIR/mysqld.pid" && say "MySQL up on $MY_PORT" || say "MySQL down"
    pg_running && say "PostgreSQL up on $PG_PORT" || say "PostgreSQL down"
    ;;
*)
    echo "usage: $0 start|crash mariadb|mysql|postgres|restart mariadb|mysql|postgres|stop|status" >&2
    exit 2
    ;;
esac
