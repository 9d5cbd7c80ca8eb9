//! The HTML of the position explorer: `/positions` (the index) and `/positions/{family}/{n}`
//! (one start). Views take the prepared [`crate::explorer::detail`] shapes and decide nothing;
//! the pictures are [`super::board`]'s. The copy buttons work through the pages' one script
//! file (the CSP runs no inline script); without it the FENs are read-only fields to select.

use c960_common::{Color, Position};
use maud::{Markup, html};

use super::board::{board_svg, histogram_svg, piece_list, rank_glyph, scatter_svg};
use super::format::grouped;
use super::views::layout;
use crate::explorer::detail::{Index, IndexRow, PositionDetail, ScharnaglView};
use crate::explorer::query::{Column, Order};
use crate::explorer::shuffle::ShuffleRow;
use crate::explorer::{
    BalanceTable, PerftSource, PerftValue, SHUFFLE_DEPTHS, SHUFFLE_FILE, ordinal,
};

/// What the charts of a page draw, prepared by the handler.
pub struct Charts {
    /// The histogram's values and label, and the value to mark.
    pub histogram: (Vec<f64>, String, Option<f64>),
    /// The scatter's points (start, perft d9, balance of record) and the starts to mark.
    pub scatter: (Vec<super::board::Point>, Vec<u16>),
}

/// `+32.0` / `−5.3` centipawns, or a mate.
fn cp(value: f64, mate: Option<i32>) -> String {
    match mate {
        Some(m) => format!("mate in {}", m.abs()),
        None => format!("{value:+.1}"),
    }
}

/// Percent-encodes a query value (the search box's text goes into the sort links).
fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// "Chess960", "Shuffle".
fn family_name(family: &str) -> &str {
    match family {
        "chess960" => "Chess960",
        "shuffle" => "Shuffle",
        other => other,
    }
}

fn source(v: &PerftValue, sp: u32) -> Markup {
    html! {
        @match &v.source {
            PerftSource::Reference { file, row_url } => {
                span.badge.ok { "published" } " reference table, " (row_link(file, row_url, sp))
            }
            PerftSource::Published { file, row_url } => {
                span.badge.ok { "published" } " c960 table (quorum of distinct workers), "
                (row_link(file, row_url, sp))
            }
            PerftSource::Campaign { campaign, agreeing_results, audit, row_url } => {
                span.badge.warn { "campaign" } " "
                a href={ "/campaigns/" (campaign) "?page=" (sp / 100) } { "campaign " (campaign) }
                ": " (agreeing_results) " agreeing workers, audit " (audit) " · "
                a.row-link href=(row_url) data-row=(sp) title="this start's rows of the campaign's CSV export" { "its row" }
                " of the " a href={ "/api/v1/campaigns/" (campaign) "/table?format=csv" } { "export" }
                @if let Some(p) = v.published_differs {
                    " · " span.badge.bad { "differs" } " published " (grouped(p.into()))
                }
            }
        }
    }
}

/// A shipped table's row, as a link to it.
fn row_link(file: &str, row_url: &str, number: u32) -> Markup {
    html! {
        a.row-link href=(row_url) data-row=(number) title="this start's row of the shipped table" {
            span.mono { (file) } ", row " (number)
        }
    }
}

fn copy_field(id: &str, label: &str, value: &str) -> Markup {
    html! {
        div.copy-row {
            label for=(id) { (label) }
            input.fen.mono id=(id) type="text" readonly value=(value) data-select="";
            button.copy type="button" data-copy=(id) { "Copy" }
        }
    }
}

/// How a Scharnagl number encodes the pieces, digit by digit.
fn scharnagl(number: u32, s: &ScharnaglView) -> Markup {
    let sq = &s.squares;
    html! {
        h2 { "Scharnagl number" }
        p.mono.worked data-worked=(number) {
            (number) " = " (s.light_bishop) " + 4·" (s.dark_bishop) " + 16·" (s.queen) " + 96·" (s.knights)
        }
        ul.decomp {
            li { "A = " (s.light_bishop) ": the light-square bishop on the " (ordinal(u16::from(s.light_bishop) + 1)) " of b1, d1, f1, h1 → " strong { (sq.light_bishop) } }
            li { "B = " (s.dark_bishop) ": the dark-square bishop on the " (ordinal(u16::from(s.dark_bishop) + 1)) " of a1, c1, e1, g1 → " strong { (sq.dark_bishop) } }
            li { "C = " (s.queen) ": the queen on the " (ordinal(u16::from(s.queen) + 1)) " of the six squares left → " strong { (sq.queen) } }
            li { "KN = " (s.knights) ": the knights on the " (ordinal(u16::from(s.knight_pair.0) + 1)) " and " (ordinal(u16::from(s.knight_pair.1) + 1)) " of the five left → " strong { (sq.knights[0]) ", " (sq.knights[1]) } }
            li { "rook, king, rook fill the rest from the left → " strong { (sq.rook_king_rook.join(", ")) } }
        }
    }
}

/// The page of one start.
pub fn position_page(d: &PositionDetail, pos: &Position, charts: &Charts) -> Markup {
    let title = format!("Start {} · {}", d.number, d.arrangement);
    let body = html! {
        div.crumbs {
            a href="/positions" { "Positions" } " › "
            a href=(index_href(d.family, "sp", Order::Asc, "", 1)) { (d.family) } " › " (d.number)
            " · "
            @if d.number > 0 { a href={ "/positions/" (d.family) "/" (d.number - 1) } rel="prev" { "← " (d.number - 1) } " " }
            @if d.number + 1 < d.of { a href={ "/positions/" (d.family) "/" (d.number + 1) } rel="next" { (d.number + 1) " →" } }
        }
        h1 { "Start " (d.number) " " span.mono.sub { (d.arrangement) } }
        div.explorer-head {
            figure.board-fig {
                (board_svg(pos, &format!("{} start {}: {}", family_name(d.family), d.number, d.arrangement)))
                figcaption.sr-list {
                    @for (color, pieces) in piece_list(pos) {
                        div { strong { (if color == Color::White { "White" } else { "Black" }) ": " } (pieces.join(", ")) }
                    }
                }
            }
            section.card.facts {
                (copy_field("shredder-fen", "Shredder-FEN", &d.shredder_fen))
                (copy_field("x-fen", "X-FEN", &d.x_fen))
                @match &d.scharnagl {
                    Some(s) => (scharnagl(d.number, s)),
                    None => p.note { "Numbered in the family's lexicographic order of arrangements (docs/families.md)." },
                }
                p {
                    "Mirror (a↔h): "
                    a href={ "/positions/" (d.family) "/" (d.mirror.number) } data-mirror=(d.mirror.number) {
                        (d.mirror.number) " " span.mono { (d.mirror.arrangement) }
                    }
                }
                p.small {
                    "As JSON: " a href={ "/api/v1/positions/" (d.family) "/" (d.number) } { "/api/v1/positions/" (d.family) "/" (d.number) }
                }
            }
        }
        section.card {
            h2 { "Perft " span.sub { "(ranked among the " (d.of) " starts, 1st = most nodes)" } }
            div.table-wrap { table.perft {
                thead { tr { th { "depth" } th.num { "nodes" } th.num { "rank" } th { "validated by" } } }
                tbody {
                    @for r in &d.perft {
                        tr data-depth=(r.value.depth) {
                            td { "d" (r.value.depth) }
                            td.num data-nodes=(r.value.nodes) { (grouped(r.value.nodes.into())) }
                            td.num data-rank=(r.rank) { (ordinal(r.rank)) " of " (d.of) }
                            td.small { (source(&r.value, d.number)) }
                        }
                    }
                }
            } }
        }
        @if !d.balance.is_empty() { section.card {
            h2 { "Balance " span.sub { "(White's edge in centipawns; 1st = best for White)" } }
            div.table-wrap { table.balance {
                thead { tr { th { "table" } th.num { "eval" } th.num { "rank" } th { "best move" } th { "source" } } }
                tbody {
                    @for e in &d.balance {
                        tr data-table=(e.table.key()) {
                            td { (e.table.label()) }
                            td.num { (cp(e.cp, e.mate)) }
                            td.num { (ordinal(e.rank)) " of " (d.of) }
                            td.mono { (e.best_move.as_deref().unwrap_or("—")) }
                            td.small {
                                @if e.c960 { span.badge.ok { "c960" } } @else { span.badge { "published" } }
                                " " (row_link(e.file, &e.row_url, d.number))
                            }
                        }
                    }
                }
            } }
            @if d.self_play.is_empty() {
                p.note { "Not among the 16 starts of the self-play tables." }
            } @else {
                h2 { "Self-play" }
                div.table-wrap { table.selfplay {
                    thead { tr { th { "table" } th.num { "games" } th.num { "W / D / L" } th.num { "White's score [95 %]" } th.num { "agreeing" } th { "source" } } }
                    tbody {
                        @for s in &d.self_play {
                            tr {
                                td { (s.score.table.label()) }
                                td.num { (s.score.games) }
                                td.num { (s.score.wdl.0) " / " (s.score.wdl.1) " / " (s.score.wdl.2) }
                                td.num { (format!("{:.3} [{:.3}, {:.3}]", s.score.score, s.score.score_lo, s.score.score_hi)) }
                                td.num { (s.score.agreeing_results) }
                                td.small { (row_link(s.file, &s.row_url, d.number)) }
                            }
                        }
                    }
                } }
            }
        } }
        section.card {
            h2 { "Among the " (d.of) }
            div.charts {
                figure.chart { (histogram_svg(&charts.histogram.0, &charts.histogram.1, charts.histogram.2)) figcaption { "This start's bin is marked." } }
                @if !charts.scatter.0.is_empty() {
                    figure.chart { (scatter_svg(&charts.scatter.0, "perft d9", "balance (record, cp)", &charts.scatter.1)) figcaption { "Each dot a start; this one marked." } }
                }
            }
        }
    };
    layout(&title, "/positions", false, body)
}

/// The address of an index page: the family (unless Chess960's), sort, order, search and page
/// (unless the first).
fn index_href(family: &str, sort: &str, order: Order, q: &str, page: usize) -> String {
    let mut href = String::from("/positions?");
    if family != crate::explorer::detail::FAMILY {
        href.push_str(&format!("family={}&", encode(family)));
    }
    href.push_str(&format!(
        "sort={}&order={}&q={}",
        encode(sort),
        order.key(),
        encode(q)
    ));
    if page > 1 {
        href.push_str(&format!("&page={page}"));
    }
    href
}

fn sort_link<R>(index: &Index<R>, column: Column, label: &str) -> Markup {
    let key = column.key();
    let current = index.sort == key;
    let order = match (current, index.order) {
        (true, Order::Desc) => Order::Asc,
        (true, Order::Asc) => Order::Desc,
        (false, _) => column.default_order(),
    };
    let arrow = match (current, index.order) {
        (true, Order::Desc) => " ▼",
        (true, Order::Asc) => " ▲",
        _ => "",
    };
    html! {
        a href=(index_href(index.family, &key, order, &index.q, 1))
            aria-sort=[current.then_some(if index.order == Order::Asc { "ascending" } else { "descending" })] {
            (label) (arrow)
        }
    }
}

/// Links to the other pages of an index (none when it has one).
fn index_pager<R>(index: &Index<R>) -> Markup {
    let p = index.paging;
    let href = |page| index_href(index.family, &index.sort, index.order, &index.q, page);
    html! {
        @if p.pages > 1 {
            nav.pager aria-label="pages" {
                @if p.page > 1 { a href=(href(p.page - 1)) rel="prev" { "← previous" } }
                span { "page " (p.page) " of " (p.pages) }
                @for n in 1..=p.pages {
                    @if n == p.page { strong aria-current="page" { (n) } } @else { a href=(href(n)) data-page=(n) { (n) } }
                }
                @if p.page < p.pages { a href=(href(p.page + 1)) rel="next" { "next →" } }
            }
        }
    }
}

fn index_row(r: &IndexRow, sorted_depth: Option<u32>) -> Markup {
    html! {
        tr data-sp=(r.number) {
            td.num { (r.rank.map_or("—".into(), |n| n.to_string())) }
            td.num { a href={ "/positions/chess960/" (r.number) } { (r.number) } }
            td.glyph-col { (rank_glyph(&r.arrangement)) }
            td.mono { a href={ "/positions/chess960/" (r.number) } { (r.arrangement) } }
            @if sorted_depth.is_some() { td.num { (r.sorted_perft.map_or("—".into(), |n| grouped(n.into()))) } }
            td.num {
                (grouped(r.d9.nodes.into()))
                @if matches!(r.d9.source, PerftSource::Campaign { .. }) { " " span.badge.warn title="a campaign of this coordinator" { "c" } }
            }
            @for t in BalanceTable::ALL {
                td.num { (r.balance.get(t.key()).copied().flatten().map_or("—".into(), |v| cp(v, None))) }
            }
        }
    }
}

/// The index of the starts; `error`: why the search or sort was refused.
pub fn index_page(index: &Index, charts: &Charts, error: Option<&str>) -> Markup {
    let sorted_depth = match Column::parse(&index.sort) {
        Ok(Column::Perft(d)) if d != crate::explorer::MAX_DEPTH => Some(d),
        _ => None,
    };
    let body = html! {
        h1 { "The 960 starts" }
        p.note {
            "Every Chess960 start with the values c960 has for it: perft to depth 9 and the opening-balance "
            "tables, from the published tables shipped with this coordinator until a campaign here supersedes a value "
            "(marked " span.badge.warn { "c" } "). Sort by a column's heading; search by number, FEN, a pattern such as "
            span.mono { "B??????B" } " or words such as " span.mono { "bishops on a and h" } ". "
            "The 5040 starts of shuffle chess have " a href="/positions?family=shuffle" { "their own index" } "."
        }
        form.search method="get" action="/positions" role="search" {
            label for="q" { "Search" }
            input id="q" name="q" type="search" value=(index.q) placeholder="518, a FEN, B??????B, bishops on a and h";
            input type="hidden" name="sort" value=(index.sort);
            input type="hidden" name="order" value=(index.order.key());
            button type="submit" { "Search" }
            @if !index.q.is_empty() { a href={ "/positions?sort=" (index.sort) "&order=" (index.order.key()) } { "clear" } }
        }
        @if let Some(e) = error { p.error role="alert" { (e) } }
        p.count { strong data-count=(index.count) { (index.count) } " of 960 starts, sorted by " (index.sort) " " (index.order.key()) "." }
        div.charts {
            figure.chart { (histogram_svg(&charts.histogram.0, &charts.histogram.1, charts.histogram.2)) figcaption { "Histogram over the listed starts." } }
            figure.chart { (scatter_svg(&charts.scatter.0, "perft d9", "balance (record, cp)", &charts.scatter.1)) figcaption { "All 960" @if index.count < 960 { "; the " (index.count) " listed marked" } "." } }
        }
        div.table-wrap {
            table.index {
                thead {
                    tr {
                        th.num { "rank" }
                        th.num { (sort_link(index, Column::Number, "sp")) }
                        th.glyph-col { "back rank" }
                        th { "arrangement" }
                        @if let Some(d) = sorted_depth { th.num { (sort_link(index, Column::Perft(d), &format!("d{d}"))) } }
                        th.num { (sort_link(index, Column::Perft(9), "perft d9")) }
                        @for t in BalanceTable::ALL { th.num { (sort_link(index, Column::Balance(t), t.label())) } }
                    }
                }
                tbody {
                    @for r in &index.rows { (index_row(r, sorted_depth)) }
                }
            }
        }
        p.small { "As JSON: " a href={ "/api/v1/positions?sort=" (index.sort) "&order=" (index.order.key()) "&q=" (encode(&index.q)) } { "/api/v1/positions" } }
    };
    layout("Positions", "/positions", false, body)
}

/// `key`: the depth sorted by (d6 when sorted by number), the one column of counts a narrow
/// screen keeps.
fn shuffle_row(r: &ShuffleRow, key: u32) -> Markup {
    html! {
        tr data-n=(r.number) {
            td.num { (r.rank.map_or("—".into(), |n| n.to_string())) }
            td.num { a href={ "/positions/shuffle/" (r.number) } { (r.number) } }
            td.glyph-col { (rank_glyph(&r.arrangement)) }
            td.mono { a href={ "/positions/shuffle/" (r.number) } { (r.arrangement) } }
            @for (d, n) in r.perft.iter().enumerate() {
                @let depth = d as u32 + 1;
                td.num.depth-col.key[key == depth] data-depth=(depth) { (grouped((*n).into())) }
            }
        }
    }
}

/// The index of the shuffle starts, a page of them; `error`: why the query was refused.
pub fn shuffle_index_page(
    index: &Index<ShuffleRow>,
    charts: &Charts,
    error: Option<&str>,
) -> Markup {
    let key = match Column::parse(&index.sort) {
        Ok(Column::Perft(d)) => d,
        _ => SHUFFLE_DEPTHS,
    };
    let body = html! {
        div.crumbs { a href="/positions" { "Positions" } " › shuffle" }
        h1 { "The 5040 shuffle starts" }
        p.note {
            "Every start of shuffle chess — the eight pieces in any order, Black mirroring White, no castling "
            "(docs/families.md) — with its perft d1–d" (SHUFFLE_DEPTHS) " as shipped in "
            a href=(format!("/api/v1/positions/tables/{}", SHUFFLE_FILE.rsplit('/').next().unwrap_or(SHUFFLE_FILE))) { span.mono { (SHUFFLE_FILE) } }
            ". Sort by a column's heading; search by number (0–5039), FEN, a pattern such as "
            span.mono { "B??????B" } " or words such as " span.mono { "bishops on a and h" } ". "
            "The 960 Chess960 starts, with every balance table, have " a href="/positions" { "their own index" } "."
        }
        form.search method="get" action="/positions" role="search" {
            input type="hidden" name="family" value="shuffle";
            label for="q" { "Search" }
            input id="q" name="q" type="search" value=(index.q) placeholder="4000, a FEN, B??????B, bishops on a and h";
            input type="hidden" name="sort" value=(index.sort);
            input type="hidden" name="order" value=(index.order.key());
            button type="submit" { "Search" }
            @if !index.q.is_empty() { a href=(index_href(index.family, &index.sort, index.order, "", 1)) { "clear" } }
        }
        @if let Some(e) = error { p.error role="alert" { (e) } }
        p.count {
            strong data-count=(index.count) { (index.count) } " of 5040 starts, sorted by " (index.sort) " " (index.order.key())
            @if index.paging.pages > 1 { ", " (index.paging.per_page) " a page" } "."
        }
        (index_pager(index))
        div.charts {
            figure.chart { (histogram_svg(&charts.histogram.0, &charts.histogram.1, charts.histogram.2)) figcaption { "Histogram over the " (index.count) " listed starts." } }
        }
        div.table-wrap {
            table.index.shuffle {
                thead {
                    tr {
                        th.num { "rank" }
                        th.num { (sort_link(index, Column::Number, "n")) }
                        th.glyph-col { "back rank" }
                        th { "arrangement" }
                        @for d in 1..=SHUFFLE_DEPTHS { th.num.depth-col.key[key == d] { (sort_link(index, Column::Perft(d), &format!("d{d}"))) } }
                    }
                }
                tbody {
                    @for r in &index.rows { (shuffle_row(r, key)) }
                }
            }
        }
        (index_pager(index))
        p.small {
            "As JSON: " a href={ "/api/v1" (index_href(index.family, &index.sort, index.order, &index.q, index.paging.page)) } { "/api/v1/positions?family=shuffle" }
        }
    };
    layout("Shuffle starts", "/positions", false, body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_values_are_encoded() {
        assert_eq!(encode("bishops on a&h"), "bishops%20on%20a%26h");
        assert_eq!(encode("B??????B"), "B%3F%3F%3F%3F%3F%3FB");
        assert_eq!(cp(32.0, None), "+32.0");
        assert_eq!(cp(10_000.0, Some(-3)), "mate in 3");
    }

    #[test]
    fn index_addresses_name_the_family_only_when_not_chess960() {
        assert_eq!(
            index_href("chess960", "d9", Order::Desc, "", 1),
            "/positions?sort=d9&order=desc&q="
        );
        assert_eq!(
            index_href("shuffle", "d6", Order::Asc, "B??????B", 3),
            "/positions?family=shuffle&sort=d6&order=asc&q=B%3F%3F%3F%3F%3F%3FB&page=3"
        );
    }
}
