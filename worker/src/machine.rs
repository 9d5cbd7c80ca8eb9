//! What the machine offers a worker by default: every logical core, and a perft table sized
//! from the installed memory.

/// Logical cores (hardware threads) this process may use.
pub fn logical_cores() -> u32 {
    std::thread::available_parallelism()
        .map(|n| u32::try_from(n.get()).unwrap_or(u32::MAX))
        .unwrap_or(1)
}

/// Installed memory in MiB, where the system says (Linux: `MemTotal` of `/proc/meminfo`).
pub fn memory_mib() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    meminfo_total_mib(&text)
}

fn meminfo_total_mib(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024)
}

/// The smallest and largest default perft tables, in MiB.
pub const DEFAULT_HASH_RANGE: (u32, u32) = (16, 2048);
/// The default table when the memory is unknown.
pub const FALLBACK_HASH_MIB: u32 = 256;

/// The default perft table for a machine with `memory_mib` of memory: an eighth of it (a
/// volunteer's machine stays usable), rounded down to a power of two, within
/// [`DEFAULT_HASH_RANGE`]. Beyond 2 GiB a bigger table gains little on workunits of minutes.
pub fn default_hash_mib(memory_mib: Option<u64>) -> u32 {
    let Some(mem) = memory_mib else {
        return FALLBACK_HASH_MIB;
    };
    let eighth = (mem / 8).max(1);
    let pow2 = 1u64 << (63 - eighth.leading_zeros());
    pow2.clamp(
        u64::from(DEFAULT_HASH_RANGE.0),
        u64::from(DEFAULT_HASH_RANGE.1),
    ) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_eighth_of_memory_as_a_power_of_two_within_bounds() {
        assert_eq!(default_hash_mib(None), FALLBACK_HASH_MIB);
        assert_eq!(default_hash_mib(Some(24_105)), 2048);
        assert_eq!(default_hash_mib(Some(8192)), 1024);
        assert_eq!(default_hash_mib(Some(6000)), 512);
        assert_eq!(default_hash_mib(Some(512)), 64);
        assert_eq!(default_hash_mib(Some(64)), 16);
        assert_eq!(default_hash_mib(Some(0)), 16);
        assert_eq!(default_hash_mib(Some(1 << 20)), 2048);
        let meminfo = "MemTotal:       24683520 kB\nMemFree:         5767168 kB\n";
        assert_eq!(meminfo_total_mib(meminfo), Some(24_105));
        assert_eq!(meminfo_total_mib("nothing"), None);
        assert!(logical_cores() >= 1);
    }
}
