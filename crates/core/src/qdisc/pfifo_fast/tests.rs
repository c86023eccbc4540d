//! Unit tests of the `pfifo_fast` qdisc at explicit times, with expected values
//! derived from the kernel functions each test cites.

use super::*;
use crate::qdisc::testutil::tos_pkt;

#[test]
fn vector_p1_tos_to_band() {
    let cases: [(u8, usize); 20] = [
        (0x00, 1),
        (0x02, 1),
        (0x04, 1),
        (0x08, 2),
        (0x10, 0),
        (0x18, 1),
        (0x20, 1),
        (0x28, 2),
        (0x48, 2),
        (0x68, 2),
        (0x88, 2),
        (0x30, 0),
        (0x50, 0),
        (0x90, 0),
        (0x38, 1),
        (0x58, 1),
        (0x98, 1),
        (0xb8, 1),
        (0xc0, 1),
        (0xe0, 1),
    ];
    for (tos, band) in cases {
        let prio = crate::packet::classify::rt_tos2priority(tos);
        assert_eq!(PfifoFast::band_of(prio), band, "tos {tos:#04x}");
    }
}

#[test]
fn vector_p2_strict_priority() {
    let mut q = PfifoFast::new(QdiscCtx::default());
    let mut d = Drops::new();
    let t = Instant::ZERO;
    q.enqueue(tos_pkt(1, 100, 0x08), t, &mut d); // X band 2
    q.enqueue(tos_pkt(2, 100, 0x00), t, &mut d); // Y band 1
    q.enqueue(tos_pkt(3, 100, 0x10), t, &mut d); // Z band 0
    let order: Vec<u64> = (0..3)
        .map(|_| q.dequeue(t, &mut d).unwrap().meta.id)
        .collect();
    assert_eq!(order, vec![3, 2, 1]);
}

#[test]
fn per_band_limit_is_txqueuelen() {
    let ctx = QdiscCtx {
        txqueuelen: 2,
        ..QdiscCtx::default()
    };
    let mut q = PfifoFast::new(ctx);
    let mut d = Drops::new();
    let t = Instant::ZERO;
    for i in 0..3 {
        q.enqueue(tos_pkt(i, 100, 0x00), t, &mut d);
    }
    assert_eq!(d.len(), 1);
    // A full band 1 does not block band 0.
    assert_eq!(q.enqueue(tos_pkt(9, 100, 0x10), t, &mut d), Verdict::Queued);
    assert_eq!(q.qlen(), 3);
    assert_eq!(q.stats().drops, 1);
}

#[test]
fn dumps_bands_and_priomap() {
    let q = PfifoFast::build(QdiscCtx::default(), &QdiscOptions::None).unwrap();
    assert_eq!(
        q.dump(Instant::ZERO).options,
        QdiscOptions::PfifoFast(PfifoFastOptions {
            bands: 3,
            priomap: [1, 2, 2, 2, 1, 2, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1],
        })
    );
    let e = PfifoFast::build(
        QdiscCtx::default(),
        &QdiscOptions::Fifo(crate::qdisc::fifo::FifoOptions { limit: 1 }),
    );
    assert!(e.err().unwrap().says("pfifo_fast"));
}
