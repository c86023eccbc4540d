//! Root-only tests of the library guard `bloatbox::harness::Link`: closures
//! in each namespace exchange traffic through the link, a rate change
//! mid-test shows in the counters, commands get the side's environment, and
//! the guard removes everything on drop, also when a test panics.
//!
//! Root only (`#[ignore = "needs root"]`: a plain `cargo test` reports them
//! as ignored; run without root they fail). Every link has a unique name
//! (the guard's default).

use std::net::{Ipv4Addr, SocketAddr, UdpSocket};
use std::path::Path;
use std::time::Duration;

use bloatbox::dir::Dir;
use bloatbox::harness::{Link, Proto, Side};

use crate::common;
use crate::turn;

fn namespaces_of(link: &Link) -> [String; 2] {
    [Side::Left, Side::Right].map(|s| link.endpoint(s).namespace.clone())
}

fn netns_exists(ns: &str) -> bool {
    Path::new("/run/netns").join(ns).exists()
}

/// The record `bloatbox down --runs` reads, kept while the link is up.
fn run_record(link: &Link) -> std::path::PathBuf {
    Path::new("/run/bloatbox/runs").join(format!("{}.json", link.name()))
}

/// Sends `n` datagrams of `size` bytes from the left namespace to `to`
/// as fast as the socket takes them; returns how many the socket accepted.
fn blast(link: &Link, to: SocketAddr, n: usize, size: usize) -> u64 {
    link.run_in(Side::Left, move || {
        let s = UdpSocket::bind((Ipv4Addr::UNSPECIFIED, 0)).unwrap();
        let payload = vec![0x5a; size];
        // A full TAP queue can show as ENOBUFS: that frame is lost, as on
        // a real host.
        (0..n).filter(|_| s.send_to(&payload, to).is_ok()).count() as u64
    })
    .unwrap()
}

/// Datagrams waiting on `sock` (drained until 300 ms of quiet).
fn drain(sock: &UdpSocket) -> usize {
    sock.set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    let mut buf = [0u8; 2048];
    let mut n = 0;
    while sock.recv(&mut buf).is_ok() {
        n += 1;
    }
    n
}

#[test]
#[ignore = "needs root"]
fn closures_in_each_namespace_and_a_rate_change_mid_test() {
    require!();
    let _turn = turn();
    let link = Link::builder()
        .set("link.delay=2ms")
        .set("link.txqueuelen=20")
        .up()
        .unwrap();
    // A socket made in the right namespace stays there when handed back.
    let server = link
        .run_in(Side::Right, || {
            UdpSocket::bind((Ipv4Addr::UNSPECIFIED, 9000))
        })
        .unwrap()
        .unwrap();
    assert!(link.is_listening(Side::Right, 9000, Proto::Udp).unwrap());
    assert!(!link.is_listening(Side::Left, 9000, Proto::Udp).unwrap());
    let to = SocketAddr::from((link.endpoint(Side::Right).ipv4.addr, 9000));
    // Teach ARP first, so that no datagram waits for resolution.
    let mut sent = blast(&link, to, 1, 10);
    assert_eq!(drain(&server), 1);

    // 100 Mbit/s: a gentle exchange gets through whole.
    let before = link.fresh_stats().unwrap();
    for _ in 0..20 {
        sent += blast(&link, to, 5, 1000);
        std::thread::sleep(Duration::from_millis(2));
    }
    assert_eq!(drain(&server), 100);
    let fast = link.fresh_stats().unwrap();
    let l2r = |s: &bloatbox::datapath::LiveSnapshot| s.bridge.path(Dir::LeftToRight).clone();
    let sent_fast = l2r(&fast).counters.frames_out - l2r(&before).counters.frames_out;
    assert!(sent_fast >= 100, "frames out at 100 Mbit/s: {sent_fast}");
    let drops_before: u64 = l2r(&fast).drops_by_reason.values().sum();

    // 1 Mbit/s with a 20-packet qdisc: 200 datagrams in 30 ms overflow it.
    let p = link
        .set_link(Dir::LeftToRight, |p| p.rate_bytes_ps = 125_000)
        .unwrap();
    assert_eq!(p.rate_bytes_ps, 125_000);
    assert_eq!(
        link.params(Dir::LeftToRight).unwrap().rate_bytes_ps,
        125_000
    );
    assert_eq!(
        link.params(Dir::RightToLeft).unwrap().rate_bytes_ps,
        12_500_000
    );
    // Paced in bursts of 10, so that the TAP's own small queue is never
    // what drops them.
    for _ in 0..20 {
        sent += blast(&link, to, 10, 1000);
        std::thread::sleep(Duration::from_millis(1));
    }
    let slow = link.fresh_stats().unwrap();
    assert_eq!(l2r(&slow).params.rate_bytes_ps, 125_000, "applied");
    let drops_after: u64 = l2r(&slow).drops_by_reason.values().sum();
    assert!(
        drops_after >= drops_before + 100,
        "drops {drops_before} -> {drops_after}: {:?}",
        l2r(&slow).drops_by_reason
    );
    let received = drain(&server);
    assert!(
        received < 100,
        "only what the queue held gets through: {received}"
    );

    // Every datagram the socket accepted reached the datapath, unless the
    // left TAP's own queue dropped it first (the daemon being slow to read
    // on a loaded machine): the kernel counts those.
    let tap_dropped = link
        .tap_tx_dropped(Side::Left)
        .expect("kernel TAP counters");
    let [l, r] = namespaces_of(&link);
    let last = link.shutdown().unwrap();
    let frames_in = last.bridge.path(Dir::LeftToRight).counters.frames_in;
    assert!(
        frames_in + tap_dropped >= sent,
        "{sent} sent, {frames_in} reached the datapath, {tap_dropped} dropped by the TAP"
    );
    assert!(!netns_exists(&l) && !netns_exists(&r));
}

#[test]
#[ignore = "needs root"]
fn commands_get_the_side_environment_and_die_with_the_link() {
    require!();
    let _turn = turn();
    let link = Link::builder().up().unwrap();
    let out = link
        .shell(
            Side::Right,
            "echo $BLOATBOX_SIDE $BLOATBOX_SELF_V4 $BLOATBOX_PEER_V6 $BLOATBOX_NETNS",
        )
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        text.trim(),
        format!(
            "right 10.77.0.2 fd00:77::1 {}",
            link.endpoint(Side::Right).namespace
        )
    );
    let status = link
        .command(Side::Left, "ping")
        .args(["-c", "1", "-W", "2", "10.77.0.2"])
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "ping across the link");
    // A background process left running is killed when the link drops.
    let mut child = link
        .command(Side::Right, "sleep")
        .arg("600")
        .spawn()
        .unwrap();
    let [l, r] = namespaces_of(&link);
    let record = run_record(&link);
    assert!(record.exists(), "{record:?} while up");
    drop(link);
    let status = child.wait().unwrap();
    assert!(!status.success(), "killed: {status:?}");
    assert!(!netns_exists(&l) && !netns_exists(&r));
    assert!(!record.exists(), "{record:?} after drop");
}

#[test]
#[ignore = "needs root"]
fn a_panicking_test_still_removes_the_link() {
    require!();
    let _turn = turn();
    let mut names = None;
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let link = Link::builder().up().unwrap();
        names = Some((namespaces_of(&link), run_record(&link)));
        // A panic inside a closure surfaces in the caller, as assertions do.
        link.run_in(Side::Left, || panic!("assertion inside the namespace"))
            .unwrap();
    }));
    assert!(result.is_err());
    let ([l, r], record) = names.unwrap();
    assert!(!netns_exists(&l) && !netns_exists(&r), "{l} or {r} left");
    assert!(!record.exists(), "{record:?} left");
}

#[test]
#[ignore = "needs root"]
fn two_guards_in_one_process_do_not_collide() {
    require!();
    let _turn = turn();
    let a = Link::builder().up().unwrap();
    let b = Link::builder().set("link.delay=1ms").up().unwrap();
    assert_ne!(a.name(), b.name());
    assert_ne!(a.control_socket(), b.control_socket());
    for link in [&a, &b] {
        let peer = link.endpoint(Side::Right).ipv4.addr;
        let server = link
            .run_in(Side::Right, || std::net::TcpListener::bind("0.0.0.0:7000"))
            .unwrap()
            .unwrap();
        let client = link
            .run_in(Side::Left, move || {
                std::net::TcpStream::connect((peer, 7000))
            })
            .unwrap();
        assert!(client.is_ok(), "{client:?}");
        assert!(server.accept().is_ok());
    }
}

#[test]
#[ignore = "needs root"]
fn the_transit_histogram_of_an_idle_link_starts_at_its_delay() {
    require!();
    let _turn = turn();
    let link = Link::builder()
        .set("link.delay=10ms")
        .set("link.rate=100mbit")
        .up()
        .unwrap();
    let peer = link.endpoint(Side::Right).ipv4.addr.to_string();
    let status = link
        .command(Side::Left, "ping")
        .args(["-c", "5", "-i", "0.05", "-W", "2", &peer])
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "ping across the link");
    let last = link.shutdown().unwrap();
    for dir in Dir::ALL {
        let p = last.bridge.path(dir);
        let t = &p.transit;
        // Echo requests one way, replies the other, plus ARP.
        assert!(t.count >= 5, "{dir:?}: {t:?}");
        assert_eq!(t.count, p.counters.frames_out, "{dir:?}");
        // Idle: 10 ms plus at most one full frame's serialization (1514 B
        // at 100 Mbit/s = 121 us); the minimum is exact.
        assert!(t.min_ns > 10_000_000, "{dir:?}: {t:?}");
        assert!(t.min_ns <= 10_122_000, "{dir:?}: {t:?}");
        assert!(t.p50_ns >= t.min_ns && t.max_ns >= t.p999_ns);
    }
}

/// The guard keeps no copy of the link parameters: a change made through
/// the control socket is what `params` reports, and a later `set_link`
/// edits the parameters in force instead of writing back a stale copy.
#[test]
#[ignore = "needs root"]
fn a_change_through_the_control_socket_is_seen_and_kept() {
    require!();
    let _turn = turn();
    let link = Link::builder().set("link.delay=1ms").up().unwrap();
    let mut client = bloatbox::control::Client::connect(link.control_socket()).unwrap();
    client
        .call_ok(&bloatbox::control::proto::Request::Set {
            args: vec!["left.delay=7ms".into()],
        })
        .unwrap();
    assert_eq!(link.params(Dir::LeftToRight).unwrap().delay_ns, 7_000_000);
    assert_eq!(link.params(Dir::RightToLeft).unwrap().delay_ns, 1_000_000);
    let p = link
        .set_link(Dir::LeftToRight, |p| p.rate_bytes_ps = 125_000)
        .unwrap();
    assert_eq!((p.rate_bytes_ps, p.delay_ns), (125_000, 7_000_000));
    let now = link.params(Dir::LeftToRight).unwrap();
    assert_eq!((now.rate_bytes_ps, now.delay_ns), (125_000, 7_000_000));
}
