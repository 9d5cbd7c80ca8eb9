//! Pictures drawn on the server as inline SVG (no image files, no script): a position's board,
//! a start's back rank as a one-line glyph, and the explorer's charts (a histogram, a scatter).
//! Pure functions of their data. Every square and piece carries `data-square` / `data-piece`,
//! so a test reads the board back from the rendered DOM; colours come from the stylesheet's
//! classes (the CSP allows no inline style).

use c960_common::{Color, Piece, Position, Role, Square};
use maud::{Markup, html};

/// The side of one square in the board's user units.
const SQUARE: u32 = 40;
/// Room for the rank and file labels.
const MARGIN: u32 = 18;

/// The figure of a piece. The solid figures for both sides: the stylesheet fills White's white
/// with a dark outline, which reads better than the hollow figures at small sizes.
fn figure(role: Role) -> char {
    match role {
        Role::King => '♚',
        Role::Queen => '♛',
        Role::Rook => '♜',
        Role::Bishop => '♝',
        Role::Knight => '♞',
        Role::Pawn => '♟',
    }
}

/// Every piece, side by side, as a reader hears it: "White: rook a1, knight b1, …".
pub fn piece_list(pos: &Position) -> Vec<(Color, Vec<String>)> {
    [Color::White, Color::Black]
        .into_iter()
        .map(|color| {
            let pieces = (0..8u8)
                .flat_map(|rank| (0..8u8).map(move |file| Square::from_coords(file, rank)))
                .filter_map(|sq| match pos.piece_at(sq) {
                    Some(p) if p.color == color => Some(format!("{} {sq}", p.role.name())),
                    _ => None,
                })
                .collect();
            (color, pieces)
        })
        .collect()
}

fn side(color: Color) -> &'static str {
    match color {
        Color::White => "White",
        Color::Black => "Black",
    }
}

/// The board, White at the bottom, with file and rank labels; `title` names it for readers.
pub fn board_svg(pos: &Position, title: &str) -> Markup {
    let side_len = 8 * SQUARE + MARGIN;
    let description: String = piece_list(pos)
        .iter()
        .map(|(c, ps)| format!("{}: {}.", side(*c), ps.join(", ")))
        .collect::<Vec<_>>()
        .join(" ");
    html! {
        svg.board xmlns="http://www.w3.org/2000/svg" viewBox={ "0 0 " (side_len) " " (side_len) }
            role="img" aria-labelledby="board-title board-desc" {
            title id="board-title" { (title) }
            desc id="board-desc" { (description) }
            @for rank in (0..8u8).rev() {
                @for file in 0..8u8 {
                    @let sq = Square::from_coords(file, rank);
                    @let x = MARGIN + u32::from(file) * SQUARE;
                    @let y = u32::from(7 - rank) * SQUARE;
                    rect x=(x) y=(y) width=(SQUARE) height=(SQUARE)
                        class=(if (file + rank) % 2 == 1 { "sq light" } else { "sq dark" })
                        data-square=(sq.to_string()) {}
                    @if let Some(p) = pos.piece_at(sq) {
                        text x=(x + SQUARE / 2) y=(y + SQUARE / 2) class=(piece_class(p))
                            text-anchor="middle" dominant-baseline="central"
                            data-square=(sq.to_string()) data-piece=(p.char().to_string()) {
                            (figure(p.role))
                        }
                    }
                }
            }
            @for file in 0..8u8 {
                text.label x=(MARGIN + u32::from(file) * SQUARE + SQUARE / 2) y=(8 * SQUARE + 13)
                    text-anchor="middle" { ((b'a' + file) as char) }
            }
            @for rank in 0..8u8 {
                text.label x="8" y=(u32::from(7 - rank) * SQUARE + SQUARE / 2)
                    text-anchor="middle" dominant-baseline="central" { (rank + 1) }
            }
        }
    }
}

fn piece_class(p: Piece) -> &'static str {
    match p.color {
        Color::White => "pc white",
        Color::Black => "pc black",
    }
}

/// A start's back rank as eight figures on alternating squares, for a row of the index.
pub fn rank_glyph(arrangement: &str) -> Markup {
    html! {
        // Bare `<i>`s, coloured by position in the stylesheet: 960 rows of them stay small. An
        // image's children are presentational, so readers hear the label only.
        span.glyph role="img" aria-label={ "back rank " (arrangement) } title=(arrangement) {
            @for c in arrangement.chars() {
                i { (Role::from_char(c).map_or(c, figure)) }
            }
        }
    }
}

/// A histogram's bins over `[min, max]`: (low edge, high edge, count). Empty without values.
pub fn bins(values: &[f64], count: usize) -> Vec<(f64, f64, usize)> {
    let (Some(min), Some(max)) = (
        values.iter().copied().reduce(f64::min),
        values.iter().copied().reduce(f64::max),
    ) else {
        return Vec::new();
    };
    let count = count.max(1);
    // One value (or all equal): one bin of zero width would divide by zero.
    let width = if max > min {
        (max - min) / count as f64
    } else {
        1.0
    };
    let mut out: Vec<(f64, f64, usize)> = (0..count)
        .map(|i| (min + i as f64 * width, min + (i + 1) as f64 * width, 0))
        .collect();
    for v in values {
        let i = (((v - min) / width) as usize).min(count - 1);
        out[i].2 += 1;
    }
    out
}

/// Chart size in user units, and the plot's margins.
const W: f64 = 560.0;
const H: f64 = 260.0;
const LEFT: f64 = 56.0;
const BOTTOM: f64 = 36.0;
const TOP: f64 = 12.0;
const RIGHT: f64 = 12.0;

/// A number for an axis: `2.44e12` style past a million, else as is.
fn tick(v: f64) -> String {
    if v.abs() >= 1e6 {
        format!("{v:.2e}")
    } else if v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

/// A histogram of `values` as SVG, `label` naming the quantity; the bin holding `mark` (a start
/// the page is about) is drawn in the accent colour.
pub fn histogram_svg(values: &[f64], label: &str, mark: Option<f64>) -> Markup {
    let bins = bins(values, 24);
    let top = bins.iter().map(|b| b.2).max().unwrap_or(1).max(1) as f64;
    let plot_w = W - LEFT - RIGHT;
    let plot_h = H - TOP - BOTTOM;
    let bar_w = plot_w / bins.len().max(1) as f64;
    let (lo, hi) = (
        bins.first().map_or(0.0, |b| b.0),
        bins.last().map_or(0.0, |b| b.1),
    );
    let marked = mark.and_then(|m| {
        bins.iter()
            .position(|b| m >= b.0 && m < b.1)
            .or_else(|| (m == hi).then(|| bins.len() - 1))
    });
    html! {
        svg.chart xmlns="http://www.w3.org/2000/svg" viewBox={ "0 0 " (W) " " (H) } role="img"
            aria-label={ "Histogram of " (label) " over " (values.len()) " starts" } {
            title { "Histogram of " (label) }
            @for (i, (a, b, n)) in bins.iter().enumerate() {
                @let h = *n as f64 / top * plot_h;
                rect x=(format!("{:.1}", LEFT + i as f64 * bar_w)) y=(format!("{:.1}", TOP + plot_h - h))
                    width=(format!("{:.1}", (bar_w - 1.0).max(0.5))) height=(format!("{:.1}", h))
                    class=(if marked == Some(i) { "bar mark" } else { "bar" }) data-count=(n) {
                    title { (tick(*a)) " – " (tick(*b)) ": " (n) " starts" }
                }
            }
            line.axis x1=(LEFT) y1=(TOP + plot_h) x2=(W - RIGHT) y2=(TOP + plot_h) {}
            line.axis x1=(LEFT) y1=(TOP) x2=(LEFT) y2=(TOP + plot_h) {}
            text.label x=(LEFT) y=(H - 20.0) text-anchor="start" { (tick(lo)) }
            text.label x=(W - RIGHT) y=(H - 20.0) text-anchor="end" { (tick(hi)) }
            text.label x=(LEFT + plot_w / 2.0) y=(H - 4.0) text-anchor="middle" { (label) }
            text.label x=(LEFT - 6.0) y=(TOP + 10.0) text-anchor="end" { (top as u64) }
            text.label x=(LEFT - 6.0) y=(TOP + plot_h) text-anchor="end" { "0" }
        }
    }
}

/// One point of a scatter: start number, x, y.
pub type Point = (u16, f64, f64);

/// A scatter of `points` as SVG; those in `marked` are drawn in the accent colour, each point
/// says its start on hover.
pub fn scatter_svg(points: &[Point], x_label: &str, y_label: &str, marked: &[u16]) -> Markup {
    let range = |f: fn(&Point) -> f64| {
        let lo = points.iter().map(f).fold(f64::INFINITY, f64::min);
        let hi = points.iter().map(f).fold(f64::NEG_INFINITY, f64::max);
        if lo.is_finite() && hi > lo {
            (lo, hi)
        } else {
            (lo.min(0.0), lo.max(0.0) + 1.0)
        }
    };
    let (x0, x1) = range(|p| p.1);
    let (y0, y1) = range(|p| p.2);
    let plot_w = W - LEFT - RIGHT;
    let plot_h = H - TOP - BOTTOM;
    let px = |x: f64| LEFT + (x - x0) / (x1 - x0) * plot_w;
    let py = |y: f64| TOP + plot_h - (y - y0) / (y1 - y0) * plot_h;
    html! {
        svg.chart.one[marked.len() == 1] xmlns="http://www.w3.org/2000/svg" viewBox={ "0 0 " (W) " " (H) } role="img"
            aria-label={ "Scatter of " (y_label) " against " (x_label) ", " (points.len()) " starts" } {
            title { (y_label) " against " (x_label) }
            line.axis x1=(LEFT) y1=(TOP + plot_h) x2=(W - RIGHT) y2=(TOP + plot_h) {}
            line.axis x1=(LEFT) y1=(TOP) x2=(LEFT) y2=(TOP + plot_h) {}
            // The marked points last, so they are drawn on top.
            @for (sp, x, y) in points.iter().filter(|p| !marked.contains(&p.0)).chain(points.iter().filter(|p| marked.contains(&p.0))) {
                circle cx=(format!("{:.1}", px(*x))) cy=(format!("{:.1}", py(*y))) r="2.2"
                    class=(if marked.contains(sp) { "pt mark" } else { "pt" }) data-sp=(sp) {
                    title { "start " (sp) ": " (tick(*x)) ", " (tick(*y)) }
                }
            }
            text.label x=(LEFT) y=(H - 20.0) text-anchor="start" { (tick(x0)) }
            text.label x=(W - RIGHT) y=(H - 20.0) text-anchor="end" { (tick(x1)) }
            text.label x=(LEFT + plot_w / 2.0) y=(H - 4.0) text-anchor="middle" { (x_label) }
            text.label x=(LEFT - 6.0) y=(TOP + 10.0) text-anchor="end" { (tick(y1)) }
            text.label x=(LEFT - 6.0) y=(TOP + plot_h) text-anchor="end" { (tick(y0)) }
            text.label x=(LEFT + 6.0) y=(TOP + 10.0) text-anchor="start" { (y_label) }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use c960_common::StartPosition;

    #[test]
    fn the_board_draws_every_square_and_each_piece_where_it_stands() {
        let pos = StartPosition::new(555).unwrap().position();
        let svg = board_svg(&pos, "Start 555").into_string();
        assert_eq!(svg.matches("<rect").count(), 64);
        assert_eq!(svg.matches("data-piece=").count(), 32);
        for (sq, piece) in [
            ("a1", "R"),
            ("c1", "K"),
            ("h1", "B"),
            ("c8", "k"),
            ("e2", "P"),
        ] {
            assert!(
                svg.contains(&format!(r#"data-square="{sq}" data-piece="{piece}""#)),
                "{sq} {piece}"
            );
        }
        // a1 is dark, h1 light.
        assert!(svg.contains(r#"class="sq dark" data-square="a1""#));
        assert!(svg.contains(r#"class="sq light" data-square="h1""#));
        assert!(svg.contains("<title id=\"board-title\">Start 555</title>"));
        assert!(svg.contains("White: rook a1, knight b1, king c1"));
    }

    #[test]
    fn the_glyph_shows_the_back_rank() {
        let g = rank_glyph("RNBQKBNR").into_string();
        assert!(g.contains("<i>♜</i><i>♞</i><i>♝</i><i>♛</i><i>♚</i>"));
        assert!(g.contains("aria-label=\"back rank RNBQKBNR\""));
    }

    #[test]
    fn bins_cover_the_range_and_count_every_value() {
        let b = bins(&[0.0, 1.0, 2.0, 3.0, 4.0], 2);
        assert_eq!(b, [(0.0, 2.0, 2), (2.0, 4.0, 3)]);
        assert_eq!(bins(&[5.0, 5.0], 3).iter().map(|b| b.2).sum::<usize>(), 2);
        assert!(bins(&[], 4).is_empty());
    }

    #[test]
    fn charts_mark_the_asked_start() {
        let h = histogram_svg(&[1.0, 2.0, 3.0, 10.0], "d9", Some(10.0)).into_string();
        assert_eq!(h.matches("bar mark").count(), 1);
        let s = scatter_svg(&[(1, 0.0, 0.0), (518, 1.0, 2.0)], "x", "y", &[518]).into_string();
        assert_eq!(s.matches("<circle").count(), 2);
        assert!(s.contains(r#"class="pt mark" data-sp="518""#));
        // One point alone still draws (no division by a zero range).
        assert!(
            !scatter_svg(&[(3, 1.0, 1.0)], "x", "y", &[])
                .into_string()
                .contains("NaN")
        );
    }
}
