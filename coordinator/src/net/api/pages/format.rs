//! How the pages write numbers, rates, durations and times. Pure functions.

/// `1234567` → `1,234,567` (exact for any u128).
pub fn grouped(n: u128) -> String {
    c960_common::text::thousands(n)
}

/// A coefficient with its interval, `0.738 [0.692, 0.775]`; when undefined, why.
pub fn estimate(e: Option<c960_common::balance::Estimate>) -> String {
    e.map_or_else(
        || "— (fewer than 2 starts, or one table's scores all equal)".into(),
        |e| format!("{:.3} [{:.3}, {:.3}]", e.value, e.low, e.high),
    )
}

/// A rate with an SI prefix: `12.3 M/s`; `—` when unknown.
pub fn per_second(rate: Option<f64>, unit: &str) -> String {
    let Some(r) = rate else {
        return "—".into();
    };
    let (v, p) = [(1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")]
        .into_iter()
        .find(|(scale, _)| r >= *scale)
        .map_or((r, ""), |(scale, p)| (r / scale, p));
    let digits = if v >= 100.0 || p.is_empty() && v == v.trunc() {
        0
    } else if v >= 10.0 {
        1
    } else {
        2
    };
    format!("{v:.digits$} {p}{unit}/s")
}

/// `3725` s → `1 h 2 min`; `—` when unknown; `done` for zero.
pub fn duration(secs: Option<f64>) -> String {
    let Some(s) = secs.filter(|s| s.is_finite() && *s >= 0.0) else {
        return "—".into();
    };
    if s == 0.0 {
        return "done".into();
    }
    let s = s.round() as u64;
    match s {
        0..60 => format!("{s} s"),
        60..3600 if s.is_multiple_of(60) => format!("{} min", s / 60),
        60..3600 => format!("{} min {} s", s / 60, s % 60),
        3600..86_400 if s % 3600 < 60 => format!("{} h", s / 3600),
        3600..86_400 => format!("{} h {} min", s / 3600, s % 3600 / 60),
        _ => format!("{} d {} h", s / 86_400, s % 86_400 / 3600),
    }
}

/// How long ago `then_ms` was: `12 s ago`, `3 min ago`, …
pub fn ago(now_ms: i64, then_ms: i64) -> String {
    let secs = (now_ms - then_ms).max(0) as f64 / 1000.0;
    if secs < 1.0 {
        return "just now".into();
    }
    format!("{} ago", duration(Some(secs.floor())))
}

/// `share` of 1 as a percentage with one decimal, never 100.0 unless complete.
pub fn percent(done: u64, total: u64) -> f64 {
    if total == 0 {
        return 0.0;
    }
    let p = (done as f64 * 1000.0 / total as f64).floor() / 10.0;
    if done < total { p.min(99.9) } else { 100.0 }
}

pub use crate::clock::utc;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_rates_and_durations_read_well() {
        assert_eq!(grouped(0), "0");
        assert_eq!(grouped(999), "999");
        assert_eq!(grouped(1_000), "1,000");
        assert_eq!(grouped(2_854_198_413_886), "2,854,198,413,886");
        assert_eq!(grouped(u128::MAX).replace(',', ""), u128::MAX.to_string());
        assert_eq!(per_second(None, "nodes"), "—");
        assert_eq!(per_second(Some(3.0), "results"), "3 results/s");
        assert_eq!(per_second(Some(0.25), "results"), "0.25 results/s");
        assert_eq!(per_second(Some(12_345_678.0), "nodes"), "12.3 Mnodes/s");
        assert_eq!(per_second(Some(2.5e9), "nodes"), "2.50 Gnodes/s");
        assert_eq!(duration(None), "—");
        assert_eq!(duration(Some(0.0)), "done");
        assert_eq!(duration(Some(42.4)), "42 s");
        assert_eq!(duration(Some(3725.0)), "1 h 2 min");
        assert_eq!(duration(Some(90_000.0)), "1 d 1 h");
        assert_eq!(ago(10_000, 10_500), "just now");
        assert_eq!(ago(70_000, 10_000), "1 min ago");
        assert_eq!(duration(Some(600.0)), "10 min");
        assert_eq!(duration(Some(7210.0)), "2 h");
        assert_eq!(percent(0, 0), 0.0);
        assert_eq!(percent(9_999, 10_000), 99.9);
        assert_eq!(percent(10, 10), 100.0);
        assert_eq!(utc(0), "1970-01-01 00:00:00");
        assert_eq!(utc(1_796_123_758_000), "2026-12-01 11:15:58");
    }
}
