//! The names c960 gives BOINC's objects, and the signature that ties an upload to its lease.
//!
//! BOINC names workunits, results and files by strings that must be unique per project and
//! whose files never change content. c960 hands one lease (one replica) per BOINC task, so
//! every name is derived from the lease: workunit `c960_wu{W}_l{L}`, its result
//! `c960_wu{W}_l{L}_0`, input file `…_in`, output file `…_0_out`. A name read back from a
//! client is parsed, never trusted: the lease it names must be held by the host that reports
//! it ([`crate::net::api`] checks), and an upload must carry the signature this module issued for
//! its file name.

use hmac::{Hmac, Mac};
use sha2::Sha256;

/// The BOINC names of one lease.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TaskName {
    /// The c960 workunit.
    pub workunit_id: u64,
    /// The lease (replica) handed to the host.
    pub lease_id: u64,
}

impl TaskName {
    /// The BOINC workunit name.
    pub fn workunit(&self) -> String {
        format!("c960_wu{}_l{}", self.workunit_id, self.lease_id)
    }

    /// The BOINC result name.
    pub fn result(&self) -> String {
        format!("{}_0", self.workunit())
    }

    /// The input file's name (the workunit, as JSON).
    pub fn input_file(&self) -> String {
        format!("{}_in", self.workunit())
    }

    /// The output file's name (the result, as JSON).
    pub fn output_file(&self) -> String {
        format!("{}_out", self.result())
    }

    /// Parses a result name.
    pub fn from_result(name: &str) -> Option<TaskName> {
        Self::from_workunit(name.strip_suffix("_0")?)
    }

    /// Parses an input file name.
    pub fn from_input_file(name: &str) -> Option<TaskName> {
        Self::from_workunit(name.strip_suffix("_in")?)
    }

    /// Parses an output file name.
    pub fn from_output_file(name: &str) -> Option<TaskName> {
        Self::from_result(name.strip_suffix("_out")?)
    }

    fn from_workunit(name: &str) -> Option<TaskName> {
        let (w, l) = name.strip_prefix("c960_wu")?.split_once("_l")?;
        let digits =
            |s: &str| !s.is_empty() && s.len() <= 20 && s.bytes().all(|b| b.is_ascii_digit());
        if !digits(w) || !digits(l) {
            return None;
        }
        Some(TaskName {
            workunit_id: w.parse().ok()?,
            lease_id: l.parse().ok()?,
        })
    }
}

/// Signs and checks output-file names: BOINC's upload carries no account key, only the
/// `<xml_signature>` the scheduler reply put in the output's `<file_info>`, which the client
/// echoes. Ours is HMAC-SHA256 over the name and size cap, so only a host we handed the lease
/// to can upload its result (lease ids are sequential and easy to guess).
#[derive(Clone)]
pub struct UploadSigner {
    key: [u8; 32],
}

impl std::fmt::Debug for UploadSigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("UploadSigner(..)")
    }
}

impl UploadSigner {
    /// A signer with this secret key.
    pub fn new(key: [u8; 32]) -> UploadSigner {
        UploadSigner { key }
    }

    fn mac(&self, name: &str, max_nbytes: u64) -> Hmac<Sha256> {
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.key).expect("any key length");
        mac.update(format!("{name}\n{max_nbytes}").as_bytes());
        mac
    }

    /// The signature of an output file name with its size cap, as hex.
    pub fn sign(&self, name: &str, max_nbytes: u64) -> String {
        hex(&self.mac(name, max_nbytes).finalize().into_bytes())
    }

    /// Whether `signature` is ours for this name and cap (compared in constant time).
    pub fn verify(&self, name: &str, max_nbytes: u64, signature: &str) -> bool {
        let Some(bytes) = unhex(signature.trim()) else {
            return false;
        };
        self.mac(name, max_nbytes).verify_slice(&bytes).is_ok()
    }
}

/// Lowercase hex.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) || s.len() > 128 {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_strangers_do_not_parse() {
        let t = TaskName {
            workunit_id: 17,
            lease_id: 4242,
        };
        assert_eq!(t.result(), "c960_wu17_l4242_0");
        assert_eq!(TaskName::from_result(&t.result()), Some(t));
        assert_eq!(TaskName::from_input_file(&t.input_file()), Some(t));
        assert_eq!(TaskName::from_output_file(&t.output_file()), Some(t));
        for bad in [
            "c960_wu17_l4242",
            "c960_wu_l1_0",
            "c960_wu1_l_0",
            "c960_wu-1_l2_0",
            "x_wu1_l2_0",
            "c960_wu1_l99999999999999999999999_0",
            "c960_wu1_l2_0/../x",
        ] {
            assert_eq!(TaskName::from_result(bad), None, "{bad}");
        }
    }

    #[test]
    fn an_upload_signature_holds_only_for_its_name_cap_and_key() {
        let s = UploadSigner::new([7; 32]);
        let sig = s.sign("c960_wu1_l2_0_out", 65536);
        assert!(s.verify("c960_wu1_l2_0_out", 65536, &sig));
        assert!(!s.verify("c960_wu1_l3_0_out", 65536, &sig));
        assert!(!s.verify("c960_wu1_l2_0_out", 65537, &sig));
        assert!(!UploadSigner::new([8; 32]).verify("c960_wu1_l2_0_out", 65536, &sig));
        assert!(!s.verify("c960_wu1_l2_0_out", 65536, "zz"));
        assert!(!s.verify("c960_wu1_l2_0_out", 65536, ""));
    }
}
