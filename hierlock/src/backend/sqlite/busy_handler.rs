//! hierlock's busy handler on a SQLite connection. Its unsafe code is kept
//! to the calls into SQLite's C API (the crate's only other unsafe code is
//! the cast in `guarantee::dense::identity`).
//!
//! [`install`] registers, on one connection, the SQL function the lock
//! statement calls ([`LOCK_WAIT_FUNCTION`]) and a busy handler. Both share
//! one [`Handler`], owned by the function: SQLite frees it (through
//! [`destroy`]) when the connection closes, after the handler's last call.
//!
//! When a statement waits for the database lock, SQLite calls [`on_busy`] on
//! the thread that steps the statement. It looks among the connection's
//! statements for a running lock statement (`sqlite3_next_stmt`,
//! `sqlite3_stmt_busy`, `sqlite3_sql`), reads its token from its bound text
//! (`sqlite3_expanded_sql`), and asks [`waits::verdict`] whether to go on.
//! It reads the connection and changes nothing, as SQLite requires of a
//! busy handler.

use std::ffi::{CStr, CString, c_int, c_void};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::ptr::{self, NonNull};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use libsqlite3_sys as ffi;
use sea_orm::sqlx::sqlite::LockedSqliteHandle;

use super::waits::{self, Verdict, Waiter};
use super::{LOCK_WAIT_FUNCTION, is_watched, token_in};

/// What the busy handler knows of its connection.
struct Handler {
    db: NonNull<ffi::sqlite3>,
    /// How long other statements wait (the connection's busy timeout).
    busy_timeout: Duration,
    /// When the current wait began: SQLite calls the handler with count 0
    /// at the first try of each wait.
    waiting_since: Mutex<Instant>,
}

/// SQLite's error code, when installing failed.
#[derive(Clone, Copy, Debug)]
pub(crate) struct InstallError(pub(crate) c_int);

/// Install hierlock's busy handler on the connection, replacing its busy
/// timeout: statements other than hierlock's lock statement wait
/// `busy_timeout`, as they did. On failure the connection keeps
/// `busy_timeout` as its busy timeout.
pub(crate) fn install(
    conn: &mut LockedSqliteHandle<'_>,
    busy_timeout: Duration,
) -> Result<(), InstallError> {
    // Open, and locked: sqlx's worker makes no call on it while `conn` lives.
    let db = conn.as_raw_handle();
    let name = CString::new(LOCK_WAIT_FUNCTION).map_err(|_| InstallError(ffi::SQLITE_MISUSE))?;
    let handler = Box::into_raw(Box::new(Handler {
        db,
        busy_timeout,
        waiting_since: Mutex::new(Instant::now()),
    }));
    // SAFETY: `db` is open and ours for the call (`conn` locks it).
    // While the function is registered, the busy handler points at no
    // `Handler` of an earlier install, which re-registering frees.
    // `handler` is a valid `Handler` until `destroy`, which SQLite calls
    // when the function is dropped (the connection closes, or a later
    // install replaces it) or if registering fails; the busy handler that
    // shares it is installed only after a successful registration.
    unsafe {
        ffi::sqlite3_busy_handler(db.as_ptr(), None, ptr::null_mut());
        let registered = ffi::sqlite3_create_function_v2(
            db.as_ptr(),
            name.as_ptr(),
            1,
            ffi::SQLITE_UTF8 | ffi::SQLITE_DETERMINISTIC,
            handler.cast(),
            Some(lock_wait),
            None,
            None,
            Some(destroy),
        );
        if registered != ffi::SQLITE_OK {
            ffi::sqlite3_busy_timeout(db.as_ptr(), millis(busy_timeout));
            return Err(InstallError(registered));
        }
        match ffi::sqlite3_busy_handler(db.as_ptr(), Some(on_busy), handler.cast()) {
            ffi::SQLITE_OK => Ok(()),
            failed => {
                ffi::sqlite3_busy_timeout(db.as_ptr(), millis(busy_timeout));
                Err(InstallError(failed))
            }
        }
    }
}

/// SQLite takes an `int` of milliseconds.
fn millis(d: Duration) -> c_int {
    c_int::try_from(d.as_millis()).unwrap_or(c_int::MAX)
}

/// The busy handler: 1 to try the lock again after a sleep, 0 to give up
/// (the statement fails with `SQLITE_BUSY`).
unsafe extern "C" fn on_busy(handler: *mut c_void, count: c_int) -> c_int {
    // Nothing below is expected to panic; if it did, give up rather than
    // unwind into SQLite.
    catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: `handler` is the `Handler` registered with this busy
        // handler, alive until the connection closes (see `install`); SQLite
        // calls the handler only on the thread that uses the connection.
        let handler = unsafe { &*handler.cast::<Handler>() };
        let now = Instant::now();
        let since = {
            let mut since = handler
                .waiting_since
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if count == 0 {
                *since = now;
            }
            *since
        };
        // SAFETY: the connection is open: SQLite is calling its busy handler.
        let waiter = unsafe { waiting_statement(handler.db) };
        match waits::verdict(waiter, now.duration_since(since), handler.busy_timeout) {
            Verdict::GiveUp => 0,
            Verdict::Sleep(step) => {
                std::thread::sleep(step);
                1
            }
        }
    }))
    .unwrap_or(0)
}

/// hierlock's lock statement if it is running on `db` (then it is the one
/// waiting: it takes the lock in its first step, or fails), else
/// [`Waiter::Other`].
///
/// # Safety
/// `db` is an open connection, used by this thread.
unsafe fn waiting_statement(db: NonNull<ffi::sqlite3>) -> Waiter {
    // SAFETY: `db` is open; each statement comes from `sqlite3_next_stmt`
    // on it and is not finalized meanwhile (only this thread uses `db`);
    // `sqlite3_sql` returns a NUL-terminated text owned by the statement,
    // read before anything else happens to it.
    unsafe {
        let mut stmt = ffi::sqlite3_next_stmt(db.as_ptr(), ptr::null_mut());
        while !stmt.is_null() {
            let sql = ffi::sqlite3_sql(stmt);
            if ffi::sqlite3_stmt_busy(stmt) != 0
                && !sql.is_null()
                && is_watched(CStr::from_ptr(sql).to_bytes())
            {
                return Waiter::Lock(token_of(stmt));
            }
            stmt = ffi::sqlite3_next_stmt(db.as_ptr(), stmt);
        }
    }
    Waiter::Other
}

/// The token bound to a lock statement.
///
/// # Safety
/// `stmt` is a live statement of a connection used by this thread.
unsafe fn token_of(stmt: *mut ffi::sqlite3_stmt) -> Option<i64> {
    // SAFETY: `stmt` is live; `sqlite3_expanded_sql` returns NULL or a
    // NUL-terminated text that we own and free with `sqlite3_free`, once,
    // after its last read.
    unsafe {
        let expanded = ffi::sqlite3_expanded_sql(stmt);
        if expanded.is_null() {
            return None;
        }
        let token = CStr::from_ptr(expanded).to_str().ok().and_then(token_in);
        ffi::sqlite3_free(expanded.cast());
        token
    }
}

/// [`LOCK_WAIT_FUNCTION`]: 0, so that the lock statement changes no row.
unsafe extern "C" fn lock_wait(
    ctx: *mut ffi::sqlite3_context,
    _argc: c_int,
    _argv: *mut *mut ffi::sqlite3_value,
) {
    // SAFETY: SQLite calls the function with a valid context.
    unsafe { ffi::sqlite3_result_int(ctx, 0) }
}

/// Frees the [`Handler`] when SQLite drops the function.
unsafe extern "C" fn destroy(handler: *mut c_void) {
    // SAFETY: `handler` came from `Box::into_raw` in `install`; SQLite calls
    // this once, after the handler's last use (see `install`). Dropping a
    // `Handler` cannot panic.
    drop(unsafe { Box::from_raw(handler.cast::<Handler>()) });
}
