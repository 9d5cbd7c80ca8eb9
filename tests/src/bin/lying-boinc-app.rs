//! A BOINC app that lies, a fixture of `tests/tests/suite/boinc_client.rs`: it computes the
//! workunit exactly as `c960-worker boinc-app` does (the same code, in process: no supervisor),
//! then adds one to the perft count and to the first root move's, and writes the digest of the
//! lie: a consistent lie, what a patient cheater who rebuilt the app would send. The
//! coordinator must catch it like a native worker's.

use std::path::Path;
use std::process::ExitCode;

use c960_common::wire::{Assignment, SubmitRequest, WorkResult};
use c960_worker::boinc_app::{self, resolve};

fn lie(slot: &Path) -> anyhow::Result<()> {
    boinc_app::compute(slot, |_, _| {})?;
    let a: Assignment = serde_json::from_slice(&std::fs::read(resolve(slot, "wu.json"))?)?;
    let out = resolve(slot, "result.json");
    let mut sub: SubmitRequest = serde_json::from_slice(&std::fs::read(&out)?)?;
    if let WorkResult::Perft(p) = &mut sub.result {
        p.nodes += 1;
        if let Some(first) = p.divide.first_mut() {
            first.1 += 1;
        }
    }
    sub.digest = c960_common::digest::result_digest(a.workunit_id, &a.kind, &sub.result);
    std::fs::write(&out, serde_json::to_vec(&sub)?)?;
    boinc_app::finish(slot)
}

fn main() -> ExitCode {
    match std::env::current_dir()
        .map_err(anyhow::Error::from)
        .and_then(|d| lie(&d))
    {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("lying-boinc-app: {e:#}");
            ExitCode::FAILURE
        }
    }
}
