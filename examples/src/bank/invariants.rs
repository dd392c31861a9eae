//! What must hold after any run, read back from the database.

use std::collections::HashMap;
use std::fmt;

use sea_orm::{ConnectionTrait, DbErr, EntityTrait};

use super::Tally;
use super::entity::{Opening, account, purchase, resource};

/// One invariant and whether it held.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Check {
    /// What should hold, e.g. `total money conserved`.
    pub name: &'static str,
    /// Whether it did.
    pub held: bool,
    /// The numbers behind the verdict.
    pub detail: String,
}

impl fmt::Display for Check {
    /// `total money conserved: yes (…)` or `… : INVARIANT BROKEN (…)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let verdict = if self.held { "yes" } else { "INVARIANT BROKEN" };
        write!(f, "{}: {verdict} ({})", self.name, self.detail)
    }
}

/// Read every table and check the bank's invariants against what it opened
/// with and what the tasks say they committed.
///
/// # Errors
/// Any database error while reading.
pub async fn check(
    db: &impl ConnectionTrait,
    opening: Opening,
    tally: &Tally,
) -> Result<Vec<Check>, DbErr> {
    // The tables are small: read them whole and add up in Rust.
    let accounts = account::Entity::find().all(db).await?;
    let items = resource::Entity::find().all(db).await?;
    let purchases = purchase::Entity::find().all(db).await?;

    let money: i64 = accounts.iter().map(|a| a.balance).sum::<i64>()
        + items.iter().map(|r| r.balance).sum::<i64>();
    let expected = opening.money + tally.deposited;
    let conserved = Check {
        name: "total money conserved",
        held: money == expected || is_subset_sum(money - expected, &tally.in_doubt),
        detail: if money == expected {
            format!(
                "{} opening + {} deposited = {money}",
                opening.money, tally.deposited
            )
        } else if is_subset_sum(money - expected, &tally.in_doubt) {
            format!(
                "{} opening + {} deposited + {} of {} deposits whose commit got no answer = {money}",
                opening.money,
                tally.deposited,
                money - expected,
                tally.in_doubt.len()
            )
        } else {
            format!(
                "expected {expected} = {} opening + {} deposited, found {money}: {:+} appeared",
                opening.money,
                tally.deposited,
                money - expected
            )
        },
    };

    let lowest = accounts.iter().map(|a| a.balance).min().unwrap_or(0);
    let no_overdraft = Check {
        name: "no overdraft",
        held: lowest >= 0,
        detail: format!("lowest balance {lowest}"),
    };

    let left: i64 = items.iter().map(|r| r.stock).sum();
    let sold = i64::try_from(purchases.len()).unwrap_or(i64::MAX);
    let stock = Check {
        name: "stock conserved",
        held: left + sold == opening.stock && items.iter().all(|r| r.stock >= 0),
        detail: format!(
            "{} opening, {left} left + {sold} sold = {}",
            opening.stock,
            left + sold
        ),
    };

    let mut per_request: HashMap<i64, u32> = HashMap::new();
    for p in &purchases {
        *per_request.entry(p.request_id).or_default() += 1;
    }
    let twice = per_request.values().filter(|&&n| n > 1).count();
    let once = Check {
        name: "no double purchase",
        held: twice == 0,
        detail: format!(
            "{} requests submitted twice, {twice} charged twice",
            tally.double_submits
        ),
    };

    // A request that fails for good is a failure the customer sees, even
    // when no money is lost (SQLite refuses writers instead of losing updates).
    let declined: u64 = tally.declined.values().sum();
    let answered = Check {
        name: "every request answered",
        held: tally.failed == 0,
        detail: if tally.failed == 0 {
            format!(
                "{} committed + {declined} declined of {}",
                tally.committed, tally.transactions
            )
        } else {
            format!(
                "{} of {} transactions failed after {} attempts",
                tally.failed,
                tally.transactions,
                super::ops::MAX_ATTEMPTS
            )
        },
    };

    Ok(vec![conserved, no_overdraft, stock, once, answered])
}

/// Whether `sum` is the total of some of `amounts` (all positive): the
/// deposits whose commit got no answer that did commit. Exact for the few a
/// run sees; past 20 of them, any total up to their sum is accepted.
fn is_subset_sum(sum: i64, amounts: &[i64]) -> bool {
    if sum < 0 {
        return false;
    }
    if amounts.len() > 20 {
        return sum <= amounts.iter().sum::<i64>();
    }
    let mut reachable = std::collections::BTreeSet::from([0i64]);
    for &amount in amounts {
        let next: Vec<i64> = reachable.iter().map(|r| r + amount).collect();
        reachable.extend(next);
    }
    reachable.contains(&sum)
}

#[cfg(test)]
mod tests {
    use super::is_subset_sum;

    #[test]
    fn money_from_deposits_in_doubt_is_some_of_them() {
        assert!(is_subset_sum(0, &[]));
        assert!(is_subset_sum(7, &[3, 4, 10]));
        assert!(is_subset_sum(13, &[3, 4, 10]));
        assert!(!is_subset_sum(5, &[3, 4, 10]));
        assert!(!is_subset_sum(-3, &[3]));
        assert!(!is_subset_sum(1, &[]));
    }
}
