//! Secrets and tokens: how a worker's, an enrolment token's and the admin's secrets are made,
//! written, hashed and compared. One home for the API's authentication and the store's
//! enrolment (which checks a token's secret inside its transaction).

use sha2::{Digest as _, Sha256};

/// SHA-256, the only form in which secrets are stored or kept in memory.
pub fn sha256(secret: &str) -> Vec<u8> {
    Sha256::digest(secret.as_bytes()).to_vec()
}

/// Compares without an early exit, so timing does not reveal how much of a hash matched.
pub fn same_hash(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// A fresh secret: 128 random bits in hex.
pub fn new_secret() -> String {
    rand::random::<[u8; 16]>()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The token of a worker: its id and its secret.
pub fn format_token(worker_id: u64, secret: &str) -> String {
    format!("{worker_id}.{secret}")
}

/// Splits a token into worker id and secret; `None` if it is not of that shape.
pub fn parse_token(token: &str) -> Option<(u64, &str)> {
    let (id, secret) = token.split_once('.')?;
    if secret.is_empty() || secret.len() > 128 {
        return None;
    }
    Some((id.parse().ok()?, secret))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_parse_and_refuse_garbage() {
        let s = new_secret();
        assert_eq!(s.len(), 32);
        let t = format_token(42, &s);
        assert_eq!(parse_token(&t), Some((42, s.as_str())));
        for bad in [
            "",
            "42",
            "42.",
            ".abc",
            "x.abc",
            "-1.abc",
            &format!("1.{}", "a".repeat(129)),
        ] {
            assert_eq!(parse_token(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn hashes_compare() {
        assert!(same_hash(&sha256("a"), &sha256("a")));
        assert!(!same_hash(&sha256("a"), &sha256("b")));
        assert!(!same_hash(b"ab", b"a"));
    }
}
