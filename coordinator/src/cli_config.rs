//! `serve --config FILE`: a TOML file of serve options (`deploy/c960.toml` is a commented
//! example). Every serve flag is a key of the same name in snake_case (`--lease-secs` is
//! `lease_secs`), so the file and the flags cannot drift apart: the file's keys are turned into
//! the flags they name, inserted before the command line's own, and clap parses and validates
//! them all as one command line. A flag given on the command line (or its environment variable)
//! overrides the file's key, and so does one that excludes it (`--enrol-secret` over the file's
//! `open_enrolment`): the key is then not inserted at all. Switches (`open_enrolment`) take `true` or `false`,
//! repeatable flags (`trusted_proxy`) a list or one value. An unknown key, a value of the wrong
//! kind or one the flag refuses is a one-line error naming the key. Secrets are never kept in
//! the file: `admin_token` and `enrol_secret` are refused in favour of their `*_file` keys (or
//! the environment variables).

use std::ffi::{OsStr, OsString};
use std::path::Path;

use clap::error::{ContextKind, ContextValue};
use clap::{Arg, ArgAction, Command, Parser};

/// Keys refused in the file, with the key to use instead.
const SECRETS: [(&str, &str); 2] = [
    ("admin_token", "admin_token_file"),
    ("enrol_secret", "enrol_secret_file"),
];

/// Why a command line was refused: a one-line message about the config file, or clap's own
/// error (usage and all) about the command line.
pub enum Refusal {
    /// One line about the file (a key, its value), without the `error: ` prefix.
    File(String),
    /// Clap's error.
    Clap(clap::Error),
}

/// Parses the command line, with the keys of `serve --config FILE` inserted as flags. A value
/// from the file that its flag refuses is reported as a [`Refusal::File`] naming the key.
pub fn parse<P: Parser>(args: Vec<OsString>) -> Result<P, Refusal> {
    let (args, from_file) = expand(&P::command(), args).map_err(Refusal::File)?;
    P::try_parse_from(args).map_err(|e| {
        let arg = match e.get(ContextKind::InvalidArg) {
            Some(ContextValue::String(a)) => a.clone(),
            _ => return Refusal::Clap(e),
        };
        match from_file
            .iter()
            .find(|(long, _)| arg == format!("--{long}") || arg.starts_with(&format!("--{long} ")))
        {
            Some((_, key)) => {
                let rendered = e.render().to_string();
                let first = rendered.lines().next().unwrap_or("invalid value").trim();
                Refusal::File(format!(
                    "{key}: {}",
                    first.strip_prefix("error: ").unwrap_or(first)
                ))
            }
            None => Refusal::Clap(e),
        }
    })
}

/// Flags taken from the file: (long name, `FILE: key`).
type FromFile = Vec<(String, String)>;

/// The command line with the keys of `serve --config FILE` inserted as flags (unchanged for any
/// other command, or without `--config`), and which flags came from the file.
pub fn expand(cli: &Command, args: Vec<OsString>) -> Result<(Vec<OsString>, FromFile), String> {
    if args.get(1).map(OsString::as_os_str) != Some(OsStr::new("serve")) {
        return Ok((args, Vec::new()));
    }
    let Some(file) = config_path(&args[2..]) else {
        return Ok((args, Vec::new()));
    };
    let text =
        std::fs::read_to_string(&file).map_err(|e| format!("--config {}: {e}", file.display()))?;
    let serve = cli
        .find_subcommand("serve")
        .ok_or("the command has no serve subcommand")?;
    let (flags, from_file) = flags_of(serve, &file, &text, &args[2..])?;
    let mut out = args;
    out.splice(2..2, flags);
    Ok((out, from_file))
}

/// The value of `--config FILE` or `--config=FILE` among serve's arguments.
fn config_path(args: &[OsString]) -> Option<std::path::PathBuf> {
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let a = a.to_string_lossy();
        if a == "--config" {
            return it.next().map(Into::into);
        }
        if let Some(v) = a.strip_prefix("--config=") {
            return Some(v.into());
        }
    }
    None
}

/// Whether the command line gives `arg` itself (`--long`, `--long VALUE`, `--long=VALUE`) or
/// its environment variable is set.
fn given(args: &[OsString], arg: &Arg) -> bool {
    let Some(long) = arg.get_long() else {
        return false;
    };
    let flag = format!("--{long}");
    let on_line = args.iter().any(|a| {
        let a = a.to_string_lossy();
        a == flag || a.starts_with(&format!("{flag}="))
    });
    on_line
        || arg
            .get_env()
            .is_some_and(|v| std::env::var_os(v).is_some_and(|v| !v.is_empty()))
}

/// Whether the command line (or the environment) gives `arg` or an option that excludes it
/// (`--enrol-secret` excludes the file's `open_enrolment`): then the file's key gives way.
fn overridden(serve: &Command, args: &[OsString], arg: &Arg) -> bool {
    let declared = serve.get_arg_conflicts_with(arg);
    let excluding = serve.get_arguments().filter(|o| {
        serve
            .get_arg_conflicts_with(o)
            .iter()
            .any(|c| c.get_id() == arg.get_id())
    });
    given(args, arg)
        || declared
            .into_iter()
            .chain(excluding)
            .any(|o| given(args, o))
}

/// 1-based line of a byte offset.
fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

/// The flags the file's keys stand for, skipping those the command line gives itself.
fn flags_of(
    serve: &Command,
    file: &Path,
    text: &str,
    cli_args: &[OsString],
) -> Result<(Vec<OsString>, FromFile), String> {
    let name = file.display();
    let table: toml::Table = toml::from_str(text).map_err(|e| {
        let at = e
            .span()
            .map_or(String::new(), |s| format!(":{}", line_of(text, s.start)));
        format!("{name}{at}: {}", e.message().trim().replace('\n', "; "))
    })?;
    let (mut out, mut from_file) = (Vec::new(), Vec::new());
    for (key, value) in &table {
        let bad = |why: String| format!("{name}: {key}: {why}");
        if let Some((_, instead)) = SECRETS.iter().find(|(k, _)| k == key) {
            return Err(bad(format!(
                "secrets are not kept in the config file; name a file with `{instead}` (or use the environment)"
            )));
        }
        let arg = serve_arg(serve, key).ok_or_else(|| {
            format!(
                "{name}: unknown key `{key}` (the keys are serve's flags in snake_case, e.g. `lease_secs`; see serve --help)"
            )
        })?;
        let long = arg.get_long().expect("serve_arg finds long flags only");
        if overridden(serve, cli_args, arg) {
            continue;
        }
        from_file.push((long.to_string(), format!("{name}: {key}")));
        match arg.get_action() {
            ArgAction::SetTrue => match value {
                toml::Value::Boolean(true) => out.push(format!("--{long}").into()),
                toml::Value::Boolean(false) => {}
                other => return Err(bad(format!("is a switch: true or false, not {other}"))),
            },
            ArgAction::Append => {
                let values = match value {
                    toml::Value::Array(a) => a.iter().collect(),
                    one => vec![one],
                };
                for v in values {
                    out.extend(flag(long, v).map_err(&bad)?);
                }
            }
            _ => match value {
                toml::Value::Array(_) => return Err(bad("takes one value, not a list".into())),
                v => out.extend(flag(long, v).map_err(&bad)?),
            },
        }
    }
    Ok((out, from_file))
}

/// The serve option a key names: `lease_secs` is `--lease-secs`. `config`, `help` and keys with
/// dashes name none.
fn serve_arg<'a>(serve: &'a Command, key: &str) -> Option<&'a Arg> {
    if key.contains('-') || key == "config" {
        return None;
    }
    let long = key.replace('_', "-");
    serve
        .get_arguments()
        .find(|a| a.get_long() == Some(long.as_str()) && a.get_id() != "help")
}

/// `--long=VALUE` for one scalar (one word, so that a value starting with `-` stays a value;
/// clap's parser of the flag then checks it).
fn flag(long: &str, v: &toml::Value) -> Result<[OsString; 1], String> {
    let text = match v {
        toml::Value::String(s) => s.clone(),
        toml::Value::Integer(i) => i.to_string(),
        toml::Value::Float(f) => f.to_string(),
        other => return Err(format!("takes a string or a number, not {other}")),
    };
    Ok([format!("--{long}={text}").into()])
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::*;

    fn write(file: &str) -> (tempfile::TempDir, OsString) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c960.toml");
        std::fs::write(&path, file).unwrap();
        (dir, path.into_os_string())
    }

    fn args(cli: &[&str], config: OsString) -> Vec<OsString> {
        let mut args: Vec<OsString> = vec!["c960-coordinator".into(), "serve".into()];
        args.extend(cli.iter().map(OsString::from));
        args.extend(["--config".into(), config]);
        args
    }

    /// The flags the file adds before the command line's own.
    fn expand_with(file: &str, cli: &[&str]) -> Result<Vec<String>, String> {
        let (_dir, path) = write(file);
        let args = args(cli, path);
        let before = args.len();
        let (out, _) = expand(&crate::Cli::command(), args)?;
        Ok(out[2..2 + out.len() - before]
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect())
    }

    /// The one-line refusal of a file (with a db given, so that only the file is wrong).
    fn refusal(file: &str) -> String {
        let (_dir, path) = write(file);
        match parse::<crate::Cli>(args(&["--db", "x.db"], path)) {
            Err(Refusal::File(e)) => {
                assert!(!e.contains('\n'), "{e}");
                e
            }
            Err(Refusal::Clap(e)) => panic!("not about the file: {e}"),
            Ok(_) => panic!("accepted: {file}"),
        }
    }

    #[test]
    fn keys_become_flags_and_the_command_line_wins() {
        let flags = expand_with(
            "db = \"x.db\"\nlease_secs = 60\ncheck_rate = 0.5\nopen_enrolment = true\n\
             shared_address_blocks = false\ntrusted_proxy = [\"127.0.0.1\", \"10.0.0.0/8\"]\n",
            &["--lease-secs", "90"],
        )
        .unwrap();
        let mut pairs: Vec<String> = flags;
        pairs.sort();
        let mut want = vec![
            "--check-rate=0.5",
            "--db=x.db",
            "--open-enrolment",
            "--trusted-proxy=127.0.0.1",
            "--trusted-proxy=10.0.0.0/8",
        ];
        want.sort();
        assert_eq!(pairs, want, "lease_secs is the command line's");
        // An option that excludes a key overrides it too.
        let flags = expand_with(
            "open_enrolment = true\nadmin_token_file = \"/a\"\n",
            &[
                "--enrol-secret-file",
                "/s",
                "--admin-token",
                "0123456789abcdef",
            ],
        )
        .unwrap();
        assert!(flags.is_empty(), "{flags:?}");
    }

    #[test]
    fn every_serve_flag_has_a_key() {
        let cli = crate::Cli::command();
        let serve = cli.find_subcommand("serve").unwrap();
        for arg in serve.get_arguments() {
            let Some(long) = arg.get_long() else { continue };
            if ["help", "config"].contains(&long) {
                continue;
            }
            assert!(
                serve_arg(serve, &long.replace('-', "_")).is_some(),
                "--{long}"
            );
        }
    }

    #[test]
    fn bad_files_are_one_line_naming_the_key() {
        assert!(refusal("lease_sec = 60").contains("unknown key `lease_sec`"));
        assert!(refusal("lease-secs = 60").contains("unknown key `lease-secs`"));
        let e = refusal("lease_secs = \"soon\"");
        assert!(
            e.contains("c960.toml: lease_secs: invalid value 'soon'"),
            "{e}"
        );
        assert!(refusal("lease_secs = [1, 2]").contains("lease_secs: takes one value"));
        assert!(refusal("lease_secs = -5").contains("lease_secs: invalid value '-5'"));
        assert!(refusal("open_enrolment = 1").contains("open_enrolment: is a switch"));
        assert!(refusal("log_format = \"xml\"").contains("log_format: invalid value 'xml'"));
        let e = refusal("trusted_proxy = [\"127.0.0.1\", \"nowhere\"]");
        assert!(e.contains("trusted_proxy: invalid value 'nowhere'"), "{e}");
        assert!(refusal("admin_token = \"x\"").contains("admin_token_file"));
        assert!(refusal("config = \"other.toml\"").contains("unknown key `config`"));
        assert!(refusal("lease_secs = 60\nlease_secs = 61").contains("c960.toml:2:"));
        // A bad value on the command line is clap's error as ever.
        let (_dir, path) = write("lease_secs = 60");
        assert!(matches!(
            parse::<crate::Cli>(args(&["--db", "x.db", "--max-strikes", "many"], path)),
            Err(Refusal::Clap(_))
        ));
    }

    const EXAMPLE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../deploy/c960.toml");

    #[test]
    fn the_shipped_example_parses_and_its_commented_keys_are_real() {
        let parsed = parse::<crate::Cli>(vec![
            "c960-coordinator".into(),
            "serve".into(),
            "--config".into(),
            EXAMPLE.into(),
        ]);
        let Ok(crate::Cli {
            command:
                crate::Command::Serve(crate::cli_serve::ServeArgs {
                    listen,
                    db,
                    trusted_proxy,
                    log_format,
                    lease_secs,
                    ..
                }),
        }) = parsed
        else {
            panic!("deploy/c960.toml does not parse");
        };
        assert_eq!(listen, "127.0.0.1:8960");
        assert_eq!(db, std::path::PathBuf::from("/var/lib/c960/c960.db"));
        assert_eq!(trusted_proxy[0].to_string(), "127.0.0.1/32");
        assert_eq!((log_format.as_str(), lease_secs), ("json", 3600));
        // Every commented `# key = value` line, uncommented, is a key serve takes with a value
        // it accepts (`enrolment` aside: it conflicts with the enrolment secret).
        let text = std::fs::read_to_string(EXAMPLE).unwrap();
        let all: String = text
            .lines()
            .filter_map(|l| l.strip_prefix("# "))
            .filter(|l| l.split_once(" = ").is_some_and(|(k, _)| !k.contains(' ')))
            .filter(|l| !l.starts_with("enrolment "))
            .map(|l| format!("{l}\n"))
            .collect();
        assert!(all.lines().count() > 25, "{all}");
        let (_dir, path) = write(&format!("{text}\n{all}"));
        match parse::<crate::Cli>(args(&[], path)) {
            Ok(_) => {}
            Err(Refusal::File(e)) => panic!("{e}"),
            Err(Refusal::Clap(e)) => panic!("{e}"),
        }
    }
}
