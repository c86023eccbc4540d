//! The wire: the link as a bump in the wire between two existing
//! interfaces (`bloatbox up --wire LEFT RIGHT`), such as the host ends of
//! the veth pairs containerlab or Mininet leave, each named `NETNS:IFNAME`
//! (a namespace of `ip netns`) or `IFNAME` (bloatbox's own namespace).
//!
//! Each end is an `AF_PACKET` socket (`port::PacketPort`) opened inside the
//! interface's namespace (a thread that `setns`es, `netns::in_netns`),
//! bound to it for every protocol, holding it promiscuous through a
//! `PACKET_MR_PROMISC` membership (the kernel drops it when the socket
//! closes, af_packet.c `packet_flush_mclist`, so an exit of any kind
//! restores the flag), sending past its qdisc (`PACKET_QDISC_BYPASS`,
//! so no qdisc of the interface is touched or used), not reading back its
//! own writes (`PACKET_IGNORE_OUTGOING`) and with a `virtio_net_hdr` on
//! every frame (`PACKET_VNET_HDR`): a veth hands its reader the GSO
//! super-frames and partial checksums of the sender's stack, which then
//! take the datapath's offload path (`packet::gso::VnetHdr`) as a TAP's
//! do, and are written out with their header so the far host's stack
//! completes them. Each socket is batched (`PacketOptions::ring_mtu`, the
//! port's `ring` module): frames are read from a `TPACKET_V2` receive ring
//! without a system call per frame and written with one `sendmmsg` per
//! datapath pass, unless `tap.wire_ring` is false or `RING_ENV` says
//! `off`. No offload setting of an
//! interface is changed; bloatbox creates and removes nothing here.
//!
//! Frames must not leak around the emulated link: the kernel of the
//! interface's namespace also receives every frame the socket reads, and
//! would answer (ARP, ICMP) or forward (IP forwarding, a bridge) what is
//! addressed to it. `Wire::open` therefore refuses an interface that holds
//! an address other than an IPv6 link-local one or is enslaved to a master
//! (a bridge, a bond, a VRF): what is left is frames the stack drops
//! (other hosts' unicast) or ignores (broadcast without an address to
//! answer for). It also refuses an interface that is missing, down, whose
//! MTU is not `tap.mtu`, the same interface on both sides, and one another
//! bloatbox wires already: each wired end holds a lock, a listening
//! abstract Unix socket named after the namespace's inode and the
//! interface's index (`WireLock`), which the kernel frees with the process;
//! the refusal names the holder's pid (`SO_PEERCRED`). An interface deleted
//! or set down while the link runs makes its socket fail with `ENETDOWN`
//! (af_packet.c, `packet_notifier`), which ends the datapath and the run.

use std::fmt;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::MetadataExt;
use std::process::Command;

use nix::sys::socket::{
    bind, connect, getsockopt, listen, socket, sockopt, AddressFamily, Backlog, SockFlag, SockType,
    UnixAddr,
};

use crate::netns::{in_netns, netns_exists, require_privileges, NetnsError};
use crate::port::{PacketOptions, PacketPort};

/// Socket buffers of a wired end: room for a few dozen GSO super-frames
/// (each up to 64 KB, charged at about its truesize) while the datapath
/// thread wakes up, as a TAP's txqueuelen gives.
const WIRE_BUFFER_BYTES: u32 = 4 << 20;

/// How each end's packet socket is opened (see the module doc).
const WIRE_PORT: PacketOptions = PacketOptions {
    promisc: true,
    vnet: true,
    qdisc_bypass: true,
    buffer_bytes: WIRE_BUFFER_BYTES,
    ring_mtu: None,
};

/// The environment variable that, set to `off`, opens the ends without the
/// receive ring and batched sends (`port::PacketOptions::ring_mtu`) whatever
/// `tap.wire_ring` says: one frame per system call, for comparison.
pub const RING_ENV: &str = "BLOATBOX_WIRE_RING";

/// One end of the wire: an interface and the namespace it is in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WireEnd {
    /// The named namespace (`ip netns`), or None for bloatbox's own.
    pub netns: Option<String>,
    /// The interface's name.
    pub ifname: String,
}

impl std::str::FromStr for WireEnd {
    type Err = String;

    /// `NETNS:IFNAME` or `IFNAME`.
    fn from_str(s: &str) -> Result<WireEnd, String> {
        let (netns, ifname) = match s.split_once(':') {
            Some(("", _)) => return Err(format!("{s:?}: the namespace before ':' is empty")),
            Some((ns, dev)) => (Some(ns.to_string()), dev),
            None => (None, s),
        };
        if ifname.is_empty() || ifname.len() > 15 || ifname.contains(['/', ':']) {
            return Err(format!(
                "{s:?}: expected NETNS:IFNAME or IFNAME, an interface name of 1 to 15 bytes \
                 without '/' or ':'"
            ));
        }
        Ok(WireEnd {
            netns,
            ifname: ifname.to_string(),
        })
    }
}

impl fmt::Display for WireEnd {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.netns {
            Some(ns) => write!(f, "interface {:?} in namespace {ns:?}", self.ifname),
            None => write!(f, "interface {:?}", self.ifname),
        }
    }
}

/// The two interfaces the link joins: frames read on `left` go through
/// the left→right direction and leave on `right`, and back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Wire {
    /// Where the left→right direction reads (and right→left writes).
    pub left: WireEnd,
    /// Where the right→left direction reads (and left→right writes).
    pub right: WireEnd,
}

/// What the checks learned of an interface.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Found {
    ifindex: u32,
    /// The inode of its network namespace (nsfs).
    netns_ino: u64,
}

/// Held while the link runs: the ends' locks. The packet sockets (and the
/// promiscuous mode they hold) go with the ports.
#[derive(Debug)]
pub struct WireGuard {
    _locks: [WireLock; 2],
}

/// A wired interface's lock: a listening abstract Unix socket
/// `bloatbox-wire/NSINO/IFINDEX` in bloatbox's own network namespace (so
/// bloatboxes started from one namespace see each other's locks).
#[derive(Debug)]
struct WireLock {
    _fd: OwnedFd,
}

impl WireLock {
    fn take(end: &WireEnd, found: Found) -> Result<WireLock, NetnsError> {
        let name = format!("bloatbox-wire/{}/{}", found.netns_ino, found.ifindex);
        let addr = UnixAddr::new_abstract(name.as_bytes()).map_err(|e| io_err("lock name", e))?;
        let fd = socket(
            AddressFamily::Unix,
            SockType::Stream,
            SockFlag::SOCK_CLOEXEC,
            None,
        )
        .map_err(|e| io_err("creating the wire's lock socket", e))?;
        match bind(fd.as_raw_fd(), &addr) {
            Ok(()) => {}
            Err(nix::errno::Errno::EADDRINUSE) => {
                let holder = holder_pid(&addr)
                    .map(|pid| format!(" (pid {pid})"))
                    .unwrap_or_default();
                return Err(NetnsError::Wire(format!(
                    "{end} is already wired by another bloatbox{holder}; stop that one first"
                )));
            }
            Err(e) => return Err(io_err("binding the wire's lock socket", e)),
        }
        listen(&fd, Backlog::new(4).unwrap_or(Backlog::MAXCONN))
            .map_err(|e| io_err("listening on the wire's lock socket", e))?;
        Ok(WireLock { _fd: fd })
    }
}

/// The pid of the process listening on the lock `addr`, if it answers.
fn holder_pid(addr: &UnixAddr) -> Option<i32> {
    let probe = socket(
        AddressFamily::Unix,
        SockType::Stream,
        SockFlag::SOCK_CLOEXEC,
        None,
    )
    .ok()?;
    connect(probe.as_raw_fd(), addr).ok()?;
    getsockopt(&probe, sockopt::PeerCredentials)
        .ok()
        .map(|c| c.pid())
}

fn io_err(what: &str, e: impl Into<std::io::Error>) -> NetnsError {
    NetnsError::Io {
        what: what.to_string(),
        source: e.into(),
    }
}

impl WireEnd {
    /// `ip [-n NS] -j addr show dev IF`'s record of the interface, or the
    /// refusal naming it.
    fn inspect(&self) -> Result<serde_json::Value, NetnsError> {
        if let Some(ns) = &self.netns {
            if !netns_exists(ns) {
                return Err(NetnsError::Wire(format!(
                    "network namespace {ns:?} does not exist (see `ip netns list`)"
                )));
            }
        }
        let mut cmd = Command::new("ip");
        if let Some(ns) = &self.netns {
            cmd.args(["-n", ns]);
        }
        let out = cmd
            .args(["-d", "-j", "addr", "show", "dev", &self.ifname])
            .output()
            .map_err(|e| io_err("running `ip addr show` (is iproute2 installed?)", e))?;
        if !out.status.success() {
            return Err(NetnsError::Wire(format!("{self} does not exist")));
        }
        let list: serde_json::Value = serde_json::from_slice(&out.stdout)
            .map_err(|e| NetnsError::Wire(format!("reading `ip -j addr show` of {self}: {e}")))?;
        list.get(0)
            .cloned()
            .ok_or_else(|| NetnsError::Wire(format!("{self} does not exist")))
    }

    /// The inode of the end's network namespace.
    fn netns_ino(&self) -> Result<u64, NetnsError> {
        let path = match &self.netns {
            Some(ns) => format!("/run/netns/{ns}"),
            None => "/proc/self/ns/net".to_string(),
        };
        std::fs::metadata(&path)
            .map(|m| m.ino())
            .map_err(|e| io_err(&format!("reading {path}"), e))
    }

    /// Its packet socket, opened in its namespace, batched for frames of
    /// `mtu` if `ring` (and `BLOATBOX_WIRE_RING` is not `off`).
    fn open_port(&self, mtu: u32, ring: bool) -> Result<PacketPort, NetnsError> {
        let batched = ring && std::env::var_os(RING_ENV).is_none_or(|v| v != "off");
        let opts = PacketOptions {
            ring_mtu: batched.then_some(mtu),
            ..WIRE_PORT
        };
        let opened = match &self.netns {
            Some(ns) => in_netns(ns, || PacketPort::bind_with(&self.ifname, opts))
                .map_err(|e| io_err(&format!("entering network namespace {ns:?}"), e))?,
            None => PacketPort::bind_with(&self.ifname, opts),
        };
        opened.map_err(|e| io_err(&format!("opening {self}"), e))
    }
}

/// Why the interface `record` (one entry of `ip -d -j addr show`) cannot
/// be wired with MTU `mtu`, or its index.
fn judge(end: &WireEnd, record: &serde_json::Value, mtu: u32) -> Result<u32, String> {
    let ifindex = record
        .get("ifindex")
        .and_then(|v| v.as_u64())
        .and_then(|v| u32::try_from(v).ok())
        .ok_or_else(|| format!("{end}: `ip` gave no ifindex"))?;
    let flags: Vec<&str> = record
        .get("flags")
        .and_then(|f| f.as_array())
        .map(|a| a.iter().filter_map(|f| f.as_str()).collect())
        .unwrap_or_default();
    if !flags.contains(&"UP") {
        return Err(format!(
            "{end} is down; bring it up first (`ip{} link set {} up`)",
            end.netns
                .as_ref()
                .map(|ns| format!(" -n {ns}"))
                .unwrap_or_default(),
            end.ifname
        ));
    }
    if flags.contains(&"LOOPBACK") {
        return Err(format!("{end} is a loopback device"));
    }
    if let Some(master) = record.get("master").and_then(|m| m.as_str()) {
        return Err(format!(
            "{end} is enslaved to {master:?}: the kernel would forward frames around the \
             emulated link; take it out of {master:?} first"
        ));
    }
    let addrs: Vec<String> = record
        .get("addr_info")
        .and_then(|a| a.as_array())
        .map(|a| {
            a.iter()
                .filter(|i| {
                    !(i.get("family").and_then(|f| f.as_str()) == Some("inet6")
                        && i.get("scope").and_then(|s| s.as_str()) == Some("link"))
                })
                .filter_map(|i| {
                    let local = i.get("local")?.as_str()?;
                    let prefix = i.get("prefixlen")?.as_u64()?;
                    Some(format!("{local}/{prefix}"))
                })
                .collect()
        })
        .unwrap_or_default();
    if !addrs.is_empty() {
        return Err(format!(
            "{end} has addresses ({}): the kernel would answer or route frames that should \
             cross the emulated link; wire an interface without addresses (remove them with \
             `ip addr flush`)",
            addrs.join(", ")
        ));
    }
    match record.get("mtu").and_then(|m| m.as_u64()) {
        Some(m) if m == u64::from(mtu) => Ok(ifindex),
        Some(m) => Err(format!(
            "{end} has MTU {m}, the configuration says tap.mtu = {mtu}; start with \
             --set tap.mtu={m} or set the interface's MTU"
        )),
        None => Err(format!("{end}: `ip` gave no MTU")),
    }
}

impl Wire {
    /// Checks both ends, locks them and opens their packet sockets
    /// (left, right); with MTU `mtu` (`tap.mtu`), batched if `ring`
    /// (`tap.wire_ring`). Nothing of the interfaces changes but the
    /// promiscuous count, which the sockets hold.
    pub fn open(
        &self,
        mtu: u32,
        ring: bool,
    ) -> Result<(WireGuard, PacketPort, PacketPort), NetnsError> {
        require_privileges()?;
        let found = |end: &WireEnd| -> Result<Found, NetnsError> {
            let record = end.inspect()?;
            let ifindex = judge(end, &record, mtu).map_err(NetnsError::Wire)?;
            Ok(Found {
                ifindex,
                netns_ino: end.netns_ino()?,
            })
        };
        let (l, r) = (found(&self.left)?, found(&self.right)?);
        if l == r {
            return Err(NetnsError::Wire(format!(
                "{} is both LEFT and RIGHT: wire two different interfaces",
                self.left
            )));
        }
        let locks = [
            WireLock::take(&self.left, l)?,
            WireLock::take(&self.right, r)?,
        ];
        let left = self.left.open_port(mtu, ring)?;
        let right = self.right.open_port(mtu, ring)?;
        tracing::info!(left = %self.left, right = %self.right, "wired");
        Ok((WireGuard { _locks: locks }, left, right))
    }

    /// The end the datapath calls `left` or `right`.
    pub fn end(&self, port: &str) -> &WireEnd {
        if port == "left" {
            &self.left
        } else {
            &self.right
        }
    }

    /// A named namespace of the wire deleted under the daemon.
    pub fn vanished(&self) -> Option<String> {
        [&self.left, &self.right]
            .into_iter()
            .filter_map(|e| e.netns.as_ref())
            .find(|ns| !netns_exists(ns))
            .map(|ns| format!("network namespace {ns:?} was deleted under the daemon"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn end(s: &str) -> WireEnd {
        s.parse().unwrap()
    }

    #[test]
    fn ends_parse_with_or_without_a_namespace() {
        assert_eq!(
            end("clab-h1:eth1"),
            WireEnd {
                netns: Some("clab-h1".into()),
                ifname: "eth1".into()
            }
        );
        assert_eq!(end("veth0").netns, None);
        for bad in ["", ":eth1", "ns:", "ns:a:b", "ns:a/b", "sixteen-bytes-xx"] {
            assert!(bad.parse::<WireEnd>().is_err(), "{bad:?} accepted");
        }
        assert_eq!(
            end("ns:eth1").to_string(),
            "interface \"eth1\" in namespace \"ns\""
        );
    }

    fn record(extra: serde_json::Value) -> serde_json::Value {
        let mut r = serde_json::json!({
            "ifindex": 7, "ifname": "eth1", "mtu": 1500,
            "flags": ["BROADCAST", "MULTICAST", "UP", "LOWER_UP"],
            "addr_info": [{"family": "inet6", "local": "fe80::1", "prefixlen": 64, "scope": "link"}]
        });
        for (k, v) in extra.as_object().unwrap() {
            r[k] = v.clone();
        }
        r
    }

    #[test]
    fn an_up_interface_without_addresses_or_master_is_accepted() {
        assert_eq!(
            judge(&end("ns:eth1"), &record(serde_json::json!({})), 1500),
            Ok(7)
        );
    }

    #[test]
    fn refusals_name_the_interface_and_say_why() {
        let e = end("ns:eth1");
        let cases = [
            (serde_json::json!({"flags": ["BROADCAST"]}), "is down"),
            (serde_json::json!({"master": "br0"}), "enslaved to \"br0\""),
            (
                serde_json::json!({"addr_info": [{"family": "inet", "local": "10.0.0.1", "prefixlen": 24, "scope": "global"}]}),
                "has addresses (10.0.0.1/24)",
            ),
            (serde_json::json!({"mtu": 9500}), "--set tap.mtu=9500"),
            (serde_json::json!({"flags": ["LOOPBACK", "UP"]}), "loopback"),
        ];
        for (extra, want) in cases {
            let err = judge(&e, &record(extra), 1500).unwrap_err();
            assert!(err.contains(want), "{err}");
            assert!(err.contains("\"eth1\" in namespace \"ns\""), "{err}");
        }
    }
}
