//! What the worker tells its volunteer: numbers people can read.

use std::time::Duration;

/// `1234567` as `1,234,567`.
pub fn thousands(n: u128) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A duration as people say it: `850 ms`, `12.3 s`, `4m 05s`, `2h 03m`, `3d 04h`.
pub fn duration(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        0 => format!("{} ms", d.as_millis()),
        1..60 => format!("{:.1} s", d.as_secs_f64()),
        60..3600 => format!("{}m {:02}s", s / 60, s % 60),
        3600..86_400 => format!("{}h {:02}m", s / 3600, s % 3600 / 60),
        _ => format!("{}d {:02}h", s / 86_400, s % 86_400 / 3600),
    }
}

/// A node rate: `312.4 Mnodes/s`.
pub fn rate(nodes: u128, elapsed: Duration) -> String {
    let per_sec = nodes as f64 / elapsed.as_secs_f64().max(1e-3);
    if per_sec >= 1e9 {
        format!("{:.2} Gnodes/s", per_sec / 1e9)
    } else {
        format!("{:.1} Mnodes/s", per_sec / 1e6)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readable_numbers() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(119_060_324), "119,060,324");
        assert_eq!(
            thousands(u128::from(u64::MAX)),
            "18,446,744,073,709,551,615"
        );
        assert_eq!(duration(Duration::from_millis(850)), "850 ms");
        assert_eq!(duration(Duration::from_millis(12_340)), "12.3 s");
        assert_eq!(duration(Duration::from_secs(245)), "4m 05s");
        assert_eq!(duration(Duration::from_secs(7380)), "2h 03m");
        assert_eq!(duration(Duration::from_secs(273_600)), "3d 04h");
        assert_eq!(rate(312_400_000, Duration::from_secs(1)), "312.4 Mnodes/s");
        assert_eq!(rate(2_500_000_000, Duration::from_secs(1)), "2.50 Gnodes/s");
    }
}
