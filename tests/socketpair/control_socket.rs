//! The control server over a temp socket path, with the real datapath over
//! socketpairs (no root needed): every request kind, bad input (malformed
//! JSON, unknown requests, oversized lines, clients vanishing mid-request),
//! concurrent clients, and a root qdisc replaced while frames flow, after
//! which conservation still holds.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant as StdInstant};

use bloatbox::control::{Client, Request, MAX_LINE};
use bloatbox::control_server::ControlServer;
use bloatbox::datapath::SnapshotReader;
use bloatbox::port::FramePort;
use serde_json::Value;

use crate::common::{self, run_bin, wait_for, wait_until};
use crate::control_rig::Rig;

/// pfifo_fast at the root of `dev`.
fn pfifo_fast(dev: &str) -> Vec<String> {
    vec![format!("tc qdisc replace dev {dev} root pfifo_fast")]
}

/// Writes raw bytes and reads one reply line ("" if the server closed).
fn raw(path: &Path, bytes: &[u8]) -> String {
    let mut s = UnixStream::connect(path).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(bytes).unwrap();
    let mut line = String::new();
    BufReader::new(&s).read_line(&mut line).unwrap();
    line
}

fn error_of(reply: &str) -> String {
    let v: Value = serde_json::from_str(reply).unwrap_or_else(|e| panic!("{e}: {reply:?}"));
    v["error"]
        .as_str()
        .unwrap_or_else(|| panic!("not an error: {reply}"))
        .to_string()
}

fn n(v: &Value, p: &str) -> u64 {
    v.pointer(p)
        .and_then(Value::as_u64)
        .unwrap_or_else(|| panic!("{p} missing"))
}

/// frames_in + duplicated = frames_out + drops + held, for both paths.
fn assert_conserved(snap: &Value) {
    for i in 0..2 {
        let c = |f: &str| n(snap, &format!("/bridge/paths/{i}/counters/{f}"));
        let drops: u64 = snap["bridge"]["paths"][i]["counters"]["drops"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d.as_u64().unwrap())
            .sum();
        let held = n(snap, &format!("/bridge/paths/{i}/held"));
        assert_eq!(
            c("frames_in") + c("duplicated"),
            c("frames_out") + drops + held,
            "path {i}: {}",
            snap["bridge"]["paths"][i]["counters"]
        );
    }
}

/// An Ethernet frame with an unused EtherType.
fn frame(len: usize) -> Vec<u8> {
    let mut f = vec![0u8; len];
    f[0..6].copy_from_slice(&[2, 0, 0, 0, 0, 2]);
    f[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 1]);
    f[12..14].copy_from_slice(&[0x88, 0xb5]);
    f
}

#[test]
fn every_request_kind_is_answered() {
    let rig = Rig::start(pfifo_fast);
    let mode = std::fs::metadata(&rig.socket).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let mut c = rig.client();

    let snap = c.call(&Request::Snapshot).unwrap().unwrap();
    assert_eq!(n(&snap, "/bridge/paths/0/params/rate_bytes_ps"), 1_250_000);
    let stats = c.call(&Request::Stats).unwrap().unwrap();
    assert_conserved(&stats);

    let show = c
        .call(&Request::Tc {
            line: "tc -s qdisc show dev left".into(),
        })
        .unwrap()
        .unwrap();
    let out = show["output"].as_str().unwrap();
    assert!(
        out.contains("qdisc pfifo_fast") && out.contains("Sent"),
        "{out}"
    );
    assert!(show["config"].is_null());

    let both = c
        .call(&Request::Tc {
            line: "tc qdisc show".into(),
        })
        .unwrap()
        .unwrap();
    let both = both["output"].as_str().unwrap();
    assert_eq!(both.matches("qdisc pfifo_fast").count(), 2, "{both}");
    // Without `dev`, each line names its device, as tc prints it.
    assert!(
        both.contains(": dev left root") && both.contains(": dev right root"),
        "{both}"
    );

    let replaced = c
        .call(&Request::Tc {
            line: "tc qdisc replace dev right root fq_codel".into(),
        })
        .unwrap()
        .unwrap();
    assert_eq!(replaced["output"], "");
    let config = replaced["config"].as_str().unwrap();
    assert!(config.contains("qdisc fq_codel"), "{config}");
    // The other direction is untouched.
    let left = c
        .call(&Request::Tc {
            line: "tc qdisc show dev left".into(),
        })
        .unwrap()
        .unwrap();
    assert!(left["output"].as_str().unwrap().contains("pfifo_fast"));

    let err = c
        .call(&Request::Tc {
            line: "tc qdisc replace dev left root nosuchqdisc".into(),
        })
        .unwrap()
        .unwrap_err();
    assert!(err.message.contains("nosuchqdisc"), "{err}");

    let set = c
        .call(&Request::Set {
            args: vec![
                "left.rate=20mbit".into(),
                "right.delay=20ms".into(),
                "ethtool -C left rx-usecs 20".into(),
                "left.tx_stop_threshold=19".into(),
                "right.tx_post_ns=2000".into(),
            ],
        })
        .unwrap()
        .unwrap();
    assert_eq!(n(&set, "/left/rate_bytes_ps"), 2_500_000);
    assert_eq!(n(&set, "/left/tx_stop_threshold"), 19);
    assert_eq!(n(&set, "/right/tx_post_ns"), 2_000);
    assert_eq!(n(&set, "/left/rx_usecs"), 20);
    assert_eq!(n(&set, "/right/delay_ns"), 20_000_000);
    assert_eq!(n(&set, "/right/rate_bytes_ps"), 1_250_000);
    // A second set builds on the first.
    let set2 = c
        .call(&Request::Set {
            args: vec!["left.bql=off".into()],
        })
        .unwrap()
        .unwrap();
    assert_eq!(n(&set2, "/left/rate_bytes_ps"), 2_500_000);
    assert_eq!(set2["left"]["bql"], false);
    let bad = c
        .call(&Request::Set {
            args: vec!["left.rate=fast".into()],
        })
        .unwrap()
        .unwrap_err();
    assert!(bad.message.contains("left.rate=fast"), "{bad}");
    // The datapath applies it: later snapshots show the new rate and delay
    // (each direction publishes its own part, so one may show it first).
    let t0 = StdInstant::now();
    loop {
        let s = c.call(&Request::Snapshot).unwrap().unwrap();
        if n(&s, "/bridge/paths/0/params/rate_bytes_ps") == 2_500_000
            && n(&s, "/bridge/paths/1/params/delay_ns") == 20_000_000
            && n(&s, "/bridge/paths/0/params/tx_stop_threshold") == 19
            && n(&s, "/bridge/paths/1/params/tx_post_ns") == 2_000
        {
            break;
        }
        assert!(t0.elapsed() < Duration::from_secs(5), "set not applied");
        std::thread::sleep(Duration::from_millis(5));
    }

    assert_eq!(
        c.call(&Request::ResetStats).unwrap().unwrap(),
        "counters reset"
    );
    let after = c.call(&Request::Stats).unwrap().unwrap();
    assert_conserved(&after);

    assert_eq!(
        c.call(&Request::Shutdown).unwrap().unwrap(),
        "shutting down"
    );
    let t0 = StdInstant::now();
    while !rig.datapath.as_ref().unwrap().is_finished() {
        assert!(t0.elapsed() < Duration::from_secs(5), "shutdown ignored");
        std::thread::sleep(Duration::from_millis(5));
    }
    let err = c
        .call(&Request::Tc {
            line: "tc qdisc show dev left".into(),
        })
        .unwrap()
        .unwrap_err();
    assert!(err.message.contains("stopped"), "{err}");
}

#[test]
fn reset_stats_counts_from_zero_and_keeps_conservation() {
    let mut rig = Rig::start(pfifo_fast);
    for _ in 0..50 {
        rig.host()[0].send(&frame(1000)).unwrap();
    }
    let mut c = rig.client();
    // Reset while frames are still queued (all 50 in, at 10 Mbit/s most
    // still held), then check the counters only hold what came after (plus
    // what was held at the reset).
    let all_in = wait_until(Duration::from_secs(5), || {
        let s = c.call(&Request::Snapshot).unwrap().unwrap();
        n(&s, "/bridge/paths/0/counters/frames_in") == 50
    });
    assert!(all_in, "the 50 frames never entered the datapath");
    c.call(&Request::ResetStats).unwrap().unwrap();
    let stats = c.call(&Request::Stats).unwrap().unwrap();
    assert_conserved(&stats);
    assert!(n(&stats, "/bridge/paths/0/counters/frames_in") <= 50);
    let raw_snap = c.call(&Request::Snapshot).unwrap().unwrap();
    assert_eq!(n(&raw_snap, "/bridge/paths/0/counters/frames_in"), 50);
    let mut buf = vec![0u8; 2048];
    let t0 = StdInstant::now();
    let mut got = 0;
    while got < 50 && t0.elapsed() < Duration::from_secs(5) {
        match rig.host()[1].recv(&mut buf).unwrap() {
            Some(_) => got += 1,
            None => std::thread::sleep(Duration::from_millis(2)),
        }
    }
    assert_eq!(got, 50);
    // The snapshot after the last departure holds nothing.
    let stats = wait_for(Duration::from_secs(5), || {
        let s = c.call(&Request::Stats).unwrap().unwrap();
        (n(&s, "/bridge/paths/0/held") == 0).then_some(s)
    })
    .unwrap_or_else(|| c.call(&Request::Stats).unwrap().unwrap());
    assert_conserved(&stats);
    assert_eq!(n(&stats, "/bridge/paths/0/held"), 0);
    // Only departures after the reset are counted.
    let raw_snap = c.call(&Request::Snapshot).unwrap().unwrap();
    assert_eq!(n(&raw_snap, "/bridge/paths/0/counters/frames_out"), 50);
    let since = n(&stats, "/bridge/paths/0/counters/frames_out");
    eprintln!("reset_stats: {since} of 50 frames departed after the reset");
    assert!(since <= 50);
}

#[test]
fn bad_input_gets_a_clear_error_and_the_connection_or_server_survives() {
    let rig = Rig::start(pfifo_fast);
    assert!(error_of(&raw(&rig.socket, b"{\"cmd\":\n")).contains("not valid JSON"));
    assert!(error_of(&raw(&rig.socket, b"hello\n")).contains("not valid JSON"));
    let e = error_of(&raw(&rig.socket, b"{\"cmd\":\"frobnicate\"}\n"));
    assert!(
        e.contains("frobnicate") && e.contains("requests are"),
        "{e}"
    );
    let e = error_of(&raw(&rig.socket, b"{\"cmd\":\"tc\",\"line\":5}\n"));
    assert!(e.contains("unknown or malformed"), "{e}");
    assert!(error_of(&raw(&rig.socket, b"\xff\xfe\n")).contains("UTF-8"));
    // An oversized line: an error, then the server closes this connection.
    let mut big = vec![b'x'; MAX_LINE + 10];
    big.push(b'\n');
    assert!(error_of(&raw(&rig.socket, &big)).contains("longer than"));

    // A silent client is disconnected after the idle timeout (5 s).
    let silent = UnixStream::connect(&rig.socket).unwrap();
    silent
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let t0 = StdInstant::now();
    let mut line = String::new();
    assert_eq!(BufReader::new(&silent).read_line(&mut line).unwrap(), 0);
    assert!(t0.elapsed() >= Duration::from_secs(4), "{:?}", t0.elapsed());

    // Several requests on one connection, errors in between.
    let mut s = UnixStream::connect(&rig.socket).unwrap();
    s.write_all(b"stats\n{bad\n\n{\"cmd\":\"snapshot\"}\n")
        .unwrap();
    let mut r = BufReader::new(&s);
    let mut lines = Vec::new();
    for _ in 0..3 {
        let mut l = String::new();
        r.read_line(&mut l).unwrap();
        lines.push(serde_json::from_str::<Value>(&l).unwrap());
    }
    assert!(lines[0]["ok"]["bridge"].is_object());
    assert!(lines[1]["error"].is_string());
    assert!(lines[2]["ok"]["bridge"].is_object());

    // Clients that vanish mid-line or before reading the reply.
    for bytes in [
        &b"{\"cmd\":\"sta"[..],
        b"{\"cmd\":\"tc\",\"line\":\"tc qdisc show\"}\n",
    ] {
        let mut s = UnixStream::connect(&rig.socket).unwrap();
        s.write_all(bytes).unwrap();
        drop(s);
    }
    let mut c = rig.client();
    let s = c.call(&Request::Stats).unwrap().unwrap();
    assert_conserved(&s);
    assert!(!rig.datapath.as_ref().unwrap().is_finished());
}

#[test]
fn eight_concurrent_clients_are_all_answered() {
    let rig = Rig::start(pfifo_fast);
    let threads: Vec<_> = (0..8)
        .map(|t| {
            let path = rig.socket.clone();
            std::thread::spawn(move || {
                let mut c = Client::connect(&path).unwrap();
                for i in 0..25 {
                    let req = match (t + i) % 4 {
                        0 => Request::Snapshot,
                        1 => Request::Stats,
                        2 => Request::Tc {
                            line: "tc qdisc show dev right".into(),
                        },
                        _ => Request::Set {
                            args: vec![format!("right.delay={}ms", 1 + t)],
                        },
                    };
                    match c.call(&req).unwrap() {
                        Ok(v) => assert!(!v.is_null()),
                        // The datapath's queue may be momentarily full.
                        Err(e) => assert!(e.message.contains("retry"), "{e}"),
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let mut c = rig.client();
    assert_conserved(&c.call(&Request::Stats).unwrap().unwrap());
}

#[test]
fn replacing_the_root_qdisc_under_load_keeps_conservation() {
    let mut rig = Rig::start(pfifo_fast);
    let stop = Arc::new(AtomicBool::new(false));
    let [mut left, mut right] = rig.take_host();
    let sender = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let f = frame(1000);
            let mut buf = vec![0u8; 2048];
            let (mut sent, mut got) = (0u64, 0u64);
            while !stop.load(Ordering::SeqCst) {
                // Twice the link rate: the qdisc fills and drops.
                for _ in 0..5 {
                    left.send(&f).unwrap();
                    sent += 1;
                }
                while right.recv(&mut buf).unwrap().is_some() {
                    got += 1;
                }
                std::thread::sleep(Duration::from_millis(2));
            }
            std::thread::sleep(Duration::from_millis(300));
            while right.recv(&mut buf).unwrap().is_some() {
                got += 1;
            }
            // The ports stay open until the datapath stops: a port whose
            // other end closes ends the datapath with an error.
            (sent, got, left, right)
        })
    };
    let mut c = rig.client();
    let kinds = [
        "fq_codel",
        "sfq",
        "pfifo limit 50",
        "pfifo_fast",
        "fq_codel limit 100",
    ];
    for k in kinds.iter().cycle().take(15) {
        let r = c
            .call(&Request::Tc {
                line: format!("tc qdisc replace dev left root {k}"),
            })
            .unwrap()
            .unwrap();
        let kind = k.split_whitespace().next().unwrap();
        assert!(r["config"].as_str().unwrap().contains(kind), "{r}");
        assert_conserved(&c.call(&Request::Stats).unwrap().unwrap());
        std::thread::sleep(Duration::from_millis(40));
    }
    stop.store(true, Ordering::SeqCst);
    let (sent, got, _left, _right) = sender.join().unwrap();
    let snap = c.call(&Request::Snapshot).unwrap().unwrap();
    assert_conserved(&snap);
    let fin = n(&snap, "/bridge/paths/0/counters/frames_in");
    let fout = n(&snap, "/bridge/paths/0/counters/frames_out");
    eprintln!("under load: sent {sent}, in {fin}, out {fout}, received {got}");
    assert!(fin > 0 && fout > 0 && fout <= fin);
    assert!(got <= sent);
    let last = rig.datapath.take().unwrap().shutdown().unwrap();
    let p = &last.bridge.paths[0];
    assert_eq!(
        p.counters.frames_in + p.counters.duplicated,
        p.counters.frames_out + p.counters.total_drops() + p.held
    );
}

#[test]
fn a_read_only_server_refuses_commands_and_the_socket_is_exclusive() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ro.sock");
    let server = ControlServer::start(&path, SnapshotReader::default(), None).unwrap();
    let mut c = Client::connect(&path).unwrap();
    let e = c.call(&Request::Stats).unwrap().unwrap_err();
    assert!(e.message.contains("no snapshot yet"), "{e}");
    let e = c
        .call(&Request::Tc {
            line: "tc qdisc show".into(),
        })
        .unwrap()
        .unwrap_err();
    assert!(e.message.contains("read-only"), "{e}");
    assert!(ControlServer::start(&path, SnapshotReader::default(), None).is_err());
    drop(server);
    assert!(!path.exists());
    let e = Client::connect(&path).err().unwrap().to_string();
    assert!(e.contains("is `bloatbox up` running"), "{e}");
}

/// Stopping does not depend on the socket file: removed, or bound again by
/// another daemon, the server still stops at once and leaves the other's
/// file alone.
#[test]
fn the_server_stops_whatever_became_of_its_socket_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("gone.sock");
    let stop_within_5s = |server: ControlServer| {
        let (done, stopped) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            drop(server);
            let _ = done.send(());
        });
        assert!(
            stopped.recv_timeout(Duration::from_secs(5)).is_ok(),
            "the server did not stop"
        );
    };
    let server = ControlServer::start(&path, SnapshotReader::default(), None).unwrap();
    std::fs::remove_file(&path).unwrap();
    stop_within_5s(server);

    let first = ControlServer::start(&path, SnapshotReader::default(), None).unwrap();
    std::fs::remove_file(&path).unwrap();
    let second = ControlServer::start(&path, SnapshotReader::default(), None).unwrap();
    stop_within_5s(first);
    assert!(path.exists(), "the second server's socket stays");
    assert!(Client::connect(&path).is_ok());
    stop_within_5s(second);
    assert!(!path.exists());
}

/// The directories the server made for its socket go when it stops, those
/// still empty, and when it fails to start after making them; one that
/// holds something else stays, with its parents.
#[test]
fn the_directories_made_for_the_socket_go_with_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let top = dir.path().join("a");
    let path = top.join("b/c/ctl.sock");
    let server = ControlServer::start(&path, SnapshotReader::default(), None).unwrap();
    assert!(path.exists());
    drop(server);
    assert!(!top.exists(), "{} left", top.display());
    assert!(dir.path().exists(), "the directory that was there stays");

    let server = ControlServer::start(&path, SnapshotReader::default(), None).unwrap();
    std::fs::write(top.join("b/keep"), "").unwrap();
    drop(server);
    assert!(!top.join("b/c").exists());
    assert!(top.join("b/keep").exists());

    // Too long for a socket address: bind fails after the directories are made.
    let long = dir.path().join("x").join("y".repeat(120)).join("s.sock");
    let e = ControlServer::start(&long, SnapshotReader::default(), None)
        .err()
        .unwrap();
    assert!(e.to_string().contains("binding control socket"), "{e}");
    assert!(!dir.path().join("x").exists());
}

#[test]
fn the_tui_attaches_through_remote_control() {
    use bloatbox::tui::RemoteControl;
    use bloatbox::tui::{Action, Control, LinkField, Preset};
    let rig = Rig::start(pfifo_fast);
    let mut rc = RemoteControl::connect(&rig.socket).unwrap();
    let s = rc.snapshot().expect("a first snapshot");
    assert_eq!(s.bridge.paths[0].params.rate_bytes_ps, 1_250_000);
    assert!(s.bridge.paths[0].qdisc.kind.contains("pfifo_fast"));
    let reply = rc.send(&Action::SetLink {
        dir: bloatbox::dir::Dir::LeftToRight,
        field: LinkField::Rate,
        value: 3_000_000,
    });
    assert_eq!(
        reply.map_err(|e| e.to_string()),
        Ok("rate 24Mbit".to_string())
    );
    let lines = Preset::named("htb")
        .unwrap()
        .tc_lines(bloatbox::dir::Dir::RightToLeft, 1_250_000);
    rc.send(&Action::Tc(lines.join("\n"))).unwrap();
    let err = rc
        .send(&Action::Tc("tc qdisc replace dev left root bogus".into()))
        .unwrap_err()
        .to_string();
    assert!(err.contains("bogus"), "{err}");
    let t0 = StdInstant::now();
    loop {
        if let Some(s) = rc.snapshot() {
            if s.bridge.paths[0].params.rate_bytes_ps == 3_000_000
                && s.bridge.paths[1].qdisc.kind == "htb"
            {
                break;
            }
        }
        assert!(t0.elapsed() < Duration::from_secs(5), "changes not seen");
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(
        rc.send(&Action::Quit).map_err(|e| e.to_string()),
        Ok(String::new())
    );
}

#[test]
fn the_cli_clients_print_the_daemons_replies() {
    let rig = Rig::start(pfifo_fast);
    let config = rig.socket.with_file_name("bloatbox.toml");
    std::fs::write(
        &config,
        format!(
            "[daemon]\ncontrol_socket = {:?}\n",
            rig.socket.display().to_string()
        ),
    )
    .unwrap();
    let run = |args: &[&str]| {
        let out = run_bin(args);
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let cfg = config.to_str().unwrap();
    let (code, out, err) = run(&["tc", "-c", cfg, "-s", "qdisc", "show", "dev", "left"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        out.starts_with("qdisc pfifo_fast") && out.contains(" Sent "),
        "{out}"
    );
    let (code, out, _) = run(&[
        "tc", "-c", cfg, "qdisc", "replace", "dev", "left", "root", "fq_codel",
    ]);
    assert_eq!((code, out.as_str()), (Some(0), ""));
    let (code, _, err) = run(&[
        "tc", "-c", cfg, "qdisc", "replace", "dev", "left", "root", "bogus",
    ]);
    assert_eq!(code, Some(2));
    assert!(err.contains("bogus"), "{err}");
    let (code, out, err) = run(&[
        "set",
        "--json",
        "-c",
        cfg,
        "left.rate=10mbit",
        "right.delay=20ms",
    ]);
    assert_eq!(code, Some(0), "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(n(&v, "/right/delay_ns"), 20_000_000);
    let (code, out, err) = run(&[
        "set", "-c", cfg, "ethtool", "-C", "left", "rx-usecs", "20", "--json",
    ]);
    assert_eq!(code, Some(0), "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(n(&v, "/left/rx_usecs"), 20);
    assert_eq!(v.pointer("/ethtool/0/stdout"), Some(&Value::from("")));
    // Without --json: the link as text, and ethtool's own text.
    let (code, out, err) = run(&["set", "-c", cfg, "left.rate=12mbit"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        out.starts_with("dev left (left→right): rate 12Mbit delay 1ms ")
            && out.contains("\ndev right (right→left): rate ")
            && out.contains(" delay 20ms "),
        "{out}"
    );
    let (code, out, err) = run(&["ethtool", "-c", "left", "-c", cfg]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        out.starts_with("Coalesce parameters for left:\n") && out.contains("\nrx-usecs: 20\n"),
        "{out}"
    );
    let (code, out, err) = run(&[
        "ethtool", "-K", "left", "tso", "off", "gso", "off", "-c", cfg,
    ]);
    assert_eq!((code, out.as_str()), (Some(0), ""), "{err}");
    let (code, out, err) = run(&["set", "-c", cfg, "ethtool", "-k", "left"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        out.starts_with("Features for left:\n")
            && out.contains("\ntcp-segmentation-offload: off\n")
            && out.contains("\ngeneric-segmentation-offload: off\n")
            && out.contains("\ndev left (left→right): rate "),
        "`set ethtool` adds the effective link to ethtool's text: {out}"
    );
    let (code, out, err) = run(&["ethtool", "-K", "right", "lro", "on", "--config", cfg]);
    assert_eq!(code, Some(1), "{out}");
    assert_eq!(out, "Actual changes:\nrx-lro: off [requested on]\n");
    assert_eq!(err.trim(), "Could not change any device features");
    let (code, out, err) = run(&[
        "ethtool",
        "-g",
        "right",
        "--socket",
        rig.socket.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("Current hardware settings:\n"), "{out}");
    let (code, _, err) = run(&["set", "-c", cfg, "left.ring=0"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("ring"), "{err}");
    let (code, out, err) = run(&["stats", "--json", "-c", cfg]);
    assert_eq!(code, Some(0), "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_conserved(&v);
    // The client's options after the command's words, as netdev threads
    // paste them; the socket directly, or from the environment.
    let (code, out, err) = run(&["tc", "-s", "qdisc", "show", "dev", "left", "-c", cfg]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.starts_with("qdisc fq_codel"), "{out}");
    let sock = rig.socket.to_str().unwrap();
    let (code, out, err) = run(&["set", "left.rate=20mbit", "--socket", sock, "--json"]);
    assert_eq!(code, Some(0), "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(n(&v, "/left/rate_bytes_ps"), 2_500_000);
    let out = common::bloatbox()
        .args(["tc", "qdisc", "show", "dev", "left"])
        .env("BLOATBOX_SOCKET", sock)
        .env_remove("BLOATBOX_CONFIG")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("qdisc fq_codel"));
    // Never another daemon silently: a socket the configuration contradicts,
    // or two configurations.
    let (code, _, err) = run(&["stats", "-c", cfg, "--socket", "/run/bloatbox/other.sock"]);
    assert_ne!(code, Some(0));
    assert!(err.contains("which daemon is meant"), "{err}");
    let (code, _, err) = run(&["tc", "-c", cfg, "qdisc", "show", "-c", "other.toml"]);
    assert_ne!(code, Some(0));
    assert!(err.contains("--config given twice"), "{err}");
}

#[test]
fn tx_queues_change_at_run_time_all_or_nothing_and_mq_then_fits() {
    let rig = Rig::start(pfifo_fast);
    let mut c = rig.client();
    let set = |c: &mut Client, args: &[&str]| {
        c.call(&Request::Set {
            args: args.iter().map(|a| a.to_string()).collect(),
        })
        .unwrap()
    };
    let tc = |c: &mut Client, line: &str| -> Result<String, String> {
        c.call(&Request::Tc { line: line.into() })
            .unwrap()
            .map(|v| v["output"].as_str().unwrap().to_string())
            .map_err(|e| e.message)
    };
    // One queue: mq is refused with the way out.
    let e = tc(&mut c, "tc qdisc replace dev left root handle 1: mq").unwrap_err();
    assert!(e.contains("`bloatbox set left.tx_queues=4`"), "{e}");
    // The explicit pfifo_fast root stays when the queues change.
    let eff = set(&mut c, &["left.tx_queues=4"]).unwrap();
    assert_eq!(n(&eff, "/left/tx_queues"), 4);
    assert_eq!(n(&eff, "/right/tx_queues"), 1);
    let show = tc(&mut c, "tc qdisc show dev left").unwrap();
    assert!(show.starts_with("qdisc pfifo_fast 8001: root"), "{show}");
    tc(&mut c, "tc qdisc replace dev left root handle 1: mq").unwrap();
    let show = tc(&mut c, "tc qdisc show dev left").unwrap();
    assert!(show.starts_with("qdisc mq 1: root"), "{show}");
    assert_eq!(show.matches(" parent 1:").count(), 4, "{show}");
    // mq with 4 children refuses 2 queues; the right side's change in the
    // same request is undone.
    let e = set(&mut c, &["right.tx_queues=3", "left.tx_queues=2"]).unwrap_err();
    assert!(
        e.message.contains("dev left") && e.message.contains("replace it first"),
        "{e}"
    );
    // (A query reads what each direction runs with now.)
    let now = set(&mut c, &["ethtool -l left"]).unwrap();
    assert_eq!(n(&now, "/left/tx_queues"), 4);
    assert_eq!(n(&now, "/right/tx_queues"), 1);
    let show = tc(&mut c, "tc qdisc show dev right").unwrap();
    assert!(show.starts_with("qdisc pfifo_fast"), "{show}");
    // ethtool -L says the same through `set`.
    let eff = set(&mut c, &["ethtool -L right tx 2", "ethtool -l right"]).unwrap();
    assert_eq!(n(&eff, "/right/tx_queues"), 2);
    let l = eff["ethtool"][1]["stdout"].as_str().unwrap();
    assert!(
        l.contains("Current hardware settings:\nRX:\t\tn/a\nTX:\t\t2\n"),
        "{l}"
    );
    // The left direction takes its part first; when the right one is
    // refused, the left one is put back.
    tc(&mut c, "tc qdisc replace dev right root handle 2: mq").unwrap();
    let e = set(&mut c, &["left.rate=5mbit", "right.tx_queues=3"]).unwrap_err();
    assert!(
        e.message.contains("dev right") && e.message.contains("replace it first"),
        "{e}"
    );
    let now = set(&mut c, &["ethtool -l left"]).unwrap();
    assert_eq!(n(&now, "/left/rate_bytes_ps"), 1_250_000);
    assert_eq!(n(&now, "/right/tx_queues"), 2);
    let e = set(&mut c, &["left.tx_queues=0"]).unwrap_err();
    assert!(e.message.contains("1..=64"), "{e}");
}

#[test]
fn shape_keys_are_set_all_or_nothing_and_metrics_match_the_snapshot() {
    let mut rig = Rig::start(pfifo_fast);
    let mut c = rig.client();
    let set = |c: &mut Client, args: &[&str]| {
        c.call(&Request::Set {
            args: args.iter().map(|a| a.to_string()).collect(),
        })
        .unwrap()
    };
    // One bad argument: nothing changes (the loss would drop everything).
    let bad = set(&mut c, &["left.loss=100%", "left.seed=x"]).unwrap_err();
    assert!(bad.message.contains("left.seed=x"), "{bad}");
    let eff = set(
        &mut c,
        &["left.loss=100%", "left.seed=9", "right.framing=pppoe"],
    )
    .unwrap();
    assert!(eff["shape"]["left"]["netem"] == "loss 100% seed 9", "{eff}");
    assert_eq!(n(&eff, "/shape/right/framing/overhead"), 8);
    for _ in 0..20 {
        rig.host()[0].send(&frame(500)).unwrap();
    }
    // All twenty are lost on the wire, and counted so.
    let t0 = StdInstant::now();
    let snap = loop {
        let s = c.call(&Request::Snapshot).unwrap().unwrap();
        if s["bridge"]["paths"][0]["drops_by_reason"]["wire_loss"] == 20 {
            break s;
        }
        assert!(t0.elapsed() < Duration::from_secs(5), "{s}");
        std::thread::sleep(Duration::from_millis(5));
    };
    assert_eq!(n(&snap, "/bridge/paths/0/seed"), 9);
    let mut buf = vec![0u8; 2048];
    assert!(rig.host()[1].recv(&mut buf).unwrap().is_none());

    // The metrics text, from the same published snapshot as a raw one.
    let (samples, snap) = (0..100)
        .find_map(|_| {
            let text = c.call(&Request::Metrics).unwrap().unwrap();
            let snap = c.call(&Request::Snapshot).unwrap().unwrap();
            let samples = bloatbox::metrics::parse_samples(text.as_str().unwrap()).unwrap();
            let at = samples
                .iter()
                .find(|(s, _)| s == "bloatbox_snapshot_time_seconds")?
                .1;
            if (at - n(&snap, "/at") as f64 / 1e9).abs() < 1e-6 {
                return Some((samples, snap));
            }
            std::thread::sleep(Duration::from_millis(3));
            None
        })
        .expect("two requests within one snapshot period");
    let value = |series: &str| {
        samples
            .iter()
            .find(|(s, _)| s == series)
            .unwrap_or_else(|| panic!("{series} missing"))
            .1 as u64
    };
    for (i, dir) in ["left_to_right", "right_to_left"].iter().enumerate() {
        let d = format!("direction=\"{dir}\"");
        for field in ["frames_in", "frames_out", "bytes_in", "bytes_out"] {
            assert_eq!(
                value(&format!("bloatbox_{field}_total{{{d}}}")),
                n(&snap, &format!("/bridge/paths/{i}/counters/{field}")),
                "{dir} {field}"
            );
        }
        assert_eq!(
            value(&format!("bloatbox_held_frames{{{d}}}")),
            n(&snap, &format!("/bridge/paths/{i}/held"))
        );
    }
    assert_eq!(
        value("bloatbox_drops_total{direction=\"left_to_right\",reason=\"wire_loss\"}"),
        20
    );
    assert_eq!(
        value("bloatbox_port_rx_frames_total{port=\"left\"}"),
        n(&snap, "/left_port/rx_frames")
    );
}
