//! CPU time spent per transaction: by this process (the clients: hierlock,
//! SeaORM, sqlx, Tokio) and by the database server when it runs on this
//! machine. On 2 cores shared by 16 clients and the server, throughput is
//! bounded by the CPU both spend per transaction; these figures say which
//! side a gap comes from.
//!
//! Read from `/proc` (Linux): the `utime` and `stime` of this process and of
//! every process of the server's program (`mariadbd`, `mysqld`, the
//! `postgres` processes), in clock ticks of 10 ms (Linux's `USER_HZ` is 100
//! on every architecture it exposes to user space). Elsewhere, or when the
//! server is not on this machine, a figure is missing.

use std::time::Duration;

use hierlock::Dialect;

/// Linux reports process times in ticks of `1 / USER_HZ` seconds.
const USER_HZ: u64 = 100;

/// CPU time used so far by the clients and by the server.
#[derive(Clone, Copy, Debug)]
pub struct CpuTimes {
    client: Option<Duration>,
    server: Option<Duration>,
}

/// CPU per transaction over a measured run.
#[derive(Clone, Copy, Debug)]
pub struct CpuPerTxn {
    /// This process's CPU per transaction, µs.
    pub client_us: f64,
    /// The server's CPU per transaction, µs (NaN when it cannot be read).
    pub server_us: f64,
}

impl CpuTimes {
    /// The times now, the server found by its program's name.
    pub fn now(dialect: Dialect) -> CpuTimes {
        CpuTimes {
            client: std::fs::read_to_string("/proc/self/stat")
                .ok()
                .and_then(|stat| process_time(&stat)),
            server: server_program(dialect).and_then(program_time),
        }
    }

    /// The CPU used since `self`, divided over `txns` transactions.
    pub fn per_txn_since(self, later: CpuTimes, txns: i64) -> CpuPerTxn {
        let per_txn = |before: Option<Duration>, after: Option<Duration>| match (before, after) {
            (Some(before), Some(after)) if after >= before && txns > 0 => {
                (after - before).as_secs_f64() * 1e6 / txns as f64
            }
            _ => f64::NAN,
        };
        CpuPerTxn {
            client_us: per_txn(self.client, later.client),
            server_us: per_txn(self.server, later.server),
        }
    }
}

/// The name the server's processes run under (`/proc/PID/comm`).
fn server_program(dialect: Dialect) -> Option<&'static str> {
    match dialect {
        Dialect::MariaDb => Some("mariadbd"),
        Dialect::MySql => Some("mysqld"),
        Dialect::Postgres => Some("postgres"),
        _ => None,
    }
}

/// The CPU time of every process named `program`, summed; `None` if there
/// is none (the server runs elsewhere).
fn program_time(program: &str) -> Option<Duration> {
    let mut total = None;
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let path = entry.path();
        let Ok(stat) = std::fs::read_to_string(path.join("stat")) else {
            continue;
        };
        if command_name(&stat) == Some(program)
            && let Some(time) = process_time(&stat)
        {
            total = Some(total.unwrap_or(Duration::ZERO) + time);
        }
    }
    total
}

/// The command name of a `/proc/PID/stat` line: between the first `(` and
/// the last `)` (it may contain spaces and parentheses).
fn command_name(stat: &str) -> Option<&str> {
    Some(&stat[stat.find('(')? + 1..stat.rfind(')')?])
}

/// `utime + stime` of a `/proc/PID/stat` line: fields 14 and 15, counted
/// from the pid, that is the 12th and 13th after the command name.
fn process_time(stat: &str) -> Option<Duration> {
    let mut after_name = stat[stat.rfind(')')? + 1..].split_whitespace();
    let utime: u64 = after_name.nth(11)?.parse().ok()?;
    let stime: u64 = after_name.next()?.parse().ok()?;
    Some(Duration::from_millis((utime + stime) * 1000 / USER_HZ))
}

#[cfg(test)]
mod tests {
    use super::*;

    const STAT: &str = "3790 (mari (a) db) S 1 3790 3790 0 -1 4194560 52716 0 \
                        13 0 250 75 0 0 20 0 45 0 1019 8591144176 25437";

    #[test]
    fn reads_the_command_name_and_the_cpu_ticks() {
        assert_eq!(command_name(STAT), Some("mari (a) db"));
        // 250 + 75 ticks of 10 ms.
        assert_eq!(process_time(STAT), Some(Duration::from_millis(3250)));
    }

    #[test]
    fn this_process_cpu_time_grows_as_it_computes() {
        // Spin until the process has used 30 ms of CPU by its own account
        // (however loaded the machine), bounded by 10 s of wall time.
        let before = CpuTimes::now(Dialect::Sqlite);
        let started = std::time::Instant::now();
        let mut x = 0u64;
        let used = loop {
            for _ in 0..100_000 {
                x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
            }
            let used = before.per_txn_since(CpuTimes::now(Dialect::Sqlite), 1);
            if used.client_us >= 30_000.0 || started.elapsed() > Duration::from_secs(10) {
                break used;
            }
        };
        assert!(used.client_us >= 30_000.0, "{used:?}");
        assert!(used.server_us.is_nan(), "SQLite has no server: {used:?}");
    }
}
