//! The stock BOINC client (Debian's `boinc-client`: `/usr/bin/boinc`, `/usr/bin/boinccmd`) as a
//! test harness for issue 33 (docs/boinc-design.md §6): a client of its own in a directory of
//! its own, its GUI RPC on a free 127.0.0.1 port, driven with `boinccmd`, quit (or killed) when
//! dropped.
//!
//! Blocking: each call runs `boinccmd` and waits for it (well under a second); from an async
//! test, call it on a multi-threaded runtime or through `spawn_blocking`.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};

/// The client program.
pub const BOINC: &str = "/usr/bin/boinc";
/// Its command-line remote control.
pub const BOINCCMD: &str = "/usr/bin/boinccmd";
/// The GUI RPC password every harness client has (`gui_rpc_auth.cfg`).
const PASSWORD: &str = "c960-test";
/// How long a started client has to answer `boinccmd` (it answers in well under a second).
const ANSWER_WITHIN: Duration = Duration::from_secs(30);
/// How long a quit client has to exit before it is killed.
const QUIT_WITHIN: Duration = Duration::from_secs(10);

/// The proxy variables the client and its libcurl read: a test talks to 127.0.0.1 directly.
const PROXY_VARIABLES: [&str; 8] = [
    "http_proxy",
    "HTTP_PROXY",
    "https_proxy",
    "HTTPS_PROXY",
    "all_proxy",
    "ALL_PROXY",
    "no_proxy",
    "NO_PROXY",
];

/// `cc_config.xml`: no benchmarks (no scheduler RPC happens before they ran), regular priority
/// (apps run under SCHED_IDLE otherwise and barely run on a busy machine), no GPUs, no fetches
/// of BOINC's own lists, finished tasks reported at once; the log flags a test reads.
const CC_CONFIG: &str = "<cc_config>
<options>
<skip_cpu_benchmarks>1</skip_cpu_benchmarks>
<no_priority_change>1</no_priority_change>
<no_info_fetch>1</no_info_fetch>
<no_gpus>1</no_gpus>
<report_results_immediately>1</report_results_immediately>
</options>
<log_flags>
<sched_op_debug/>
<file_xfer_debug/>
<task_debug/>
<async_file_debug/>
</log_flags>
</cc_config>
";

/// `global_prefs_override.xml`: compute whatever else the machine does (by default the client
/// suspends above 25 % of other CPU load, which a test machine always has), on every core, with
/// most of the memory, and keep small queues.
const GLOBAL_PREFS_OVERRIDE: &str = "<global_preferences>
<run_if_user_active>1</run_if_user_active>
<run_gpu_if_user_active>0</run_gpu_if_user_active>
<suspend_cpu_usage>0</suspend_cpu_usage>
<cpu_usage_limit>100</cpu_usage_limit>
<max_ncpus_pct>100</max_ncpus_pct>
<run_on_batteries>1</run_on_batteries>
<suspend_if_no_recent_input>0</suspend_if_no_recent_input>
<ram_max_used_busy_pct>90</ram_max_used_busy_pct>
<ram_max_used_idle_pct>90</ram_max_used_idle_pct>
<work_buf_min_days>0.01</work_buf_min_days>
<work_buf_additional_days>0.01</work_buf_additional_days>
<disk_min_free_gb>0.1</disk_min_free_gb>
<leave_apps_in_memory>0</leave_apps_in_memory>
</global_preferences>
";

/// A running BOINC client of a test.
pub struct BoincClient {
    dir: PathBuf,
    port: u16,
    child: Child,
}

impl BoincClient {
    /// Whether the client and `boinccmd` are installed (`apt-get install boinc-client`).
    pub fn installed() -> bool {
        Path::new(BOINC).is_file() && Path::new(BOINCCMD).is_file()
    }

    /// Starts a client in `dir` (created if missing; its data directory) with the test
    /// settings and waits until it answers. The flags: `--skip_cpu_benchmarks --no_gpus
    /// --no_info_fetch --no_priority_change` and the GUI RPC port.
    pub fn start(dir: &Path) -> Result<BoincClient> {
        Self::start_with(dir, &[])
    }

    /// [`start`](Self::start) with more command-line flags, e.g. `--sched_retry_delay_min 1`
    /// or `--unsigned_apps_ok` (a negative control only).
    pub fn start_with(dir: &Path, extra: &[&str]) -> Result<BoincClient> {
        fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        let dir = dir
            .canonicalize()
            .with_context(|| format!("cannot resolve {}", dir.display()))?;
        for (name, text) in [
            ("gui_rpc_auth.cfg", format!("{PASSWORD}\n")),
            ("cc_config.xml", CC_CONFIG.to_string()),
            (
                "global_prefs_override.xml",
                GLOBAL_PREFS_OVERRIDE.to_string(),
            ),
        ] {
            fs::write(dir.join(name), text)
                .with_context(|| format!("cannot write {name} in {}", dir.display()))?;
        }
        // A port just free can be taken before the client binds it: then try another.
        let mut last = anyhow!("not started");
        for _ in 0..3 {
            let port = free_port()?;
            let log = fs::File::create(dir.join("client.log"))?;
            let mut cmd = Command::new(BOINC);
            cmd.arg("--dir")
                .arg(&dir)
                .args(["--gui_rpc_port", &port.to_string()])
                .args([
                    "--skip_cpu_benchmarks",
                    "--no_gpus",
                    "--no_info_fetch",
                    "--no_priority_change",
                ])
                .args(extra)
                .current_dir(&dir)
                .stdin(Stdio::null())
                .stdout(log.try_clone()?)
                .stderr(log);
            for var in PROXY_VARIABLES {
                cmd.env_remove(var);
            }
            let child = cmd
                .spawn()
                .with_context(|| format!("cannot start {BOINC}"))?;
            let mut client = BoincClient {
                dir: dir.clone(),
                port,
                child,
            };
            match client.wait_until_answering() {
                Ok(()) => return Ok(client),
                // Dropping it quits or kills it.
                Err(e) => last = e,
            }
        }
        Err(last)
    }

    /// Polls `boinccmd --get_host_info` until it answers; an error with the client's log if the
    /// client exits or does not answer in time.
    fn wait_until_answering(&mut self) -> Result<()> {
        let until = Instant::now() + ANSWER_WITHIN;
        loop {
            if let Ok(out) = self.run(&["--get_host_info"])
                && out.status.success()
            {
                return Ok(());
            }
            let exited = matches!(self.child.try_wait(), Ok(Some(_)));
            if exited || Instant::now() >= until {
                bail!(
                    "the BOINC client in {} {} on GUI RPC port {}; its log:\n{}",
                    self.dir.display(),
                    if exited { "exited" } else { "did not answer" },
                    self.port,
                    self.log()
                );
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The client's data directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Its GUI RPC port on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// What the client printed so far (its event log, with the debug flags of `cc_config.xml`).
    pub fn log(&self) -> String {
        fs::read_to_string(self.dir.join("client.log")).unwrap_or_default()
    }

    /// Runs `boinccmd --host 127.0.0.1:PORT --passwd PW ARGS…` (the order boinccmd needs).
    fn run(&self, args: &[&str]) -> std::io::Result<Output> {
        let mut cmd = Command::new(BOINCCMD);
        cmd.args(["--host", &format!("127.0.0.1:{}", self.port)])
            .args(["--passwd", PASSWORD])
            .args(args)
            .current_dir(&self.dir)
            .stdin(Stdio::null());
        for var in PROXY_VARIABLES {
            cmd.env_remove(var);
        }
        cmd.output()
    }

    /// `boinccmd ARGS…`: its output, or an error with what it said when it failed.
    pub fn boinccmd(&self, args: &[&str]) -> Result<String> {
        let out = self
            .run(args)
            .with_context(|| format!("cannot run {BOINCCMD}"))?;
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        // boinccmd reports some failures on stdout or stderr with status 0 ("Operation failed").
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        if !out.status.success() || stderr.contains("Operation failed") {
            bail!(
                "boinccmd {} failed ({}): {}{}",
                args.join(" "),
                out.status,
                stderr.trim(),
                stdout.trim()
            );
        }
        Ok(stdout)
    }

    /// `boinccmd ARGS…`, which must succeed.
    fn expect(&self, args: &[&str]) -> String {
        self.boinccmd(args)
            .unwrap_or_else(|e| panic!("{e:#}\nthe client's log:\n{}", self.log()))
    }

    /// Attaches to the project at `url` with the account key `key` (for c960, an enrolment
    /// token). Returns at once: the client fetches the master page and calls the scheduler
    /// afterwards.
    pub fn attach(&self, url: &str, key: &str) {
        self.expect(&["--project_attach", url, key]);
    }

    /// Asks for a scheduler RPC to `url` now (and clears the client's backoffs for it).
    pub fn update(&self, url: &str) {
        self.expect(&["--project", url, "update"]);
    }

    /// `--get_project_status`: name, master URL, credit, "jobs succeeded", RPC failures….
    pub fn project_status(&self) -> String {
        self.expect(&["--get_project_status"])
    }

    /// `--get_tasks`: each task's name, workunit, state, exit status, fraction done.
    pub fn tasks(&self) -> String {
        self.expect(&["--get_tasks"])
    }

    /// `--get_messages 0`: the whole event log.
    pub fn messages(&self) -> String {
        self.expect(&["--get_messages", "0"])
    }
}

impl Drop for BoincClient {
    /// Asks the client to quit (it tells its apps to exit), then kills it if it is still there
    /// after [`QUIT_WITHIN`].
    fn drop(&mut self) {
        let _ = self.run(&["--quit"]);
        let until = Instant::now() + QUIT_WITHIN;
        while Instant::now() < until {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A 127.0.0.1 port free just now.
fn free_port() -> Result<u16> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").context("no free port")?;
    Ok(listener.local_addr()?.port())
}
