//! A connection flood never takes `serve` away from others (issue 31): 13 addresses × 64
//! connections that reconnect as soon as one is closed, against a real `serve` process with its
//! default flags, and again with a total cap below the flood (the heaviest blocks give way).
//! Status probes from another address are answered and a default worker keeps completing
//! workunits. The figures (also 50 × 64) are `hardening_figures::connection_floods`.

use std::time::Duration;

use c960_tests::flood::{self, Flood};

/// Asserts what issue 31 asks of a flood: at least 99 % of the status probes answered, and the
/// honest worker's campaign advancing while the flood runs. (Latency is measured by the
/// figures run, not asserted here.)
fn assert_unharmed(figures: &flood::FloodFigures) {
    eprintln!("{}", figures.line());
    assert!(
        figures.answered * 100 >= figures.probes * 99,
        "status probes answered: {}",
        figures.line()
    );
    assert!(
        figures.valid.1 > figures.valid.0,
        "the worker completed nothing during the flood: {}",
        figures.line()
    );
}

/// Both floods in one test, one after the other: each is a real `serve`, a worker and 832
/// connections, which two cores should not run side by side.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thirteen_flooding_addresses_leave_status_and_work_alone() {
    // Default flags: the total cap, sized from the open-file limit, holds the whole flood.
    let defaults = flood::run(&Flood {
        addresses: 13,
        per_address: 64,
        one_block: false,
        serve_args: Vec::new(),
        probe_for: Duration::from_secs(8),
    })
    .await;
    assert_unharmed(&defaults);
    // `--max-connections 256`: the flood fills the total, and a probe from a fresh address is
    // still admitted, closing the oldest idle connection of the heaviest block.
    let capped = flood::run(&Flood {
        addresses: 13,
        per_address: 64,
        one_block: false,
        serve_args: vec!["--max-connections".into(), "256".into()],
        probe_for: Duration::from_secs(8),
    })
    .await;
    assert_unharmed(&capped);
    let shed = capped
        .closed
        .iter()
        .find(|(reason, _)| reason == "shed")
        .map_or(0.0, |(_, n)| *n);
    assert!(shed > 0.0, "nothing was shed: {}", capped.line());
}
