//! A command's output on stdout when its reader may go away first (`… | head`): the write's
//! error is returned, not a panic, and `main` ends quietly on it.

/// Whether an error is stdout gone away (the reader of a pipe exited): whoever read the output
/// has all they wanted, so the command ends with success and says nothing.
pub fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// `println!` that returns the write's `std::io::Result` instead of panicking when stdout is
/// a closed pipe; use it as `outln!(…)?` and let `main` test [`is_broken_pipe`].
#[macro_export]
macro_rules! outln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        writeln!(std::io::stdout(), $($arg)*)
    }};
}
