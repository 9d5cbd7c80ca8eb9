//! Finds the git commit this build comes from, for `--version`, the worker's User-Agent and the
//! coordinator's status: `C960_GIT_COMMIT` when set (a build from a source archive can name it),
//! else `git rev-parse` in the checkout, else `unknown` (no git, or not a checkout: a packaged
//! source build). The build reruns when HEAD moves, so the commit is never stale.

use std::path::{Path, PathBuf};
use std::process::Command;

fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .ok()?;
    let text = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (out.status.success() && !text.is_empty()).then_some(text)
}

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=C960_GIT_COMMIT");
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let commit = std::env::var("C960_GIT_COMMIT")
        .ok()
        .filter(|c| !c.is_empty())
        .or_else(|| git(&manifest, &["rev-parse", "--short=12", "HEAD"]))
        .unwrap_or_else(|| "unknown".to_string());
    if let Some(dir) = git(&manifest, &["rev-parse", "--absolute-git-dir"]) {
        let dir = PathBuf::from(dir);
        // HEAD names the branch; the branch's ref (loose or packed) names the commit. Only
        // paths that exist: cargo reruns a script every build for one that does not.
        let mut watched = vec![dir.join("HEAD"), dir.join("packed-refs")];
        if let Some(branch) = git(&manifest, &["symbolic-ref", "-q", "HEAD"]) {
            watched.push(dir.join(branch));
        }
        for path in watched.iter().filter(|p| p.exists()) {
            println!("cargo:rerun-if-changed={}", path.display());
        }
    }
    println!("cargo:rustc-env=C960_GIT_COMMIT={commit}");
}
