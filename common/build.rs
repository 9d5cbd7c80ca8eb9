//! Generates the magic-bitboard tables for rook and bishop attacks.
//!
//! The magics are found at build time with a fixed-seed generator, so the build is reproducible
//! and no hand-copied constants need trusting: every table entry is checked against a ray walk
//! before it is written.

use std::fmt::Write as _;
use std::path::PathBuf;

const ROOK_DIRS: [(i32, i32); 4] = [(1, 0), (-1, 0), (0, 1), (0, -1)];
const BISHOP_DIRS: [(i32, i32); 4] = [(1, 1), (1, -1), (-1, 1), (-1, -1)];

fn ray_attacks(sq: i32, occ: u64, dirs: &[(i32, i32); 4]) -> u64 {
    let mut out = 0u64;
    for &(df, dr) in dirs {
        let (mut f, mut r) = (sq % 8 + df, sq / 8 + dr);
        while (0..8).contains(&f) && (0..8).contains(&r) {
            let bit = 1u64 << (r * 8 + f);
            out |= bit;
            if occ & bit != 0 {
                break;
            }
            f += df;
            r += dr;
        }
    }
    out
}

/// Relevant occupancy: the ray squares whose occupancy can change the attack set (edges excluded).
fn relevant_mask(sq: i32, dirs: &[(i32, i32); 4]) -> u64 {
    let mut out = 0u64;
    for &(df, dr) in dirs {
        let (mut f, mut r) = (sq % 8 + df, sq / 8 + dr);
        while (0..8).contains(&(f + df)) && (0..8).contains(&(r + dr)) {
            out |= 1u64 << (r * 8 + f);
            f += df;
            r += dr;
        }
    }
    out
}

struct XorShift(u64);
impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn sparse(&mut self) -> u64 {
        self.next() & self.next() & self.next()
    }
}

/// One square's (magic, mask, shift, offset into the shared table).
type MagicEntry = (u64, u64, u32, usize);

/// Returns the entry for every square, the shared attack table indexed by magic, and the same
/// attacks indexed by PEXT (the occupancy's mask bits gathered in order): both give each square
/// 2^bits slots, so one offset serves both.
fn find_magics(
    dirs: &[(i32, i32); 4],
    rng: &mut XorShift,
) -> (Vec<MagicEntry>, Vec<u64>, Vec<u64>) {
    let mut entries = Vec::new();
    let mut table = Vec::new();
    let mut pext_table = Vec::new();
    for sq in 0..64 {
        let mask = relevant_mask(sq, dirs);
        let bits = mask.count_ones();
        let shift = 64 - bits;
        let mut subsets = Vec::new();
        let mut sub = 0u64;
        loop {
            subsets.push((sub, ray_attacks(sq, sub, dirs)));
            sub = sub.wrapping_sub(mask) & mask;
            if sub == 0 {
                break;
            }
        }
        let size = 1usize << bits;
        let mut slots = vec![0u64; size];
        let mut used = vec![0u32; size];
        let mut epoch = 0u32;
        let magic = loop {
            let candidate = rng.sparse();
            if (mask.wrapping_mul(candidate) >> 56).count_ones() < 6 {
                continue;
            }
            epoch += 1;
            let ok = subsets.iter().all(|&(occ, att)| {
                let idx = (occ.wrapping_mul(candidate) >> shift) as usize;
                if used[idx] != epoch {
                    used[idx] = epoch;
                    slots[idx] = att;
                    true
                } else {
                    slots[idx] == att
                }
            });
            if ok {
                break candidate;
            }
        };
        let offset = table.len();
        table.extend_from_slice(&slots);
        // Carry-Rippler enumerates the subsets in increasing order of their PEXT index.
        for (index, &(occ, att)) in subsets.iter().enumerate() {
            assert_eq!(
                software_pext(occ, mask),
                index as u64,
                "PEXT order self-check"
            );
            pext_table.push(att);
        }
        for &(occ, att) in &subsets {
            let idx = (occ.wrapping_mul(magic) >> shift) as usize;
            assert_eq!(table[offset + idx], att, "magic table self-check");
        }
        entries.push((magic, mask, shift, offset));
    }
    (entries, table, pext_table)
}

/// The bits of `x` under `mask`, gathered to the low end in order (what BMI2 PEXT computes).
fn software_pext(x: u64, mut mask: u64) -> u64 {
    let mut out = 0;
    let mut bit = 0;
    while mask != 0 {
        if x & mask & mask.wrapping_neg() != 0 {
            out |= 1 << bit;
        }
        mask &= mask - 1;
        bit += 1;
    }
    out
}

fn emit(out: &mut String, name: &str, entries: &[MagicEntry], table: &[u64], pext: &[u64]) {
    writeln!(out, "pub(crate) static {name}_MAGICS: [Magic; 64] = [").unwrap();
    for (magic, mask, shift, offset) in entries {
        writeln!(
            out,
            "    Magic {{ mask: {mask:#x}, magic: {magic:#x}, shift: {shift}, offset: {offset} }},"
        )
        .unwrap();
    }
    writeln!(out, "];").unwrap();
    emit_table(out, &format!("{name}_TABLE"), table);
    emit_table(out, &format!("{name}_PEXT_TABLE"), pext);
}

fn emit_table(out: &mut String, name: &str, table: &[u64]) {
    writeln!(out, "pub(crate) static {name}: [u64; {}] = [", table.len()).unwrap();
    for chunk in table.chunks(8) {
        let line: Vec<String> = chunk.iter().map(|v| format!("{v:#x}")).collect();
        writeln!(out, "    {},", line.join(", ")).unwrap();
    }
    writeln!(out, "];").unwrap();
}

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    let mut rng = XorShift(0x9E37_79B9_7F4A_7C15);
    let (rook, rook_table, rook_pext) = find_magics(&ROOK_DIRS, &mut rng);
    let (bishop, bishop_table, bishop_pext) = find_magics(&BISHOP_DIRS, &mut rng);
    let mut out = String::new();
    out.push_str("// @generated by build.rs: magic bitboard tables.\n");
    emit(&mut out, "ROOK", &rook, &rook_table, &rook_pext);
    emit(&mut out, "BISHOP", &bishop, &bishop_table, &bishop_pext);
    let path = PathBuf::from(std::env::var("OUT_DIR").unwrap()).join("magics.rs");
    std::fs::write(path, out).unwrap();
}
