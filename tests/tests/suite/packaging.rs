//! The packaging files, checked statically (issue 34): no container runtime works on the
//! machines c960 is developed and tested on, and the packages themselves are built and
//! installed by `scripts/package-check.sh` (`.ci/run`), not by `cargo test`. Here: every
//! `COPY` source of the Dockerfiles in `deploy/` exists or is a package `scripts/package.sh`
//! makes, and the build context lets it in; every entrypoint, `CMD`, compose `command` and
//! systemd `ExecStart` names a real program, a real subcommand and real flags (the programs'
//! own `--help`); every file the Debian packages take from the checkout exists, their maintainer
//! scripts are executable and keep cargo-deb's `#DEBHELPER#`, and each unit installs from
//! `deploy/`.

use std::path::{Path, PathBuf};
use std::process::Command;

use c960_tests::bins;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn read(path: &str) -> String {
    std::fs::read_to_string(root().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// `*` matches any run of characters; nothing else is special.
fn glob_match(pattern: &str, text: &str) -> bool {
    match pattern.split_once('*') {
        None => pattern == text,
        Some((head, tail)) => {
            text.starts_with(head)
                && (head.len()..=text.len())
                    .any(|i| text.is_char_boundary(i) && glob_match(tail, &text[i..]))
        }
    }
}

/// A Dockerfile's instructions (continuation lines joined, comments dropped): (name, rest).
fn instructions(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut current = String::new();
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('#') || (line.is_empty() && current.is_empty()) {
            continue;
        }
        match line.strip_suffix('\\') {
            Some(part) => current.push_str(part),
            None => {
                current.push_str(line);
                let (name, rest) = current.split_once(' ').unwrap_or((&current, ""));
                out.push((name.to_uppercase(), rest.trim().to_string()));
                current.clear();
            }
        }
    }
    out
}

/// The programs, by name.
fn program(name: &str) -> &'static Path {
    let (coordinator, worker) = bins();
    match name {
        "c960-coordinator" => coordinator,
        "c960-worker" => worker,
        other => panic!("{other:?} is not a c960 program"),
    }
}

/// Checks that `args` (a subcommand and its flags) is a real command line of `name`: the
/// subcommand's `--help` succeeds and names every `--flag` given.
fn check_command_line(name: &str, args: &[String], whence: &str) {
    let sub = args
        .first()
        .unwrap_or_else(|| panic!("{whence}: no subcommand"));
    let out = Command::new(program(name))
        .args([sub.as_str(), "--help"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{whence}: `{name} {sub}` is not a subcommand: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let help = String::from_utf8_lossy(&out.stdout);
    for flag in args.iter().filter(|a| a.starts_with("--")) {
        let flag = flag.split('=').next().unwrap();
        assert!(
            help.contains(&format!("{flag} ")) || help.contains(&format!("{flag}\n")),
            "{whence}: `{name} {sub}` has no flag {flag}"
        );
    }
}

/// The `.deb` names `scripts/package.sh` makes (cargo-deb's `NAME_VERSION-1_ARCH.deb`).
fn package_file(name: &str) -> String {
    let arch = match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        other => other,
    };
    format!("{name}_{}-1_{arch}.deb", env!("CARGO_PKG_VERSION"))
}

#[test]
fn dockerfiles_copy_what_exists_and_run_real_commands() {
    let ignore = read(".dockerignore");
    let allowed: Vec<&str> = ignore
        .lines()
        .filter_map(|l| l.trim().strip_prefix('!'))
        .collect();
    assert!(
        ignore.lines().any(|l| l.trim() == "*"),
        ".dockerignore keeps the checkout out of the build context"
    );
    for (file, package) in [
        ("deploy/Dockerfile", "c960-worker"),
        ("deploy/Dockerfile.coordinator", "c960-coordinator"),
    ] {
        let steps = instructions(&read(file));
        let mut copied_package = false;
        for (name, rest) in &steps {
            if name != "COPY" || rest.starts_with("--from") {
                continue;
            }
            let words: Vec<&str> = rest.split_whitespace().collect();
            assert!(words.len() >= 2, "{file}: COPY {rest}");
            for source in &words[..words.len() - 1] {
                assert!(
                    allowed.iter().any(|a| glob_match(a, source)),
                    "{file}: .dockerignore keeps {source} out of the build context"
                );
                if let Some(deb) = source.strip_prefix("target/debian/") {
                    // Made by scripts/package.sh before the image is built.
                    assert!(
                        glob_match(deb, &package_file(package)),
                        "{file}: {source} is not the package {}",
                        package_file(package)
                    );
                    copied_package = true;
                } else {
                    assert!(root().join(source).exists(), "{file}: no {source}");
                }
            }
        }
        assert!(
            copied_package,
            "{file} does not install {package}'s package"
        );
        let exec_form = |instr: &str| -> Vec<String> {
            let (_, rest) = steps
                .iter()
                .rev()
                .find(|(n, _)| n == instr)
                .unwrap_or_else(|| panic!("{file}: no {instr}"));
            serde_json::from_str(rest)
                .unwrap_or_else(|e| panic!("{file}: {instr} is not in exec form: {e}"))
        };
        assert_eq!(exec_form("ENTRYPOINT"), [package], "{file}");
        check_command_line(package, &exec_form("CMD"), file);
    }
}

/// The `command:` lists of compose.yaml with the Dockerfile of the service they belong to.
fn compose_commands(text: &str) -> Vec<(String, Vec<String>)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut dockerfile = String::new();
    for (i, line) in lines.iter().enumerate() {
        let trimmed = line.trim();
        if let Some(d) = trimmed.strip_prefix("dockerfile:") {
            dockerfile = d.trim().to_string();
        }
        let Some(value) = trimmed.strip_prefix("command:") else {
            continue;
        };
        let value = value.trim();
        let args: Vec<String> = if value.starts_with('[') {
            serde_json::from_str(value).expect("an inline command list")
        } else {
            let indent = line.len() - line.trim_start().len();
            lines[i + 1..]
                .iter()
                .take_while(|l| l.trim().is_empty() || l.len() - l.trim_start().len() > indent)
                .filter_map(|l| l.trim().strip_prefix("- "))
                .map(str::to_string)
                .collect()
        };
        out.push((dockerfile.clone(), args));
    }
    out
}

#[test]
fn compose_commands_are_real_command_lines() {
    let commands = compose_commands(&read("deploy/compose.yaml"));
    assert_eq!(commands.len(), 2, "{commands:?}");
    for (dockerfile, args) in commands {
        let package = match dockerfile.as_str() {
            "deploy/Dockerfile" => "c960-worker",
            "deploy/Dockerfile.coordinator" => "c960-coordinator",
            other => panic!("compose.yaml builds {other:?}"),
        };
        check_command_line(package, &args, "deploy/compose.yaml");
    }
}

/// `[package.metadata.deb]` of a crate.
fn deb_metadata(krate: &str) -> toml::Table {
    let manifest: toml::Table = read(&format!("{krate}/Cargo.toml")).parse().unwrap();
    manifest["package"]["metadata"]["deb"]
        .as_table()
        .unwrap_or_else(|| panic!("{krate}: no [package.metadata.deb]"))
        .clone()
}

#[test]
fn the_packages_take_files_that_exist_and_units_that_run_real_commands() {
    for (krate, package) in [
        ("worker", "c960-worker"),
        ("coordinator", "c960-coordinator"),
    ] {
        let deb = deb_metadata(krate);
        let crate_dir = root().join(krate);
        let has = |dest_prefix: &str| -> bool {
            deb["assets"].as_array().unwrap().iter().any(|a| {
                a.as_array().unwrap()[1]
                    .as_str()
                    .unwrap()
                    .starts_with(dest_prefix)
            })
        };
        for dest in [
            "usr/bin/",
            "usr/share/man/man1/",
            "usr/share/bash-completion/completions/",
            "usr/share/zsh/vendor-completions/",
            "usr/share/fish/vendor_completions.d/",
            "etc/c960/",
        ] {
            assert!(has(dest), "{package} installs nothing in {dest}");
        }
        for asset in deb["assets"].as_array().unwrap() {
            let asset = asset.as_array().unwrap();
            let source = asset[0].as_str().unwrap();
            if let Some(built) = source.strip_prefix("target/release/") {
                // The binary, and what its `install-files` writes (scripts/package.sh).
                assert!(
                    built == package || built.starts_with(&format!("install-files/{package}/")),
                    "{package}: {source}"
                );
                if asset[1].as_str() == Some("usr/bin/") {
                    assert_eq!(built, package);
                }
            } else {
                assert!(crate_dir.join(source).is_file(), "{package}: no {source}");
            }
        }
        let scripts = crate_dir.join(deb["maintainer-scripts"].as_str().unwrap());
        for script in ["postinst", "postrm"] {
            let path = scripts.join(script);
            let text = std::fs::read_to_string(&path).unwrap();
            assert!(text.contains("#DEBHELPER#"), "{}", path.display());
            assert!(text.starts_with("#!/bin/sh"), "{}", path.display());
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert!(mode & 0o111 != 0, "{} is not executable", path.display());
        }
        let units = crate_dir.join(deb["systemd-units"]["unit-scripts"].as_str().unwrap());
        let unit_file = units.join(format!("{package}.service"));
        let unit = std::fs::read_to_string(&unit_file)
            .unwrap_or_else(|e| panic!("{}: {e}", unit_file.display()));
        let exec = unit
            .lines()
            .find_map(|l| l.strip_prefix("ExecStart="))
            .unwrap_or_else(|| panic!("{}: no ExecStart", unit_file.display()));
        let mut words = exec.split_whitespace().map(str::to_string);
        assert_eq!(words.next().unwrap(), format!("/usr/bin/{package}"));
        check_command_line(
            package,
            &words.collect::<Vec<_>>(),
            &unit_file.display().to_string(),
        );
        assert!(unit.contains("User=c960"), "{}", unit_file.display());
        assert!(
            unit.contains("StateDirectory=c960"),
            "{}",
            unit_file.display()
        );
    }
}

#[test]
fn the_globs_here_match_as_the_shell_does() {
    assert!(glob_match(
        "c960-worker_*.deb",
        "c960-worker_0.2.0-1_amd64.deb"
    ));
    assert!(!glob_match(
        "c960-worker_*.deb",
        "c960-coordinator_0.2.0-1_amd64.deb"
    ));
    assert!(glob_match(
        "target/debian/*.deb",
        "target/debian/c960-worker_*.deb"
    ));
    assert!(!glob_match(
        "target/debian/*.deb",
        "target/release/c960-worker"
    ));
}

/// The subcommands `PROGRAM [SUB…] --help` lists (clap's `Commands:` section, without `help`).
fn subcommands(name: &str, path: &[&str]) -> Vec<String> {
    let out = Command::new(program(name))
        .args(path)
        .arg("--help")
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .skip_while(|l| *l != "Commands:")
        .skip(1)
        .take_while(|l| !l.is_empty())
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .filter(|s| s != "help")
        .collect()
}

#[test]
fn install_files_give_every_subcommand_a_man_page_and_bash_completes_it() {
    for name in ["c960-worker", "c960-coordinator"] {
        let dir = tempfile::tempdir().unwrap();
        let out = Command::new(program(name))
            .args(["install-files", "--out-dir"])
            .arg(dir.path())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let page = |stem: &str| dir.path().join("man").join(format!("{stem}.1"));
        assert!(page(name).is_file(), "{name}.1");
        let top = subcommands(name, &[]);
        assert!(top.len() >= 4, "{name}: {top:?}");
        for sub in &top {
            assert!(page(&format!("{name}-{sub}")).is_file(), "{name}-{sub}.1");
            for nested in subcommands(name, &[sub]) {
                assert!(
                    page(&format!("{name}-{sub}-{nested}")).is_file(),
                    "{name}-{sub}-{nested}.1"
                );
            }
        }
        let text = std::fs::read_to_string(page(name)).unwrap();
        assert!(
            text.contains(c960_cli::build_info::version_line()),
            "{name}.1 names no build"
        );
        for completion in [
            format!("completions/bash/{name}"),
            format!("completions/zsh/_{name}"),
            format!("completions/fish/{name}.fish"),
        ] {
            let text = std::fs::read_to_string(dir.path().join(&completion)).unwrap();
            for sub in &top {
                assert!(text.contains(sub.as_str()), "{completion} lacks {sub}");
            }
            assert!(
                !text.contains("install-files"),
                "{completion} offers install-files"
            );
        }
    }
    // bash, as a terminal's would, completes `c960-worker wo<TAB>` to `work`.
    let dir = tempfile::tempdir().unwrap();
    Command::new(program("c960-worker"))
        .args(["install-files", "--out-dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    let script = format!(
        r#"source '{}'
f=$(complete -p c960-worker | sed -E 's/.* -F ([^ ]+) .*/\1/')
COMP_WORDS=(c960-worker wo); COMP_CWORD=1; COMP_LINE="c960-worker wo"; COMP_POINT=${{#COMP_LINE}}
"$f" c960-worker wo c960-worker
echo "${{COMPREPLY[*]}}""#,
        dir.path().join("completions/bash/c960-worker").display()
    );
    let out = Command::new("bash").arg("-c").arg(script).output().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "work",
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
