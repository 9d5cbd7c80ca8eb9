//! The tidy check of the error types (see `tidy.rs`): an error whose message says its inner
//! error (`#[error("illegal position: {0}")]`) does not also make it the error's source
//! (`#[from]`, `#[source]`, or a field named `source`). The command lines print errors with their
//! chain of sources (`error: {:#}`), which would then say the inner error twice, and its own
//! causes again: `illegal position: White must have exactly one king: White must have exactly
//! one king`.

use super::tidy::{code_of, crate_files, read, root};

/// [`code_of`] with `->` blanked: it is no closing bracket to the variant parser.
fn code_without_comments(source: &str) -> String {
    code_of(source).replace("->", "  ")
}

/// One `#[error("…")]` variant: its message and the body after it up to the variant's end.
struct Variant {
    message: String,
    body: String,
}

/// The `#[error("…")]` variants of some code (a `transparent` one has no message of its own).
fn error_variants(code: &str) -> Vec<Variant> {
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find("#[error(\"") {
        rest = &rest[at + "#[error(\"".len()..];
        let Some(end) = rest.find("\")]") else { break };
        let message = rest[..end].to_string();
        rest = &rest[end + 3..];
        // The variant ends at the first comma outside brackets after its name.
        let mut depth = 0i32;
        let mut stop = rest.len();
        for (i, c) in rest.char_indices() {
            match c {
                '(' | '{' | '[' | '<' => depth += 1,
                ')' | '}' | ']' | '>' => depth -= 1,
                ',' if depth == 0 => {
                    stop = i;
                    break;
                }
                _ => {}
            }
            if depth < 0 {
                stop = i;
                break;
            }
        }
        out.push(Variant {
            message,
            body: rest[..stop].to_string(),
        });
    }
    out
}

/// The fields of a variant's body, in order: tuple fields by index, struct fields by name, each
/// with whether it is the error's source.
fn fields(body: &str) -> Vec<(String, bool)> {
    let (open, close, named) = match (body.find('('), body.find('{')) {
        (Some(p), Some(b)) if b < p => ('{', '}', true),
        (Some(_), _) => ('(', ')', false),
        (None, Some(_)) => ('{', '}', true),
        (None, None) => return Vec::new(),
    };
    let inner = &body[body.find(open).unwrap() + 1..body.rfind(close).unwrap_or(body.len())];
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0i32, 0);
    for (i, c) in inner.char_indices() {
        match c {
            '(' | '{' | '[' | '<' => depth += 1,
            ')' | '}' | ']' | '>' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&inner[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&inner[start..]);
    parts
        .into_iter()
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .enumerate()
        .map(|(i, part)| {
            let marked = part.contains("#[from]") || part.contains("#[source]");
            if named {
                let decl = part.rsplit(']').next().unwrap().trim();
                let name = decl.split(':').next().unwrap().trim();
                let name = name.trim_start_matches("pub ").to_string();
                let is_source = marked || name == "source";
                (name, is_source)
            } else {
                (i.to_string(), marked)
            }
        })
        .collect()
}

/// The message's interpolations that name the variant's source field.
fn repeated_sources(v: &Variant) -> Vec<String> {
    fields(&v.body)
        .into_iter()
        .filter(|(name, is_source)| {
            *is_source
                && (v.message.contains(&format!("{{{name}}}"))
                    || v.message.contains(&format!("{{{name}:")))
        })
        .map(|(name, _)| name)
        .collect()
}

#[test]
fn no_error_message_repeats_its_source() {
    let mut found = Vec::new();
    let mut variants = 0;
    for krate in ["common", "compute", "cli", "coordinator", "worker"] {
        for f in crate_files(krate) {
            let code = code_without_comments(&read(&root().join(krate).join(&f)));
            for v in error_variants(&code) {
                variants += 1;
                for name in repeated_sources(&v) {
                    found.push(format!("{krate}/{f}: \"{}\" ({name})", v.message));
                }
            }
        }
    }
    assert!(
        variants > 40,
        "the error variants were not found: {variants}"
    );
    assert!(
        found.is_empty(),
        "messages that say their source, which a chain printer says again: {found:?}"
    );
}

#[test]
fn the_check_finds_a_repeated_source_and_only_that() {
    let code = code_without_comments(
        r#"
        pub enum E {
            /// A doc comment, and a message with a URL in it.
            #[error("see http://example.org/{0}")]
            Link(String),
            #[error("callback failed: {0}")]
            Callback(Box<dyn Fn() -> u32>, #[source] Inner), // the 1st field is said
            #[error("illegal position: {0}")]
            Position(#[from] PositionError),
            #[error("cannot read {path}: {source}")]
            Read { path: String, source: std::io::Error },
            #[error("database ({backend}): {cause}")]
            Backend { backend: &'static str, #[source] cause: Box<dyn Error> },
            #[error("kept: {0}")]
            Kept(String),
            #[error("database ({backend})")]
            Quiet { backend: &'static str, #[source] cause: Box<dyn Error> },
            #[error("{0} of {1:?}")]
            Pair(String, #[from] Inner),
        }
    "#,
    );
    let repeated: Vec<_> = error_variants(&code)
        .iter()
        .map(|v| (v.message.clone(), repeated_sources(v)))
        .filter(|(_, r)| !r.is_empty())
        .collect();
    assert_eq!(
        repeated,
        vec![
            ("illegal position: {0}".to_string(), vec!["0".to_string()]),
            (
                "cannot read {path}: {source}".to_string(),
                vec!["source".to_string()]
            ),
            (
                "database ({backend}): {cause}".to_string(),
                vec!["cause".to_string()]
            ),
            ("{0} of {1:?}".to_string(), vec!["1".to_string()]),
        ]
    );
}
