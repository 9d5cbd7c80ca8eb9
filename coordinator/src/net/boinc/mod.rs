//! The BOINC project side (issue 33): `serve --boinc` speaks BOINC 7.20's client protocol, so a
//! volunteer who runs the stock BOINC client attaches to c960 like to any other project
//! (`boinccmd --project_attach URL/boinc/ KEY`, the key being an enrolment token).
//!
//! - [`xml`]: reading BOINC's XML leniently, escaping what we write.
//! - [`accounts`]: the Manager's "Add project" wizard (project config, account lookup and
//!   creation) under the enrolment rules.
//! - [`scheduler_rpc`]: the scheduler request, the decisions on it, the reply.
//! - [`upload`]: the file upload handler's protocol.
//! - [`names`]: the names of BOINC's workunits, results and files; upload signatures.
//! - [`signing`]: the code-signing key and the key and signature texts the client checks.
//!
//! The routes are in `net/api/boinc.rs`, the hosts' rows in `store/sql/boinc_hosts.rs`. A BOINC host is
//! a worker: its results are judged by the same [`crate::work::judge`], vote in the same
//! quorums, and pass the same checks, trust and quarantine rules as a native worker's.
//! docs/boinc-design.md has the protocol as read from BOINC's source; docs/protocol.md says
//! what of it c960 speaks.

pub mod accounts;
pub mod names;
pub mod scheduler_rpc;
pub mod signing;
pub mod upload;
pub mod xml;

use std::path::{Path, PathBuf};

use c960_common::wire::Assignment;

use crate::model::LeaseInfo;
use accounts::OpenAccounts;
use names::UploadSigner;
use scheduler_rpc::AppFile;
use signing::CodeSigningKey;
pub use signing::md5_hex;

/// The app binary served to BOINC clients: our worker, signed with the project's key.
#[derive(Clone, Debug)]
pub struct AppBinary {
    /// Where it is read from (at start for its digest and signature, at every download for its
    /// bytes: a file changed on disk after the start is refused by every client).
    pub path: PathBuf,
    /// Its BOINC file name, `c960-worker_<md5 prefix>`: a new binary is a new file.
    pub name: String,
    /// Its size.
    pub nbytes: u64,
    /// Its MD5, hex.
    pub md5: String,
    /// The code-signing signature of its MD5, in BOINC's text form.
    pub signature: String,
    /// The app version number, from the MD5 too (BOINC keys app versions by number).
    pub version_num: u32,
}

/// Everything the BOINC routes need besides the store: configured once at start.
#[derive(Clone, Debug)]
pub struct Project {
    /// The URL clients reach us at (`http://host:port`, no trailing slash); `None`: the
    /// request's `Host` header tells.
    pub base_url: Option<String>,
    /// The public code-signing key, BOINC's text form (sent in every reply).
    pub public_key: String,
    /// The app.
    pub app: AppBinary,
    /// Signs output-file names for uploads.
    pub upload: UploadSigner,
    /// The accounts of open enrolment, for the Manager's wizard.
    pub accounts: OpenAccounts,
}

impl Project {
    /// A project serving the app at `app_path`, signed by `sign_md5_hex` (the code-signing
    /// key's signature of a file's MD5 hex, in BOINC's text form), with `upload_key` the
    /// project's secret for upload signatures (and, derived from it, open-enrolment accounts).
    pub fn new(
        app_path: &Path,
        public_key: String,
        sign_md5_hex: &dyn Fn(&str) -> String,
        upload_key: [u8; 32],
        base_url: Option<String>,
    ) -> anyhow::Result<Project> {
        use anyhow::Context;
        let bytes = std::fs::read(app_path)
            .with_context(|| format!("cannot read the BOINC app {}", app_path.display()))?;
        let md5 = md5_hex(&bytes);
        Ok(Project {
            base_url: base_url.map(|u| u.trim_end_matches('/').to_string()),
            public_key,
            app: AppBinary {
                path: app_path.to_path_buf(),
                name: format!("c960-worker_{}", &md5[..12]),
                nbytes: bytes.len() as u64,
                signature: sign_md5_hex(&md5),
                version_num: version_num(&md5),
                md5,
            },
            upload: UploadSigner::new(upload_key),
            accounts: OpenAccounts::new(&upload_key),
        })
    }

    /// The project `serve --boinc` runs: the app at `app_path` signed with the key in
    /// `key_path` (generated there at the first start, mode 0600).
    pub fn open(
        app_path: &Path,
        key_path: &Path,
        base_url: Option<String>,
    ) -> anyhow::Result<Project> {
        // The app first: a mistyped path must not leave a new key behind.
        use anyhow::Context;
        let app = std::fs::File::open(app_path)
            .and_then(|f| f.metadata())
            .with_context(|| format!("cannot read the BOINC app {}", app_path.display()))?;
        if !app.is_file() {
            anyhow::bail!("the BOINC app {} is not a file", app_path.display());
        }
        let key = CodeSigningKey::load_or_generate(key_path)?;
        Project::new(
            app_path,
            key.public_key_text(),
            &|md5| key.sign_md5_hex(md5),
            key.derived_secret("c960 BOINC upload names"),
            base_url,
        )
    }

    /// The base URL: the configured one, else `http://` + the request's host.
    pub fn base(&self, host: Option<&str>) -> String {
        match (&self.base_url, host) {
            (Some(u), _) => u.clone(),
            (None, Some(h)) => format!("http://{h}"),
            (None, None) => "http://127.0.0.1".into(),
        }
    }

    /// The app file as a scheduler reply names it.
    pub fn app_file(&self, base: &str) -> AppFile {
        AppFile {
            name: self.app.name.clone(),
            url: format!("{base}/boinc/download/{}", self.app.name),
            nbytes: self.app.nbytes,
            md5: self.app.md5.clone(),
            signature: self.app.signature.clone(),
            version_num: self.app.version_num,
        }
    }
}

/// An app version number from the binary's MD5: 1..=99,999 (BOINC shows it as `x.yy`).
fn version_num(md5: &str) -> u32 {
    u32::from_str_radix(&md5[..8], 16).unwrap_or(0) % 99_999 + 1
}

/// The input file of a lease: its assignment as JSON, the same bytes whenever asked (the
/// deadline is left out: the BOINC client keeps its own, and a renewed lease must not change
/// a file the client already verified).
pub fn input_file(lease: &LeaseInfo) -> Vec<u8> {
    serde_json::to_vec(&Assignment {
        lease_id: lease.id,
        workunit_id: lease.workunit_id,
        kind: lease.kind.clone(),
        deadline_unix_ms: 0,
    })
    .expect("an assignment serialises")
}
