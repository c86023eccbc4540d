//! The pcapng capture writer read by an external reader: a few hundred
//! records decoded from pseudo-random bytes the way the `pcapng` fuzz
//! target decodes its input (`bloatbox::fuzzing::capture_records`: any
//! frame bytes and length, any time, every drop reason) go through the
//! real capture (`capture::start`: the tap, its channel, the writer
//! thread), and `tshark -r` must read the file with every packet on its
//! interface. It needs tshark, so a plain `cargo test` leaves it out as
//! ignored, saying so; run (`--include-ignored`, as `.ci/run` does after
//! installing tshark) without tshark, it fails with the install hint.

use bloatbox::capture::{self, CaptureSpec, Point};
use bloatbox::dir::Dir;
use std::process::Command;

/// Deterministic pseudo-random bytes (xorshift64).
fn bytes(n: usize, mut seed: u64) -> Vec<u8> {
    (0..n)
        .map(|_| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed >> 24) as u8
        })
        .collect()
}

#[test]
#[ignore = "needs tshark (apt-get install tshark)"]
fn tshark_reads_every_record_the_capture_wrote() {
    assert!(
        Command::new("tshark").arg("--version").output().is_ok(),
        "this test cannot run here: tshark is not installed (apt-get install tshark)"
    );
    let dir = tempfile::tempdir().unwrap();
    let spec = CaptureSpec::in_dir(dir.path());
    let mut expected = [Vec::new(), Vec::new()];
    let (mut tap, writer) = capture::start(&spec, Some(0)).unwrap();
    for seed in 1..=100u64 {
        let (d, _, records) = bloatbox::fuzzing::capture_records(&bytes(20_000, seed));
        for (point, frame, at) in records {
            tap.frame(d, point, &frame, at);
            let interface = match point {
                Point::In => capture::IF_IN,
                Point::Out => capture::IF_OUT,
                Point::Dropped(_) => capture::IF_DROPPED,
            };
            expected[d.index()].push(interface.to_string());
        }
    }
    let counters = {
        drop(tap);
        writer.finish()
    };
    let total: usize = expected.iter().map(Vec::len).sum();
    assert!(total >= 200, "a sample of a few hundred records: {total}");
    for d in Dir::ALL {
        assert_eq!(counters[d.index()].dropped, 0, "the channel lost records");
        let file = spec.files[d.index()].as_ref().unwrap();
        let out = Command::new("tshark")
            .arg("-r")
            .arg(file)
            .args(["-T", "fields", "-e", "frame.interface_id"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "tshark -r {}: {}",
            file.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        let read: Vec<String> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::to_string)
            .collect();
        assert_eq!(read.len(), expected[d.index()].len(), "{}", d.name());
        assert_eq!(read, expected[d.index()], "{}: interfaces", d.name());
    }
}
