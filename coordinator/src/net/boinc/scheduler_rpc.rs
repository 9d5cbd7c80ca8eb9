//! BOINC's scheduler RPC: the client's `<scheduler_request>` read into a
//! [`SchedulerRequest`], the decisions on it that need no database (how many tasks to send,
//! estimates, credit in BOINC's units), and the `<scheduler_reply>` written from a [`Reply`].
//!
//! Field names and meanings follow BOINC 7.20's client (docs/boinc-design.md §2). The reply is
//! always HTTP 200: the client treats any other status as a failed RPC and backs off, so
//! refusals travel as `<message>`s with a `<request_delay>`.

use super::names::TaskName;
use super::xml::{self, Element, XmlError};
use c960_common::wire::WorkUnitKind;

/// The platform c960's app is built for.
pub const PLATFORM: &str = "x86_64-pc-linux-gnu";
/// The BOINC app name.
pub const APP_NAME: &str = "c960";
/// The project's name as BOINC shows it.
pub const PROJECT_NAME: &str = "c960";
/// Result state "files uploaded" (BOINC's `RESULT_FILES_UPLOADED`): the task succeeded when
/// its exit status is 0 too.
pub const STATE_FILES_UPLOADED: i32 = 5;
/// BOINC's delay for a request without a valid account key (`DELAY_MISSING_KEY`).
pub const DELAY_BAD_KEY_SECS: u32 = 3600;
/// FLOPs BOINC is told one perft node costs: BOINC's benchmark default is 1 GFLOPS, and one
/// core counts about [`crate::work::sizing::NODES_PER_CORE_SECOND`] nodes a second, so a node is
/// half a FLOP. Only the client's runtime estimates and the credit depend on it.
pub const FPOPS_PER_NODE: f64 = 1e9 / crate::work::sizing::NODES_PER_CORE_SECOND;
/// Credit per FLOP: BOINC's cobblestone, 200 credits a day at 1 GFLOPS.
pub const CREDIT_PER_FPOP: f64 = 200.0 / 86_400e9;

/// One finished task the client reports.
#[derive(Clone, Debug, PartialEq)]
pub struct ReportedResult {
    /// The result's name (ours: [`TaskName::result`]).
    pub name: String,
    /// BOINC's result state (5: files uploaded).
    pub state: i32,
    /// The app's exit status, or the client's error number (e.g. -186 for a download error).
    pub exit_status: i32,
    /// CPU seconds.
    pub cpu_time: f64,
    /// The start of what the app or the client wrote to stderr (at most 2 KiB).
    pub stderr: String,
}

impl ReportedResult {
    /// Whether the task ended well (its output was uploaded).
    pub fn succeeded(&self) -> bool {
        self.state == STATE_FILES_UPLOADED && self.exit_status == 0
    }
}

/// The parts of a scheduler request c960 uses.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SchedulerRequest {
    /// The account key (c960: an enrolment token, or the enrolment secret).
    pub authenticator: String,
    /// The host id we gave it (0: none yet).
    pub hostid: u64,
    /// The client installation's stable id.
    pub host_cpid: String,
    /// The host's name.
    pub domain_name: String,
    /// The client's version, `7.20.5`.
    pub client_version: String,
    /// The platforms it runs (the primary one first).
    pub platforms: Vec<String>,
    /// Its CPUs.
    pub ncpus: u32,
    /// Seconds of CPU work it asks for.
    pub work_req_seconds: f64,
    /// The user asked for no new work.
    pub dont_send_work: bool,
    /// Tasks it reports as finished.
    pub reported: Vec<ReportedResult>,
    /// Tasks it still holds.
    pub other_results: Vec<String>,
    /// It holds a code-signing key already (it sends it back): the reply must not send one
    /// again, which the client would take for an unsigned key change.
    pub has_code_sign_key: bool,
}

/// The most bytes of stderr kept from one reported result.
const STDERR_KEPT: usize = 2048;

/// The most CPUs a host is counted for ([`SchedulerRequest::ncpus`]).
pub const MAX_NCPUS: u32 = 1024;

/// The most held tasks (`<other_result>`s) read from one request: the most a host can have been
/// sent ([`SchedulerRequest::tasks_wanted`]: two per CPU). Their leases are renewed in one
/// transaction; a client naming more is lying, and the rest are neither renewed nor aborted.
pub const MAX_HELD: usize = 2 * MAX_NCPUS as usize;

/// The most finished tasks (`<result>`s) read from one request, as many as a native worker's
/// batch ([`c960_common::wire::LEGACY_MAX_BATCH`]): each failure is a transaction of its own. Those
/// past it are not acknowledged, so the client reports them again at its next request (as
/// it does after any failed request).
pub const MAX_REPORTED: usize = c960_common::wire::LEGACY_MAX_BATCH as usize;

impl SchedulerRequest {
    /// Reads a request body.
    pub fn parse(body: &[u8]) -> Result<SchedulerRequest, XmlError> {
        let r = xml::parse(body, "scheduler_request")?;
        let host = r.child("host_info").cloned().unwrap_or_default();
        let mut platforms = vec![r.text_of("platform_name").to_string()];
        platforms.extend(
            r.children_named("alt_platform")
                .map(|p| p.text_of("name").to_string()),
        );
        platforms.retain(|p| !p.is_empty());
        let number =
            |e: &Element, n: &str| e.number::<f64>(n).filter(|x| x.is_finite()).unwrap_or(0.0);
        Ok(SchedulerRequest {
            authenticator: r.text_of("authenticator").to_string(),
            hostid: r.number("hostid").unwrap_or(0),
            host_cpid: host.text_of("host_cpid").to_string(),
            domain_name: host.text_of("domain_name").to_string(),
            client_version: format!(
                "{}.{}.{}",
                r.number::<u32>("core_client_major_version").unwrap_or(0),
                r.number::<u32>("core_client_minor_version").unwrap_or(0),
                r.number::<u32>("core_client_release").unwrap_or(0)
            ),
            platforms,
            ncpus: host
                .number::<u32>("p_ncpus")
                .unwrap_or(1)
                .clamp(1, MAX_NCPUS),
            work_req_seconds: number(&r, "work_req_seconds").max(number(&r, "cpu_req_secs")),
            dont_send_work: r.has("dont_send_work") && !matches!(r.text_of("dont_send_work"), "0"),
            reported: r
                .children_named("result")
                .map(|x| ReportedResult {
                    name: x.text_of("name").to_string(),
                    state: x.number("state").unwrap_or(0),
                    exit_status: x.number("exit_status").unwrap_or(0),
                    cpu_time: number(x, "final_cpu_time"),
                    stderr: x.text_of("stderr_out").chars().take(STDERR_KEPT).collect(),
                })
                .take(MAX_REPORTED)
                .collect(),
            has_code_sign_key: !r.text_of("code_sign_key").is_empty(),
            other_results: r
                .child("other_results")
                .map(|o| {
                    o.children_named("other_result")
                        .map(|x| x.text_of("name").to_string())
                        .take(MAX_HELD)
                        .collect()
                })
                .unwrap_or_default(),
        })
    }

    /// Whether the host runs our platform.
    pub fn runs_our_platform(&self) -> bool {
        self.platforms.iter().any(|p| p == PLATFORM)
    }

    /// How many tasks to send: none when it asks for none, else up to two per CPU in
    /// progress at once (`in_progress` held now). A workunit's length is known only roughly,
    /// so the host's queue is filled by count, not by its seconds: two per CPU keeps every CPU
    /// busy while a result travels, and holds little when a task is long.
    pub fn tasks_wanted(&self, in_progress: usize) -> u32 {
        if self.dont_send_work || self.work_req_seconds <= 0.0 {
            return 0;
        }
        (2 * self.ncpus as usize).saturating_sub(in_progress) as u32
    }
}

/// Nodes a workunit is expected to visit, for BOINC's runtime estimate (`rsc_fpops_est`).
pub fn estimated_nodes(kind: &WorkUnitKind) -> f64 {
    match kind {
        WorkUnitKind::Perft { depth, .. } => crate::work::sizing::mean_perft(*depth),
        // An alpha-beta search to depth d visits about 6^d nodes with a table.
        WorkUnitKind::Analysis { depth, .. } => 6f64.powi(*depth as i32),
        WorkUnitKind::SelfPlay {
            games,
            nodes,
            max_plies,
            ..
        } => f64::from(*games) * *nodes as f64 * f64::from(*max_plies) / 2.0,
    }
}

/// BOINC credit for `nodes` valid nodes.
pub fn credit(nodes: u128) -> f64 {
    nodes as f64 * FPOPS_PER_NODE * CREDIT_PER_FPOP
}

/// A message's priority: a notice shows in the Manager's Notices tab, low goes to the event log.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Priority {
    /// The event log.
    Low,
    /// A notice.
    Notice,
}

/// The app version every reply that sends work names: our worker binary, signed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AppFile {
    /// Its BOINC file name (unique per content).
    pub name: String,
    /// Its download URL.
    pub url: String,
    /// Its size.
    pub nbytes: u64,
    /// Its MD5, hex.
    pub md5: String,
    /// The code-signing signature of its MD5, in BOINC's text form.
    pub signature: String,
    /// The app version number (derived from the content, so a new binary is a new version).
    pub version_num: u32,
}

/// One task to send: a lease, its files and limits.
#[derive(Clone, Debug, PartialEq)]
pub struct Task {
    /// The lease's names.
    pub name: TaskName,
    /// The input file's URL, size and MD5.
    pub input: (String, u64, String),
    /// The upload URL.
    pub upload_url: String,
    /// The output's size cap.
    pub max_nbytes: u64,
    /// The output's upload signature.
    pub upload_signature: String,
    /// Estimated FLOPs.
    pub fpops_est: f64,
    /// Memory the task may use, bytes.
    pub memory_bound: f64,
    /// When BOINC should have it back (Unix seconds).
    pub report_deadline_secs: i64,
}

/// BOINC's credit figures.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CreditFigures {
    /// The account's total.
    pub user_total: f64,
    /// The host's total.
    pub host_total: f64,
    /// When the account began (Unix seconds).
    pub user_create_time: i64,
    /// When the host was registered (Unix seconds).
    pub host_create_time: i64,
}

/// A scheduler reply.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Reply {
    /// The host id, on the reply that created the host only (BOINC regenerates a host's CPID
    /// when a later reply names one).
    pub hostid: Option<u64>,
    /// The user name shown.
    pub user_name: String,
    /// Seconds before the next request.
    pub request_delay: Option<u32>,
    /// Seconds after which the client must contact us even without work to ask for: c960's
    /// heartbeat for the leases the host holds.
    pub next_rpc_delay: Option<u32>,
    /// Messages for the volunteer.
    pub messages: Vec<(Priority, String)>,
    /// Credit figures.
    pub credit: Option<CreditFigures>,
    /// The public code-signing key, BOINC's text form.
    pub code_sign_key: Option<String>,
    /// The app version, whenever `tasks` is not empty.
    pub app: Option<AppFile>,
    /// Tasks to send.
    pub tasks: Vec<Task>,
    /// Reported results acknowledged (every one read, accepted or not).
    pub acks: Vec<String>,
    /// Results the client should abort (their leases are over).
    pub aborts: Vec<String>,
}

impl Reply {
    /// A reply that only says something: a refusal, with a delay before the next request.
    pub fn message(priority: Priority, text: impl Into<String>, delay_secs: u32) -> Reply {
        Reply {
            messages: vec![(priority, text.into())],
            request_delay: Some(delay_secs),
            ..Reply::default()
        }
    }

    /// The reply's XML.
    pub fn to_xml(&self) -> String {
        use std::fmt::Write;
        let mut x = String::with_capacity(2048 + 1536 * self.tasks.len());
        let e = xml::escape;
        let _ = writeln!(x, "<scheduler_reply>");
        let _ = writeln!(x, "<scheduler_version>720</scheduler_version>");
        let _ = writeln!(x, "<project_name>{PROJECT_NAME}</project_name>");
        if !self.user_name.is_empty() {
            let _ = writeln!(x, "<user_name>{}</user_name>", e(&self.user_name));
        }
        if let Some(id) = self.hostid {
            let _ = writeln!(x, "<hostid>{id}</hostid>");
        }
        if let Some(d) = self.request_delay {
            let _ = writeln!(x, "<request_delay>{d}</request_delay>");
        }
        if let Some(d) = self.next_rpc_delay {
            let _ = writeln!(x, "<next_rpc_delay>{d}</next_rpc_delay>");
        }
        for (p, text) in &self.messages {
            let p = match p {
                Priority::Low => "low",
                Priority::Notice => "notice",
            };
            let _ = writeln!(x, "<message priority=\"{p}\">{}</message>", e(text));
        }
        if let Some(c) = &self.credit {
            let _ = writeln!(
                x,
                "<user_total_credit>{}</user_total_credit>\n<user_expavg_credit>0</user_expavg_credit>\n<user_create_time>{}</user_create_time>\n<host_total_credit>{}</host_total_credit>\n<host_expavg_credit>0</host_expavg_credit>\n<host_create_time>{}</host_create_time>",
                c.user_total, c.user_create_time, c.host_total, c.host_create_time
            );
        }
        if let Some(k) = &self.code_sign_key {
            let _ = writeln!(x, "<code_sign_key>\n{}\n</code_sign_key>", k.trim_end());
        }
        if let (Some(app), false) = (&self.app, self.tasks.is_empty()) {
            let _ = writeln!(
                x,
                "<app>\n    <name>{APP_NAME}</name>\n    <user_friendly_name>Chess960 perft and analysis</user_friendly_name>\n</app>"
            );
            let _ = writeln!(
                x,
                "<file_info>\n    <name>{}</name>\n    <url>{}</url>\n    <executable/>\n    <nbytes>{}</nbytes>\n    <md5_cksum>{}</md5_cksum>\n    <file_signature>\n{}\n</file_signature>\n</file_info>",
                e(&app.name),
                e(&app.url),
                app.nbytes,
                app.md5,
                app.signature.trim_end()
            );
            let _ = writeln!(
                x,
                "<app_version>\n    <app_name>{APP_NAME}</app_name>\n    <version_num>{}</version_num>\n    <platform>{PLATFORM}</platform>\n    <avg_ncpus>1</avg_ncpus>\n    <api_version>7.20.0</api_version>\n    <file_ref>\n        <file_name>{}</file_name>\n        <open_name>c960-worker</open_name>\n        <main_program/>\n    </file_ref>\n</app_version>",
                app.version_num,
                e(&app.name)
            );
            for t in &self.tasks {
                write_task(&mut x, t, app.version_num);
            }
        }
        for a in &self.acks {
            let _ = writeln!(x, "<result_ack>\n    <name>{}</name>\n</result_ack>", e(a));
        }
        for a in &self.aborts {
            let _ = writeln!(
                x,
                "<result_abort>\n    <name>{}</name>\n</result_abort>",
                e(a)
            );
        }
        let _ = writeln!(x, "</scheduler_reply>");
        x
    }
}

fn write_task(x: &mut String, t: &Task, version_num: u32) {
    use std::fmt::Write;
    let e = xml::escape;
    let (url, nbytes, md5) = &t.input;
    // The bound is generous: BOINC aborts a task past bound / flops seconds, and the host's
    // benchmark (or its default) says little about perft speed.
    let bound = (t.fpops_est * 1000.0).max(1e16);
    let _ = writeln!(
        x,
        "<file_info>\n    <name>{}</name>\n    <url>{}</url>\n    <nbytes>{nbytes}</nbytes>\n    <md5_cksum>{md5}</md5_cksum>\n</file_info>",
        t.name.input_file(),
        e(url)
    );
    let _ = writeln!(
        x,
        "<file_info>\n    <name>{}</name>\n    <url>{}</url>\n    <max_nbytes>{}</max_nbytes>\n    <xml_signature>{}</xml_signature>\n</file_info>",
        t.name.output_file(),
        e(&t.upload_url),
        t.max_nbytes,
        t.upload_signature
    );
    let _ = writeln!(
        x,
        "<workunit>\n    <name>{}</name>\n    <app_name>{APP_NAME}</app_name>\n    <command_line>boinc-app</command_line>\n    <rsc_fpops_est>{:.0}</rsc_fpops_est>\n    <rsc_fpops_bound>{bound:.0}</rsc_fpops_bound>\n    <rsc_memory_bound>{:.0}</rsc_memory_bound>\n    <rsc_disk_bound>100000000</rsc_disk_bound>\n    <file_ref>\n        <file_name>{}</file_name>\n        <open_name>wu.json</open_name>\n    </file_ref>\n</workunit>",
        t.name.workunit(),
        t.fpops_est.max(1.0),
        t.memory_bound,
        t.name.input_file()
    );
    let _ = writeln!(
        x,
        "<result>\n    <name>{}</name>\n    <wu_name>{}</wu_name>\n    <report_deadline>{}</report_deadline>\n    <platform>{PLATFORM}</platform>\n    <version_num>{version_num}</version_num>\n    <report_immediately/>\n    <file_ref>\n        <file_name>{}</file_name>\n        <open_name>result.json</open_name>\n    </file_ref>\n</result>",
        t.name.result(),
        t.name.workunit(),
        t.report_deadline_secs,
        t.name.output_file()
    );
}

/// The master page: what the client reads its scheduler URL from (`<scheduler>` anywhere in a
/// line, or the `<link rel="boinc_scheduler">` tag at the start of one), and what a person who
/// opens the project URL in a browser reads.
pub fn master_page(scheduler_url: &str) -> String {
    let u = xml::escape(scheduler_url);
    format!(
        "<!DOCTYPE html>\n<html>\n<head>\n<title>c960 — BOINC project</title>\n<link rel=\"boinc_scheduler\" href=\"{u}\">\n</head>\n<body>\n<!-- <scheduler>{u}</scheduler> -->\n<h1>c960</h1>\n<p>Chess960 perft and analysis by volunteer computing. To join with the BOINC client, attach to this URL with the account key (enrolment token) the operator gave you:</p>\n<pre>boinccmd --project_attach URL KEY</pre>\n</body>\n</html>\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const REQUEST: &str = r#"<scheduler_request>
    <authenticator>3.secretsecret</authenticator>
    <hostid>0</hostid>
    <rpc_seqno>1</rpc_seqno>
    <core_client_major_version>7</core_client_major_version>
    <core_client_minor_version>20</core_client_minor_version>
    <core_client_release>5</core_client_release>
    <platform_name>x86_64-pc-linux-gnu</platform_name>
    <alt_platform>
        <name>i686-pc-linux-gnu</name>
    </alt_platform>
    <work_req_seconds>8640.000000</work_req_seconds>
    <cpu_req_secs>8640.000000</cpu_req_secs>
    <cpu_req_instances>2.000000</cpu_req_instances>
    <host_info>
        <domain_name>lab-7</domain_name>
        <host_cpid>0123abcd</host_cpid>
        <p_ncpus>2</p_ncpus>
    </host_info>
    <result>
        <name>c960_wu3_l9_0</name>
        <final_cpu_time>1.5</final_cpu_time>
        <exit_status>0</exit_status>
        <state>5</state>
        <stderr_out><![CDATA[<core_client_version>7.20.5</core_client_version>]]></stderr_out>
    </result>
    <other_results>
        <other_result><name>c960_wu4_l10_0</name></other_result>
    </other_results>
</scheduler_request>
"#;

    #[test]
    fn reads_what_the_client_sends() {
        let r = SchedulerRequest::parse(REQUEST.as_bytes()).unwrap();
        assert_eq!(r.authenticator, "3.secretsecret");
        assert_eq!(r.hostid, 0);
        assert_eq!(r.client_version, "7.20.5");
        assert!(r.runs_our_platform());
        assert_eq!(
            (r.ncpus, r.domain_name.as_str(), r.host_cpid.as_str()),
            (2, "lab-7", "0123abcd")
        );
        assert_eq!(r.reported.len(), 1);
        assert!(r.reported[0].succeeded());
        assert_eq!(r.other_results, ["c960_wu4_l10_0"]);
        assert_eq!(r.tasks_wanted(0), 4, "two per CPU");
        assert_eq!(r.tasks_wanted(3), 1, "two per CPU in progress at most");
        assert_eq!(r.tasks_wanted(4), 0);
    }

    #[test]
    fn reads_at_most_what_a_host_can_hold_and_a_batch_of_reports() {
        let results: String = (0..MAX_REPORTED + 5)
            .map(|i| format!("<result><name>c960_wu1_l{i}_0</name><state>3</state></result>"))
            .collect();
        let held: String = (0..MAX_HELD + 5)
            .map(|i| format!("<other_result><name>c960_wu2_l{i}_0</name></other_result>"))
            .collect();
        let body = format!(
            "<scheduler_request><p_ncpus>99999</p_ncpus>{results}<other_results>{held}</other_results></scheduler_request>"
        );
        let r = SchedulerRequest::parse(body.as_bytes()).unwrap();
        assert_eq!(r.reported.len(), MAX_REPORTED);
        assert_eq!(
            r.reported[0].name, "c960_wu1_l0_0",
            "the first ones, in order"
        );
        assert_eq!(r.other_results.len(), MAX_HELD);
        // What the scheduler could have sent the most CPUs counted fits in what is read.
        assert!(2 * MAX_NCPUS as usize <= MAX_HELD);
    }

    #[test]
    fn asks_for_nothing_when_told_so() {
        let r = SchedulerRequest::parse(
            REQUEST
                .replace("<work_req_seconds>8640.000000", "<work_req_seconds>0")
                .replace("<cpu_req_secs>8640.000000", "<cpu_req_secs>0")
                .as_bytes(),
        )
        .unwrap();
        assert_eq!(r.tasks_wanted(0), 0);
        let r = SchedulerRequest::parse(
            REQUEST
                .replace("<hostid>0</hostid>", "<hostid>0</hostid><dont_send_work/>")
                .as_bytes(),
        )
        .unwrap();
        assert_eq!(r.tasks_wanted(0), 0);
    }

    #[test]
    fn a_reply_with_work_names_everything_its_results_need() {
        let name = TaskName {
            workunit_id: 3,
            lease_id: 9,
        };
        let reply = Reply {
            hostid: Some(12),
            user_name: "ann".into(),
            code_sign_key: Some("1024\nabcd\n.".into()),
            app: Some(AppFile {
                name: "c960-worker_ab12".into(),
                url: "http://127.0.0.1:1/boinc/download/c960-worker_ab12".into(),
                nbytes: 10,
                md5: "00".repeat(16),
                signature: "ff\n.".into(),
                version_num: 7,
            }),
            tasks: vec![Task {
                name,
                input: ("http://h/in".into(), 5, "11".repeat(16)),
                upload_url: "http://h/boinc/file_upload_handler".into(),
                max_nbytes: 65536,
                upload_signature: "beef".into(),
                fpops_est: 1e9,
                memory_bound: 1e9,
                report_deadline_secs: 100,
            }],
            acks: vec!["c960_wu1_l2_0".into()],
            ..Reply::default()
        };
        let x = reply.to_xml();
        let tree = xml::parse(x.as_bytes(), "scheduler_reply").unwrap();
        assert_eq!(tree.text_of("hostid"), "12");
        let result = tree.child("result").unwrap();
        assert_eq!(
            result.text_of("wu_name"),
            tree.child("workunit").unwrap().text_of("name")
        );
        assert_eq!(
            result.text_of("version_num"),
            tree.child("app_version").unwrap().text_of("version_num")
        );
        let files: Vec<_> = tree
            .children_named("file_info")
            .map(|f| f.text_of("name").to_string())
            .collect();
        assert_eq!(
            files,
            ["c960-worker_ab12", "c960_wu3_l9_in", "c960_wu3_l9_0_out"]
        );
        assert_eq!(
            tree.child("result_ack").unwrap().text_of("name"),
            "c960_wu1_l2_0"
        );
        assert!(tree.child("file_info").unwrap().has("executable"));
        // Without tasks, no app version is sent.
        let bare = Reply {
            app: reply.app.clone(),
            ..Reply::default()
        }
        .to_xml();
        assert!(!bare.contains("<app_version>"));
    }

    #[test]
    fn the_master_page_names_the_scheduler_both_ways_at_line_start() {
        let p = master_page("http://127.0.0.1:9/boinc/cgi");
        assert!(p.lines().any(|l| {
            l.starts_with("<link rel=\"boinc_scheduler\" href=\"http://127.0.0.1:9/boinc/cgi\">")
        }));
        assert!(p.contains("<scheduler>http://127.0.0.1:9/boinc/cgi</scheduler>"));
        assert!(
            p.lines().all(|l| l.len() < 256),
            "the client reads 256-byte lines"
        );
    }

    #[test]
    fn credit_is_cobblestones() {
        // 86,400 GFLOP (a day at 1 GFLOPS) is 200 credits.
        let nodes = (86_400e9 / FPOPS_PER_NODE) as u128;
        assert!((credit(nodes) - 200.0).abs() < 1e-6);
    }
}
