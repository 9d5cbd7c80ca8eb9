//! The hash table and threads never change a count: hash on/off, 1 or 2 threads, two seeds.

use c960_common::epd::parse_perft_line;
use c960_common::{PerftEngine, PerftOptions, Position, StartPosition, perft};

fn engines() -> Vec<PerftEngine> {
    let configs = [
        (1, 0, 1),
        (2, 0, 1),
        // A tiny table forces constant replacement and index sharing, the hard case.
        (1, 1, 1),
        (2, 1, 2),
        (2, 16, 0xDEAD_BEEF),
    ];
    configs
        .into_iter()
        .map(|(threads, hash_mib, seed)| {
            PerftEngine::new(PerftOptions {
                threads,
                hash_mib,
                seed,
            })
        })
        .collect()
}

#[test]
fn every_engine_configuration_matches_the_reference() {
    let engines = engines();
    let text = include_str!("../data/tricky.epd");
    let lines: Vec<_> = text
        .lines()
        .filter_map(|l| parse_perft_line(l).unwrap())
        .collect();
    for line in &lines {
        let pos = Position::from_fen(&line.fen).unwrap();
        for &(depth, nodes) in line.counts.iter().filter(|(d, _)| *d <= 4) {
            for (i, engine) in engines.iter().enumerate() {
                assert_eq!(
                    engine.perft(&pos, depth),
                    nodes,
                    "engine {i}: {} depth {depth}",
                    line.fen
                );
            }
        }
    }
}

#[test]
fn start_positions_agree_across_configurations_and_seeds() {
    let engines = engines();
    for n in (0..960).step_by(37) {
        let pos = StartPosition::new(n).unwrap().position();
        let expected = perft(&pos, 4);
        for (i, engine) in engines.iter().enumerate() {
            assert_eq!(engine.perft(&pos, 4), expected, "engine {i}: sp {n}");
        }
    }
}

#[test]
fn divide_with_table_and_threads_sums_to_perft() {
    let pos = StartPosition::new(518).unwrap().position();
    let engine = PerftEngine::new(PerftOptions {
        threads: 2,
        hash_mib: 4,
        seed: 9,
    });
    let split = engine.divide(&pos, 5);
    assert_eq!(split.len(), 20);
    assert_eq!(split.iter().map(|(_, n)| n).sum::<u64>(), 4_865_609);
    let plain = c960_common::divide(&pos, 5);
    assert_eq!(split, plain);
}

#[test]
fn a_table_reused_across_positions_stays_exact() {
    // Workers keep their table between workunits; entries from one start position must never
    // leak into another.
    let engine = PerftEngine::new(PerftOptions {
        threads: 1,
        hash_mib: 2,
        seed: 5,
    });
    for n in [518, 519, 0, 959, 518] {
        engine.new_generation();
        let pos = StartPosition::new(n).unwrap().position();
        assert_eq!(engine.perft(&pos, 5), perft(&pos, 5), "sp {n}");
    }
}

#[test]
fn table_verifies_keys() {
    let table = c960_common::PerftTable::new(1);
    let key: u128 = 0x0123_4567_89AB_CDEF_FEDC_BA98_7654_3210;
    assert_eq!(table.probe(key, 5), None);
    table.store(key, 5, 42);
    assert_eq!(table.probe(key, 5), Some(42));
    // A subtree with no leaf (mate at the horizon) is a count like any other.
    table.store(key ^ 1, 3, 0);
    assert_eq!(table.probe(key ^ 1, 3), Some(0));
    // Same low half (same bucket), different high half: must miss.
    assert_eq!(table.probe(key ^ (1u128 << 100), 5), None);
    table.clear();
    assert_eq!(table.probe(key, 5), None);
}

#[test]
fn shallow_entries_verify_keys_too() {
    let table = c960_common::PerftTable::new(1);
    let key: u128 = 0x0F1E_2D3C_4B5A_6978_8796_A5B4_C3D2_E1F0;
    // The low half picks the bucket and the high half is checked: these share a bucket.
    let (other, unseen, too_big) = (key ^ (1 << 100), key ^ (1 << 120), key ^ (1 << 110));
    table.store(key, 2, 47_524); // the largest depth-2 count fits
    assert_eq!(table.probe(key, 2), Some(47_524));
    table.store(other, 2, 0);
    assert_eq!(table.probe(other, 2), Some(0));
    assert_eq!(table.probe(key, 2), Some(47_524));
    assert_eq!(table.probe(unseen, 2), None);
    // A count too large for a shallow entry is not kept rather than kept wrong.
    table.store(too_big, 2, 1 << 20);
    assert_eq!(table.probe(too_big, 2), None);
}

/// Keys that share a bucket: same low half, different high halves.
fn same_bucket(i: u64) -> u128 {
    (u128::from(i + 1) << 96) | 0x5555_AAAA_0000_1234
}

#[test]
fn a_new_generation_replaces_older_deep_entries_first() {
    let table = c960_common::PerftTable::new(1);
    // A bucket full of deep entries from an earlier workunit...
    for i in 0..4 {
        table.store(same_bucket(i), 9, 1000 + i);
    }
    table.new_generation();
    // ...gives way to four shallower entries of the current one, instead of each new entry
    // evicting the previous new one (the shallowest) and leaving stale deep entries for good.
    for i in 4..8 {
        table.store(same_bucket(i), 3, i);
    }
    for i in 4..8 {
        assert_eq!(table.probe(same_bucket(i), 3), Some(i), "entry {i}");
    }
    for i in 0..4 {
        assert_eq!(table.probe(same_bucket(i), 9), None, "stale entry {i}");
    }
}

#[test]
fn a_new_generation_replaces_older_shallow_entries_first() {
    // A depth-2 bucket holds six entries.
    let table = c960_common::PerftTable::new(1);
    for i in 0..6 {
        table.store(same_bucket(i), 2, i);
    }
    for i in 0..6 {
        assert_eq!(table.probe(same_bucket(i), 2), Some(i), "entry {i}");
    }
    table.new_generation();
    for i in 6..12 {
        table.store(same_bucket(i), 2, i);
    }
    for i in 6..12 {
        assert_eq!(table.probe(same_bucket(i), 2), Some(i), "entry {i}");
    }
}

#[test]
fn every_entry_checks_the_key_s_whole_high_half() {
    // Keys that differ only in the lowest bit of their high half share a bucket and must not
    // read each other's count, at depth 2 as deeper (the one-word depth-2 entries this layout
    // replaced checked only the top 46 bits, so these two collided there).
    let table = c960_common::PerftTable::new(1);
    for depth in [2, 3, 9] {
        // Real keys have the depth XORed in; these differ per depth in the high half.
        let key = 0x0F1E_2D3C_4B5A_6978_8796_A5B4_C3D2_E1F0 ^ (u128::from(depth) << 100);
        table.store(key, depth, 7);
        assert_eq!(table.probe(key, depth), Some(7), "depth {depth}");
        assert_eq!(table.probe(key ^ (1 << 64), depth), None, "depth {depth}");
        table.store(key ^ (1 << 64), depth, 8);
        assert_eq!(
            table.probe(key ^ (1 << 64), depth),
            Some(8),
            "depth {depth}"
        );
        assert_eq!(table.probe(key, depth), Some(7), "depth {depth}");
    }
}

#[test]
fn deep_entries_outlast_shallower_ones_of_their_generation() {
    // A bucket of the deep region holds four entries; a stream of depth-3 counts through it
    // replaces depth-3 entries and leaves the depth-9 one, and the newest count is always kept.
    let table = c960_common::PerftTable::new(1);
    table.store(same_bucket(0), 9, 123_456_789);
    for i in 1..40 {
        table.store(same_bucket(i), 3, i);
        assert_eq!(table.probe(same_bucket(i), 3), Some(i), "entry {i}");
    }
    assert_eq!(table.probe(same_bucket(0), 9), Some(123_456_789));
    // Counts too large for an entry are not kept rather than kept wrong.
    table.store(same_bucket(50), 5, 1 << 52);
    assert_eq!(table.probe(same_bucket(50), 5), None);
    table.store(same_bucket(50), 5, (1 << 52) - 1);
    assert_eq!(table.probe(same_bucket(50), 5), Some((1 << 52) - 1));
}

#[test]
fn threads_racing_on_one_bucket_never_read_a_wrong_count() {
    // Four threads store and probe 24 keys that share one bucket (at depth 2 and deeper), so
    // entries are overwritten while being read and half-written entries are common. A probe
    // may miss, but a hit must return the count stored under that very key: an entry whose
    // check word comes from one store and whose count from another must read as a miss.
    let table = c960_common::PerftTable::new(1);
    let count = |i: u64, depth: u32| i * 1_000 + u64::from(depth);
    let hits = std::sync::atomic::AtomicU64::new(0);
    let start = std::sync::Barrier::new(4);
    std::thread::scope(|scope| {
        for thread in 0..4u64 {
            let (table, hits, start) = (&table, &hits, &start);
            scope.spawn(move || {
                start.wait();
                for round in 0..500_000u64 {
                    let i = (round * 7 + thread * 5) % 24;
                    for depth in [2, 5] {
                        table.store(same_bucket(i), depth, count(i, depth));
                        let j = (round * 11 + thread) % 24;
                        if let Some(n) = table.probe(same_bucket(j), depth) {
                            assert_eq!(n, count(j, depth), "key {j} depth {depth}");
                            hits.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        }
                    }
                }
            });
        }
    });
    // Not vacuous: a bucket holds four to six of the 24 keys at any time.
    assert!(hits.into_inner() > 10_000);
}
