//! CAKE's ACK filter (net/sched/sch_cake.c `cake_ack_filter` and its
//! helpers `cake_get_iphdr`, `cake_get_tcphdr`, `cake_get_tcpopt`,
//! `cake_tcph_sack_compare`, `cake_tcph_get_tstamp`, `cake_tcph_may_drop`):
//! when a TCP ACK joins a flow queue, an older pure ACK of the same
//! connection that the new one makes redundant (no data, no flags but ACK
//! and ECE/CWR, only SACK, timestamp and MD5 options, a cumulative ACK and
//! SACK blocks the new one covers, ECE/CWR unchanged) is taken out of the
//! queue: the one nearest the head once a second such ACK is seen, or in
//! aggressive mode the only one when it sits just before the new ACK with
//! the same ECE/CWR bits. Frames are parsed from their bytes at the network
//! offset the classifier found (6in4 included, as the kernel does).

use crate::packet::{Packet, L3};
use std::collections::VecDeque;

const TCP_FLAG_ACK: u32 = 0x0010_0000;
const TCP_FLAG_SYN: u32 = 0x0002_0000;
const TCP_FLAG_ECE_CWR: u32 = 0x00C0_0000;
const TCPOPT_EOL: u8 = 0;
const TCPOPT_NOP: u8 = 1;
const TCPOPT_SACK: u8 = 5;
const TCPOPT_TIMESTAMP: u8 = 8;
const TCPOPT_MD5SIG: u8 = 19;
const TCPOLEN_TIMESTAMP: usize = 10;
const SACK_BLOCK: usize = 8;
const IPPROTO_TCP: u8 = 6;
const IPPROTO_IPV6: u8 = 41;

/// The IP header `cake_get_iphdr` returns and the TCP header
/// `cake_get_tcphdr` returns, as the filter compares them.
struct Ack<'a> {
    /// 4 or 6 (the inner header's for 6in4).
    version: u8,
    /// Source and destination addresses.
    saddr: &'a [u8],
    daddr: &'a [u8],
    /// IPv4 `tot_len - 4 * ihl`, IPv6 `payload_len`.
    seglen: i32,
    /// The TCP header with its options.
    tcp: &'a [u8],
}

fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// `before(a, b)` of include/net/tcp.h: (s32)(a - b) < 0.
fn before(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) < 0
}

/// `after(a, b)`.
fn after(a: u32, b: u32) -> bool {
    before(b, a)
}

impl<'a> Ack<'a> {
    /// `tcp_flag_word`: the header's fourth 32-bit word.
    fn flags(&self) -> u32 {
        be32(self.tcp, 12)
    }

    fn ack_seq(&self) -> u32 {
        be32(self.tcp, 8)
    }

    fn same_ports(&self, other: &Ack) -> bool {
        self.tcp[..4] == other.tcp[..4]
    }

    /// Parses `pkt` as `cake_get_tcphdr` and `cake_get_iphdr` do: None for
    /// anything but TCP over IPv4, IPv6 or 6in4 with a whole header.
    fn parse(pkt: &'a Packet) -> Option<Ack<'a>> {
        let off = match pkt.meta.l3 {
            L3::Ipv4 { offset } | L3::Ipv6 { offset } => usize::from(offset),
            L3::Other => return None,
        };
        let data = &pkt.data;
        let first = *data.get(off)?;
        let (ip, tcp_at) = match first >> 4 {
            4 => {
                let v4 = data.get(off..off + 20)?;
                let ihl = usize::from(v4[0] & 0xF) * 4;
                if v4[9] == IPPROTO_IPV6 {
                    let at = off + ihl;
                    let v6 = data.get(at..at + 40)?;
                    if v6[0] >> 4 != 6 || v6[6] != IPPROTO_TCP {
                        return None;
                    }
                    (v6, at + 40)
                } else if v4[9] == IPPROTO_TCP {
                    (v4, off + ihl)
                } else {
                    return None;
                }
            }
            6 => {
                let v6 = data.get(off..off + 40)?;
                if v6[6] != IPPROTO_TCP {
                    return None;
                }
                (v6, off + 40)
            }
            _ => return None,
        };
        let doff = usize::from(*data.get(tcp_at..tcp_at + 20)?.get(12)? >> 4);
        if doff < 5 {
            return None;
        }
        let tcp = data.get(tcp_at..tcp_at + doff * 4)?;
        let version = ip[0] >> 4;
        Some(if version == 4 {
            let ihl = i32::from(ip[0] & 0xF) * 4;
            Ack {
                version,
                saddr: &ip[12..16],
                daddr: &ip[16..20],
                seglen: i32::from(be16(ip, 2)) - ihl,
                tcp,
            }
        } else {
            Ack {
                version,
                saddr: &ip[8..24],
                daddr: &ip[24..40],
                seglen: i32::from(be16(ip, 4)),
                tcp,
            }
        })
    }

    /// The options as `tcp_parse_options` walks them: (code, value) pairs
    /// up to EOL or a malformed length.
    fn options(&self) -> impl Iterator<Item = (u8, &'a [u8])> {
        let opts = &self.tcp[20..];
        let mut at = 0usize;
        std::iter::from_fn(move || loop {
            let length = opts.len() - at;
            if length == 0 {
                return None;
            }
            let code = opts[at];
            if code == TCPOPT_EOL {
                return None;
            }
            if code == TCPOPT_NOP {
                at += 1;
                continue;
            }
            if length < 2 {
                return None;
            }
            let size = usize::from(opts[at + 1]);
            if size < 2 || size > length {
                return None;
            }
            let value = &opts[at + 2..at + size];
            at += size;
            return Some((code, value));
        })
    }

    /// `cake_get_tcpopt`: the value of the first option `code`.
    fn option(&self, code: u8) -> Option<&'a [u8]> {
        self.options().find(|(c, _)| *c == code).map(|(_, v)| v)
    }

    /// `cake_tcph_get_tstamp`: (TSval, TSecr), 0s without a well-formed
    /// timestamp option.
    fn tstamp(&self) -> (u32, u32) {
        match self.option(TCPOPT_TIMESTAMP) {
            Some(v) if v.len() + 2 == TCPOLEN_TIMESTAMP => (be32(v, 0), be32(v, 4)),
            _ => (0, 0),
        }
    }

    /// `cake_tcph_may_drop`: only ACK set of the flags outside ECE/CWR,
    /// and only MD5, well-formed SACK and a timestamp option no newer than
    /// the new ACK's.
    fn may_drop(&self, tstamp_new: u32, tsecr_new: u32) -> bool {
        if self.flags() & 0x0F3F_0000 != TCP_FLAG_ACK {
            return false;
        }
        // A malformed option ends the walk and the ACK stays droppable.
        self.options().all(|(code, v)| match code {
            TCPOPT_MD5SIG => true,
            TCPOPT_SACK => (v.len() + 2) % 8 == 2,
            TCPOPT_TIMESTAMP => {
                v.len() + 2 == TCPOLEN_TIMESTAMP
                    && !after(be32(v, 0), tstamp_new)
                    && !after(be32(v, 4), tsecr_new)
            }
            _ => false,
        })
    }
}

/// The SACK blocks of an option value, (start, end) each.
fn blocks(v: &[u8]) -> impl Iterator<Item = (u32, u32)> + '_ {
    v.chunks_exact(SACK_BLOCK).map(|b| (be32(b, 0), be32(b, 4)))
}

/// `cake_tcph_sack_compare(a, b)`: -1 when `a` SACKs something `b` does
/// not (or carries a D-SACK), 1 when `b` SACKs more bytes, else 0.
fn sack_compare(a: &Ack, b: &Ack) -> i32 {
    let sa = a.option(TCPOPT_SACK).filter(|v| v.len() >= SACK_BLOCK);
    let sb = b.option(TCPOPT_SACK).filter(|v| v.len() >= SACK_BLOCK);
    let (sa, sb) = match (sa, sb) {
        (Some(_), None) => return -1,
        (None, Some(_)) => return 1,
        (None, None) => return 0,
        (Some(sa), Some(sb)) => (sa, sb),
    };
    let ack_seq_a = a.ack_seq();
    let (mut bytes_a, mut bytes_b) = (0u32, 0u32);
    let mut first = true;
    for (start_a, end_a) in blocks(sa) {
        if before(start_a, ack_seq_a) {
            return -1;
        }
        bytes_a = bytes_a.wrapping_add(end_a.wrapping_sub(start_a));
        let mut found = false;
        for (start_b, end_b) in blocks(sb) {
            if first {
                bytes_b = bytes_b.wrapping_add(end_b.wrapping_sub(start_b));
            }
            if !after(start_b, start_a) && !before(end_b, end_a) {
                found = true;
                if !first {
                    break;
                }
            }
        }
        if !found {
            return -1;
        }
        first = false;
    }
    i32::from(bytes_b > bytes_a)
}

/// `cake_ack_filter` on `queue`, whose newest frame just joined it: the
/// index of the older ACK to take out, if any.
pub fn filter(queue: &VecDeque<Packet>, aggressive: bool) -> Option<usize> {
    if queue.len() < 2 {
        return None;
    }
    let newest = queue.len() - 1;
    let trig = Ack::parse(&queue[newest])?;
    let (tstamp, tsecr) = trig.tstamp();
    if trig.flags() & (TCP_FLAG_ACK | TCP_FLAG_SYN) != TCP_FLAG_ACK {
        return None;
    }
    let mut elig: Option<(usize, u32)> = None;
    let mut num_found = 0;
    for (i, pkt) in queue.iter().enumerate().take(newest) {
        let Some(check) = Ack::parse(pkt) else {
            continue;
        };
        if check.version != trig.version
            || !check.same_ports(&trig)
            || check.saddr != trig.saddr
            || check.daddr != trig.daddr
        {
            continue;
        }
        if let Some((_, flags)) = elig {
            if check.flags() & TCP_FLAG_ECE_CWR != flags {
                elig = None;
                num_found -= 1;
            }
        }
        let hdr_len = check.tcp.len() as i32;
        if !check.may_drop(tstamp, tsecr)
            || check.seglen - hdr_len != 0
            || after(check.ack_seq(), trig.ack_seq())
        {
            continue;
        }
        let cmp = sack_compare(&check, &trig);
        if cmp < 0 || (check.ack_seq() == trig.ack_seq() && cmp == 0) {
            continue;
        }
        if elig.is_none() {
            elig = Some((i, check.flags() & TCP_FLAG_ECE_CWR));
        }
        num_found += 1;
        if num_found > 1 {
            return elig.map(|(i, _)| i);
        }
    }
    match elig {
        Some((i, flags))
            if aggressive && i + 1 == newest && flags == trig.flags() & TCP_FLAG_ECE_CWR =>
        {
            Some(i)
        }
        _ => None,
    }
}
