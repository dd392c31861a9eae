//! The HTTP API. Each handler runs its work in one request-scoped
//! transaction through `hierlock::retry`: the `#[hierlocked]` methods take
//! their locks on it, a lock timeout or deadlock rolls it back and runs the
//! work again on a new one, and the commit releases the locks.
//!
//! The work is an `async move` closure owning what it uses (a clone of the
//! repository, copied IDs): an `async` closure that borrows from the
//! handler makes axum reject the handler ("implementation of `Send` is not
//! general enough", a limitation of today's compiler with async closures).

use axum::extract::{Path, State};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::{Deserialize, Serialize};

use super::App;
use super::error::ServiceError;

/// The routes, on `app`'s state.
pub fn router(app: App) -> Router {
    Router::new()
        .route(
            "/accounts/{user}/{account}",
            get(balances).put(open_account),
        )
        .route(
            "/accounts/{user}/{account}/resources/{id}/deposit",
            post(deposit),
        )
        .route("/accounts/{user}/{account}/transfer", post(transfer))
        .with_state(app)
}

/// One resource and its balance.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Balance {
    /// The resource.
    pub id: i64,
    /// Its balance.
    pub balance: i64,
}

/// `PUT /accounts/{user}/{account}`: the account's resources.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Account {
    /// Every resource of the account.
    pub resources: Vec<Balance>,
}

/// `POST …/deposit`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Deposit {
    /// How much; positive.
    pub amount: i64,
}

/// `POST …/transfer`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Transfer {
    /// The paying resource.
    pub from: i64,
    /// The paid resource, another one of the same account.
    pub to: i64,
    /// How much; positive.
    pub amount: i64,
}

type AccountPath = Path<(i64, i64)>;

async fn open_account(
    State(app): State<App>,
    Path((user, account)): AccountPath,
    Json(body): Json<Account>,
) -> Result<Json<Account>, ServiceError> {
    if body.resources.iter().any(|r| r.balance < 0) {
        return Err(ServiceError::Invalid("balances cannot be negative".into()));
    }
    let rows: Vec<(i64, i64)> = body.resources.iter().map(|r| (r.id, r.balance)).collect();
    let repo = app.repo.clone();
    hierlock::retry(&app.db, &app.policy, async move |txn| {
        repo.open_account(txn, user, account, &rows).await
    })
    .await?;
    Ok(Json(body))
}

async fn balances(
    State(app): State<App>,
    Path((user, account)): AccountPath,
) -> Result<Json<Account>, ServiceError> {
    let repo = app.repo.clone();
    let rows = hierlock::retry(&app.db, &app.policy, async move |txn| {
        repo.balances(txn, user, account).await
    })
    .await?;
    let resources = rows
        .into_iter()
        .map(|(id, balance)| Balance { id, balance })
        .collect();
    Ok(Json(Account { resources }))
}

async fn deposit(
    State(app): State<App>,
    Path((user, account, id)): Path<(i64, i64, i64)>,
    Json(body): Json<Deposit>,
) -> Result<Json<Balance>, ServiceError> {
    let amount = positive(body.amount)?;
    let repo = app.repo.clone();
    let balance = hierlock::retry(&app.db, &app.policy, async move |txn| {
        repo.deposit(txn, user, account, id, amount).await
    })
    .await?;
    Ok(Json(Balance { id, balance }))
}

async fn transfer(
    State(app): State<App>,
    Path((user, account)): AccountPath,
    Json(body): Json<Transfer>,
) -> Result<Json<Transfer>, ServiceError> {
    let amount = positive(body.amount)?;
    if body.from == body.to {
        return Err(ServiceError::Invalid(format!(
            "a transfer from resource {} to itself",
            body.from
        )));
    }
    let (repo, Transfer { from, to, .. }) = (app.repo.clone(), body);
    hierlock::retry(&app.db, &app.policy, async move |txn| {
        repo.transfer(txn, user, account, from, to, amount).await
    })
    .await?;
    Ok(Json(body))
}

fn positive(amount: i64) -> Result<i64, ServiceError> {
    if amount > 0 {
        Ok(amount)
    } else {
        Err(ServiceError::Invalid(format!(
            "the amount must be positive, got {amount}"
        )))
    }
}
