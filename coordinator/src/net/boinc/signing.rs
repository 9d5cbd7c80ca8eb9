//! BOINC code signing (docs/boinc-design.md §3): the key that signs every file of an app version,
//! and the two texts the stock client reads, the public key (`<code_sign_key>`) and a file's
//! signature (`<file_signature>`).
//!
//! The client (7.20, lib/crypt.cpp) accepts exactly one scheme, so nothing here is a choice:
//! an RSA key of 1024 bits with e = 65537 (its parser has room for no larger modulus), and a
//! signature that is PKCS#1 v1.5 type-1 padding **without** a DigestInfo over the 32 ASCII
//! lowercase hex characters of the file's MD5 (`00 01 FF…FF 00 ‖ md5_hex`, raised to `d`). The
//! client undoes it with `RSA_public_decrypt` and compares the 32 characters with its own MD5.
//! Keys of 1024 bits are weak by today's standards; the key only vouches that an app file came
//! from this project, and the client offers nothing stronger.
//!
//! The private key is kept outside the database, in a file of its own (PKCS#8 PEM, mode 0600),
//! generated once: the client trusts the first key it is sent and refuses a different one
//! later unless it is signed by the old, so losing the file strands every attached client.
//!
//! The `rsa` crate has the Marvin timing advisory (RUSTSEC-2023-0071), which concerns private-key
//! operations an attacker can time from outside. We only sign our own app files, offline, on the
//! coordinator's own request, so nothing an attacker sends is ever decrypted or signed.

use std::fmt::Write as _;
use std::fs;
use std::io::Write as _;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, anyhow, bail};
use md5::{Digest, Md5};
use rsa::pkcs8::{DecodePrivateKey, EncodePrivateKey, LineEnding};
use rsa::traits::PublicKeyParts;
use rsa::{BoxedUint, Pkcs1v15Sign, PrivateKey, PublicKey};
use sha2::Sha256;

/// The modulus size: the only one the client's fixed-size key structs hold
/// (`MAX_RSA_MODULUS_BITS`).
pub const KEY_BITS: usize = 1024;
/// The public exponent `crypt_prog -genkey` uses, and so the one we use.
const PUBLIC_EXPONENT: u64 = 65537;
/// Bytes of the modulus, of each half of the public key text, and of a signature.
const MODULUS_BYTES: usize = KEY_BITS / 8;
/// Bytes per line of BOINC's hex text (`print_hex_data`).
const HEX_BYTES_PER_LINE: usize = 32;

/// The project's code-signing key: signs app files for the stock BOINC client.
pub struct CodeSigningKey {
    private: PrivateKey,
    /// [`public_key_text`](Self::public_key_text), computed once.
    public_text: String,
}

impl std::fmt::Debug for CodeSigningKey {
    // Never the private key, not even in a log line.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CodeSigningKey")
            .field("fingerprint", &self.fingerprint())
            .finish_non_exhaustive()
    }
}

/// Whether [`CodeSigningKey::write`] may replace a key file that exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Existing {
    /// Refuse: the file is another key that attached clients already trust.
    Keep,
    /// Replace it (`boinc keygen --force`).
    Replace,
}

impl CodeSigningKey {
    /// The key in `path`, or a new one written there (mode 0600) if there is no file yet.
    ///
    /// A file that cannot be read, is not a PKCS#8 PEM RSA key, is not 1024 bits with
    /// e = 65537, or can be read by other users is an error naming the file and the fix.
    pub fn load_or_generate(path: &Path) -> Result<CodeSigningKey> {
        match fs::symlink_metadata(path) {
            Ok(_) => Self::load(path),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let key = Self::generate()?;
                match key.write(path, Existing::Keep) {
                    Ok(()) => Ok(key),
                    // Another process wrote one first: that one is the project's key.
                    Err(WriteError::Exists) => Self::load(path),
                    Err(WriteError::Io(e)) => Err(e),
                }
            }
            Err(e) => Err(anyhow!(e).context(format!(
                "cannot read the BOINC code-signing key {}",
                path.display()
            ))),
        }
    }

    /// The key in `path` (see [`load_or_generate`](Self::load_or_generate) for what is refused).
    pub fn load(path: &Path) -> Result<CodeSigningKey> {
        let what = || format!("BOINC code-signing key {}", path.display());
        let meta = fs::metadata(path).with_context(|| format!("cannot read the {}", what()))?;
        if !meta.is_file() {
            bail!("the {} is not a file", what());
        }
        let mode = meta.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            bail!(
                "the {} can be read or changed by other users (mode {mode:04o}); `chmod 600` it",
                what()
            );
        }
        let pem =
            fs::read_to_string(path).with_context(|| format!("cannot read the {}", what()))?;
        let private = PrivateKey::from_pkcs8_pem(&pem).map_err(|e| {
            anyhow!(
                "the {} is not an RSA private key in PKCS#8 PEM ({e}); `c960-coordinator boinc keygen --key FILE` writes one",
                what()
            )
        })?;
        Self::from_private(private).with_context(what)
    }

    /// A new key from the operating system's random source.
    pub fn generate() -> Result<CodeSigningKey> {
        let private = PrivateKey::new(&mut getrandom::SysRng, KEY_BITS)
            .map_err(|e| anyhow!("cannot generate an RSA key: {e}"))?;
        Self::from_private(private)
    }

    /// Checks the key is one the client can use and renders its public text.
    fn from_private(private: PrivateKey) -> Result<CodeSigningKey> {
        let bits = private.n().bit_width();
        if bits as usize != KEY_BITS {
            bail!(
                "a {bits}-bit key: the BOINC client reads only {KEY_BITS}-bit keys (generate one with `c960-coordinator boinc keygen`)"
            );
        }
        if left_padded(&private.e_bytes(), 8) != PUBLIC_EXPONENT.to_be_bytes() {
            bail!("the public exponent is not {PUBLIC_EXPONENT}");
        }
        let public_text = public_key_text_of(private.as_public_key());
        Ok(CodeSigningKey {
            private,
            public_text,
        })
    }

    /// Writes the private key to `path`, mode 0600, whole or not at all: through a temporary
    /// file in the same directory, linked (or with [`Existing::Replace`], renamed) into place.
    pub fn write(&self, path: &Path, existing: Existing) -> Result<(), WriteError> {
        let pem = self
            .private
            .to_pkcs8_pem(LineEnding::LF)
            .map_err(|e| WriteError::Io(anyhow!("cannot encode the key: {e}")))?;
        let tmp = temporary_beside(path);
        let io = |e: std::io::Error, what: &str, p: &Path| {
            WriteError::Io(anyhow!(e).context(format!("cannot {what} {}", p.display())))
        };
        let written = (|| {
            let mut file = fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&tmp)?;
            file.write_all(pem.as_bytes())?;
            file.sync_all()
        })();
        if let Err(e) = written {
            let _ = fs::remove_file(&tmp);
            return Err(io(e, "write the BOINC code-signing key", path));
        }
        let placed = match existing {
            Existing::Keep => fs::hard_link(&tmp, path),
            Existing::Replace => fs::rename(&tmp, path),
        };
        let _ = fs::remove_file(&tmp);
        match placed {
            Ok(()) => {
                // The new name survives a crash only once its directory is on disk.
                if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                    let _ = fs::File::open(dir).and_then(|d| d.sync_all());
                }
                Ok(())
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Err(WriteError::Exists),
            Err(e) => Err(io(e, "write the BOINC code-signing key", path)),
        }
    }

    /// The public key as BOINC writes it (`print_key_hex`), the text of `<code_sign_key>`: the
    /// modulus size in decimal on the first line, then the 128-byte modulus and the 128-byte
    /// exponent, big-endian and zero-padded on the left, as lowercase hex, 32 bytes a line, and
    /// a last line holding `.`.
    pub fn public_key_text(&self) -> String {
        self.public_text.clone()
    }

    /// SHA-256 of [`public_key_text`](Self::public_key_text) in hex: what `boinc keygen` prints,
    /// so an operator can tell which key a coordinator serves.
    pub fn fingerprint(&self) -> String {
        hex(&<Sha256 as sha2::Digest>::digest(
            self.public_text.as_bytes(),
        ))
    }

    /// A 32-byte secret for `purpose`, derived from the private key (SHA-256 of the purpose and
    /// the key's PKCS#8 DER): secrets that must survive a restart without a file of their own,
    /// such as the key that signs upload names ([`super::names::UploadSigner`]).
    pub fn derived_secret(&self, purpose: &str) -> [u8; 32] {
        let der = self
            .private
            .to_pkcs8_der()
            .expect("a key that was loaded or generated encodes");
        let mut h = <Sha256 as sha2::Digest>::new();
        sha2::Digest::update(&mut h, purpose.as_bytes());
        sha2::Digest::update(&mut h, [0u8]);
        sha2::Digest::update(&mut h, der.as_bytes());
        sha2::Digest::finalize(h).into()
    }

    /// The signature of a file whose MD5 is `md5_hex` (the 32 hex characters of `<md5_cksum>`)
    /// as BOINC writes it (`sign_file`), the text of `<file_signature>`: 128 bytes as lowercase
    /// hex, 32 bytes a line, then a line holding `.`.
    ///
    /// # Panics
    ///
    /// Never for an MD5: only if `md5_hex` is longer than the 117 bytes a 1024-bit key can sign,
    /// or the operating system's random source (used to blind the private operation) fails.
    pub fn sign_md5_hex(&self, md5_hex: &str) -> String {
        let message = md5_hex.trim().to_ascii_lowercase();
        let signature = self
            .private
            .sign(Pkcs1v15Sign::new_unprefixed(), message.as_bytes())
            .expect("a 32-byte message fits a 1024-bit key");
        hex_text(&signature)
    }

    /// [`sign_md5_hex`](Self::sign_md5_hex) of `bytes`' MD5.
    pub fn sign_file_bytes(&self, bytes: &[u8]) -> String {
        self.sign_md5_hex(&md5_hex(bytes))
    }
}

/// Why [`CodeSigningKey::write`] wrote nothing.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// The file exists and [`Existing::Keep`] was asked.
    #[error("a key file exists there")]
    Exists,
    /// Any other failure, with the path in its context.
    #[error("{0:#}")]
    Io(anyhow::Error),
}

/// A file's MD5 as 32 lowercase hex characters, as the client computes it (`<md5_cksum>`).
pub fn md5_hex(bytes: &[u8]) -> String {
    hex(&Md5::digest(bytes))
}

/// The client's check of an app file (`check_file_signature2`): the signature text undone with
/// the public key text must be PKCS#1 type-1 padding around `md5_hex`. `Ok(false)` for a
/// signature that does not match; an error for a text that does not parse.
pub fn check_file_signature(
    public_key_text: &str,
    md5_hex: &str,
    signature_text: &str,
) -> Result<bool> {
    let public = parse_public_key_text(public_key_text)?;
    let signature = parse_hex_text(signature_text)?;
    if signature.len() != MODULUS_BYTES {
        bail!(
            "a signature of {} bytes; expected {MODULUS_BYTES}",
            signature.len()
        );
    }
    Ok(public
        .verify(
            Pkcs1v15Sign::new_unprefixed(),
            md5_hex.as_bytes(),
            &signature,
        )
        .is_ok())
}

/// Reads BOINC's public key text (`sscan_key_hex`): the modulus size, then 256 bytes of hex
/// (modulus, exponent), then `.`.
pub fn parse_public_key_text(text: &str) -> Result<PublicKey> {
    let (bits, rest) = text
        .trim_start()
        .split_once('\n')
        .ok_or_else(|| anyhow!("a public key text needs its size on a line of its own"))?;
    let bits: usize = bits
        .trim()
        .parse()
        .map_err(|_| anyhow!("a public key text starts with its size in bits, not {bits:?}"))?;
    if bits != KEY_BITS {
        bail!("a {bits}-bit public key; the client reads {KEY_BITS}-bit keys");
    }
    let bytes = parse_hex_text(rest)?;
    if bytes.len() != 2 * MODULUS_BYTES {
        bail!(
            "a public key text of {} bytes; expected {}",
            bytes.len(),
            2 * MODULUS_BYTES
        );
    }
    let (n, e) = bytes.split_at(MODULUS_BYTES);
    PublicKey::new(
        BoxedUint::from_be_slice_vartime(n),
        BoxedUint::from_be_slice_vartime(e),
    )
    .map_err(|e| anyhow!("not a valid RSA public key: {e}"))
}

/// The public key text of `public` (see [`CodeSigningKey::public_key_text`]).
fn public_key_text_of(public: &PublicKey) -> String {
    let mut bytes = left_padded(&public.n_bytes(), MODULUS_BYTES);
    bytes.extend(left_padded(&public.e_bytes(), MODULUS_BYTES));
    format!("{KEY_BITS}\n{}", hex_text(&bytes))
}

/// `bytes` (big-endian, shorter than `width`: checked by the key's size) with zeros before it.
fn left_padded(bytes: &[u8], width: usize) -> Vec<u8> {
    let mut out = vec![0; width.saturating_sub(bytes.len())];
    out.extend_from_slice(bytes);
    out
}

/// BOINC's hex text (`print_hex_data`): lowercase hex, a line break after every 32 bytes and
/// after a shorter last line, then a line holding `.`.
fn hex_text(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 2 + bytes.len() / HEX_BYTES_PER_LINE + 3);
    for line in bytes.chunks(HEX_BYTES_PER_LINE) {
        out.push_str(&hex(line));
        out.push('\n');
    }
    out.push_str(".\n");
    out
}

/// Reads BOINC's hex text (`sscan_hex_data`): pairs of hex digits, white space skipped, up to
/// the first thing that is neither (the `.`).
fn parse_hex_text(text: &str) -> Result<Vec<u8>> {
    let digits: Vec<u8> = text
        .bytes()
        .filter(|b| !b.is_ascii_whitespace())
        .take_while(u8::is_ascii_hexdigit)
        .collect();
    if !digits.len().is_multiple_of(2) {
        bail!("an odd number of hex digits");
    }
    Ok(digits
        .chunks(2)
        .map(|pair| {
            let digit = |d: u8| (d as char).to_digit(16).unwrap_or(0) as u8;
            digit(pair[0]) << 4 | digit(pair[1])
        })
        .collect())
}

/// Lowercase hex.
fn hex(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(out, "{b:02x}");
    }
    out
}

/// A name for the temporary file of [`CodeSigningKey::write`], in `path`'s directory.
fn temporary_beside(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    path.with_file_name(format!(".{name}.{}.tmp", std::process::id()))
}

#[cfg(test)]
mod tests {
    use std::process::Command;
    use std::sync::OnceLock;

    use rsa::pkcs8::EncodePublicKey;

    use super::*;

    /// One key for the tests that only sign (generating one takes a while in a debug build).
    fn key() -> &'static CodeSigningKey {
        static KEY: OnceLock<CodeSigningKey> = OnceLock::new();
        KEY.get_or_init(|| CodeSigningKey::generate().unwrap())
    }

    /// The bytes of a signature text.
    fn signature_bytes(text: &str) -> Vec<u8> {
        parse_hex_text(text).unwrap()
    }

    /// Whether `openssl` runs here (the padding is checked against it when it does).
    fn openssl() -> bool {
        let ok = Command::new("openssl")
            .arg("version")
            .output()
            .is_ok_and(|o| o.status.success());
        if !ok {
            eprintln!("SKIPPED: the check against openssl (no `openssl` on PATH)");
        }
        ok
    }

    #[test]
    fn md5_hex_is_the_clients_checksum() {
        assert_eq!(md5_hex(b""), "d41d8cd98f00b204e9800998ecf8427e");
        assert_eq!(md5_hex(b"abc"), "900150983cd24fb0d6963f7d28e17f72");
    }

    #[test]
    fn a_signature_verifies_and_a_changed_file_or_signature_does_not() {
        let key = key();
        let file = b"#!/bin/sh\necho c960\n";
        let md5 = md5_hex(file);
        let signature = key.sign_file_bytes(file);
        assert_eq!(signature, key.sign_md5_hex(&md5), "deterministic");
        let public = key.public_key_text();
        assert!(check_file_signature(&public, &md5, &signature).unwrap());
        assert!(!check_file_signature(&public, &md5_hex(b"other bytes"), &signature).unwrap());
        // One bit of the signature flipped.
        let mut bytes = signature_bytes(&signature);
        bytes[60] ^= 1;
        assert!(!check_file_signature(&public, &md5, &hex_text(&bytes)).unwrap());
        // Another key's public text.
        let other = CodeSigningKey::generate().unwrap();
        assert!(!check_file_signature(&other.public_key_text(), &md5, &signature).unwrap());
    }

    #[test]
    fn the_padding_is_type_1_around_the_hex_md5_without_digest_info() {
        let key = key();
        let md5 = md5_hex(b"c960-worker");
        let signature = signature_bytes(&key.sign_md5_hex(&md5));
        assert_eq!(signature.len(), 128);
        // s^e mod n, from the public text as the client reads it.
        let public = parse_public_key_text(&key.public_key_text()).unwrap();
        let s = BoxedUint::from_be_slice(&signature, public.n_bits_precision()).unwrap();
        let em = rsa::hazmat::rsa_encrypt(&public, &s).unwrap();
        let em = left_padded(&em.to_be_bytes_trimmed_vartime(), 128);
        let mut expected = vec![0x00, 0x01];
        expected.extend([0xff; 128 - 3 - 32]);
        expected.push(0x00);
        expected.extend(md5.as_bytes());
        assert_eq!(em, expected);
    }

    #[test]
    fn openssl_recovers_the_md5_as_the_client_does() {
        if !openssl() {
            return;
        }
        let key = key();
        let dir = tempfile::tempdir().unwrap();
        let md5 = md5_hex(b"an app file");
        let signature = signature_bytes(&key.sign_md5_hex(&md5));
        // The public key as the client reads it from the text, handed to openssl as PEM.
        let public = parse_public_key_text(&key.public_key_text()).unwrap();
        let pem = public.to_public_key_pem(LineEnding::LF).unwrap();
        fs::write(dir.path().join("pub.pem"), pem).unwrap();
        fs::write(dir.path().join("sig"), &signature).unwrap();
        let recover = |padding: &str| {
            let out = Command::new("openssl")
                .args(["pkeyutl", "-verifyrecover", "-pubin", "-inkey", "pub.pem"])
                .args(["-in", "sig", "-pkeyopt", padding])
                .current_dir(dir.path())
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            out.stdout
        };
        // RSA_public_decrypt with PKCS#1 padding: what check_file_signature does in the client.
        assert_eq!(recover("rsa_padding_mode:pkcs1"), md5.as_bytes());
        let raw = recover("rsa_padding_mode:none");
        assert_eq!(&raw[..2], [0x00, 0x01]);
        assert!(raw[2..128 - 33].iter().all(|&b| b == 0xff));
        assert_eq!(raw[128 - 33], 0x00);
    }

    #[test]
    fn the_texts_have_boincs_layout_and_parse_back() {
        let key = key();
        let text = key.public_key_text();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 1 + 8 + 1, "{text}");
        assert_eq!(lines[0], "1024");
        assert!(lines[1..9].iter().all(|l| {
            l.len() == 64
                && l.bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        }));
        assert_eq!(lines[9], ".");
        assert!(text.ends_with(".\n"));
        // The exponent half: 125 zero bytes, then 01 00 01.
        let bytes = parse_hex_text(text.split_once('\n').unwrap().1).unwrap();
        assert_eq!(bytes.len(), 256);
        assert!(
            bytes[128] & 0x80 == 0 && bytes[..128][0] & 0x80 != 0,
            "1024-bit modulus"
        );
        assert!(bytes[128..253].iter().all(|&b| b == 0));
        assert_eq!(bytes[253..], [0x01, 0x00, 0x01]);
        let public = parse_public_key_text(&text).unwrap();
        assert_eq!(public.n(), key.private.n());
        assert_eq!(public_key_text_of(&public), text);

        let signature = key.sign_md5_hex(&md5_hex(b"x"));
        let lines: Vec<&str> = signature.lines().collect();
        assert_eq!(lines.len(), 4 + 1, "{signature}");
        assert!(lines[..4].iter().all(|l| l.len() == 64));
        assert_eq!(lines[4], ".");
        assert_eq!(hex_text(&signature_bytes(&signature)), signature);
        // A short last line gets its own line break, as print_hex_data writes it.
        assert_eq!(
            hex_text(&[0xab; 33]),
            format!("{}\nab\n.\n", "ab".repeat(32))
        );

        for bad in ["", "1024", "2048\n00\n.\n", "1024\n0\n.\n", "size\n00\n."] {
            assert!(parse_public_key_text(bad).is_err(), "{bad:?}");
        }
        assert!(check_file_signature(&text, "00", "abcd\n.\n").is_err());
    }

    #[test]
    fn the_key_file_is_made_once_with_mode_0600_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("code_sign.pem");
        let made = CodeSigningKey::load_or_generate(&path).unwrap();
        let mode = fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let pem = fs::read_to_string(&path).unwrap();
        assert!(pem.starts_with("-----BEGIN PRIVATE KEY-----"), "{pem}");
        let again = CodeSigningKey::load_or_generate(&path).unwrap();
        assert_eq!(again.public_key_text(), made.public_key_text());
        assert_eq!(again.fingerprint(), made.fingerprint());
        assert_eq!(fs::read_to_string(&path).unwrap(), pem, "not rewritten");
        // No temporary file left beside it.
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);

        // Never over an existing key, unless asked.
        assert!(matches!(
            key().write(&path, Existing::Keep),
            Err(WriteError::Exists)
        ));
        assert_eq!(fs::read_to_string(&path).unwrap(), pem);
        key().write(&path, Existing::Replace).unwrap();
        let replaced = CodeSigningKey::load(&path).unwrap();
        assert_eq!(replaced.public_key_text(), key().public_key_text());
        assert_eq!(
            fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );
        assert!(format!("{replaced:?}").contains(&key().fingerprint()));
        assert!(!format!("{replaced:?}").contains("BEGIN"));
    }

    #[test]
    fn a_bad_key_file_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("key.pem");
        let message =
            |path: &Path| format!("{:#}", CodeSigningKey::load_or_generate(path).unwrap_err());

        fs::write(&path, "not a key\n").unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).unwrap();
        let m = message(&path);
        assert!(m.contains("key.pem") && m.contains("PKCS#8"), "{m}");
        assert_eq!(
            fs::read_to_string(&path).unwrap(),
            "not a key\n",
            "left alone"
        );

        key()
            .write(&dir.path().join("open.pem"), Existing::Keep)
            .unwrap();
        fs::set_permissions(
            dir.path().join("open.pem"),
            fs::Permissions::from_mode(0o644),
        )
        .unwrap();
        let m = message(&dir.path().join("open.pem"));
        assert!(
            m.contains("open.pem") && m.contains("0644") && m.contains("chmod 600"),
            "{m}"
        );

        let m = message(dir.path());
        assert!(m.contains("is not a file"), "{m}");
        let m = message(&dir.path().join("no-such-dir/key.pem"));
        assert!(m.contains("no-such-dir/key.pem"), "{m}");

        // A PKCS#8 RSA key the client cannot read: 2048 bits, or e = 3.
        if openssl() {
            for (name, opts) in [
                ("big.pem", ["-pkeyopt", "rsa_keygen_bits:2048"]),
                ("e3.pem", ["-pkeyopt", "rsa_keygen_pubexp:3"]),
            ] {
                let out = Command::new("openssl")
                    .args(["genpkey", "-algorithm", "RSA", "-out", name])
                    .args(opts)
                    .current_dir(dir.path())
                    .output()
                    .unwrap();
                assert!(
                    out.status.success(),
                    "{}",
                    String::from_utf8_lossy(&out.stderr)
                );
                fs::set_permissions(dir.path().join(name), fs::Permissions::from_mode(0o600))
                    .unwrap();
                let m = message(&dir.path().join(name));
                assert!(
                    m.contains(name) && (m.contains("2048-bit") || m.contains("65537")),
                    "{m}"
                );
            }
        }
    }
}
