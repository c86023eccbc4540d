//! plug's unit tests: the output-commit sequence of sch_plug.c's comment
//! (block, release one epoch), release_indefinite's pass-through, the byte
//! limit, and plug_change's refusals.

use super::*;
use crate::qdisc::testutil::pkt;

fn plug(o: &QdiscOptions) -> Plug {
    Plug::build(QdiscCtx::default(), o).unwrap()
}

fn act(q: &mut Plug, action: PlugAction) {
    let o = QdiscOptions::Plug(PlugOptions { action, limit: 0 });
    q.change(&o, Instant::ZERO, &mut Drops::new()).unwrap();
}

fn out(q: &mut Plug) -> Vec<u64> {
    let mut d = Drops::new();
    std::iter::from_fn(|| q.dequeue(Instant::ZERO, &mut d))
        .map(|p| p.meta.id)
        .collect()
}

#[test]
fn it_starts_plugged_and_releases_one_epoch_at_a_time() {
    let mut q = plug(&QdiscOptions::None);
    assert_eq!(q.limit(), 1000 * 1514);
    let mut d = Drops::new();
    for i in 0..3 {
        q.enqueue(pkt(i, 100), Instant::ZERO, &mut d);
    }
    assert_eq!(out(&mut q), [] as [u64; 0]);
    // The head is there to peek at, plugged or not (qdisc_peek_head).
    assert_eq!(q.peek(Instant::ZERO, &mut d).map(|p| p.meta.id), Some(0));
    act(&mut q, PlugAction::Buffer);
    for i in 3..5 {
        q.enqueue(pkt(i, 100), Instant::ZERO, &mut d);
    }
    assert_eq!(q.epochs(), (2, 3, 0));
    act(&mut q, PlugAction::ReleaseOne);
    assert_eq!(out(&mut q), [0, 1, 2]);
    // A second release without a new plug releases nothing more.
    act(&mut q, PlugAction::ReleaseOne);
    assert_eq!(out(&mut q), [] as [u64; 0]);
    act(&mut q, PlugAction::Buffer);
    act(&mut q, PlugAction::ReleaseOne);
    assert_eq!(out(&mut q), [3, 4]);
    assert_eq!(q.counters().packets, 5);
}

#[test]
fn release_indefinite_passes_frames_until_the_next_block() {
    let mut q = plug(&QdiscOptions::None);
    let mut d = Drops::new();
    q.enqueue(pkt(0, 100), Instant::ZERO, &mut d);
    act(&mut q, PlugAction::ReleaseIndefinite);
    assert_eq!(out(&mut q), [0]);
    q.enqueue(pkt(1, 100), Instant::ZERO, &mut d);
    assert_eq!(out(&mut q), [1]);
    act(&mut q, PlugAction::Buffer);
    q.enqueue(pkt(2, 100), Instant::ZERO, &mut d);
    assert_eq!(out(&mut q), [] as [u64; 0]);
    assert_eq!(q.epochs(), (1, 0, 0));
}

#[test]
fn the_limit_counts_bytes_and_an_action_alone_sets_it_to_zero() {
    let limit = |limit| {
        QdiscOptions::Plug(PlugOptions {
            action: PlugAction::Limit,
            limit,
        })
    };
    let mut q = plug(&limit(3000));
    let mut d = Drops::new();
    let v: Vec<Verdict> = (0..3)
        .map(|i| q.enqueue(pkt(i, 1500), Instant::ZERO, &mut d))
        .collect();
    assert_eq!(v, [Verdict::Queued, Verdict::Queued, Verdict::Dropped]);
    q.change(&limit(4500), Instant::ZERO, &mut d).unwrap();
    assert_eq!(
        q.enqueue(pkt(3, 1500), Instant::ZERO, &mut d),
        Verdict::Queued
    );
    // `tc qdisc add ... plug block`: plug_init reads the limit, 0.
    let mut q = plug(&QdiscOptions::Plug(PlugOptions::default()));
    assert_eq!(
        q.enqueue(pkt(0, 60), Instant::ZERO, &mut d),
        Verdict::Dropped
    );
}

#[test]
fn plug_change_refuses_no_options_and_unknown_actions() {
    let mut q = plug(&QdiscOptions::None);
    let mut d = Drops::new();
    let e = q
        .change(&QdiscOptions::None, Instant::ZERO, &mut d)
        .unwrap_err();
    assert_eq!((e.errno, e.message), (Errno::EINVAL, None));
    let o = QdiscOptions::Plug(PlugOptions {
        action: PlugAction::Other(7),
        limit: 0,
    });
    assert_eq!(
        q.change(&o, Instant::ZERO, &mut d).unwrap_err().errno,
        Errno::EINVAL
    );
}
