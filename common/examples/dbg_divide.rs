fn cozy_perft(board: &cozy_chess::Board, depth: u32) -> u64 {
    if depth == 0 {
        return 1;
    }
    let mut nodes = 0;
    board.generate_moves(|moves| {
        for mv in moves {
            let mut c = board.clone();
            c.play_unchecked(mv);
            nodes += cozy_perft(&c, depth - 1);
        }
        false
    });
    nodes
}
fn main() {
    let mut fen = std::env::args().nth(1).unwrap();
    let mut depth: u32 = std::env::args().nth(2).unwrap().parse().unwrap();
    loop {
        let pos = c960_common::Position::from_fen(&fen).unwrap();
        let board = cozy_chess::Board::from_fen(&fen, true).unwrap();
        let mut found = None;
        for (m, n) in c960_common::divide(&pos, depth) {
            let mut b = board.clone();
            let cm: cozy_chess::Move = m.to_string().parse().unwrap();
            b.play(cm);
            let c = cozy_perft(&b, depth - 1);
            if c != n {
                println!("{fen} {m}: ours {n} cozy {c}");
                found = Some(pos.play(m));
                break;
            }
        }
        match found {
            Some(p) if depth > 1 => {
                fen = p.to_fen(c960_common::CastlingNotation::Shredder);
                depth -= 1;
            }
            _ => break,
        }
    }
}
