//! `c960-coordinator boinc …`: the operator's side of the BOINC project (issue 33,
//! `c960_coordinator::net::boinc`).

use std::io::Write as _;
use std::path::PathBuf;

use anyhow::{Result, bail};
use c960_coordinator::net::boinc::signing::{CodeSigningKey, Existing, WriteError};
use clap::Subcommand;

#[derive(Subcommand)]
pub enum BoincCommand {
    /// Generate the code-signing key that signs the app files BOINC clients download (RSA-1024,
    /// the only kind the client reads), mode 0600; prints its fingerprint and public key text.
    /// Keep the file: attached clients trust the first key they see and refuse another.
    Keygen {
        /// The private key file to write (PKCS#8 PEM).
        #[arg(long)]
        key: PathBuf,
        /// Replace an existing key (attached clients will refuse the new one's signatures).
        #[arg(long)]
        force: bool,
    },
}

/// Runs one `boinc` subcommand.
pub fn run(command: BoincCommand) -> Result<()> {
    match command {
        BoincCommand::Keygen { key: path, force } => {
            let existing = if force {
                Existing::Replace
            } else {
                Existing::Keep
            };
            let key = CodeSigningKey::generate()?;
            match key.write(&path, existing) {
                Ok(()) => {}
                Err(WriteError::Exists) => bail!(
                    "{} exists: attached clients trust the key in it; pass --force to replace it",
                    path.display()
                ),
                Err(WriteError::Io(e)) => return Err(e),
            }
            let text = format!(
                "key: {} (RSA-1024, mode 0600)\nfingerprint: sha256:{} (of the public key text)\npublic key (sent to clients as <code_sign_key>):\n{}",
                path.display(),
                key.fingerprint(),
                key.public_key_text()
            );
            // The key is written; a reader that went away (`| head -1`) wanted no more.
            match std::io::stdout().write_all(text.as_bytes()) {
                Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => return Err(e.into()),
                _ => {}
            }
        }
    }
    Ok(())
}
