//! Simulator basics: a lone Reno flow fills an empty link.

use bloatbox::sim::{self, Scenario};

fn load(name: &str) -> Scenario {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/scenarios")
        .join(name);
    Scenario::from_file(&path).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn reno_alone_fills_an_empty_10mbit_link() {
    let sc = load("reno_10mbit.toml");
    let r = sim::run(&sc).unwrap();
    println!("{}", r.table());
    let l2r = &r.directions[0];
    assert!(
        l2r.utilisation >= 0.90,
        "utilisation {:.3}",
        l2r.utilisation
    );
    assert_eq!(r.foreign_frames, 0);
    assert_eq!(l2r.unexplained_drops, 0);
}
