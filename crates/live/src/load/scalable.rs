//! A scalable (L4S) UDP sender, for kernels without TCP Prague: its
//! datagrams are ECT(1); the receiver reads each one's ECN bits (IP_RECVTOS,
//! `recv_tos`) and answers every datagram with a feedback datagram carrying
//! the counts so far (received, CE-marked: accurate ECN's counters, RFC
//! 9768, over the reverse path); the sender keeps a window `cwnd` in
//! datagrams, paces at cwnd/RTT, and reacts as Prague does (RFC 9331 §4,
//! DCTCP's RFC 8257): once per round trip it updates alpha, the estimate
//! of the marked fraction F (alpha += (F − alpha)/16), and on new marks cuts
//! cwnd to cwnd·(1 − alpha/2), at most once per round trip; a loss halves
//! it (Reno), and without either it grows by one datagram per round trip
//! (after a slow start that ends at the first mark or loss). Its rate and
//! the marks are reported.

use std::io::ErrorKind;
use std::net::{SocketAddr, UdpSocket};
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::Context;

use super::udp_rr::{connected_socket, server_socket};
use super::{enable_recv_tos, join, recv_tos, set_tos, spawn_in, Run, ECT_1};

/// Payload bytes of a data datagram.
pub const DATAGRAM: usize = 1200;
/// Bytes of a feedback datagram: the sequence number it answers, the
/// datagrams received and the CE-marked ones among them (u64 each).
const FEEDBACK: usize = 24;
/// DCTCP's EWMA gain g = 1/16 (RFC 8257 §3.3).
const G: f64 = 1.0 / 16.0;
/// The window never goes below this many datagrams.
const MIN_CWND: f64 = 2.0;
/// The initial window, datagrams.
const INIT_CWND: f64 = 10.0;

/// Prague's congestion state over datagram counts (pure: the caller
/// feeds it each feedback).
#[derive(Clone, Debug)]
pub struct Controller {
    /// Window, datagrams.
    pub cwnd: f64,
    ssthresh: f64,
    /// The estimate of the marked fraction, from 1 (Linux's
    /// `dctcp_alpha_on_init`).
    pub alpha: f64,
    /// The round trip ends when feedback for this sequence number arrives.
    window_end: u64,
    /// No reduction before feedback for this sequence number.
    reduce_after: u64,
    acked_in_window: u64,
    marked_in_window: u64,
    /// The last counts fed (received, CE, lost).
    received: u64,
    ce: u64,
    lost: u64,
    /// Reductions on marks, and on losses.
    pub mark_reductions: u64,
    /// Reductions on losses.
    pub loss_reductions: u64,
}

impl Default for Controller {
    fn default() -> Self {
        Controller {
            cwnd: INIT_CWND,
            ssthresh: f64::MAX,
            alpha: 1.0,
            window_end: 0,
            reduce_after: 0,
            acked_in_window: 0,
            marked_in_window: 0,
            received: 0,
            ce: 0,
            lost: 0,
            mark_reductions: 0,
            loss_reductions: 0,
        }
    }
}

impl Controller {
    /// Feedback for datagram `seq` (`next_seq` is the next one to send):
    /// the receiver's counts of datagrams received and CE-marked so far, and
    /// how many datagrams the sender now counts lost (a gap below `seq`).
    pub fn on_feedback(&mut self, seq: u64, received: u64, ce: u64, lost: u64, next_seq: u64) {
        let acked = received.saturating_sub(self.received);
        let marks = ce.saturating_sub(self.ce);
        let losses = lost.saturating_sub(self.lost);
        self.received = self.received.max(received);
        self.ce = self.ce.max(ce);
        self.lost = self.lost.max(lost);
        self.acked_in_window += acked;
        self.marked_in_window += marks;
        if seq >= self.window_end {
            if self.acked_in_window > 0 {
                let f = (self.marked_in_window as f64 / self.acked_in_window as f64).min(1.0);
                self.alpha += G * (f - self.alpha);
            }
            self.acked_in_window = 0;
            self.marked_in_window = 0;
            self.window_end = next_seq;
        }
        let may_reduce = seq >= self.reduce_after;
        if losses > 0 {
            if may_reduce {
                self.cwnd = (self.cwnd / 2.0).max(MIN_CWND);
                self.ssthresh = self.cwnd;
                self.reduce_after = next_seq;
                self.loss_reductions += 1;
            }
        } else if marks > 0 {
            if may_reduce {
                self.cwnd = (self.cwnd * (1.0 - self.alpha / 2.0)).max(MIN_CWND);
                self.ssthresh = self.cwnd;
                self.reduce_after = next_seq;
                self.mark_reductions += 1;
            }
        } else if self.cwnd < self.ssthresh {
            self.cwnd += acked as f64;
        } else {
            self.cwnd += acked as f64 / self.cwnd;
        }
    }
}

/// What to run: a sender in `client_ns` to a receiver at `server` in
/// `server_ns`.
#[derive(Clone, Debug)]
pub struct ScalableSpec {
    /// The sender's namespace.
    pub client_ns: String,
    /// The receiver's namespace.
    pub server_ns: String,
    /// The receiver's address.
    pub server: SocketAddr,
}

/// What the sender measured.
#[derive(Clone, Debug, Default)]
pub struct ScalableRaw {
    /// Every 100 ms: (s since the start, datagrams the receiver reported,
    /// CE-marked among them).
    pub samples: Vec<(f64, u64, u64)>,
    /// Datagrams sent.
    pub sent: u64,
    /// Reductions on marks.
    pub mark_reductions: u64,
    /// Reductions on losses.
    pub loss_reductions: u64,
    /// alpha at the end.
    pub alpha: f64,
}

/// The summary over the measured part.
#[derive(Clone, Debug, Default)]
pub struct ScalableResult {
    /// Payload delivered, Mbit/s.
    pub mbit: f64,
    /// Datagrams delivered.
    pub delivered: u64,
    /// CE-marked among them.
    pub ce_marks: u64,
    /// Reductions on marks and on losses over the whole run.
    pub mark_reductions: u64,
    /// Reductions on losses over the whole run.
    pub loss_reductions: u64,
    /// alpha at the end.
    pub alpha: f64,
}

impl ScalableRaw {
    /// The numbers from `from` seconds on.
    pub fn summary(&self, from: f64) -> ScalableResult {
        let first = self.samples.iter().find(|s| s.0 >= from);
        let (Some(a), Some(b)) = (first, self.samples.last()) else {
            return ScalableResult::default();
        };
        let span = (b.0 - a.0).max(1e-9);
        let delivered = b.1 - a.1;
        ScalableResult {
            mbit: delivered as f64 * DATAGRAM as f64 * 8.0 / span / 1e6,
            delivered,
            ce_marks: b.2 - a.2,
            mark_reductions: self.mark_reductions,
            loss_reductions: self.loss_reductions,
            alpha: self.alpha,
        }
    }
}

/// The running sender and receiver.
pub struct Scalable {
    receiver: JoinHandle<anyhow::Result<()>>,
    sender: JoinHandle<anyhow::Result<ScalableRaw>>,
}

impl Scalable {
    /// Starts the receiver and the sender; they wait for `run`'s gate.
    pub fn start(spec: &ScalableSpec, run: &Run) -> anyhow::Result<Scalable> {
        let addr = spec.server;
        let (tx, rx) = std::sync::mpsc::channel();
        let receiver = {
            let run = run.clone();
            spawn_in(&spec.server_ns, "scalable-rx", move || {
                let sock = server_socket(addr)?;
                enable_recv_tos(&sock, addr.is_ipv6())?;
                let _ = tx.send(());
                receive(&sock, &run)
            })?
        };
        rx.recv_timeout(Duration::from_secs(5)).map_err(|_| {
            anyhow::anyhow!("the scalable sender's receiver on {addr} did not start")
        })?;
        let sender = {
            let run = run.clone();
            spawn_in(&spec.client_ns, "scalable-tx", move || {
                let sock = sender_socket(addr)?;
                if !run.wait_go() {
                    return Ok(ScalableRaw::default());
                }
                send(&sock, &run)
            })?
        };
        Ok(Scalable { receiver, sender })
    }

    /// Waits for both after the run was stopped.
    pub fn finish(self) -> anyhow::Result<ScalableRaw> {
        let raw = join(self.sender);
        let received = join(self.receiver);
        let raw = raw?;
        received?;
        Ok(raw)
    }
}

/// The sender's socket: connected to `server`, ECT(1), non-blocking reads
/// bounded by a short timeout.
pub fn sender_socket(server: SocketAddr) -> anyhow::Result<UdpSocket> {
    let sock = connected_socket(server)?;
    set_tos(&sock, server.is_ipv6(), ECT_1)?;
    sock.set_nonblocking(true)?;
    Ok(sock)
}

/// The receiver's loop until `run` stops: counts every datagram and its CE
/// marks and answers each with the counts.
pub fn receive(sock: &UdpSocket, run: &Run) -> anyhow::Result<()> {
    let mut buf = [0u8; 2048];
    let (mut received, mut ce) = (0u64, 0u64);
    while !run.stopped() {
        match sock.peek_from(&mut [0u8; 1]).map(|(_, from)| from) {
            Ok(from) => {
                let (n, tos) = recv_tos(sock, &mut buf)?;
                if n < 8 {
                    continue;
                }
                received += 1;
                ce += u64::from(tos.is_some_and(|t| t & 3 == 3));
                let mut fb = [0u8; FEEDBACK];
                fb[..8].copy_from_slice(&buf[..8]);
                fb[8..16].copy_from_slice(&received.to_be_bytes());
                fb[16..].copy_from_slice(&ce.to_be_bytes());
                let _ = sock.send_to(&fb, from);
            }
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e).context("scalable receiver"),
        }
    }
    Ok(())
}

/// The sender's loop until `run` stops.
pub fn send(sock: &UdpSocket, run: &Run) -> anyhow::Result<ScalableRaw> {
    let mut c = Controller::default();
    let mut raw = ScalableRaw::default();
    let mut next_seq = 0u64;
    // Highest sequence number answered, and the send time of each datagram
    // in flight (seq - base).
    let mut highest: Option<u64> = None;
    let mut sent_at: std::collections::VecDeque<f64> = std::collections::VecDeque::new();
    let mut base = 0u64;
    let (mut srtt, mut received, mut ce) = (None::<f64>, 0u64, 0u64);
    let mut next_send = 0.0f64;
    let mut next_sample = 0.0f64;
    let mut payload = [0u8; DATAGRAM];
    let mut fb = [0u8; 64];
    while !run.stopped() {
        let now = run.elapsed();
        if now >= next_sample {
            raw.samples.push((now, received, ce));
            next_sample = now + 0.1;
        }
        // Feedback first.
        while let Ok(n) = sock.recv(&mut fb) {
            if n != FEEDBACK {
                continue;
            }
            let word = |i: usize| u64::from_be_bytes(fb[i..i + 8].try_into().unwrap_or_default());
            let (seq, r, m) = (word(0), word(8), word(16));
            if seq < base || seq >= next_seq {
                continue;
            }
            let rtt = run.elapsed() - sent_at[(seq - base) as usize];
            srtt = Some(srtt.map_or(rtt, |s| 0.875 * s + 0.125 * rtt));
            highest = Some(highest.map_or(seq, |h| h.max(seq)));
            received = received.max(r);
            ce = ce.max(m);
            // Every datagram up to `seq` not counted received is lost.
            let lost = (seq + 1).saturating_sub(received);
            c.on_feedback(seq, received, ce, lost, next_seq);
            while base <= seq {
                sent_at.pop_front();
                base += 1;
            }
        }
        let in_flight = next_seq - highest.map_or(0, |h| h + 1);
        let rtt = srtt.unwrap_or(0.1);
        // A window's worth outstanding a whole RTO (3 RTT or 1 s): restart
        // from the minimum window, as a timeout does.
        let stalled = sent_at
            .front()
            .is_some_and(|&t| now - t > (3.0 * rtt).max(1.0));
        if stalled {
            c.on_feedback(next_seq - 1, received, ce, next_seq - received, next_seq);
            highest = Some(next_seq - 1);
            base = next_seq;
            sent_at.clear();
            continue;
        }
        if (in_flight as f64) < c.cwnd.floor() && now >= next_send {
            payload[..8].copy_from_slice(&next_seq.to_be_bytes());
            match sock.send(&payload) {
                Ok(_) => {
                    sent_at.push_back(now);
                    next_seq += 1;
                    raw.sent += 1;
                    // Pacing at cwnd per RTT.
                    next_send = next_send.max(now - rtt) + rtt / c.cwnd.max(1.0);
                }
                Err(_) => std::thread::sleep(Duration::from_micros(200)),
            }
            continue;
        }
        std::thread::sleep(Duration::from_micros(100));
    }
    raw.mark_reductions = c.mark_reductions;
    raw.loss_reductions = c.loss_reductions;
    raw.alpha = c.alpha;
    Ok(raw)
}

#[cfg(test)]
mod tests {
    use super::super::POLL_INTERVAL;
    use super::*;

    #[test]
    fn alpha_and_one_reduction_per_round_trip() {
        // Round trip 1: ten datagrams (0..10) sent; feedback for each, 3 CE.
        let mut c = Controller {
            ssthresh: 10.0,
            ..Controller::default()
        };
        for seq in 0..10u64 {
            let ce = [2u64, 5, 7].iter().filter(|&&m| m <= seq).count() as u64;
            c.on_feedback(seq, seq + 1, ce, 0, 10);
        }
        // The first feedback closed the initial window (seq 0 alone) with
        // F = 0: alpha = 15/16; the window of seq 1..=10 closes later.
        assert_eq!(c.alpha, 15.0 / 16.0);
        // One reduction at the first mark (seq 2), none at 5 and 7.
        assert_eq!(c.mark_reductions, 1);
        // 1/cwnd per unmarked feedback (seq 0, 1), cwnd·(1 − alpha/2) at
        // seq 2, then 1/cwnd again for seq 3, 4, 6, 8 and 9 (none on the
        // marked 5 and 7).
        let mut expect: f64 = 10.0;
        expect += 1.0 / expect;
        expect += 1.0 / expect;
        expect *= 1.0 - 15.0 / 32.0;
        for _ in 0..5 {
            expect += 1.0 / expect;
        }
        assert!((c.cwnd - expect).abs() < 1e-9, "{} vs {expect}", c.cwnd);
        // Feedback for seq 10 closes the window: 3 marked of 10 acked.
        c.on_feedback(10, 11, 3, 0, 20);
        assert!((c.alpha - (15.0 / 16.0 + (0.3 - 15.0 / 16.0) / 16.0)).abs() < 1e-12);
        // A new mark after the reduction's round trip reduces again.
        c.on_feedback(11, 12, 4, 0, 20);
        assert_eq!(c.mark_reductions, 2);
        // A loss halves (once per round trip).
        let w = c.cwnd;
        c.on_feedback(25, 25, 4, 1, 30);
        assert_eq!(c.cwnd, (w / 2.0).max(MIN_CWND));
        assert_eq!(c.loss_reductions, 1);
    }

    #[test]
    fn over_loopback_it_sends_ect1_and_grows_without_marks() {
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        rx.set_read_timeout(Some(POLL_INTERVAL)).unwrap();
        enable_recv_tos(&rx, false).unwrap();
        let tx = sender_socket(rx.local_addr().unwrap()).unwrap();
        let run = Run::new();
        run.go();
        let (a, b) = (run.clone(), run.clone());
        let receiver = std::thread::spawn(move || receive(&rx, &a));
        let sender = std::thread::spawn(move || send(&tx, &b));
        std::thread::sleep(Duration::from_millis(500));
        run.stop();
        let raw = sender.join().unwrap().unwrap();
        receiver.join().unwrap().unwrap();
        let last = raw.samples.last().unwrap();
        assert!(raw.sent > 100, "{raw:?}");
        assert!(last.1 > 50, "{raw:?}");
        assert_eq!(last.2, 0, "loopback marks nothing");
        assert_eq!(raw.mark_reductions, 0);
    }
}
