//! Frame fuzzing through the real `Bridge`: valid frames built with
//! etherparse (IPv4/IPv6 with TCP/UDP/ICMP, IPv6 extension-header chains,
//! 802.1Q and QinQ tags, ARP, LLDP) and then mutated (truncated, bytes
//! flipped, IHL and lengths corrupted, padded past the MTU), plus runts and
//! random bytes, are fed into `Bridge::ingress` at explicit times under every
//! root qdisc kind, and under fq_codel followed by netem impairments (the
//! set-ups of `bloatbox::fuzzing::setups`, shared with the `bridge` fuzz
//! target). After
//! every step each direction must conserve frames (`frames_in + duplicated
//! = frames_out + drops + held`); after polling to
//! completion every frame offered was either delivered or returned as a
//! freed buffer counted under a drop reason. This is the proptest run; the
//! coverage-guided run is the `bridge` target of `fuzz/` (docs/fuzzing.md).

use bloatbox::dir::Dir;
use bloatbox::fuzzing::setups::{self, setups, Offer};
use etherparse::PacketBuilder;
use proptest::prelude::*;
use std::time::Instant as WallClock;

/// Offers `frames` (right-to-left?, bytes, gap in µs) under set-up `kind`
/// (`setups::run`: conservation after every step, every frame delivered or
/// dropped with a reason): (delivered, dropped).
fn run(kind: usize, frames: &[(bool, Vec<u8>, u32)]) -> (u64, u64) {
    let offers: Vec<Offer> = frames
        .iter()
        .map(|(right, data, gap)| Offer {
            dir: if *right {
                Dir::RightToLeft
            } else {
                Dir::LeftToRight
            },
            data: data.clone(),
            gap_ns: u64::from(*gap) * 1_000,
        })
        .collect();
    setups::run(&setups()[kind], &offers)
}

const MAC_A: [u8; 6] = [2, 0, 0, 0, 0, 1];
const MAC_B: [u8; 6] = [2, 0, 0, 0, 0, 2];

/// A valid frame of the given shape with `payload` bytes of payload.
fn valid_frame(shape: u8, payload: usize, port: u16, tos: u8) -> Vec<u8> {
    let body = vec![0x5a; payload];
    let eth = || PacketBuilder::ethernet2(MAC_A, MAC_B);
    let mut out = Vec::new();
    let v4 = [10, 0, 0, 1];
    let v4b = [10, 0, 0, 2];
    let v6 = [0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
    let v6b = [0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2];
    let res = match shape % 10 {
        0 => eth()
            .ipv4(v4, v4b, 64)
            .tcp(port, 5001, 1, 65535)
            .write(&mut out, &body),
        1 => eth()
            .ipv4(v4, v4b, 64)
            .udp(port, 5001)
            .write(&mut out, &body),
        2 => eth()
            .ipv6(v6, v6b, 64)
            .tcp(port, 5001, 1, 65535)
            .write(&mut out, &body),
        3 => eth()
            .ipv6(v6, v6b, 64)
            .udp(port, 5001)
            .write(&mut out, &body),
        4 => eth()
            .single_vlan(etherparse::VlanId::try_new(100).unwrap())
            .ipv4(v4, v4b, 64)
            .udp(port, 5001)
            .write(&mut out, &body),
        5 => eth()
            .double_vlan(
                etherparse::VlanId::try_new(10).unwrap(),
                etherparse::VlanId::try_new(20).unwrap(),
            )
            .ipv6(v6, v6b, 64)
            .tcp(port, 5001, 1, 100)
            .write(&mut out, &body),
        6 => eth()
            .ipv4(v4, v4b, 64)
            .icmpv4_echo_request(1, 2)
            .write(&mut out, &body),
        7 => {
            // IPv6 with a hop-by-hop, routing and fragment header chain.
            let mut f = eth()
                .ipv6(v6, v6b, 64)
                .udp(port, 5001)
                .write(&mut out, &body)
                .map(|()| out.clone())
                .unwrap();
            ipv6_ext_chain(&mut f);
            return set_tos(f, tos);
        }
        8 => return arp(),
        _ => return lldp(payload),
    };
    res.expect("etherparse builds the frame");
    set_tos(out, tos)
}

/// Inserts hop-by-hop (0), routing (43) and fragment (44) headers between
/// the IPv6 header and its transport header.
fn ipv6_ext_chain(f: &mut Vec<u8>) {
    let ip = 14;
    let next = f[ip + 6];
    let ext: Vec<u8> = [
        vec![43, 0, 0, 0, 0, 0, 0, 0],   // hop-by-hop -> routing
        vec![44, 0, 0, 0, 0, 0, 0, 0],   // routing -> fragment
        vec![next, 0, 0, 0, 0, 0, 0, 1], // fragment -> transport
    ]
    .concat();
    f[ip + 6] = 0;
    let plen = u16::from_be_bytes([f[ip + 4], f[ip + 5]]) + ext.len() as u16;
    f[ip + 4..ip + 6].copy_from_slice(&plen.to_be_bytes());
    let at = ip + 40;
    f.splice(at..at, ext);
}

/// Sets the IPv4 TOS / IPv6 traffic class (fixing the IPv4 checksum), so
/// ECN-capable frames meet the AQMs.
fn set_tos(mut f: Vec<u8>, tos: u8) -> Vec<u8> {
    let mut off = 12;
    while matches!(f.get(off..off + 2), Some([0x81, 0x00] | [0x88, 0xa8])) {
        off += 4;
    }
    let ip = off + 2;
    match f.get(off..off + 2) {
        Some([0x08, 0x00]) if f.len() >= ip + 20 => {
            f[ip + 1] = tos;
            f[ip + 10] = 0;
            f[ip + 11] = 0;
            let sum = ipv4_checksum(&f[ip..ip + 20]);
            f[ip + 10..ip + 12].copy_from_slice(&sum.to_be_bytes());
        }
        Some([0x86, 0xdd]) if f.len() >= ip + 2 => {
            f[ip] = 0x60 | (tos >> 4);
            f[ip + 1] = (f[ip + 1] & 0x0f) | (tos << 4);
        }
        _ => {}
    }
    f
}

fn ipv4_checksum(h: &[u8]) -> u16 {
    let mut sum: u32 = h
        .chunks(2)
        .map(|c| u16::from_be_bytes([c[0], c[1]]) as u32)
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

fn arp() -> Vec<u8> {
    let mut f = [MAC_B.to_vec(), MAC_A.to_vec(), vec![0x08, 0x06]].concat();
    f.extend_from_slice(&[0, 1, 8, 0, 6, 4, 0, 1]);
    f.extend_from_slice(&MAC_A);
    f.extend_from_slice(&[10, 0, 0, 1]);
    f.extend_from_slice(&[0; 6]);
    f.extend_from_slice(&[10, 0, 0, 2]);
    f
}

fn lldp(extra: usize) -> Vec<u8> {
    let mut f = [
        vec![0x01, 0x80, 0xc2, 0, 0, 0x0e],
        MAC_A.to_vec(),
        vec![0x88, 0xcc],
    ]
    .concat();
    f.extend_from_slice(&[0x02, 0x07, 0x04]);
    f.extend_from_slice(&MAC_A);
    f.extend(std::iter::repeat_n(0xab, extra.min(1400)));
    f.extend_from_slice(&[0, 0]);
    f
}

/// A mutation applied to a valid frame.
#[derive(Clone, Debug)]
enum Mutation {
    None,
    Truncate(usize),
    Flip(usize, u8),
    BadIhl(u8),
    BadLength(u16),
    Pad(usize),
}

fn mutate(mut f: Vec<u8>, m: &Mutation) -> Vec<u8> {
    let ip = 14
        + if matches!(f.get(12..14), Some([0x81, 0x00])) {
            4
        } else {
            0
        };
    match *m {
        Mutation::None => {}
        Mutation::Truncate(n) => f.truncate(n % (f.len() + 1)),
        Mutation::Flip(at, x) => {
            let len = f.len();
            if len > 0 {
                f[at % len] ^= x.max(1);
            }
        }
        Mutation::BadIhl(ihl) => {
            if let Some(b) = f.get_mut(ip) {
                *b = (*b & 0xf0) | (ihl & 0x0f);
            }
        }
        Mutation::BadLength(len) => {
            if f.len() >= ip + 4 {
                f[ip + 2..ip + 4].copy_from_slice(&len.to_be_bytes());
            }
        }
        Mutation::Pad(n) => f.resize(f.len() + n, 0xee),
    }
    f
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        3 => Just(Mutation::None),
        2 => any::<usize>().prop_map(Mutation::Truncate),
        2 => (any::<usize>(), any::<u8>()).prop_map(|(a, x)| Mutation::Flip(a, x)),
        1 => any::<u8>().prop_map(Mutation::BadIhl),
        1 => any::<u16>().prop_map(Mutation::BadLength),
        1 => (1usize..9000).prop_map(Mutation::Pad),
    ]
}

/// One frame: a mutated valid frame, a runt, or random bytes.
fn frame() -> impl Strategy<Value = Vec<u8>> {
    let built = (
        any::<u8>(),
        0usize..1500,
        any::<u16>(),
        any::<u8>(),
        mutation(),
    )
        .prop_map(|(shape, len, port, tos, m)| mutate(valid_frame(shape, len, port, tos), &m));
    prop_oneof![
        8 => built,
        1 => proptest::collection::vec(any::<u8>(), 0..14),
        1 => proptest::collection::vec(any::<u8>(), 0..2000),
    ]
}

fn frames() -> impl Strategy<Value = Vec<(bool, Vec<u8>, u32)>> {
    proptest::collection::vec(
        (
            any::<bool>(),
            frame(),
            prop_oneof![3 => Just(0u32), 2 => 0u32..2_000],
        ),
        1..120,
    )
}

proptest! {
    #![proptest_config(crate::common::proptest_config(2000, file!()))]

    #[test]
    fn fuzzed_frames_are_forwarded_or_dropped_with_a_reason(
        kind in 0..setups().len(),
        frames in frames(),
    ) {
        run(kind, &frames);
    }
}

/// The fixed corpus (every shape × every mutation kind, runts, jumbos,
/// random bytes) through every root qdisc, with executions and time printed
/// for RELIABILITY.md.
#[test]
fn corpus_through_every_root_qdisc() {
    let mut corpus = Vec::new();
    let muts = [
        Mutation::None,
        Mutation::Truncate(13),
        Mutation::Truncate(14),
        Mutation::Truncate(20),
        Mutation::Truncate(33),
        Mutation::Truncate(40),
        Mutation::Truncate(54),
        Mutation::Truncate(61),
        Mutation::BadIhl(0),
        Mutation::BadIhl(4),
        Mutation::BadIhl(15),
        Mutation::BadLength(0),
        Mutation::BadLength(0xffff),
        Mutation::Flip(12, 0xff),
        Mutation::Flip(23, 0xff),
        Mutation::Pad(1),
        Mutation::Pad(8000),
    ];
    for shape in 0..10u8 {
        for (i, m) in muts.iter().enumerate() {
            for payload in [0usize, 1, 100, 1400, 1458, 1500] {
                let tos = [0u8, 1, 2, 3][i % 4];
                corpus.push(mutate(valid_frame(shape, payload, 1000 + i as u16, tos), m));
            }
        }
    }
    for len in [
        0usize, 1, 13, 14, 15, 60, 1514, 1515, 1518, 1519, 1522, 1523, 9000, 65535,
    ] {
        let mut f = vec![0u8; len];
        if len >= 18 && len % 2 == 0 {
            f[12..14].copy_from_slice(&[0x81, 0x00]);
        }
        corpus.push(f);
    }
    let mut seed = 0x1234_5678_u64;
    for _ in 0..200 {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let len = (seed % 1600) as usize;
        corpus.push((0..len).map(|i| (seed >> (i % 56)) as u8).collect());
    }
    let start = WallClock::now();
    let mut executions = 0u64;
    for (kind, setup) in setups().iter().enumerate() {
        let frames: Vec<(bool, Vec<u8>, u32)> = corpus
            .iter()
            .enumerate()
            .map(|(i, f)| (i % 3 == 0, f.clone(), (i % 7) as u32 * 50))
            .collect();
        let (delivered, dropped) = run(kind, &frames);
        println!(
            "{:>14}: {delivered} delivered, {dropped} dropped",
            setup.name()
        );
        assert!(
            delivered > 0 && dropped > 0,
            "the corpus reaches both outcomes"
        );
        executions += frames.len() as u64;
    }
    println!(
        "corpus: {} frames x {} root qdiscs = {executions} ingress calls in {:?}",
        corpus.len(),
        setups().len(),
        start.elapsed()
    );
    assert!(executions > 5_000);
}
