//! The chaos run's table: one row per server and phase.

use std::fmt::Write as _;

use super::Phase;

/// A Markdown table of `phases`: requests, errors by kind, bystander errors,
/// victims' outcomes, invariant breaks and recovery time.
pub fn table(phases: &[Phase]) -> String {
    let mut out = String::from(
        "| server | fault | rounds | bystander transactions (committed) | bystander errors | \
         victims | unexpected | invariants broken | longest recovery |\n\
         |---|---|---|---|---|---|---|---|---|\n",
    );
    for phase in phases {
        let errors = if phase.bystanders.errors.is_empty() {
            "0".to_owned()
        } else {
            let kinds: Vec<String> = phase
                .bystanders
                .errors
                .iter()
                .map(|(label, n)| format!("{n} {}", super::error_kind(label)))
                .collect();
            format!("{}: {}", phase.bystander_errors(), kinds.join(", "))
        };
        let victims: Vec<String> = phase
            .victims
            .outcomes
            .iter()
            .map(|(outcome, n)| format!("{n} {outcome}"))
            .collect();
        let breaks: Vec<&str> = phase
            .checks
            .iter()
            .filter(|c| !c.held)
            .map(|c| c.name)
            .collect();
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} ({}) | {errors} | {} | {} | {} | {} |",
            phase.server.name(),
            phase.fault.map_or("none (steady)", |f| f.name()),
            phase.rounds,
            phase.bystanders.transactions,
            phase.bystanders.committed,
            if victims.is_empty() {
                "-".to_owned()
            } else {
                victims.join(", ")
            },
            phase.victims.unexpected,
            if breaks.is_empty() {
                "0".to_owned()
            } else {
                format!("{}: {}", breaks.len(), breaks.join(", "))
            },
            phase
                .victims
                .recovery
                .map_or("-".to_owned(), |took| format!("{} ms", took.as_millis())),
        );
    }
    out
}

/// Every bystander error of `phases` in full, one line per kind and phase:
/// what the table's summary stands for.
pub fn bystander_errors(phases: &[Phase]) -> String {
    let mut out = String::new();
    for phase in phases {
        for (label, n) in &phase.bystanders.errors {
            let fault = phase.fault.map_or("none (steady)", |f| f.name());
            let _ = writeln!(out, "{} / {fault}: {n} x {label}", phase.server.name());
        }
    }
    out
}
