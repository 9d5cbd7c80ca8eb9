//! `PROGRAM install-files --out-dir DIR`: the man pages (one per command and subcommand, nested
//! ones too) and the bash, zsh and fish completions of a program, generated from its clap
//! definition, so they cannot drift from the flags. `scripts/package.sh` runs it for both
//! programs and packs what it writes. It is not a subcommand of the clap definition (so no man
//! page, completion or `--help` names it): `main` hands the command line here first.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Command;
use clap_complete::Shell;

/// The first argument that asks for the files.
pub const SUBCOMMAND: &str = "install-files";

/// Where each file goes below the output folder, and so in the packages (below `/usr/share`):
/// `man/` (pages of section 1), `completions/bash/NAME`, `completions/zsh/_NAME`,
/// `completions/fish/NAME.fish`.
pub fn write(cmd: Command, out: &Path) -> std::io::Result<Vec<PathBuf>> {
    let name = cmd.get_name().to_string();
    let man = out.join("man");
    std::fs::create_dir_all(&man)?;
    clap_mangen::generate_to(cmd.clone(), &man)?;
    let mut written: Vec<PathBuf> = std::fs::read_dir(&man)?
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<_, _>>()?;
    for shell in [Shell::Bash, Shell::Zsh, Shell::Fish] {
        let dir = out.join("completions").join(shell.to_string());
        std::fs::create_dir_all(&dir)?;
        let file = match shell {
            Shell::Zsh => format!("_{name}"),
            Shell::Fish => format!("{name}.fish"),
            _ => name.clone(),
        };
        let mut text = Vec::new();
        clap_complete::generate(shell, &mut cmd.clone(), &name, &mut text);
        std::fs::write(dir.join(&file), text)?;
        written.push(dir.join(file));
    }
    written.sort();
    Ok(written)
}

/// When `args` (the whole command line) asks for `install-files`, writes them for the command
/// `cmd` builds and says how it went; `None` for any other command line.
pub fn intercept(args: &[OsString], cmd: impl FnOnce() -> Command) -> Option<ExitCode> {
    if args.get(1).map(|a| a == SUBCOMMAND) != Some(true) {
        return None;
    }
    let program = cmd();
    let parser = Command::new(SUBCOMMAND)
        .bin_name(format!("{} {SUBCOMMAND}", program.get_name()))
        .about("Write the man pages and shell completions (for packaging)")
        .arg(
            clap::Arg::new("out-dir")
                .long("out-dir")
                .required(true)
                .value_parser(clap::value_parser!(PathBuf)),
        );
    let matches = match parser.try_get_matches_from(&args[1..]) {
        Ok(m) => m,
        Err(e) => e.exit(),
    };
    let out = matches.get_one::<PathBuf>("out-dir").expect("required");
    Some(match write(program, out) {
        Ok(files) => {
            println!("wrote {} files under {}", files.len(), out.display());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: cannot write under {}: {e}", out.display());
            ExitCode::FAILURE
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn demo() -> Command {
        Command::new("demo")
            .version("1.2.3")
            .about("A demo")
            .subcommand(Command::new("work").about("Work"))
            .subcommand(
                Command::new("campaign")
                    .about("Campaigns")
                    .subcommand(Command::new("add").about("Add one")),
            )
    }

    #[test]
    fn every_command_gets_a_page_and_every_shell_a_completion() {
        let dir = tempfile::tempdir().unwrap();
        let files = write(demo(), dir.path()).unwrap();
        let names: Vec<String> = files
            .iter()
            .map(|f| {
                f.strip_prefix(dir.path())
                    .unwrap()
                    .to_string_lossy()
                    .into_owned()
            })
            .collect();
        for want in [
            "man/demo.1",
            "man/demo-work.1",
            "man/demo-campaign.1",
            "man/demo-campaign-add.1",
            "completions/bash/demo",
            "completions/zsh/_demo",
            "completions/fish/demo.fish",
        ] {
            assert!(names.iter().any(|n| n == want), "{want} not in {names:?}");
        }
        let page = std::fs::read_to_string(dir.path().join("man/demo-campaign-add.1")).unwrap();
        assert!(page.contains("Add one"), "{page}");
        let bash = std::fs::read_to_string(dir.path().join("completions/bash/demo")).unwrap();
        assert!(bash.contains("work") && bash.contains("campaign"), "{bash}");
    }

    #[test]
    fn only_its_own_first_argument_is_intercepted() {
        let args = |a: &[&str]| a.iter().map(OsString::from).collect::<Vec<_>>();
        assert!(intercept(&args(&["demo", "work"]), demo).is_none());
        assert!(intercept(&args(&["demo"]), demo).is_none());
        assert!(intercept(&args(&["demo", "work", SUBCOMMAND]), demo).is_none());
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        let code = intercept(
            &args(&["demo", SUBCOMMAND, "--out-dir", out.to_str().unwrap()]),
            demo,
        );
        assert_eq!(code, Some(ExitCode::SUCCESS));
        assert!(out.join("man/demo.1").is_file());
    }
}
