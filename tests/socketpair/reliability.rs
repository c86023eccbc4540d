//! The control socket and the datapath under faults and hostile requests,
//! without root: the real datapath thread over socketpairs and the real
//! `ControlServer` on a temp path.
//!
//! - a failed `set` or `tc` (the live way to change the running
//!   configuration) leaves the parameters and the qdisc tree untouched;
//! - requests naming paths, other devices or namespaces are refused, and
//!   the daemon opens, creates or removes nothing under a watched
//!   directory they name (inotify);
//! - the socket file is mode 0600 and owned by the daemon's user, and a
//!   file at its path that is not a socket is never removed;
//! - a port whose other end closes ends the datapath with an error naming
//!   the port, in bounded time, rather than spinning;
//! - the server's threads and the datapath thread run without any
//!   capability (read from /proc/self/task).

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::time::{Duration, Instant as StdInstant};

use bloatbox::clock::MonotonicClock;
use bloatbox::control::{Client, Request};
use bloatbox::control_server::ControlServer;
use bloatbox::datapath::DatapathError;
use bloatbox::port::FramePort;
use bloatbox::time::Clock;
use proptest::prelude::*;
use serde_json::Value;

use crate::control_rig::Rig;

/// An HTB class of 5 Mbit/s with an fq_codel leaf at the root of `dev`.
fn htb_fq_codel(dev: &str) -> Vec<String> {
    vec![
        format!("tc qdisc replace dev {dev} root handle 1: htb default 10"),
        format!("tc class add dev {dev} parent 1: classid 1:10 htb rate 5mbit"),
        format!("tc qdisc add dev {dev} parent 1:10 handle 10: fq_codel"),
    ]
}

/// Requests of these tests, and what they compare.
impl Rig {
    fn tc(&self, line: &str) -> Result<Value, String> {
        self.call(&Request::Tc {
            line: line.to_string(),
        })
        .map_err(|e| e.message)
    }

    fn set(&self, args: &[&str]) -> Result<Value, String> {
        self.call(&Request::Set {
            args: args.iter().map(|a| a.to_string()).collect(),
        })
        .map_err(|e| e.message)
    }

    /// Both directions' link parameters and full qdisc dumps, from a
    /// snapshot published after any change made before the call.
    fn running_config(&self) -> Value {
        // A snapshot of both directions taken after this call (its time is
        // the older direction's).
        let since = Clock::now(&MonotonicClock).nanos();
        let snap = crate::common::wait_for(Duration::from_secs(5), || {
            let snap = self.call(&Request::Snapshot).unwrap();
            snap["at"]
                .as_u64()
                .is_some_and(|at| at > since)
                .then_some(snap)
        })
        .expect("a snapshot within 5 s");
        let show = |dev: &str| {
            self.tc(&format!("tc -s -d class show dev {dev}"))
                .unwrap_or_else(Value::String)
        };
        serde_json::json!({
            "params": [snap["bridge"]["paths"][0]["params"], snap["bridge"]["paths"][1]["params"]],
            "qdisc": [show("left"), show("right")],
            "qdisc_kind": [snap["bridge"]["paths"][0]["qdisc"]["kind"], snap["bridge"]["paths"][1]["qdisc"]["kind"]],
        })
    }
}

#[test]
fn a_failed_set_or_tc_leaves_the_running_config_untouched() {
    let rig = Rig::start(htb_fq_codel);
    let before = rig.running_config();
    let failing_sets: [&[&str]; 5] = [
        // The first argument is valid: all or nothing.
        &["left.rate=10mbit", "left.rate=fast"],
        &["right.delay=20ms", "middle.delay=1ms"],
        &["left.tx_ring=64", "left.bql=maybe"],
        &["ethtool -C left rx-usecs 20", "ethtool -C left rx-usecs -1"],
        &[],
    ];
    for args in failing_sets {
        let err = rig.set(args).expect_err("must be refused");
        assert!(!err.is_empty());
        assert_eq!(rig.running_config(), before, "after set {args:?}: {err}");
    }
    let failing_tcs = [
        "tc qdisc replace dev left root fq_codel limit lots",
        "tc class add dev left parent 1: classid 1:20 htb rate 0bit",
        "tc qdisc add dev left parent 1:99 handle 20: pfifo",
        "tc qdisc replace dev right root handle 1: nosuchqdisc",
        "tc class del dev right classid 1:99",
        "tc qdisc del dev left parent 1:10 handle 99:",
    ];
    for line in failing_tcs {
        let err = match rig.tc(line) {
            Err(e) => e,
            Ok(v) => panic!("{line:?} was accepted: {v}"),
        };
        assert!(!err.is_empty());
        assert_eq!(rig.running_config(), before, "after {line:?}: {err}");
    }
    // The same path accepts a valid change, so the comparison can fail.
    rig.set(&["left.rate=20mbit"]).unwrap();
    assert_ne!(rig.running_config(), before);
}

/// Requests that name paths, other devices or namespaces: all refused.
fn foreign_requests(canary: &str) -> Vec<Request> {
    let tc = |line: String| Request::Tc { line };
    let set = |args: &[String]| Request::Set {
        args: args.to_vec(),
    };
    vec![
        tc("tc qdisc replace dev lo root pfifo".into()),
        tc("tc qdisc replace dev eth0 root fq_codel".into()),
        tc(format!("tc qdisc replace dev {canary}/x root pfifo")),
        tc(format!(
            "tc qdisc replace dev left root netem delay 1ms 1ms distribution {canary}/normal"
        )),
        tc(format!("tc -batch {canary}/batch")),
        tc(format!("tc -netns {canary} qdisc show dev left")),
        tc("tc -n bb-other qdisc replace dev left root pfifo".into()),
        tc(format!(
            "tc filter add dev left parent 1: bpf obj {canary}/prog.o"
        )),
        tc(format!("tc qdisc show dev left > {canary}/out")),
        set(&[format!("left.trace={canary}/trace")]),
        set(&[format!("{canary}/x.rate=10mbit")]),
        set(&[format!("ethtool -C {canary} rx-usecs 10")]),
        set(&["netns.rate=1mbit".into()]),
    ]
}

#[test]
fn requests_naming_paths_or_other_devices_are_refused_and_touch_nothing() {
    use nix::sys::inotify::{AddWatchFlags, InitFlags, Inotify};
    let rig = Rig::start(htb_fq_codel);
    let canary_dir = rig.dir.path().join("canary");
    std::fs::create_dir(&canary_dir).unwrap();
    for f in ["normal", "batch", "trace", "x", "prog.o"] {
        std::fs::write(canary_dir.join(f), "canary").unwrap();
    }
    let watch = Inotify::init(InitFlags::IN_NONBLOCK).unwrap();
    watch
        .add_watch(&canary_dir, AddWatchFlags::IN_ALL_EVENTS)
        .unwrap();
    let canary = canary_dir.display().to_string();
    let before = rig.running_config();
    for req in foreign_requests(&canary) {
        let reply = rig.call(&req);
        assert!(reply.is_err(), "{req:?} was accepted: {reply:?}");
    }
    assert_eq!(rig.running_config(), before);
    // The watch itself works: touching the directory is seen.
    let events = watch.read_events().unwrap_or_default();
    assert!(events.is_empty(), "the daemon touched {canary}: {events:?}");
    std::fs::read(canary_dir.join("normal")).unwrap();
    assert!(!watch.read_events().unwrap_or_default().is_empty());
}

proptest! {
    #![proptest_config(crate::common::proptest_config(64, file!()))]

    /// Any mix of path-like and device-like words in a tc line or a set
    /// argument: never accepted with a device other than left/right, and
    /// nothing under the watched directory is opened.
    #[test]
    fn random_requests_with_paths_touch_nothing(
        words in proptest::collection::vec(prop_oneof![
            Just("tc".to_string()), Just("qdisc".to_string()), Just("replace".to_string()),
            Just("add".to_string()), Just("dev".to_string()), Just("root".to_string()),
            Just("netem".to_string()), Just("delay".to_string()), Just("1ms".to_string()),
            Just("distribution".to_string()), Just("file".to_string()), Just("PATH".to_string()),
            Just("PATH/x".to_string()), Just("-batch".to_string()), Just("-n".to_string()),
            Just("netns".to_string()), Just("eth0".to_string()), Just("lo".to_string()),
            Just("left.rate=PATH".to_string()), Just("PATH.rate=1mbit".to_string()),
        ], 1..10),
        as_set in any::<bool>(),
    ) {
        use nix::sys::inotify::{AddWatchFlags, InitFlags, Inotify};
        let rig = shared_rig();
        let canary_dir = rig.dir.path().join("fuzz-canary");
        let _ = std::fs::create_dir(&canary_dir);
        std::fs::write(canary_dir.join("x"), "canary").unwrap();
        let watch = Inotify::init(InitFlags::IN_NONBLOCK).unwrap();
        watch.add_watch(&canary_dir, AddWatchFlags::IN_ALL_EVENTS).unwrap();
        let canary = canary_dir.display().to_string();
        let words: Vec<String> = words.iter().map(|w| w.replace("PATH", &canary)).collect();
        let req = if as_set {
            Request::Set { args: words.clone() }
        } else {
            Request::Tc { line: words.join(" ") }
        };
        let reply = rig.call(&req);
        if let Ok(v) = &reply {
            let text = v.to_string();
            prop_assert!(!text.contains(&canary), "{req:?} -> {text}");
            prop_assert!(!words.iter().any(|w| w == "eth0" || w == "lo") || as_set,
                "{req:?} accepted: {text}");
        }
        let events = watch.read_events().unwrap_or_default();
        prop_assert!(events.is_empty(), "{req:?} touched {canary}: {events:?}");
    }
}

/// One rig for all proptest cases (a datapath thread each would be slow).
fn shared_rig() -> &'static Rig {
    static RIG: std::sync::OnceLock<Rig> = std::sync::OnceLock::new();
    RIG.get_or_init(|| Rig::start(htb_fq_codel))
}

#[test]
fn the_socket_is_mode_0600_owned_by_the_daemons_user_and_only_sockets_are_replaced() {
    let rig = Rig::start(htb_fq_codel);
    let meta = std::fs::metadata(&rig.socket).unwrap();
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    assert_eq!(meta.uid(), nix::unistd::geteuid().as_raw());
    // A second server on the same path is refused while this one runs.
    let err = ControlServer::start(&rig.socket, Default::default(), None)
        .err()
        .expect("in use");
    assert!(err.to_string().contains("another bloatbox daemon"), "{err}");

    // A regular file at the path is an error, and stays.
    let file = rig.dir.path().join("not-a-socket");
    std::fs::write(&file, "precious").unwrap();
    let err = ControlServer::start(&file, Default::default(), None)
        .err()
        .expect("not a socket");
    assert!(err.to_string().contains("not a socket"), "{err}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "precious");

    // A stale socket (no daemon) is replaced.
    let stale = rig.dir.path().join("stale.sock");
    drop(std::os::unix::net::UnixListener::bind(&stale).unwrap());
    assert!(stale.exists());
    let server = ControlServer::start(&stale, Default::default(), None).unwrap();
    drop(server);
    assert!(!stale.exists(), "removed when the server stops");
}

#[test]
fn a_port_whose_other_end_closes_ends_the_datapath_with_a_clear_error() {
    for closed in ["left", "right"] {
        let mut rig = Rig::start(htb_fq_codel);
        let [left, right] = rig.take_host();
        let keep = if closed == "left" {
            drop(left);
            right
        } else {
            drop(right);
            left
        };
        let datapath = rig.datapath.take().unwrap();
        let t0 = StdInstant::now();
        while !datapath.is_finished() {
            assert!(
                t0.elapsed() < Duration::from_secs(5),
                "the datapath still runs 5 s after its {closed} port closed"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        let err = datapath.shutdown().expect_err("an error");
        assert!(
            matches!(&err, DatapathError::PortFailed { port, .. } if *port == closed),
            "{err}"
        );
        let msg = err.to_string();
        assert!(msg.contains(&format!("the {closed} port failed")), "{msg}");
        assert!(msg.contains("closed"), "{msg}");
        drop(keep);
    }
}

/// Threads of this process whose name starts with `prefix`, with their
/// effective capability masks.
fn thread_caps(prefix: &str) -> Vec<(String, u64)> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc/self/task").unwrap() {
        let tid: i32 = entry
            .unwrap()
            .file_name()
            .to_str()
            .unwrap()
            .parse()
            .unwrap();
        let comm = std::fs::read_to_string(format!("/proc/self/task/{tid}/comm"))
            .unwrap_or_default()
            .trim()
            .to_string();
        if comm.starts_with(prefix) {
            if let Ok(eff) = bloatbox::privilege::thread_effective(tid) {
                found.push((comm, eff));
            }
        }
    }
    found
}

#[test]
fn datapath_and_control_threads_hold_no_capability() {
    let mut rig = Rig::start(htb_fq_codel);
    // A client connection open, so that a client thread exists too.
    let mut client = Client::connect(&rig.socket).unwrap();
    client.call_ok(&Request::Stats).unwrap();
    // Thread names are cut to 15 bytes: bloatbox-datapa, bloatbox-contro.
    for prefix in ["bloatbox-datapa", "bloatbox-contro"] {
        let threads = thread_caps(prefix);
        assert!(!threads.is_empty(), "no {prefix} thread");
        for (name, eff) in threads {
            assert_eq!(eff, 0, "{name} has CapEff {eff:#x}");
        }
    }
    // Frames still cross with the datapath unprivileged.
    let [left, right] = rig.host();
    let mut frame = vec![0u8; 100];
    frame[12..14].copy_from_slice(&[0x88, 0xb5]);
    left.send(&frame).unwrap();
    let mut buf = [0u8; 2048];
    let t0 = StdInstant::now();
    loop {
        if let Some(n) = right.recv(&mut buf).unwrap() {
            assert_eq!(n, 100);
            break;
        }
        assert!(t0.elapsed() < Duration::from_secs(5), "frame not forwarded");
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// A 1000-byte frame of an unused EtherType, numbered in its payload.
fn numbered_frame(i: u64) -> Vec<u8> {
    let mut f = vec![0u8; 1000];
    f[0..6].copy_from_slice(&[2, 0, 0, 0, 0, 2]);
    f[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 1]);
    f[12..14].copy_from_slice(&[0x88, 0xb5]);
    f[14..22].copy_from_slice(&i.to_be_bytes());
    f
}

/// Reads what the server sends until it closes (bounded by the socket's
/// read timeout): Some(text) once closed, None if it did not close.
fn read_to_close(s: &mut std::os::unix::net::UnixStream) -> Option<String> {
    use std::io::{ErrorKind, Read};
    let mut got = Vec::new();
    match s.read_to_end(&mut got) {
        Ok(_) => {}
        // The server closed while bytes of ours were still unread on its
        // side (a dribbler's last byte): a Unix stream socket then reads
        // as a reset once what the server sent has been read
        // (`unix_release_sock` in net/unix/af_unix.c sets ECONNRESET on
        // the peer). It is closed all the same; `got` holds what it said.
        Err(e) if e.kind() == ErrorKind::ConnectionReset => {}
        Err(_) => return None,
    }
    Some(String::from_utf8_lossy(&got).into_owned())
}

#[test]
fn a_thousand_clients_half_of_them_stalling_leave_the_others_and_the_datapath_unaffected() {
    use std::io::{BufRead, BufReader, Write};
    use std::os::unix::net::UnixStream;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    let mut rig = Rig::start(htb_fq_codel);
    // Frames left→right at 2 Mbit/s (under the 5 Mbit/s class) all the
    // while: every one must come out, in order.
    let stop = Arc::new(AtomicBool::new(false));
    let [mut left, mut right] = rig.take_host();
    let traffic = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut buf = vec![0u8; 2048];
            let (mut sent, mut got) = (0u64, 0u64);
            // Counts what came out, checking each frame's number.
            let mut receive = |right: &mut bloatbox::port::SocketPairPort, got: &mut u64| {
                while let Some(n) = right.recv(&mut buf).unwrap() {
                    assert_eq!(buf[..n], numbered_frame(*got)[..], "frame {got}");
                    *got += 1;
                }
            };
            while !stop.load(Ordering::SeqCst) {
                for _ in 0..5 {
                    left.send(&numbered_frame(sent)).unwrap();
                    sent += 1;
                }
                receive(&mut right, &mut got);
                std::thread::sleep(Duration::from_millis(20));
            }
            let all_out = crate::common::wait_until(Duration::from_secs(10), || {
                receive(&mut right, &mut got);
                got == sent
            });
            assert!(all_out, "{got} of {sent} frames came out");
            // The ports stay open until the datapath stops.
            (sent, left, right)
        })
    };
    // Lateness before the clients: once 200 frames are out.
    let out = |s: &Value| s["bridge"]["paths"][0]["counters"]["frames_out"].as_u64();
    let before = crate::common::wait_for(Duration::from_secs(10), || {
        let snap = rig.call(&Request::Snapshot).unwrap();
        (out(&snap) >= Some(200)).then_some(snap)
    })
    .expect("frames flow");

    let connect = || {
        let s = UnixStream::connect(&rig.socket).unwrap_or_else(|e| {
            panic!("connect: {e} (1000 clients need about 2000 fds: `ulimit -n`)")
        });
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        s
    };
    // 250 silent clients, 250 that send part of a request and then a byte
    // every 100 ms, never a newline.
    let mut silent: Vec<UnixStream> = (0..250).map(|_| connect()).collect();
    let mut dribbling: Vec<UnixStream> = (0..250).map(|_| connect()).collect();
    for s in &mut dribbling {
        s.write_all(b"{\"cmd\":").unwrap();
    }
    let dribbler = {
        let stop = stop.clone();
        let socks: Vec<UnixStream> = dribbling.iter().map(|s| s.try_clone().unwrap()).collect();
        std::thread::spawn(move || {
            while !stop.load(Ordering::SeqCst) {
                for mut s in &socks {
                    let _ = s.write_all(b" ");
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        })
    };
    // 500 clients connected at once next to them, 10 threads of 50: each
    // sends `stats` on every connection, then reads every reply.
    let t0 = StdInstant::now();
    let good: Vec<_> = (0..10)
        .map(|_| {
            let conns: Vec<UnixStream> = (0..50).map(|_| connect()).collect();
            std::thread::spawn(move || {
                let mut slowest = Duration::ZERO;
                for mut c in &conns {
                    c.write_all(b"{\"cmd\":\"stats\"}\n").unwrap();
                }
                for c in &conns {
                    let mut line = String::new();
                    BufReader::new(c).read_line(&mut line).unwrap();
                    let v: Value =
                        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"));
                    assert!(v.get("ok").is_some(), "refused: {line}");
                    slowest = slowest.max(t0.elapsed());
                }
                slowest
            })
        })
        .collect();
    let slowest = good.into_iter().map(|t| t.join().unwrap()).max().unwrap();
    eprintln!("500 clients next to 500 stalled ones: all answered within {slowest:?}");

    // The stalled ones are closed once their line is overdue: the silent
    // ones without a word, the dribbling ones with an error saying why.
    for s in &mut silent {
        assert_eq!(read_to_close(s).as_deref(), Some(""), "silent client");
    }
    for s in &mut dribbling {
        let said = read_to_close(s).expect("a dribbling client is closed");
        assert!(said.contains("not finished within"), "{said:?}");
    }
    stop.store(true, Ordering::SeqCst);
    dribbler.join().unwrap();
    let (sent, _left, _right) = traffic.join().unwrap();
    // A snapshot that has seen every frame leave: none dropped.
    let after = crate::common::wait_for(Duration::from_secs(5), || {
        let snap = rig.call(&Request::Snapshot).unwrap();
        (out(&snap) == Some(sent)).then_some(snap)
    })
    .expect("a snapshot counting every frame out");
    let drops = &after["bridge"]["paths"][0]["counters"]["drops"];
    assert!(drops.as_array().unwrap().iter().all(|d| d == 0), "{drops}");
    let lateness = |s: &Value| s["release_lateness"].clone();
    eprintln!(
        "{sent} frames, all delivered in order; release lateness before {} after {}",
        lateness(&before),
        lateness(&after)
    );
    // And the server takes new clients as before.
    rig.call(&Request::Stats).unwrap();
}
