//! PostgreSQL URLs: telling one from a SQLite path, the coordinator's own query parameters
//! taken out before the driver sees the URL, and the password hidden in messages.

use crate::model::{StoreError, StoreResult};

/// Whether `db` names a PostgreSQL database (`postgres://` or `postgresql://`) rather than a
/// SQLite file.
pub fn is_postgres_url(db: &str) -> bool {
    db.starts_with("postgres://") || db.starts_with("postgresql://")
}

/// The coordinator's own parameters in a PostgreSQL URL's query, which the driver would refuse.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct OwnParams {
    /// `pool_size=N`: connections in the pool.
    pub(super) pool_size: Option<u32>,
    /// `writers=N`: writing transactions at once ([`super::gate::Gate`]).
    pub(super) writers: Option<u32>,
}

/// Takes the coordinator's own parameters (`pool_size`, `writers`: see [`OwnParams`]) out of a
/// URL's query: `postgres://host/db?pool_size=16&writers=2&...`. The URL is returned without
/// them.
pub(super) fn take_own_params(url: &str) -> StoreResult<(String, OwnParams)> {
    let Some((base, query)) = url.split_once('?') else {
        return Ok((url.to_string(), OwnParams::default()));
    };
    let mut own = OwnParams::default();
    let mut rest = Vec::new();
    for pair in query.split('&') {
        let (slot, name, what) = if let Some(v) = pair.strip_prefix("pool_size=") {
            (&mut own.pool_size, "pool_size", v)
        } else if let Some(v) = pair.strip_prefix("writers=") {
            (&mut own.writers, "writers", v)
        } else {
            rest.push(pair);
            continue;
        };
        match what.parse::<u32>() {
            Ok(n) if n >= 1 => *slot = Some(n),
            _ => {
                return Err(StoreError::Bad(format!(
                    "bad PostgreSQL URL: {name} must be a whole number, at least 1, not {what:?}"
                )));
            }
        }
    }
    let url = if rest.is_empty() {
        base.to_string()
    } else {
        format!("{base}?{}", rest.join("&"))
    };
    Ok((url, own))
}

/// A database URL without its password, for messages.
pub fn redact_url(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(s), Some(at)) if at > s => match url[s + 3..at].find(':') {
            Some(c) => format!("{}:***{}", &url[..s + 3 + c], &url[at..]),
            None => url.to_string(),
        },
        _ => url.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_parameters_are_taken_out_of_the_url() {
        let base = "postgres://c960@127.0.0.1:5432/c960";
        let own = |pool_size, writers| OwnParams { pool_size, writers };
        assert_eq!(
            take_own_params(base).unwrap(),
            (base.to_string(), own(None, None))
        );
        assert_eq!(
            take_own_params(&format!("{base}?pool_size=4")).unwrap(),
            (base.to_string(), own(Some(4), None))
        );
        assert_eq!(
            take_own_params(&format!(
                "{base}?options=-c%20x%3Dy&pool_size=2&sslmode=disable&writers=3"
            ))
            .unwrap(),
            (
                format!("{base}?options=-c%20x%3Dy&sslmode=disable"),
                own(Some(2), Some(3))
            )
        );
        for name in ["pool_size", "writers"] {
            for bad in ["0", "-1", "many", ""] {
                let e = take_own_params(&format!("{base}?{name}={bad}")).unwrap_err();
                assert!(e.to_string().contains(name), "{e}");
            }
        }
    }
}
