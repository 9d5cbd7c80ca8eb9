//! Which starts a campaign covers: position lists such as `0-9,518`, the numbers of a family's
//! starts, and reproducible samples of them.

use c960_common::family::Family;

/// Parses a position list: comma-separated numbers and inclusive ranges in 0..=959.
pub fn parse_positions(text: &str) -> Result<Vec<u16>, String> {
    let numbers = parse_numbers(Family::Chess960, text)?;
    Ok(numbers.into_iter().map(|n| n as u16).collect())
}

/// Parses a list of start numbers of `family`: comma-separated numbers and inclusive ranges
/// below the family's count (for Chess960 the same as [`parse_positions`]).
pub fn parse_numbers(family: Family, text: &str) -> Result<Vec<u32>, String> {
    let count = family.count();
    let one = |s: &str| -> Result<u32, String> {
        let n: u32 = s
            .trim()
            .parse()
            .map_err(|_| format!("{s:?} is not a start position number"))?;
        if n >= count {
            return Err(format!(
                "{family} start position {n} is out of range 0..{}",
                count - 1
            ));
        }
        Ok(n)
    };
    let mut set = StartSet::new(count);
    for part in text.split(',').map(str::trim) {
        if part.is_empty() {
            return Err(format!("empty item in position list {text:?}"));
        }
        let (lo, hi) = match part.split_once('-') {
            Some((a, b)) => (one(a)?, one(b)?),
            None => (one(part)?, one(part)?),
        };
        if lo > hi {
            return Err(format!("range {part} is backwards"));
        }
        if hi - lo >= 10_000_000 {
            return Err(format!("range {part} is too long"));
        }
        (lo..=hi).for_each(|n| {
            set.insert(n);
        });
    }
    Ok(set.numbers())
}

/// A set of start numbers below a family's count, one bit each (a family has at most
/// 8,294,400 starts: a megabyte), so that listing or sampling millions of them is quick enough
/// for `campaign add` to refuse such a campaign at once.
struct StartSet {
    bits: Vec<u64>,
}

impl StartSet {
    fn new(count: u32) -> StartSet {
        StartSet {
            bits: vec![0; count.div_ceil(64) as usize],
        }
    }

    /// Adds `n`; false when it was there already.
    fn insert(&mut self, n: u32) -> bool {
        let (word, bit) = ((n / 64) as usize, 1u64 << (n % 64));
        let fresh = self.bits[word] & bit == 0;
        self.bits[word] |= bit;
        fresh
    }

    /// The numbers in the set, ascending.
    fn numbers(&self) -> Vec<u32> {
        let mut out = Vec::new();
        for (i, &word) in self.bits.iter().enumerate() {
            let mut w = word;
            while w != 0 {
                out.push(i as u32 * 64 + w.trailing_zeros());
                w &= w - 1;
            }
        }
        out
    }
}

/// A reproducible sample of `k` distinct start numbers of `family`, sorted: Floyd's algorithm
/// driven by SplitMix64 seeded with `seed`, so the same `(k, seed)` gives the same sample on
/// every machine and in every version.
pub fn sample_numbers(family: Family, k: u32, seed: u64) -> Result<Vec<u32>, String> {
    let n = family.count();
    if k == 0 || k > n {
        return Err(format!("--sample {k} must be in 1..{n} for {family}"));
    }
    let mut state = seed;
    let mut next = || {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    let mut chosen = StartSet::new(n);
    for j in n - k..n {
        // Uniform in 0..=j by rejection (no modulo bias).
        let range = u64::from(j) + 1;
        let zone = u64::MAX - u64::MAX % range;
        let t = loop {
            let x = next();
            if x < zone {
                break (x % range) as u32;
            }
        };
        if !chosen.insert(t) {
            chosen.insert(j);
        }
    }
    Ok(chosen.numbers())
}

/// The largest family a campaign covers whole when neither a list nor a sample is given.
pub const MAX_WHOLE_FAMILY: u32 = 5040;

/// The starts a campaign covers: `--positions` (a list), `--sample K --seed S`, or else the
/// whole family when it has at most [`MAX_WHOLE_FAMILY`] starts.
pub fn select_starts(
    family: &str,
    positions: Option<&str>,
    sample: Option<u32>,
    seed: u64,
) -> Result<(Family, Vec<u32>), String> {
    let family = Family::parse(family).map_err(|e| e.to_string())?;
    let numbers = match (positions, sample) {
        (Some(_), Some(_)) => return Err("give --positions or --sample, not both".into()),
        (Some(list), None) => parse_numbers(family, list)?,
        (None, Some(k)) => sample_numbers(family, k, seed)?,
        (None, None) if family.count() <= MAX_WHOLE_FAMILY => (0..family.count()).collect(),
        (None, None) => {
            return Err(format!(
                "{family} has {} starts: choose some with --positions or --sample K --seed S",
                family.count()
            ));
        }
    };
    Ok((family, numbers))
}

/// The canonical text of a position list (`0-959`, `0-9,518`), used to recognise a campaign
/// when `run` is started again with the same arguments.
pub fn format_positions(positions: &[u16]) -> String {
    let numbers: Vec<u32> = positions.iter().map(|&p| u32::from(p)).collect();
    format_numbers(&numbers)
}

/// [`format_positions`] for start numbers of any family.
pub fn format_numbers(positions: &[u32]) -> String {
    let mut parts = Vec::new();
    let mut i = 0;
    while i < positions.len() {
        let start = positions[i];
        let mut end = start;
        while i + 1 < positions.len() && positions[i + 1] == end + 1 {
            i += 1;
            end = positions[i];
        }
        parts.push(if start == end {
            start.to_string()
        } else {
            format!("{start}-{end}")
        });
        i += 1;
    }
    parts.join(",")
}
