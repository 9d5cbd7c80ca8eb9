//! Result digests: SHA-256 over a canonical byte encoding of (workunit, counts, divide).
//!
//! Replicas are compared by digest, and the coordinator recomputes the digest of every submitted
//! payload and refuses a mismatch. The encoding is written out by hand (not bincode) so that it is
//! fixed forever and easy to reimplement; `docs/protocol.md` specifies it:
//!
//! ```text
//! "c960-result-v1"                 14 ASCII bytes (domain separation)
//! workunit_id                      u64 big-endian
//! kind tag                         u8: 1 = perft
//!   position tag                   u8: 1 = start position, 2 = FEN
//!     start position               u16 big-endian
//!     FEN                          u32 big-endian byte length, UTF-8 bytes
//!   depth                          u32 big-endian
//! nodes                            u64 big-endian
//! divide entry count               u32 big-endian
//! per entry, sorted by move bytes  u32 big-endian length, UTF-8 move, u64 big-endian count
//! ```
//!
//! Elapsed time and engine name are not digested: honest replicas differ in them.

use sha2::{Digest as _, Sha256};

use crate::wire::{PerftResult, PositionSpec, WorkUnitKind};

/// The canonical byte encoding of a result, the input of [`result_digest`].
pub fn canonical_bytes(workunit_id: u64, kind: &WorkUnitKind, result: &PerftResult) -> Vec<u8> {
    let mut out = Vec::with_capacity(64 + result.divide.len() * 16);
    out.extend_from_slice(b"c960-result-v1");
    out.extend_from_slice(&workunit_id.to_be_bytes());
    match kind {
        WorkUnitKind::Perft { position, depth } => {
            out.push(1);
            match position {
                PositionSpec::StartPosition(n) => {
                    out.push(1);
                    out.extend_from_slice(&n.to_be_bytes());
                }
                PositionSpec::Fen(fen) => {
                    out.push(2);
                    push_bytes(&mut out, fen.as_bytes());
                }
            }
            out.extend_from_slice(&depth.to_be_bytes());
        }
    }
    out.extend_from_slice(&result.nodes.to_be_bytes());
    let mut divide: Vec<&(String, u64)> = result.divide.iter().collect();
    divide.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()).then(a.1.cmp(&b.1)));
    out.extend_from_slice(&(divide.len() as u32).to_be_bytes());
    for (m, n) in divide {
        push_bytes(&mut out, m.as_bytes());
        out.extend_from_slice(&n.to_be_bytes());
    }
    out
}

fn push_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(&(bytes.len() as u32).to_be_bytes());
    out.extend_from_slice(bytes);
}

/// SHA-256 of [`canonical_bytes`].
pub fn result_digest(workunit_id: u64, kind: &WorkUnitKind, result: &PerftResult) -> [u8; 32] {
    Sha256::digest(canonical_bytes(workunit_id, kind, result)).into()
}

/// Lower-case hex of a digest, for logs, JSON and the database.
pub fn to_hex(digest: &[u8; 32]) -> String {
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind() -> WorkUnitKind {
        WorkUnitKind::Perft {
            position: PositionSpec::StartPosition(518),
            depth: 2,
        }
    }

    fn result(divide: Vec<(&str, u64)>) -> PerftResult {
        PerftResult {
            nodes: divide.iter().map(|d| d.1).sum(),
            divide: divide
                .into_iter()
                .map(|(m, n)| (m.to_string(), n))
                .collect(),
        }
    }

    #[test]
    fn divide_order_does_not_matter() {
        let a = result(vec![("a2a3", 20), ("b2b3", 20)]);
        let b = result(vec![("b2b3", 20), ("a2a3", 20)]);
        assert_eq!(result_digest(1, &kind(), &a), result_digest(1, &kind(), &b));
    }

    #[test]
    fn everything_digested_matters() {
        let base = result(vec![("a2a3", 20), ("b2b3", 20)]);
        let d = result_digest(1, &kind(), &base);
        assert_ne!(d, result_digest(2, &kind(), &base));
        let other_depth = WorkUnitKind::Perft {
            position: PositionSpec::StartPosition(518),
            depth: 3,
        };
        assert_ne!(d, result_digest(1, &other_depth, &base));
        let mut n = base.clone();
        n.nodes += 1;
        assert_ne!(d, result_digest(1, &kind(), &n));
        let mut m = base.clone();
        m.divide[0].1 += 1;
        assert_ne!(d, result_digest(1, &kind(), &m));
    }

    #[test]
    fn fixed_vector() {
        // Pins the encoding: changing it silently would split every quorum across versions.
        let bytes = canonical_bytes(1, &kind(), &result(vec![("a2a3", 20)]));
        assert_eq!(bytes.len(), 14 + 8 + 1 + 1 + 2 + 4 + 8 + 4 + 4 + 4 + 8);
        assert_eq!(&bytes[..14], b"c960-result-v1");
    }
}
