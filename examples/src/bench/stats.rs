//! Interleaved repetitions and their summary: each variant's median and
//! [min–max], and its ratio to the baseline measured in the same repetition.

/// The order in which to run `variants` variants in repetition `rep`:
/// rotated by one each repetition (A B C, B C A, C A B…), so that no
/// variant always runs first, after a warm-up, or last.
pub fn order(variants: usize, rep: usize) -> Vec<usize> {
    (0..variants).map(|i| (i + rep) % variants).collect()
}

/// The median, minimum and maximum of some samples.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Spread {
    /// The middle sample (the upper middle of an even count).
    pub median: f64,
    /// The smallest sample.
    pub min: f64,
    /// The largest sample.
    pub max: f64,
}

impl Spread {
    /// The spread of `samples`; NaN everywhere when there are none.
    pub fn of(samples: &[f64]) -> Spread {
        let mut sorted: Vec<f64> = samples.iter().copied().filter(|s| !s.is_nan()).collect();
        sorted.sort_by(f64::total_cmp);
        Spread {
            median: sorted.get(sorted.len() / 2).copied().unwrap_or(f64::NAN),
            min: sorted.first().copied().unwrap_or(f64::NAN),
            max: sorted.last().copied().unwrap_or(f64::NAN),
        }
    }
}

/// One measured figure per variant per repetition, and which variant is
/// the baseline (the first unless [`Table::baseline`] says otherwise).
pub struct Table {
    names: Vec<String>,
    baseline: usize,
    /// `samples[variant][rep]`, NaN where a run failed.
    samples: Vec<Vec<f64>>,
}

impl Table {
    /// A table for these variants, the baseline first.
    pub fn new(names: impl IntoIterator<Item = impl Into<String>>) -> Table {
        let names: Vec<String> = names.into_iter().map(Into::into).collect();
        let samples = vec![Vec::new(); names.len()];
        Table {
            names,
            baseline: 0,
            samples,
        }
    }

    /// Make `variant` the baseline of the ratios.
    pub fn baseline(mut self, variant: usize) -> Table {
        self.baseline = variant;
        self
    }

    /// How many variants there are.
    pub fn len(&self) -> usize {
        self.names.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// Record `value` for `variant` in repetition `rep` (repetitions are
    /// recorded in order; a missing one is NaN).
    pub fn record(&mut self, variant: usize, rep: usize, value: f64) {
        let series = &mut self.samples[variant];
        series.resize(rep, f64::NAN);
        series.push(value);
    }

    /// Each variant's samples divided by the baseline's of the same repetition.
    fn ratios(&self, variant: usize) -> Vec<f64> {
        self.ratios_to(variant, self.baseline)
    }

    /// `variant`'s samples divided by `other`'s of the same repetition.
    fn ratios_to(&self, variant: usize, other: usize) -> Vec<f64> {
        self.samples[variant]
            .iter()
            .zip(&self.samples[other])
            .map(|(v, base)| v / base)
            .collect()
    }

    /// `variant` against any `other` variant, not only the baseline: the
    /// ratio of their medians, and the spread of the per-repetition ratios
    /// (what [`Table::print`] gives against the baseline). A variant
    /// compared with two others (the recipe with SeaORM's write and with the
    /// floor) needs both, and one table has one baseline.
    pub fn ratio_to(&self, variant: usize, other: usize) -> (f64, Spread) {
        let median = |v: usize| Spread::of(&self.samples[v]).median;
        (
            median(variant) / median(other),
            Spread::of(&self.ratios_to(variant, other)),
        )
    }

    /// Print one line per variant: median [min–max] of the figure in `unit`,
    /// and of its ratio to the baseline's figure of the same repetition.
    pub fn print(&self, unit: &str) {
        let width = self.names.iter().map(String::len).max().unwrap_or(0);
        for (variant, name) in self.names.iter().enumerate() {
            let figure = Spread::of(&self.samples[variant]);
            let line = format!(
                "  {name:<width$}  {:>10} {unit} [{}–{}]",
                fmt(figure.median),
                fmt(figure.min),
                fmt(figure.max),
            );
            if variant == self.baseline {
                println!("{line}  (baseline)");
            } else {
                let ratio = Spread::of(&self.ratios(variant));
                if ratio.median.is_nan() {
                    println!("{line}");
                } else {
                    println!(
                        "{line}  {:.2}× [{:.2}–{:.2}]",
                        ratio.median, ratio.min, ratio.max
                    );
                }
            }
        }
    }
}

/// A figure with about three significant digits.
pub fn fmt(value: f64) -> String {
    if value.is_nan() {
        "failed".to_owned()
    } else if value.abs() >= 100.0 {
        format!("{value:.0}")
    } else if value.abs() >= 1.0 {
        format!("{value:.2}")
    } else {
        format!("{value:.4}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_variant_leads_one_rep_in_turn() {
        assert_eq!(order(3, 0), [0, 1, 2]);
        assert_eq!(order(3, 1), [1, 2, 0]);
        assert_eq!(order(3, 2), [2, 0, 1]);
        assert_eq!(order(3, 3), [0, 1, 2]);
    }

    #[test]
    fn spread_is_median_min_max() {
        let spread = Spread::of(&[3.0, 1.0, 2.0, f64::NAN]);
        assert_eq!(
            spread,
            Spread {
                median: 2.0,
                min: 1.0,
                max: 3.0
            }
        );
    }

    #[test]
    fn ratios_pair_samples_of_the_same_rep() {
        let mut table = Table::new(["base", "other"]);
        table.record(0, 0, 100.0);
        table.record(1, 0, 50.0);
        table.record(0, 1, 10.0);
        table.record(1, 1, 20.0);
        assert_eq!(table.ratios(1), [0.5, 2.0]);
    }

    #[test]
    fn ratio_to_any_variant_is_of_medians_with_per_rep_range() {
        let mut table = Table::new(["base", "a", "b"]);
        for (rep, [base, a, b]) in [[10.0, 5.0, 20.0], [10.0, 8.0, 10.0], [10.0, 9.0, 30.0]]
            .into_iter()
            .enumerate()
        {
            table.record(0, rep, base);
            table.record(1, rep, a);
            table.record(2, rep, b);
        }
        let (of_medians, per_rep) = table.ratio_to(1, 2);
        assert_eq!(of_medians, 8.0 / 20.0);
        assert_eq!(
            per_rep,
            Spread {
                median: 0.3,
                min: 0.25,
                max: 0.8
            }
        );
    }
}
