//! Issue 33's BOINC side with real processes: `c960-coordinator boinc keygen`, our signatures
//! checked by the BOINC client's own crypto library, and the stock BOINC client (Debian's
//! `boinc-client`) started by the harness (`c960_tests::boinc`).

use std::os::unix::fs::PermissionsExt as _;
use std::path::PathBuf;
use std::process::Command;

use c960_coordinator::net::boinc::signing::{CodeSigningKey, check_file_signature, md5_hex};
use c960_tests::bins;
use c960_tests::boinc::BoincClient;

/// Whether the BOINC client is here; under CI it must be (`.ci/run` installs it).
pub(crate) fn boinc_installed() -> bool {
    if BoincClient::installed() {
        return true;
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "boinc-client is missing under CI: .ci/run must install it (apt-get install boinc-client)"
    );
    eprintln!(
        "\n\n*** SKIPPED: no /usr/bin/boinc; the BOINC client harness was NOT tested. \
         Install it: apt-get install boinc-client ***\n"
    );
    false
}

#[test]
fn keygen_writes_a_key_once_and_prints_its_public_text() {
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("code_sign.pem");
    let keygen = |force: bool| {
        let mut cmd = Command::new(&bins().0);
        cmd.args(["boinc", "keygen", "--key"]).arg(&key);
        if force {
            cmd.arg("--force");
        }
        cmd.output().unwrap()
    };
    let out = keygen(false);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        std::fs::metadata(&key).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let loaded = CodeSigningKey::load(&key).unwrap();
    assert!(
        stdout.contains(&format!("sha256:{}", loaded.fingerprint())),
        "{stdout}"
    );
    assert!(stdout.ends_with(&loaded.public_key_text()), "{stdout}");
    let md5 = md5_hex(b"app");
    assert!(
        check_file_signature(&loaded.public_key_text(), &md5, &loaded.sign_md5_hex(&md5)).unwrap()
    );

    // A second keygen refuses to replace the key clients already trust: one line, non-zero.
    let pem = std::fs::read(&key).unwrap();
    let out = keygen(false);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("exists") && stderr.contains("--force"),
        "{stderr}"
    );
    assert_eq!(std::fs::read(&key).unwrap(), pem);
    // --force does.
    assert!(keygen(true).status.success());
    assert_ne!(std::fs::read(&key).unwrap(), pem);
    assert_ne!(
        CodeSigningKey::load(&key).unwrap().public_key_text(),
        loaded.public_key_text()
    );

    // A key it cannot write: one line naming it.
    let out = Command::new(&bins().0)
        .args(["boinc", "keygen", "--key"])
        .arg(dir.path().join("no/such/dir/key.pem"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("no/such/dir/key.pem"), "{stderr}");
}

/// `serve ARGS…` that must refuse to start: its standard error (killed and failed if it is
/// still running after 60 s, which would mean it served).
fn serve_refusal(args: &[&std::ffi::OsStr]) -> String {
    let mut child = Command::new(&bins().0)
        .args(["serve", "--listen", "127.0.0.1:0"])
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let until = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > until {
            let _ = child.kill();
            let _ = child.wait();
            panic!("serve {args:?} started instead of refusing");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    assert!(!out.status.success(), "{args:?}");
    String::from_utf8(out.stderr).unwrap()
}

/// `serve --boinc` refuses what it cannot serve before it opens anything: a PostgreSQL database
/// without `--boinc-key` (no file beside a database URL to keep the key in), a `--boinc-url`
/// that is not HTTP, an app that is not there — one line on stderr naming the flag or the file,
/// a non-zero exit, and neither a database nor a key left behind.
#[test]
fn serve_boinc_refuses_a_postgres_database_without_a_key_a_bad_url_and_a_missing_app() {
    let dir = tempfile::tempdir().unwrap();
    let app = dir.path().join("app");
    std::fs::write(&app, b"an app").unwrap();
    let db = dir.path().join("c960.sqlite");
    let os = |s: &str| std::ffi::OsString::from(s);
    let cases: [(Vec<std::ffi::OsString>, &[&str]); 4] = [
        (
            // Port 1: nothing is asked of it; the refusal comes first.
            vec![
                os("--db"),
                os("postgres://c960@127.0.0.1:1/c960"),
                os("--boinc"),
                os("--boinc-app"),
                app.clone().into(),
            ],
            &["--boinc-key", "PostgreSQL"],
        ),
        (
            vec![
                os("--db"),
                db.clone().into(),
                os("--boinc"),
                os("--boinc-app"),
                app.clone().into(),
                os("--boinc-url"),
                os("ftp://x"),
            ],
            &["--boinc-url", "ftp://x", "http://"],
        ),
        (
            vec![
                os("--db"),
                db.clone().into(),
                os("--boinc"),
                os("--boinc-app"),
                os("/nonexistent"),
            ],
            &["/nonexistent", "No such file"],
        ),
        (
            vec![
                os("--db"),
                db.clone().into(),
                os("--boinc"),
                os("--boinc-app"),
                dir.path().into(),
            ],
            &["is not a file"],
        ),
    ];
    for (args, says) in cases {
        let args: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_os_str()).collect();
        let err = serve_refusal(&args);
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        for s in says {
            assert!(err.contains(s), "{args:?} should say {s}: {err}");
        }
        assert!(!err.contains("panicked"), "{err}");
    }
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left, [os("app")], "nothing but the app: {left:?}");
}

#[test]
fn the_harness_starts_a_client_that_answers_and_quits_it() {
    if !boinc_installed() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let client = BoincClient::start(&dir.path().join("client")).unwrap();
    let host = client.boinccmd(&["--get_host_info"]).unwrap();
    assert!(host.contains("#CPUS:"), "{host}");
    let state = client.boinccmd(&["--get_state"]).unwrap();
    assert!(
        state.contains("======== Projects ========") && state.contains("======== Tasks ========"),
        "{state}"
    );
    // Attached to nothing yet; the settings were read.
    assert!(!client.project_status().contains("master URL"));
    assert!(!client.tasks().contains("name:"));
    let log = client.messages();
    assert!(log.contains("Starting BOINC client version 7."), "{log}");
    assert!(
        log.contains("Config: run apps at regular priority"),
        "{log}"
    );
    assert!(log.contains("Reading preferences override file"), "{log}");
    assert!(
        !log.contains("suspend work if non-BOINC CPU load exceeds"),
        "the override's suspend_cpu_usage 0 was not read: {log}"
    );
    // A wrong call is an error, not a panic or a hang.
    let e = client
        .boinccmd(&["--project", "http://127.0.0.1:9/none/", "update"])
        .unwrap_err();
    assert!(format!("{e:#}").contains("No such project"), "{e:#}");

    // Two clients side by side, each in its own directory on its own port.
    let other = BoincClient::start(&dir.path().join("other")).unwrap();
    assert_ne!(other.port(), client.port());
    assert!(other.boinccmd(&["--get_host_info"]).is_ok());

    // Dropping it quits it: the port stops answering and the lock is free for a new client.
    let port = client.port();
    drop(client);
    let gone = Command::new(c960_tests::boinc::BOINCCMD)
        .args(["--host", &format!("127.0.0.1:{port}"), "--get_host_info"])
        .output()
        .unwrap();
    assert!(
        !gone.status.success() || String::from_utf8_lossy(&gone.stdout).trim().is_empty(),
        "{}",
        String::from_utf8_lossy(&gone.stdout)
    );
    let again = BoincClient::start(&dir.path().join("client")).unwrap();
    assert!(again.log().contains("Starting BOINC client"));
}

/// A C program around the client's own check of an app file (`check_file_signature2` of
/// libboinc_crypt, a C++ function: called by its mangled name, its `bool&` a pointer):
/// `check KEY_FILE MD5 SIGNATURE_FILE` prints `retval R answer A`.
const CHECK_C: &str = r#"#include <stdio.h>
#include <stdbool.h>
int _Z21check_file_signature2PKcS0_S0_Rb(const char*, const char*, const char*, bool*);
static char key[8192], sig[8192];
static void slurp(const char* p, char* b, size_t n) {
    FILE* f = fopen(p, "r");
    size_t k = f ? fread(b, 1, n - 1, f) : 0;
    b[k] = 0;
    if (f) fclose(f);
}
int main(int argc, char** argv) {
    if (argc != 4) return 2;
    slurp(argv[1], key, sizeof key);
    slurp(argv[3], sig, sizeof sig);
    bool ok = false;
    int r = _Z21check_file_signature2PKcS0_S0_Rb(argv[2], sig, key, &ok);
    printf("retval %d answer %d\n", r, ok);
    return 0;
}
"#;

/// The BOINC client's crypto library (installed with boinc-client), if here.
fn libboinc_crypt() -> Option<PathBuf> {
    let found = std::fs::read_dir("/usr/lib")
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path().join("libboinc_crypt.so.7"))
        .find(|p| p.is_file());
    if found.is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "libboinc_crypt.so.7 is missing under CI: .ci/run must install boinc-client"
        );
        eprintln!(
            "\n\n*** SKIPPED: no libboinc_crypt.so.7; our signatures were NOT checked by the \
             client's code. Install it: apt-get install boinc-client ***\n"
        );
    }
    found
}

#[test]
fn the_clients_own_crypto_library_accepts_our_signatures_and_only_those() {
    let Some(lib) = libboinc_crypt() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let at = |name: &str| dir.path().join(name);
    std::fs::write(at("check.c"), CHECK_C).unwrap();
    // `cc` is the C compiler Rust itself links with.
    let built = Command::new("cc")
        .arg("-o")
        .arg(at("check"))
        .arg(at("check.c"))
        .arg(&lib)
        .output()
        .unwrap();
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
    let key = CodeSigningKey::generate().unwrap();
    std::fs::write(at("key"), key.public_key_text()).unwrap();
    let check = |md5: &str, signature: &str| {
        std::fs::write(at("signature"), signature).unwrap();
        let out = Command::new(at("check"))
            .arg(at("key"))
            .arg(md5)
            .arg(at("signature"))
            .output()
            .unwrap();
        assert!(out.status.success());
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    // Refused: the padding undone is not around this MD5 (`answer 0`), or is no type-1 padding
    // at all (`retval -231`, ERR_CRYPTO); the client fails the file either way.
    let refused = |said: String| assert!(said.ends_with("answer 0"), "{said}");
    let app = b"\x7fELF pretend this is c960-worker";
    let md5 = md5_hex(app);
    assert_eq!(check(&md5, &key.sign_file_bytes(app)), "retval 0 answer 1");
    // Another file's signature, or another key's, is refused.
    refused(check(&md5, &key.sign_file_bytes(b"other bytes")));
    let other = CodeSigningKey::generate().unwrap();
    refused(check(&md5, &other.sign_file_bytes(app)));
    // So is a signature with one hex digit changed.
    let mut tampered = key.sign_file_bytes(app).into_bytes();
    tampered[10] = if tampered[10] == b'0' { b'1' } else { b'0' };
    refused(check(&md5, &String::from_utf8(tampered).unwrap()));
}
