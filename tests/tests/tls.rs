//! `serve --tls-cert --tls-key` speaks HTTPS: a worker client that trusts the CA (`--ca-file`)
//! registers, fetches and submits; one that does not trust it cannot connect; plain HTTP to the
//! HTTPS port gets nowhere. The certificate is made up by rcgen: a private CA and a leaf for
//! 127.0.0.1 signed by it.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use c960_common::wire::{Capabilities, FetchResponse};
use c960_tests::{bins, honest_submission};
use c960_worker::client::Client;
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair};

struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn https_with_a_private_ca() {
    let (coordinator, _) = bins();
    let dir = tempfile::tempdir().unwrap();
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "c960 test CA");
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let leaf_key = KeyPair::generate().unwrap();
    let leaf = CertificateParams::new(vec!["127.0.0.1".to_string(), "localhost".to_string()])
        .unwrap()
        .signed_by(&leaf_key, &ca, &ca_key)
        .unwrap();
    let (cert, key, ca_file) = (
        dir.path().join("cert.pem"),
        dir.path().join("key.pem"),
        dir.path().join("ca.pem"),
    );
    std::fs::write(&cert, leaf.pem()).unwrap();
    std::fs::write(&key, leaf_key.serialize_pem()).unwrap();
    std::fs::write(&ca_file, ca.pem()).unwrap();
    let db = dir.path().join("c.db");
    // `campaign add` refuses a database that does not exist; `serve` (or this) creates it.
    drop(c960_coordinator::store::SqliteStore::open(&db).unwrap());

    let out = Command::new(coordinator)
        .args(["campaign", "add", "--depth", "2", "--positions", "518"])
        .arg("--db")
        .arg(&db)
        .output()
        .unwrap();
    assert!(out.status.success());
    let mut child = Killed(
        Command::new(coordinator)
            .args(["serve", "--listen", "127.0.0.1:0", "--open-enrolment"])
            .arg("--db")
            .arg(&db)
            .arg("--tls-cert")
            .arg(&cert)
            .arg("--tls-key")
            .arg(&key)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let mut line = String::new();
    BufReader::new(child.0.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("first line {line:?}"))
        .to_string();
    assert!(url.starts_with("https://127.0.0.1:"), "{url}");

    // Trusting the CA: the whole protocol works.
    let pem = std::fs::read(&ca_file).unwrap();
    let client = Client::with_ca(&url, Some(&pem)).unwrap();
    let auth = client.register("tls", 1, 0).await.unwrap();
    let FetchResponse::Assigned(a) = client.fetch(&auth, &Capabilities::builtin()).await.unwrap()
    else {
        panic!("no work")
    };
    client.submit(&auth, &honest_submission(&a)).await.unwrap();

    // Not trusting it: the certificate is refused before anything is sent.
    let untrusting = Client::new(&url).unwrap();
    let err = untrusting.register("x", 1, 0).await.unwrap_err();
    assert!(err.is_transient() && err.code().is_none(), "{err}");
    // Plain HTTP to the HTTPS port gets no HTTP answer.
    let plain = Client::new(&url.replace("https://", "http://")).unwrap();
    assert!(plain.register("x", 1, 0).await.is_err());
    drop(child);
}
