//! Which connections `serve` admits, as pure rules: [`ConnLimits`] (the operator's caps),
//! [`admission`] (one new connection against what is open), [`total_for_descriptors`] (the
//! default total cap, from the process's file descriptor limit) and [`held_for_descriptors`]
//! (how many refused connections may be held a moment before they are closed).
//!
//! Why three caps and shedding: a flood from a handful of addresses must never take the
//! coordinator away from everyone else. The per-address cap bounds one client; the per-block cap
//! bounds a neighbourhood of addresses (an IPv4 /24, an IPv6 /48: [`crate::integrity::trust::address_block`],
//! what a small botnet or one IPv6 allocation gives for free); the total cap keeps descriptors
//! for the database and logs. When the total is reached, a connection from a block lighter than
//! the heaviest is still admitted and the oldest idle connection of the heaviest block is closed
//! instead ([`Admission::AdmitShedding`]): whoever holds the most gives way, so a new address, a
//! status probe, a health check or the operator's admin request gets through however many
//! blocks the flood fills.

use std::time::Duration;

/// Operator limits on connections (`serve` flags).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConnLimits {
    /// Connections one client address may hold open (0: no cap).
    pub per_address: usize,
    /// Connections one address block may hold open (0: no cap).
    pub per_block: usize,
    /// Connections open in all (0: no cap). `serve` sizes it from the descriptor limit
    /// ([`total_for_descriptors`]) unless `--max-connections` says otherwise.
    pub total: usize,
    /// Refused connections held open for a moment before they are closed, at most, so that a
    /// client reconnecting at once cannot spin (0: closed at once; see `net/conn/tarpit.rs`).
    pub held_refusals: usize,
    /// Longest time to receive a request's head, from when the server starts waiting for it.
    pub header_timeout: Duration,
    /// Longest time a connection may go without any byte read or written while none of its
    /// requests is being handled.
    pub idle_timeout: Duration,
}

/// Connections one address may hold by default: a worker holds one or two, a browser six.
pub const DEFAULT_PER_ADDRESS: usize = 64;

/// Connections one address block may hold by default.
///
/// Why 512: an IPv4 /24 has 254 hosts, so a lab (or a campus NAT pool) whose every host runs a
/// worker holding two connections needs 508 at most: no LAN of honest workers meets this cap,
/// including loopback and private blocks, where it applies too (a lab machine gone wrong floods
/// like any other). What it stops is a flood from many addresses of one block, which would
/// otherwise hold 256 × [`DEFAULT_PER_ADDRESS`] = 16,384 connections. An IPv6 /48 may hold more
/// hosts: a larger LAN behind one raises `--max-connections-per-block`.
pub const DEFAULT_PER_BLOCK: usize = 512;

/// The most connections the default total cap allows whatever the descriptor limit: a
/// connection that began a request head and stalls costs about 16 KiB of buffers and task state
/// (measured in `docs/security-results.md`, issue 31), so this bounds them near 256 MiB.
pub const MAX_DEFAULT_TOTAL: usize = 16_384;

/// The descriptor limit assumed where the process cannot tell its own (1,024: Linux's usual
/// soft limit), giving the old default of 768 connections.
pub const FALLBACK_DESCRIPTORS: u64 = 1024;

impl Default for ConnLimits {
    fn default() -> Self {
        let total = total_for_descriptors(FALLBACK_DESCRIPTORS);
        ConnLimits {
            per_address: DEFAULT_PER_ADDRESS,
            per_block: DEFAULT_PER_BLOCK,
            total,
            held_refusals: held_for_descriptors(FALLBACK_DESCRIPTORS, total),
            header_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(30),
        }
    }
}

/// The default total cap for a process that may open `descriptors` files.
///
/// The connections may take all but a reserve: an eighth of the limit, at least 256. The reserve
/// holds what else the coordinator opens: SQLite's database, WAL and shared-memory files for the
/// writer and each export connection (a fresh one while another is busy), or PostgreSQL's
/// pooled sockets; the log and standard streams; the listener, the runtime's event descriptors;
/// and the connections being accepted only to be closed at once (refused ones hold a
/// descriptor for an instant). Capped at [`MAX_DEFAULT_TOTAL`] for memory.
pub fn total_for_descriptors(descriptors: u64) -> usize {
    let reserve = (descriptors / 8).max(256);
    let usable = descriptors.saturating_sub(reserve);
    usize::try_from(usable)
        .unwrap_or(usize::MAX)
        .clamp(1, MAX_DEFAULT_TOTAL)
}

/// The most refused connections held before they are closed, for a process that may open
/// `descriptors` files with a total cap of `total`: half of what the cap leaves (the other half
/// stays for the database and logs), at most 4,096; none without a cap.
pub fn held_for_descriptors(descriptors: u64, total: usize) -> usize {
    if total == 0 {
        return 0;
    }
    let left = descriptors.saturating_sub(total as u64) / 2;
    usize::try_from(left).unwrap_or(usize::MAX).min(4096)
}

/// What is open when a new connection arrives.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Load {
    /// Connections open in all.
    pub total: usize,
    /// Open from the new connection's address.
    pub address: usize,
    /// Open from the new connection's address block.
    pub block: usize,
    /// Open from the block that holds the most (read only at the total cap; 0 otherwise).
    pub heaviest_block: usize,
}

/// Why a connection is closed at once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// Its address holds [`ConnLimits::per_address`].
    Address,
    /// Its address block holds [`ConnLimits::per_block`].
    Block,
    /// [`ConnLimits::total`] are open and its block is among the heaviest.
    Total,
}

impl Refusal {
    /// The reason as the metrics and logs name it.
    pub fn name(self) -> &'static str {
        match self {
            Refusal::Address => "address",
            Refusal::Block => "block",
            Refusal::Total => "total",
        }
    }
}

/// What becomes of a new connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Admission {
    /// Admitted.
    Admit,
    /// Admitted at the total cap: the oldest idle connection of the heaviest block is closed.
    AdmitShedding,
    /// Closed at once.
    Refuse(Refusal),
}

/// Whether a new connection is admitted, given what is open (`load`). `proxy`: the connection
/// comes from a trusted reverse proxy, which carries many clients, so only the total cap applies
/// to it.
///
/// At the total cap a connection is still admitted, shedding one of the heaviest block's, when
/// its own block would then hold fewer than the heaviest: the heaviest block gives way to
/// lighter ones, never to itself or to a block as heavy (so shedding cannot go round in circles).
pub fn admission(limits: &ConnLimits, load: Load, proxy: bool) -> Admission {
    if !proxy {
        if limits.per_address != 0 && load.address >= limits.per_address {
            return Admission::Refuse(Refusal::Address);
        }
        if limits.per_block != 0 && load.block >= limits.per_block {
            return Admission::Refuse(Refusal::Block);
        }
    }
    if limits.total == 0 || load.total < limits.total {
        return Admission::Admit;
    }
    if load.block + 1 < load.heaviest_block {
        return Admission::AdmitShedding;
    }
    Admission::Refuse(Refusal::Total)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(per_address: usize, per_block: usize, total: usize) -> ConnLimits {
        ConnLimits {
            per_address,
            per_block,
            total,
            ..ConnLimits::default()
        }
    }

    fn load(total: usize, address: usize, block: usize, heaviest_block: usize) -> Load {
        Load {
            total,
            address,
            block,
            heaviest_block,
        }
    }

    #[test]
    fn caps_per_address_per_block_and_in_all() {
        let l = limits(2, 3, 10);
        assert_eq!(admission(&l, load(0, 0, 0, 0), false), Admission::Admit);
        assert_eq!(admission(&l, load(5, 1, 2, 0), false), Admission::Admit);
        assert_eq!(
            admission(&l, load(5, 2, 2, 0), false),
            Admission::Refuse(Refusal::Address)
        );
        assert_eq!(
            admission(&l, load(5, 1, 3, 0), false),
            Admission::Refuse(Refusal::Block)
        );
        // At the total, a block as heavy as the heaviest is refused.
        assert_eq!(
            admission(&l, load(10, 0, 2, 3), false),
            Admission::Refuse(Refusal::Total)
        );
        let unbounded = limits(0, 0, 0);
        assert_eq!(
            admission(&unbounded, load(1 << 20, 1 << 20, 1 << 20, 0), false),
            Admission::Admit
        );
    }

    #[test]
    fn at_the_total_a_lighter_block_sheds_the_heaviest() {
        let l = limits(64, 512, 100);
        // A new address of a new block while one block holds 60 of 100.
        assert_eq!(
            admission(&l, load(100, 0, 0, 60), false),
            Admission::AdmitShedding
        );
        // Its block would hold 2 against the heaviest's 3: still lighter.
        assert_eq!(
            admission(&l, load(100, 0, 1, 3), false),
            Admission::AdmitShedding
        );
        // Equal after the swap: no shedding (the blocks would only trade places).
        assert_eq!(
            admission(&l, load(100, 0, 2, 3), false),
            Admission::Refuse(Refusal::Total)
        );
        // The heaviest block itself never sheds its own.
        assert_eq!(
            admission(&l, load(100, 5, 60, 60), false),
            Admission::Refuse(Refusal::Total)
        );
    }

    #[test]
    fn a_trusted_proxy_meets_only_the_total_cap() {
        let l = limits(1, 1, 3);
        assert_eq!(admission(&l, load(2, 2, 2, 0), true), Admission::Admit);
        assert_eq!(
            admission(&l, load(3, 3, 3, 3), true),
            Admission::Refuse(Refusal::Total)
        );
        assert_eq!(
            admission(&l, load(2, 1, 1, 0), false),
            Admission::Refuse(Refusal::Address)
        );
    }

    #[test]
    fn a_lab_of_254_hosts_with_two_connections_each_fits_one_block() {
        let l = ConnLimits::default();
        let open = 254 * 2 - 1;
        assert_eq!(
            admission(&l, load(open, 1, open, 0), false),
            Admission::Admit
        );
    }

    #[test]
    fn the_total_leaves_a_reserve_of_descriptors() {
        // Linux's usual soft limit keeps the old default.
        assert_eq!(total_for_descriptors(1024), 768);
        assert_eq!(total_for_descriptors(4096), 3584);
        assert_eq!(total_for_descriptors(20_000), MAX_DEFAULT_TOTAL);
        assert_eq!(total_for_descriptors(1 << 20), MAX_DEFAULT_TOTAL);
        assert_eq!(total_for_descriptors(u64::MAX), MAX_DEFAULT_TOTAL);
        // A tiny limit still admits one connection rather than none (0 would mean no cap).
        assert_eq!(total_for_descriptors(100), 1);
        for d in [300u64, 1024, 4096, 65_536] {
            let t = total_for_descriptors(d);
            let reserve = d - t as u64;
            assert!(reserve >= 256 && reserve >= d / 8, "{d}: {t}");
            // Held refusals take at most half of the reserve.
            assert!(held_for_descriptors(d, t) as u64 <= reserve / 2);
        }
        assert_eq!(held_for_descriptors(1024, 768), 128);
        assert_eq!(held_for_descriptors(20_000, MAX_DEFAULT_TOTAL), 1808);
        assert_eq!(held_for_descriptors(1 << 20, MAX_DEFAULT_TOTAL), 4096);
        // An operator's cap above the limit leaves nothing to hold; no cap holds nothing.
        assert_eq!(held_for_descriptors(1024, 2000), 0);
        assert_eq!(held_for_descriptors(1024, 0), 0);
    }
}
