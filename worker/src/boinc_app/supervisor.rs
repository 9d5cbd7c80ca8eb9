//! `boinc-app` as the client starts it: a supervisor that runs the computation as a child
//! process and honours the client's process control (docs/boinc-design.md §5, [`super::shm`]).
//!
//! About ten times a second it looks for the child's exit and for a request on the
//! process-control channel: suspend stops the child (`SIGSTOP`: every thread, at once),
//! resume continues it, quit and abort kill it and exit without [`FINISH_FILE`] (the client
//! restarts a quit task from the beginning and drops an aborted one). Once a second it sends
//! the child's CPU time and the fraction done its progress lines gave, and checks that the
//! client (`<client_pid>` of `init_data.xml`) still runs, ending the task when it is gone as
//! the BOINC library does. Without the channel file (an app version below API 6, a slot laid
//! out by hand) it only waits for the child. The child dies with the supervisor
//! (`PR_SET_PDEATHSIG`), so a supervisor the client kills leaves no computation behind.
//!
//! [`FINISH_FILE`]: super::FINISH_FILE

use std::io::{self, BufRead as _, BufReader};
use std::os::unix::process::ExitStatusExt as _;
use std::path::Path;
use std::process::{Child, Command, ExitCode, ExitStatus, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail};

use super::shm::{AppStatus, Channels, ControlRequest};
use super::{INIT_DATA, finish, init_data_client_pid, parse_progress_line};

/// How often the supervisor looks for the child's exit and a control request (the BOINC
/// library's timer period).
const POLL: Duration = Duration::from_millis(100);
/// How often it sends its status and checks the client.
const STATUS_PERIOD: Duration = Duration::from_secs(1);
/// How long the last status waits for the client to take the one before it (the client reads
/// the channel once a second), before replacing it.
const LAST_STATUS_WAIT: Duration = Duration::from_secs(2);
/// The exit status of an app that the client aborted (`EXIT_ABORTED_BY_CLIENT`).
const EXIT_ABORTED: u8 = 194;

/// How the supervisor ends a task it did not see through.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ending {
    /// The client asked to quit: it restarts the task later.
    Quit,
    /// The client aborted the task.
    Abort,
    /// The client's process is gone.
    ClientGone,
}

impl Ending {
    /// The ending a control request calls for: `None` for suspend and resume, which do not end
    /// the task.
    fn of(request: ControlRequest) -> Option<Ending> {
        match request {
            ControlRequest::Quit => Some(Ending::Quit),
            ControlRequest::Abort => Some(Ending::Abort),
            ControlRequest::Suspend | ControlRequest::Resume => None,
        }
    }

    /// The exit status: 0 but for an abort, as the BOINC library exits (the client ignores it
    /// when it asked for the exit).
    fn exit_status(self) -> u8 {
        match self {
            Ending::Abort => EXIT_ABORTED,
            Ending::Quit | Ending::ClientGone => 0,
        }
    }

    /// The stderr line kept in the slot's `stderr.txt` (sent to the project with the result
    /// of a later run).
    fn line(self) -> &'static str {
        match self {
            Ending::Quit => {
                "the BOINC client asked to quit: the workunit restarts from the beginning"
            }
            Ending::Abort => "the BOINC client aborted the task",
            Ending::ClientGone => "the BOINC client is gone: stopping",
        }
    }
}

/// Runs the workunit of the slot `slot` in a child process under the client's control; see the
/// module documentation.
pub fn run(slot: &Path) -> Result<ExitCode> {
    let channels = Channels::open(slot);
    let client_pid = std::fs::read_to_string(slot.join(INIT_DATA))
        .ok()
        .and_then(|xml| init_data_client_pid(&xml));
    let mut child = spawn_compute(slot)?;
    let pid = child.id();
    // The fraction done, as f64 bits, from the child's progress lines.
    let fraction = Arc::new(AtomicU64::new(0f64.to_bits()));
    if let Some(stdout) = child.stdout.take() {
        let fraction = Arc::clone(&fraction);
        thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Some(f) = parse_progress_line(&line) {
                    fraction.store(f.to_bits(), Ordering::Relaxed);
                }
            }
        });
    }
    let fraction_done = || f64::from_bits(fraction.load(Ordering::Relaxed));
    let mut cpu_seconds = 0.0;
    let mut last_status: Option<Instant> = None;
    let exit = loop {
        if let Some(exit) = child
            .try_wait()
            .context("cannot wait for the computation")?
        {
            break exit;
        }
        let request = channels
            .as_ref()
            .and_then(|c| c.take_request().ok().flatten());
        match request {
            Some(ControlRequest::Suspend) => signal(pid, libc::SIGSTOP),
            Some(ControlRequest::Resume) => signal(pid, libc::SIGCONT),
            _ => {}
        }
        if let Some(ending) = request.and_then(Ending::of) {
            return Ok(end(&mut child, ending));
        }
        // A client gone is noticed at the next poll (a signal-0 `kill`, cheap), so a short task
        // does not finish, and write its output, for nobody.
        if client_pid.is_some_and(|p| !process_exists(p)) {
            return Ok(end(&mut child, Ending::ClientGone));
        }
        if last_status.is_none_or(|t| t.elapsed() >= STATUS_PERIOD) {
            last_status = Some(Instant::now());
            cpu_seconds = process_cpu_seconds(pid).unwrap_or(cpu_seconds);
            if let Some(channels) = &channels {
                let _ = channels.send_status(&AppStatus {
                    cpu_seconds,
                    fraction_done: fraction_done(),
                });
            }
        }
        thread::sleep(POLL);
    };
    if !exit.success() {
        return failed(exit);
    }
    if let Some(channels) = &channels {
        // The client takes the CPU time the task reports last for the result's.
        let waited = Instant::now();
        while channels.status_pending().unwrap_or(false) && waited.elapsed() < LAST_STATUS_WAIT {
            thread::sleep(POLL);
        }
        let _ = channels.send_status(&AppStatus {
            cpu_seconds: children_cpu_seconds().unwrap_or(cpu_seconds),
            fraction_done: 1.0,
        });
    }
    finish(slot)?;
    Ok(ExitCode::SUCCESS)
}

/// Starts this program again as `boinc-app --compute` in the slot: stdout a pipe for its
/// progress lines, stderr the client's `stderr.txt` as it is, and on Linux killed with its
/// supervisor.
fn spawn_compute(slot: &Path) -> Result<Child> {
    let program = std::env::current_exe().context("cannot find this program to run it")?;
    let mut command = Command::new(program);
    command
        .args(["boinc-app", "--compute"])
        .current_dir(slot)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    #[cfg(target_os = "linux")]
    // SAFETY: prctl is async-signal-safe and touches no memory of the parent.
    unsafe {
        use std::os::unix::process::CommandExt as _;
        command.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) == -1 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        });
    }
    command
        .spawn()
        .context("cannot start the computation (boinc-app --compute)")
}

/// Kills the child (stopped or not), says why on stderr and gives the exit status.
fn end(child: &mut Child, ending: Ending) -> ExitCode {
    let _ = child.kill();
    let _ = child.wait();
    eprintln!(
        "c960-worker {} boinc-app: {}",
        crate::ENGINE_VERSION,
        ending.line()
    );
    ExitCode::from(ending.exit_status())
}

/// The exit of a failed child: its own status when it exited (its stderr line said why), an
/// error line when a signal killed it.
fn failed(exit: ExitStatus) -> Result<ExitCode> {
    match (exit.code(), exit.signal()) {
        (Some(code), _) => Ok(ExitCode::from(
            u8::try_from(code).ok().filter(|&c| c != 0).unwrap_or(1),
        )),
        (None, Some(signal)) => bail!("the computation was killed by signal {signal}"),
        (None, None) => bail!("the computation ended abnormally ({exit})"),
    }
}

/// Sends `signal` to the child `pid`; a child already gone is no error (its exit is seen next).
fn signal(pid: u32, signal: libc::c_int) {
    // SAFETY: kill(2) only takes plain integers.
    let _ = unsafe { libc::kill(pid as libc::pid_t, signal) };
}

/// Whether a process `pid` exists: `kill(pid, 0)` failing with anything but "no such process"
/// (a client running as another user) counts as existing, as in the BOINC library.
fn process_exists(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return true;
    };
    // SAFETY: kill(2) only takes plain integers; signal 0 sends nothing.
    let r = unsafe { libc::kill(pid, 0) };
    r == 0 || io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

/// The CPU seconds of the running process `pid`, every thread together, from
/// `/proc/PID/stat`; `None` where there is no such file.
fn process_cpu_seconds(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // SAFETY: sysconf only takes an integer.
    let ticks_per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    (ticks_per_second > 0).then_some(())?;
    Some(stat_cpu_ticks(&stat)? as f64 / ticks_per_second as f64)
}

/// User plus system CPU ticks of a `/proc/PID/stat` line (fields 14 and 15, counted after the
/// command name, which may hold spaces and parentheses).
fn stat_cpu_ticks(stat: &str) -> Option<u64> {
    let (_, after_name) = stat.rsplit_once(')')?;
    let mut fields = after_name.split_whitespace().skip(11);
    let user: u64 = fields.next()?.parse().ok()?;
    let system: u64 = fields.next()?.parse().ok()?;
    Some(user + system)
}

/// The CPU seconds of the finished children this process waited for (one: the computation).
fn children_cpu_seconds() -> Option<f64> {
    // SAFETY: getrusage writes only into the struct it is given.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        (libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) == 0).then_some(usage)?
    };
    let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    Some(seconds(usage.ru_utime) + seconds(usage.ru_stime))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quit_and_abort_end_the_task_suspend_and_resume_do_not() {
        assert_eq!(Ending::of(ControlRequest::Quit), Some(Ending::Quit));
        assert_eq!(Ending::of(ControlRequest::Abort), Some(Ending::Abort));
        assert_eq!(Ending::of(ControlRequest::Suspend), None);
        assert_eq!(Ending::of(ControlRequest::Resume), None);
        assert_eq!(Ending::Quit.exit_status(), 0);
        assert_eq!(Ending::ClientGone.exit_status(), 0);
        assert_eq!(Ending::Abort.exit_status(), 194);
    }

    #[test]
    fn cpu_ticks_are_user_plus_system() {
        let stat = "4242 (c960 (x) y) R 1 4242 4242 0 -1 4194304 812 0 0 0 1234 56 0 0 30 10 \
                    3 0 999 1000 200 18446744073709551615";
        assert_eq!(stat_cpu_ticks(stat), Some(1290));
        assert_eq!(stat_cpu_ticks("4242 (x) R 1 2"), None);
        assert_eq!(stat_cpu_ticks("garbage"), None);
        // This process has a stat of its own, and has used some CPU by now.
        assert!(process_cpu_seconds(std::process::id()).is_some_and(|s| s >= 0.0));
        assert!(process_exists(std::process::id()));
    }
}
