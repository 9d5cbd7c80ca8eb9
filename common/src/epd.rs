//! Perft reference lines: `FEN ;D1 n ;D2 n ... [;id "name"]`.

/// One reference line: a FEN and its known perft counts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PerftLine {
    /// The FEN exactly as written (trimmed).
    pub fen: String,
    /// `(depth, nodes)` pairs in the order given.
    pub counts: Vec<(u32, u64)>,
    /// The `id` annotation, if any.
    pub id: Option<String>,
}

/// Parses one line. Blank lines and `#` comments give `Ok(None)`.
pub fn parse_perft_line(line: &str) -> Result<Option<PerftLine>, String> {
    let line = line.trim();
    if line.is_empty() || line.starts_with('#') {
        return Ok(None);
    }
    let mut parts = line.split(';');
    let fen = parts.next().unwrap_or_default().trim().to_string();
    let mut counts = Vec::new();
    let mut id = None;
    for part in parts {
        let part = part.trim();
        if let Some(rest) = part.strip_prefix("id") {
            id = Some(rest.trim().trim_matches('"').to_string());
        } else if let Some(rest) = part.strip_prefix('D') {
            let (d, n) = rest
                .split_once(char::is_whitespace)
                .ok_or_else(|| format!("bad count {part:?}"))?;
            let depth = d.parse().map_err(|_| format!("bad depth in {part:?}"))?;
            let nodes = n
                .trim()
                .parse()
                .map_err(|_| format!("bad node count in {part:?}"))?;
            counts.push((depth, nodes));
        } else if !part.is_empty() {
            return Err(format!("unknown EPD operation {part:?}"));
        }
    }
    Ok(Some(PerftLine { fen, counts, id }))
}
