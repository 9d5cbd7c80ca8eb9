//! `serve --tls-cert --tls-key` speaks HTTPS: a worker client that trusts the CA (`--ca-file`)
//! registers, fetches and submits; one that does not trust it cannot connect; plain HTTP to the
//! HTTPS port gets nowhere. The certificate is made up by rcgen: a private CA and a leaf for
//! 127.0.0.1 signed by it.

use std::process::{Command, Stdio};

use c960_common::wire::{Capabilities, FetchResponse};
use c960_tests::{ServeProcess, bins, honest_submission};
use c960_worker::client::Client;
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair};

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
    let cert_arg = cert.to_str().unwrap();
    let key_arg = key.to_str().unwrap();
    let child = ServeProcess::start(
        &db,
        &[
            "--open-enrolment",
            "--tls-cert",
            cert_arg,
            "--tls-key",
            key_arg,
        ],
        Stdio::null(),
    );
    let url = child.url.clone();
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
