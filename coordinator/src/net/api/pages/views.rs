//! The HTML of the pages (maud: compile-time templates; every interpolated string is escaped).
//! Views take prepared data and decide nothing; elements that the live script refreshes carry
//! `data-live="KEY"` (text) or `data-bar="KEY"` (a progress bar's value), with the keys of
//! [`super::LiveBody`].

use maud::{DOCTYPE, Markup, PreEscaped, html};

use super::format::{ago, duration, grouped, per_second, utc};
use super::{CampaignCard, CheckView, OwnView, TablePage};
use crate::model::CampaignKind;
use crate::model::standings::{WorkerHistory, WorkerStanding};

/// The frame of every page; `live`: its counters are refreshed by the script. Every page passes
/// through here, and so through [`crate::integrity::label::inert`]: a name stored before labels were
/// checked (a bidirectional override, a control character) shows as its code point instead of
/// reordering or hiding the text around it.
pub fn layout(title: &str, current: &str, live: bool, body: Markup) -> Markup {
    let page = frame(title, current, live, body).into_string();
    PreEscaped(crate::integrity::label::inert(&page).into_owned())
}

fn frame(title: &str, current: &str, live: bool, body: Markup) -> Markup {
    let nav = [
        ("/", "Campaigns"),
        ("/workers", "Workers"),
        ("/positions", "Positions"),
        ("/metrics", "Metrics"),
    ];
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) " · c960" }
                link rel="stylesheet" href=(super::STYLE_PATH);
                script src=(super::SCRIPT_PATH) defer {}
            }
            body data-poll=[live.then_some("5000")] {
                header.top {
                    a.brand href="/" { span.logo { "♞" } " c960" }
                    nav {
                        @for (href, label) in nav {
                            a href=(href) class=[(current == href).then_some("current")] { (label) }
                        }
                    }
                    span.live-note id="live-note" { @if live { "reload to refresh" } }
                }
                main { (body) }
                footer {
                    "c960 coordinator · Chess960 perft and opening analysis by volunteer compute · "
                    "values enter a table only when a quorum of distinct workers agree"
                }
            }
        }
    }
}

fn state_badge(state: &str) -> Markup {
    let class = match state {
        "valid" | "complete" | "active" => "ok",
        "failed" | "quarantined" | "banned" | "invalid" | "differs" | "stalled" => "bad",
        "partial" | "running" | "pending" | "waiting" | "paused" => "warn",
        _ => "muted",
    };
    html! { span class={ "badge " (class) } { (state) } }
}

/// A progress bar: a `<progress>` element, whose value is an attribute, because the pages'
/// Content-Security-Policy allows no inline style (`layers::security_headers`).
fn bar(key: &str, pct: f64) -> Markup {
    let pct = format!("{pct:.1}");
    html! {
        progress.bar data-bar=(key) max="100" value=(pct) title={ (pct) " %" } { (pct) " %" }
    }
}

fn stat(label: &str, key: &str, value: &str) -> Markup {
    html! {
        div.stat {
            div.label { (label) }
            div.value data-live=(key) { (value) }
        }
    }
}

/// A tile two columns wide, for a total that may run to 20 digits (26 characters grouped).
fn wide_stat(label: &str, key: &str, value: &str) -> Markup {
    html! {
        div.stat.wide {
            div.label { (label) }
            div.value data-live=(key) { (value) }
        }
    }
}

fn checks(c: &CheckView) -> Markup {
    html! {
        @if let Some((agree, compared, ref mismatches)) = c.reference {
            div.check {
                @if compared == 0 {
                    (state_badge("pending"))
                } @else if mismatches.is_empty() {
                    (state_badge("valid"))
                } @else {
                    (state_badge("differs"))
                }
                " Reference table: " strong data-check="reference" { (agree) " / " (compared) }
                " complete start positions agree"
                @for (sp, ours, want) in mismatches.iter().take(5) {
                    div.mismatch { "sp " (sp) ": " (ours) " here, " (want) " in the reference" }
                }
            }
        }
        @if let Some(ref o) = c.oeis {
            div.check {
                @match &o.verdict {
                    Some(true) => (state_badge("valid")),
                    Some(false) => (state_badge("differs")),
                    None => (state_badge("pending")),
                }
                " OEIS A157851 a(" (o.depth) ") = " strong { (o.want) }
                @match &o.got {
                    Some(got) => { "; the sum here: " strong data-check="oeis" { (got) } }
                    None => { "; compared once all 960 start positions are valid" }
                }
            }
        }
    }
}

/// One campaign's summary (the dashboard card and the campaign page's head).
pub fn campaign_card(c: &CampaignCard, link: bool) -> Markup {
    let k = |f: &str| format!("c{}.{f}", c.id);
    html! {
        section.card {
            div.card-head {
                h2 {
                    @if link { a href={ "/campaigns/" (c.id) } { "Campaign " (c.id) } }
                    @else { "Campaign " (c.id) }
                    @if let Some(name) = &c.name { " · " span.name data-name=(c.id) { (name) } }
                }
                span.kind { (c.kind_label) }
                span data-state=(c.id) { (state_badge(c.state)) }
            }
            p.params {
                "priority " strong data-priority=(c.id) { (c.priority) }
                @if let Some((games, nodes)) = c.self_play {
                    " · " strong { (games) } " games a start · " strong { (grouped(u128::from(nodes))) } " nodes a move"
                } @else {
                    " · depth " strong { (c.depth) }
                }
                @if c.split_ply > 0 { " · split at ply " strong { (c.split_ply) } }
                " · quorum " strong { (c.quorum) }
                " · start positions " strong.mono { (c.positions) }
            }
            @if let Some(why) = &c.stalled {
                p.stall data-stall=(c.id) { strong { "Stalled: " } (why) }
            }
            div.progress {
                (bar(&k("bar"), c.percent))
                span.pct data-live=(k("percent")) { (format!("{:.1}", c.percent)) " %" }
            }
            div.stats {
                (stat("valid", &k("valid"), &format!("{} / {}", grouped(c.valid.into()), grouped(c.total.into()))))
                (stat("in flight", &k("in_flight"), &grouped(c.in_flight.into())))
                (stat("failed", &k("failed"), &grouped(c.failed.into())))
                (stat("queued replicas", &k("queued"), &grouped(c.queued.into())))
                (wide_stat(c.nodes_label, &k("nodes"), &grouped(c.nodes_valid)))
                (stat("throughput", &k("rate"), &per_second(c.nodes_per_s, "nodes")))
                (stat("ETA", &k("eta"), &duration(c.eta_s)))
            }
            @if let Some(ref ch) = c.checks { div.checks { (checks(ch)) } }
        }
    }
}

fn own_rates(o: &OwnView) -> Markup {
    html! {
        section.card {
            h2 { "This coordinator" }
            div.stats {
                (stat("requests", "own.requests", &per_second(o.rates.requests_per_s, "req")))
                (stat("results accepted", "own.results", &per_second(o.rates.results_per_s, "results")))
                (stat("leases in flight", "own.in_flight", &grouped(o.in_flight.into())))
                (stat("workers seen (1 h)", "own.active", &grouped(o.active_last_hour.into())))
                (stat("workers registered", "own.registered", &grouped(o.registered.into())))
                (stat("BOINC hosts · valid results", "own.boinc", &super::boinc_hosts(o.boinc)))
            }
            p.note {
                "Rates over the last "
                span data-live="own.window" { (duration(o.rates.window_s)) }
                " (sampled every few seconds in memory)."
            }
        }
    }
}

fn worker_name(w: &WorkerStanding) -> Markup {
    html! { a href={ "/workers/" (w.id) } { (w.name) } span.id { " #" (w.id) } }
}

fn worker_state(w: &WorkerStanding) -> Markup {
    if w.banned {
        state_badge("banned")
    } else if w.quarantined {
        state_badge("quarantined")
    } else {
        state_badge("active")
    }
}

/// `/`: every campaign, this coordinator, the connected workers.
pub fn dashboard(
    cards: &[CampaignCard],
    own: &OwnView,
    connected: &[WorkerStanding],
    now_ms: i64,
) -> Markup {
    layout(
        "Dashboard",
        "/",
        true,
        html! {
            (own_rates(own))
            h1 { "Campaigns" }
            @if cards.is_empty() {
                p.empty { "No campaign yet. An operator adds one with " code { "c960-coordinator campaign add" } "." }
            }
            @for c in cards { (campaign_card(c, true)) }
            section.card {
                h2 { "Connected workers" span.sub { " seen in the last 5 minutes" } }
                @if connected.is_empty() {
                    p.empty { "None right now." }
                } @else {
                    table {
                        thead { tr { th { "worker" } th { "engine" } th.num { "valid results" } th.num { "credit (nodes)" } th { "last seen" } th { "state" } } }
                        tbody {
                            @for w in connected {
                                tr {
                                    td { (worker_name(w)) }
                                    td.mono.small { (w.engine) }
                                    td.num { (grouped(w.valid_results.into())) }
                                    td.num { (grouped(w.valid_nodes)) }
                                    td { (ago(now_ms, w.last_seen_ms)) }
                                    td { (worker_state(w)) }
                                    td.mono.small data-build { (w.build_label()) }
                                }
                            }
                        }
                    }
                }
                p.note { a href="/workers" { "The whole leaderboard →" } }
            }
        },
    )
}

fn pager(base: &str, page: u64, pages: u64) -> Markup {
    html! {
        @if pages > 1 {
            nav.pager {
                @if page > 0 { a href={ (base) "?page=" (page - 1) } { "← previous" } }
                span { "page " (page + 1) " of " (pages) }
                @if page + 1 < pages { a href={ (base) "?page=" (page + 1) } { "next →" } }
            }
        }
    }
}

/// `/campaigns/{id}`.
pub fn campaign_page(
    c: &CampaignCard,
    table: &TablePage,
    tally: Option<&crate::model::CampaignTally>,
) -> Markup {
    let base = format!("/campaigns/{}", c.id);
    let export = format!("/api/v1/campaigns/{}", c.id);
    layout(
        &match &c.name {
            Some(name) => format!("Campaign {} · {name}", c.id),
            None => format!("Campaign {}", c.id),
        },
        "/",
        true,
        html! {
            p.crumbs { a href="/" { "Campaigns" } " / campaign " (c.id) }
            (campaign_card(c, false))
            section.card {
                h2 { "Table" }
                p.exports {
                    "Download: "
                    a href={ (export) "/table?format=csv" } { "CSV" } " · "
                    a href={ (export) "/table?format=json" } { "JSON" }
                    @if c.kind == CampaignKind::SelfPlay {
                        " · " a href={ (export) "/table?format=pgn" } { "games (PGN)" }
                    }
                    @if c.kind == CampaignKind::Analysis {
                        " · " a href={ (export) "/balance" } { "balance report (JSON)" }
                        " · " a href={ (export) "/balance?format=svg" } { "balance chart (SVG)" }
                    }
                }
                p.note { "The table as it was when this page loaded; the counters above stay live." }
                @if let Some(t) = tally {
                    p.tally {
                        "Valid values by the workers that agree on each: "
                        @for (i, (n, values)) in t.values_by_agreeing.iter().enumerate() {
                            @if i > 0 { " · " }
                            (grouped(u128::from(*values))) " on " (n) " workers"
                        }
                        @if t.values_by_agreeing.is_empty() { "none valid yet" }
                        ". The coordinator counted "
                        (format!("{:.2}", 100.0 * t.coordinator_node_share))
                        " % of its valid nodes itself."
                    }
                }
                (pager(&base, table.page, table.pages))
                @match table {
                    TablePage { perft: Some(rows), .. } => {
                        table.data {
                            thead { tr {
                                th.num { "sp" } th { "FEN" } th { "status" } th.num { "returned" } th.num { "nodes" } th.num { "agreeing workers" }
                                @if table.reference { th { "reference" } }
                            } }
                            tbody {
                                @for r in rows {
                                    tr data-sp=(r.sp) {
                                        td.num { (r.sp) }
                                        td.mono.small { (r.fen) }
                                        td { (state_badge(r.status.as_str())) }
                                        td.num data-returned { (r.returned.0) " / " (r.returned.1) }
                                        td.num data-nodes { (r.nodes.map(|n| grouped(n.into())).unwrap_or_default()) }
                                        td.num { (r.agreeing) }
                                        @if table.reference {
                                            td { @match r.reference_ok { Some(true) => "✓ agrees", Some(false) => "✗ differs", None => "" } }
                                        }
                                    }
                                }
                            }
                        }
                    }
                    TablePage { split: Some(rows), .. } => {
                        table.data {
                            thead { tr { th.num { "sp" } th { "status" } th.num { "workunits" } th.num { "done" } th.num { "nodes (so far)" } th { "ply-1 divide" } } }
                            tbody {
                                @for r in rows {
                                    tr data-sp=(r.sp) {
                                        td.num { (r.sp) }
                                        td { (state_badge(r.status.as_str())) }
                                        td.num { (grouped(r.workunits.into())) }
                                        td.num { (format!("{:.1}", r.share_done * 100.0)) " %" }
                                        td.num data-nodes { (grouped(r.nodes.unwrap_or(r.nodes_so_far))) }
                                        td {
                                            details {
                                                summary { (r.divide.len()) " moves" }
                                                table.divide { @for (m, n) in &r.divide { tr { td.mono { (m) } td.num { (n) } } } }
                                            }
                                        }
                                    }
                                }
                            }
                        }
                    }
                    TablePage { analysis: Some(rows), agreement, .. } => {
                        @if c.valid > 0 {
                            figure.chart {
                                img src={ (export) "/balance?format=svg" } alt="Sorted evaluations of the scored start positions, 518 marked";
                                figcaption { "Opening balance: every scored start position's evaluation, sorted (518 = classical chess)." }
                            }
                        }
                        @if let Some(a) = agreement {
                            table.data.agreement {
                                caption { "Agreement with the published table " (a.table) " over the " (a.n) " starts both score (95 % bootstrap intervals, " (a.resamples) " resamples)" }
                                thead { tr { th { "coefficient" } th.num { "value [95 %]" } } }
                                tbody {
                                    tr data-stat="pearson" { td { "Pearson r" } td.num { (a.pearson) } }
                                    tr data-stat="spearman" { td { "Spearman ρ" } td.num { (a.spearman) } }
                                }
                            }
                        }
                        table.data {
                            thead { tr { th.num { "sp" } th { "FEN" } th { "status" } th.num { "score (cp)" } th { "best move" } th.num { "agreeing workers" } th { "engine" } } }
                            tbody {
                                @for r in rows {
                                    tr data-sp=(r.sp) {
                                        td.num { (r.sp) }
                                        td.mono.small { (r.fen) }
                                        td { (state_badge(r.status.as_str())) }
                                        td.num { (r.score) }
                                        td.mono { (r.best_move) }
                                        td.num { (r.agreeing) }
                                        td.small { (r.engine) }
                                    }
                                }
                            }
                        }
                    }
                    TablePage { self_play: Some(rows), .. } => {
                        table.data {
                            thead { tr { th.num { "sp" } th { "FEN" } th { "status" } th.num { "White / draws / Black" } th.num { "White's score [95 %]" } th.num { "White advantage, Elo [95 %]" } th.num { "agreeing workers" } } }
                            tbody {
                                @for r in rows {
                                    tr data-sp=(r.sp) {
                                        td.num { (r.sp) }
                                        td.mono.small { (r.fen) }
                                        td { (state_badge(r.status.as_str())) }
                                        td.num { (r.wdl) }
                                        td.num { (r.score) }
                                        td.num { (r.elo) }
                                        td.num { (r.agreeing) }
                                    }
                                }
                            }
                        }
                    }
                    _ => { p.empty { "No rows." } }
                }
                (pager(&base, table.page, table.pages))
            }
        },
    )
}

/// `/workers`: the leaderboard.
pub fn leaderboard(
    rows: &[WorkerStanding],
    first_rank: u64,
    window_s: f64,
    now_ms: i64,
    page: u64,
    pages: u64,
) -> Markup {
    layout(
        "Workers",
        "/workers",
        false,
        html! {
            h1 { "Workers" }
            p.note {
                "Credit counts only work that passed the quorum: results that agreed with the canonical result of their workunit, "
                "and their nodes. A result voided by quarantine stops counting. Throughput: nodes returned in the last "
                (duration(Some(window_s))) "."
            }
            section.card {
                @if rows.is_empty() { p.empty { "No worker has registered yet." } } @else {
                    table.data {
                        thead { tr {
                            th.num { "#" } th { "worker" } th.num { "credit (nodes)" } th.num { "valid results" }
                            th.num { "throughput" } th { "last seen" } th.num { "strikes" } th { "state" } th { "build" }
                        } }
                        tbody {
                            @for (i, w) in rows.iter().enumerate() {
                                tr data-worker=(w.id) {
                                    td.num { (first_rank + i as u64) }
                                    td { (worker_name(w)) }
                                    td.num data-credit { (grouped(w.valid_nodes)) }
                                    td.num data-valid { (grouped(w.valid_results.into())) }
                                    td.num { (per_second(Some(w.recent_nodes as f64 / window_s).filter(|r| *r > 0.0), "nodes")) }
                                    td { (ago(now_ms, w.last_seen_ms)) }
                                    td.num title="lost votes + refused results" { (w.lost_votes + w.refused) }
                                    td { (worker_state(w)) }
                                    td.mono.small data-build { (w.build_label()) }
                                }
                            }
                        }
                    }
                }
                (pager("/workers", page, pages))
            }
        },
    )
}

/// `/workers/{id}`: one worker's standing and latest results.
pub fn worker_page(h: &WorkerHistory, window_s: f64, now_ms: i64) -> Markup {
    let w = &h.standing;
    layout(
        &format!("Worker {}", w.id),
        "/workers",
        false,
        html! {
            p.crumbs { a href="/workers" { "Workers" } " / worker " (w.id) }
            section.card {
                div.card-head { h2 { (w.name) span.id { " #" (w.id) } } (worker_state(w)) }
                p.params { "engine " span.mono { (w.engine) } " · build " span.mono data-build { (w.build_label()) } " · registered " (utc(w.created_ms)) " UTC · last seen " (ago(now_ms, w.last_seen_ms)) }
                div.stats {
                    (stat("credit (nodes)", "w.credit", &grouped(w.valid_nodes)))
                    (stat("valid results", "w.valid", &grouped(w.valid_results.into())))
                    (stat("throughput", "w.rate", &per_second(Some(w.recent_nodes as f64 / window_s).filter(|r| *r > 0.0), "nodes")))
                    (stat("lost votes", "w.lost", &grouped(w.lost_votes.into())))
                    (stat("refused results", "w.refused", &grouped(w.refused.into())))
                }
            }
            section.card {
                h2 { "Latest results" }
                @if h.results.is_empty() { p.empty { "No result yet." } } @else {
                    table.data {
                        thead { tr { th.num { "result" } th.num { "campaign" } th.num { "workunit" } th.num { "sp" } th { "replica" } th { "outcome" } th.num { "nodes" } th.num { "time" } th { "returned" } } }
                        tbody {
                            @for r in &h.results {
                                tr {
                                    td.num { (r.id) }
                                    td.num { a href={ "/campaigns/" (r.campaign_id) } { (r.campaign_id) } }
                                    td.num { (r.workunit_id) }
                                    td.num { (r.sp.map(|s| s.to_string()).unwrap_or_default()) }
                                    td { (r.state.name().replace('_', " ")) }
                                    td { (state_badge(r.outcome.as_str())) }
                                    td.num { (r.nodes.map(|n| grouped(n.into())).unwrap_or_default()) }
                                    td.num { (r.elapsed_ms.map(|ms| format!("{:.2} s", ms as f64 / 1000.0)).unwrap_or_default()) }
                                    td { (r.returned_ms.map(|t| ago(now_ms, t)).unwrap_or_default()) }
                                }
                            }
                        }
                    }
                }
            }
        },
    )
}

/// A page for a missing campaign or worker, or a store failure (no internal detail).
pub fn message(title: &str, text: &str) -> Markup {
    layout(
        title,
        "",
        false,
        html! { h1 { (title) } p { (text) } p { a href="/" { "Back to the campaigns" } } },
    )
}
