//! Simulator basics: a lone Reno flow fills an empty link.

use super::load;
use bloatbox::sim;
use bloatbox::sim::scenario::CcAlgo;

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
    assert_eq!(r.unmatched_frames, 0);
    assert_eq!(l2r.unexplained_drops, 0);
}

#[test]
fn cubic_alone_fills_it_too_and_hystart_spares_the_overshoot() {
    let reno = sim::run(&load("reno_10mbit.toml")).unwrap();
    let mut sc = load("reno_10mbit.toml");
    sc.tcp[0].get_mut().cc = CcAlgo::Cubic;
    let cubic = sim::run(&sc).unwrap();
    let stats = |r: &sim::SimReport| r.flows[0].tcp.unwrap();
    println!("{}\n{:?}\n{:?}", cubic.table(), stats(&cubic), stats(&reno));
    assert!(cubic.directions[0].utilisation >= 0.90);
    assert_eq!(stats(&cubic).cc, CcAlgo::Cubic);
    // Reno's slow start overshoots the 1000-frame queue and loses hundreds
    // of segments; CUBIC's HyStart leaves slow start on the rising RTT.
    assert_eq!(stats(&cubic).stats.hystart_exits, 1);
    assert!(stats(&reno).stats.retransmits > 100);
    assert!(stats(&cubic).stats.retransmits * 10 < stats(&reno).stats.retransmits);
}
