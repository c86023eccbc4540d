//! Rootless links: the two sides of the emulated link in anonymous network
//! namespaces owned by a user namespace of this process, so that an
//! unprivileged user can run `bloatbox run --rootless`.
//!
//! `enter_user_namespace` unshares a user namespace in which this process is
//! uid 0 (its own uid and gid mapped, `setgroups` denied), which gives it
//! CAP_SYS_ADMIN and CAP_NET_ADMIN over the namespaces it creates next. It
//! must run while the process has one thread. `up` then creates a network
//! namespace per side without names or bind mounts (a short-lived thread
//! unshares one and keeps `/proc/thread-self/ns/net` open: `AnonNetns`) and
//! the port of each side, by one of two backends:
//!
//! - `Backend::Tap`: a TAP created inside the side's namespace (TUNSETIFF
//!   from a thread that entered it). Needs /dev/net/tun to be openable by
//!   the user (mode 0666 on most distributions).
//! - `Backend::Veth`: a veth pair from a third, "hub" namespace into the
//!   side's namespace; the datapath reads and writes the hub end through an
//!   `AF_PACKET` socket (`port::PacketPort`). Needs no device node. The side
//!   end has TX checksum offload off (so TSO too): frames leave it with
//!   their checksums computed, as they would from a TAP.
//!
//! Addresses, MTU, MAC and txqueuelen are set as `Topology::up` sets them,
//! by `ip` run inside the namespace (txqueuelen by netlink: the ioctl for it
//! needs CAP_NET_ADMIN in the initial user namespace). The link counts as up
//! once every device has its carrier and qdisc (until the kernel attaches
//! the qdisc, frames sent are dropped). Nothing is named in /run/netns: the
//! namespaces live as long as the descriptors in `Namespaces` (or a process
//! inside them), so everything disappears when the process exits, and
//! `bloatbox exec`/`down` cannot reach them from outside.

use std::fs::File;
use std::io;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use nix::sched::CloneFlags;

use crate::netns::{run_ip, NetnsError, Side, SideSpec, Topology};
use crate::port::{FramePort, PacketPort, TapPort};

/// How a rootless link makes its ports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Backend {
    /// TAP when /dev/net/tun opens for this user, else veth.
    #[default]
    Auto,
    /// TAP devices (/dev/net/tun must be readable and writable by the user).
    Tap,
    /// veth pairs read and written through AF_PACKET sockets.
    Veth,
}

impl Backend {
    /// The backend `Auto` stands for on this machine; the others as they are.
    pub fn resolve(self) -> Backend {
        match self {
            Backend::Auto if tun_is_usable() => Backend::Tap,
            Backend::Auto => Backend::Veth,
            other => other,
        }
    }
}

const TUN_DEVICE: &str = "/dev/net/tun";
/// Longest wait for a device's carrier and qdisc after `ip link set up`.
const READY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(3);

/// /dev/net/tun opens for reading and writing.
pub fn tun_is_usable() -> bool {
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(TUN_DEVICE)
        .is_ok()
}

fn rootless_err(msg: String) -> NetnsError {
    NetnsError::Rootless(msg)
}

fn io_err(what: impl Into<String>) -> impl FnOnce(io::Error) -> NetnsError {
    let what = what.into();
    move |source| NetnsError::Io { what, source }
}

/// Makes this process uid 0 of a new user namespace (its uid and gid
/// mapped, supplementary groups denied), with every capability over the
/// namespaces it creates from now on. Must be called while the process has
/// a single thread.
pub fn enter_user_namespace() -> Result<(), NetnsError> {
    let uid = nix::unistd::getuid();
    let gid = nix::unistd::getgid();
    nix::sched::unshare(CloneFlags::CLONE_NEWUSER).map_err(|e| rootless_err(explain_unshare(e)))?;
    let write = |path: &str, text: String| {
        std::fs::write(path, &text).map_err(io_err(format!("writing {text:?} to {path}")))
    };
    write("/proc/self/setgroups", "deny".into())?;
    write("/proc/self/uid_map", format!("0 {uid} 1\n"))?;
    write("/proc/self/gid_map", format!("0 {gid} 1\n"))?;
    tracing::debug!(%uid, %gid, "entered a user namespace as uid 0");
    Ok(())
}

/// Why `unshare(CLONE_NEWUSER)` failed, and what to do about it.
fn explain_unshare(e: nix::Error) -> String {
    let sysctl = |path: &str| {
        std::fs::read_to_string(path)
            .map(|v| format!("{path} = {}", v.trim()))
            .unwrap_or_else(|_| format!("{path} absent"))
    };
    let limits = [
        "/proc/sys/user/max_user_namespaces",
        "/proc/sys/kernel/unprivileged_userns_clone",
        "/proc/sys/kernel/apparmor_restrict_unprivileged_userns",
    ]
    .map(sysctl)
    .join(", ");
    match e {
        nix::Error::EINVAL => "cannot create a user namespace in a process with several threads: \
             call rootless::enter_user_namespace first thing in main, or start the program under \
             `unshare -Ur`"
            .to_string(),
        _ => format!(
            "creating a user namespace: {e}; this machine does not let this user create one \
             ({limits}); allow it (e.g. sysctl user.max_user_namespaces=10000, \
             kernel.unprivileged_userns_clone=1 or kernel.apparmor_restrict_unprivileged_userns=0) \
             or run bloatbox as root without --rootless"
        ),
    }
}

/// Enters a user namespace unless this process can already create and
/// configure network namespaces (root, or uid 0 of a user namespace).
pub fn ensure_namespace_admin() -> Result<(), NetnsError> {
    if crate::netns::require_privileges().is_ok() {
        return Ok(());
    }
    enter_user_namespace()?;
    crate::netns::require_privileges()
}

/// A network namespace without a name: it lives while this descriptor (or
/// a process inside it) does.
#[derive(Debug)]
pub struct AnonNetns {
    fd: OwnedFd,
    inode: u64,
}

impl AnonNetns {
    /// A fresh, empty network namespace (only `lo`, down).
    pub fn new() -> Result<AnonNetns, NetnsError> {
        let made = std::thread::scope(|s| {
            s.spawn(|| -> io::Result<OwnedFd> {
                nix::sched::unshare(CloneFlags::CLONE_NEWNET)?;
                Ok(File::open("/proc/thread-self/ns/net")?.into())
            })
            .join()
        });
        let fd = match made {
            Ok(r) => r.map_err(io_err(
                "creating a network namespace (unshare CLONE_NEWNET)",
            ))?,
            Err(_) => {
                return Err(rootless_err(
                    "the thread creating a network namespace panicked".into(),
                ))
            }
        };
        let inode = nix::sys::stat::fstat(fd.as_raw_fd())
            .map_err(|e| io_err("fstat of a network namespace")(e.into()))?
            .st_ino;
        Ok(AnonNetns { fd, inode })
    }

    /// The namespace's inode, as `/proc/PID/ns/net` shows it (`net:[INODE]`).
    pub fn inode(&self) -> u64 {
        self.inode
    }

    /// The namespace descriptor (for `setns`).
    pub fn fd(&self) -> &OwnedFd {
        &self.fd
    }

    /// Runs `f` on a new thread inside this namespace and returns its
    /// result; sockets and devices it creates belong to the namespace. A
    /// panic in `f` is resumed in the caller.
    pub fn enter<T, F>(&self, f: F) -> io::Result<T>
    where
        T: Send,
        F: FnOnce() -> T + Send,
    {
        let fd = self.fd.as_fd();
        std::thread::scope(|s| {
            let handle = s.spawn(move || {
                nix::sched::setns(fd, CloneFlags::CLONE_NEWNET).map_err(io::Error::from)?;
                Ok(f())
            });
            match handle.join() {
                Ok(result) => result,
                Err(panic) => std::panic::resume_unwind(panic),
            }
        })
    }

    /// `program`, to be run inside this namespace: the child enters it
    /// (setns) before exec.
    #[allow(unsafe_code)]
    pub fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> io::Result<Command> {
        let fd = self.fd.try_clone()?;
        let mut cmd = Command::new(program);
        // SAFETY: only setns, async-signal-safe, between fork and exec; the
        // descriptor is close-on-exec.
        unsafe {
            cmd.pre_exec(move || {
                nix::sched::setns(&fd, CloneFlags::CLONE_NEWNET).map_err(io::Error::from)
            });
        }
        Ok(cmd)
    }

    /// Runs `ip ARGS...` inside this namespace.
    fn ip(&self, args: &[&str]) -> Result<(), NetnsError> {
        let cmd = self
            .command("ip")
            .map_err(io_err("duplicating a namespace descriptor"))?;
        run_ip(cmd, args)
    }

    /// Waits until `dev` has its carrier and its qdisc: the kernel attaches
    /// the qdisc asynchronously once the carrier is on (for a veth, when both
    /// ends are up), and until then the `noop` qdisc drops every frame sent.
    fn wait_until_ready(&self, dev: &str) -> Result<(), NetnsError> {
        let deadline = std::time::Instant::now() + READY_TIMEOUT;
        loop {
            let out = self
                .command("ip")
                .map_err(io_err("duplicating a namespace descriptor"))?
                .args(["-o", "link", "show", "dev", dev])
                .output()
                .map_err(io_err(format!("running `ip -o link show dev {dev}`")))?;
            let text = String::from_utf8_lossy(&out.stdout);
            if text.contains("LOWER_UP") && !text.contains("qdisc noop") {
                return Ok(());
            }
            if std::time::Instant::now() >= deadline {
                return Err(rootless_err(format!(
                    "{dev} has no carrier or qdisc {READY_TIMEOUT:?} after it was set up: {}",
                    text.trim()
                )));
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }

    /// A path naming this namespace to a child process (`ip ... netns PATH`).
    fn proc_path(&self) -> String {
        format!("/proc/{}/fd/{}", std::process::id(), self.fd.as_raw_fd())
    }

    /// Processes (other than this one) whose network namespace this is.
    pub fn pids(&self) -> Vec<i32> {
        let me = std::process::id() as i32;
        let want = format!("net:[{}]", self.inode);
        let Ok(dir) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
            .filter(|&pid| pid != me)
            .filter(|pid| {
                std::fs::read_link(format!("/proc/{pid}/ns/net"))
                    .is_ok_and(|l| l.as_os_str() == want.as_str())
            })
            .collect()
    }
}

/// The namespaces of a rootless link; dropping them (with the ports and
/// every process inside gone) frees the namespaces and their devices.
#[derive(Debug)]
pub struct Namespaces {
    backend: Backend,
    left: AnonNetns,
    right: AnonNetns,
    /// The veth backend's namespace holding the datapath's ends.
    hub: Option<AnonNetns>,
}

impl Namespaces {
    /// The backend in use (`Tap` or `Veth`, never `Auto`).
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// The anonymous namespace of `side`.
    pub fn side(&self, side: Side) -> &AnonNetns {
        match side {
            Side::Left => &self.left,
            Side::Right => &self.right,
        }
    }
}

/// A rootless link's namespaces and its (left, right) ports.
pub type LinkPorts = (Namespaces, Box<dyn FramePort>, Box<dyn FramePort>);

/// Creates both sides of `topo` in anonymous namespaces with ports of
/// `backend`. The namespace names of `topo` are not used (only its
/// interface names, MTU, MAC, txqueuelen and addresses). Needs
/// CAP_SYS_ADMIN and CAP_NET_ADMIN in this process's user namespace (see
/// `ensure_namespace_admin`). On error everything made so far goes away.
pub fn up(topo: &Topology, backend: Backend) -> Result<LinkPorts, NetnsError> {
    crate::netns::require_privileges().map_err(|e| {
        rootless_err(format!(
            "{e}; a rootless link needs a user namespace first (bloatbox run --rootless \
             enters one; a test binary can run under `unshare -Ur`)"
        ))
    })?;
    let backend = backend.resolve();
    if backend == Backend::Tap && !tun_is_usable() {
        return Err(rootless_err(format!(
            "{TUN_DEVICE} does not open for reading and writing for uid {} ({}): use \
             --rootless=veth, or make it mode 0666 as most distributions do",
            outside_uid(),
            describe_mode(Path::new(TUN_DEVICE)),
        )));
    }
    let hub = match backend {
        Backend::Veth => Some(AnonNetns::new()?),
        _ => None,
    };
    let ns = Namespaces {
        backend,
        left: AnonNetns::new()?,
        right: AnonNetns::new()?,
        hub,
    };
    let left = set_up_side(&topo.left, &ns.left, ns.hub.as_ref())?;
    let right = set_up_side(&topo.right, &ns.right, ns.hub.as_ref())?;
    tracing::info!(?backend, "rootless link ready");
    Ok((ns, left, right))
}

fn describe_mode(path: &Path) -> String {
    match std::fs::metadata(path) {
        Ok(m) => format!("mode {:o}", m.permissions().mode() & 0o7777),
        Err(e) => e.to_string(),
    }
}

/// One side: its port (TAP inside `ns`, or veth from `hub` into `ns`), then
/// `lo` up, addresses and the device up, as `netns::Topology::up` does.
fn set_up_side(
    side: &SideSpec,
    ns: &AnonNetns,
    hub: Option<&AnonNetns>,
) -> Result<Box<dyn FramePort>, NetnsError> {
    let spec = &side.tap;
    let dev = spec.name.as_str();
    let port: Box<dyn FramePort> = match hub {
        None => {
            let port = ns
                .enter(|| TapPort::create_in_user_namespace(spec))
                .and_then(|r| r)
                .map_err(io_err(format!("creating TAP {dev:?}")))?;
            ns.ip(&[
                "link",
                "set",
                dev,
                "txqueuelen",
                &spec.txqueuelen.to_string(),
            ])?;
            Box::new(port)
        }
        Some(hub) => {
            let mtu = spec.mtu.to_string();
            let mac = spec
                .mac
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect::<Vec<_>>()
                .join(":");
            let qlen = spec.txqueuelen.to_string();
            let target = ns.proc_path();
            // The hub end has the same name: it lives in another namespace.
            hub.ip(&[
                "link",
                "add",
                dev,
                "mtu",
                &mtu,
                "type",
                "veth",
                "peer",
                "name",
                dev,
                "address",
                &mac,
                "mtu",
                &mtu,
                "txqueuelen",
                &qlen,
                "netns",
                &target,
            ])?;
            ns.enter(|| disable_tx_checksum(dev))
                .and_then(|r| r)
                .map_err(io_err(format!(
                    "turning TX checksum offload off on {dev:?}"
                )))?;
            // No IPv6 on the hub end: it would send its own neighbour
            // discovery straight to the side, past the emulated link.
            hub.enter(|| {
                std::fs::write(format!("/proc/sys/net/ipv6/conf/{dev}/disable_ipv6"), "1")
            })
            .and_then(|r| r)
            .or_else(|e| match e.kind() {
                io::ErrorKind::NotFound => Ok(()), // no IPv6 in this kernel
                _ => Err(e),
            })
            .map_err(io_err(format!("disabling IPv6 on the hub end of {dev:?}")))?;
            hub.ip(&["link", "set", dev, "up"])?;
            Box::new(
                hub.enter(|| PacketPort::bind(dev))
                    .and_then(|r| r)
                    .map_err(io_err(format!("opening the hub end of {dev:?}")))?,
            )
        }
    };
    ns.ip(&["link", "set", "lo", "up"])?;
    for (addr, prefix) in &side.addrs {
        let cidr = format!("{addr}/{prefix}");
        match addr {
            std::net::IpAddr::V4(_) => ns.ip(&["addr", "add", &cidr, "dev", dev])?,
            std::net::IpAddr::V6(_) => ns.ip(&["addr", "add", &cidr, "dev", dev, "nodad"])?,
        }
    }
    ns.ip(&["link", "set", dev, "up"])?;
    ns.wait_until_ready(dev)?;
    if let Some(hub) = hub {
        hub.wait_until_ready(dev)?;
    }
    Ok(port)
}

/// `SIOCETHTOOL` command turning TX checksum offload on or off
/// (linux/ethtool.h); with it off the kernel drops TSO too.
const ETHTOOL_STXCSUM: u32 = 0x17;

/// `struct ethtool_value` (linux/ethtool.h).
#[repr(C)]
struct EthtoolValue {
    cmd: u32,
    data: u32,
}

/// Turns TX checksum offload (and with it TSO) off on `ifname` of this
/// thread's namespace, so frames leave it complete, with their checksums.
#[allow(unsafe_code)]
fn disable_tx_checksum(ifname: &str) -> io::Result<()> {
    use nix::sys::socket::{socket, AddressFamily, SockFlag, SockType};
    let sock = socket(
        AddressFamily::Inet,
        SockType::Datagram,
        SockFlag::SOCK_CLOEXEC,
        None,
    )?;
    let mut value = EthtoolValue {
        cmd: ETHTOOL_STXCSUM,
        data: 0,
    };
    // SAFETY: all-zero is a valid ifreq.
    let mut ifr: libc::ifreq = unsafe { std::mem::zeroed() };
    if ifname.len() >= ifr.ifr_name.len() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("interface name {ifname:?} is longer than 15 bytes"),
        ));
    }
    for (dst, src) in ifr.ifr_name.iter_mut().zip(ifname.bytes()) {
        *dst = src as libc::c_char;
    }
    ifr.ifr_ifru.ifru_data = (&mut value as *mut EthtoolValue).cast();
    // SAFETY: `ifr` points at `value`, both live across the call, as
    // SIOCETHTOOL expects.
    let rc = unsafe { libc::ioctl(sock.as_raw_fd(), libc::SIOCETHTOOL, &mut ifr) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The uid this process has outside its user namespace (its own uid when
/// not in one), from `/proc/self/uid_map`.
pub fn outside_uid() -> u32 {
    let me = nix::unistd::geteuid().as_raw();
    std::fs::read_to_string("/proc/self/uid_map")
        .ok()
        .and_then(|map| {
            map.lines().find_map(|line| {
                let v: Vec<u64> = line
                    .split_whitespace()
                    .filter_map(|f| f.parse().ok())
                    .collect();
                match v[..] {
                    [inside, outside, count]
                        if inside <= u64::from(me) && u64::from(me) < inside + count =>
                    {
                        u32::try_from(outside + (u64::from(me) - inside)).ok()
                    }
                    _ => None,
                }
            })
        })
        .unwrap_or(me)
}

/// Where a rootless link's control socket goes: `$XDG_RUNTIME_DIR/bloatbox`
/// when that is a writable directory, else `<tmp>/bloatbox-UID` (UID as
/// outside any user namespace).
pub fn control_socket_dir() -> PathBuf {
    let writable =
        |p: &Path| nix::unistd::access(p, nix::unistd::AccessFlags::W_OK).is_ok() && p.is_dir();
    match std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from) {
        Some(dir) if writable(&dir) => dir.join("bloatbox"),
        _ => std::env::temp_dir().join(format!("bloatbox-{}", outside_uid())),
    }
}

/// Creates `dir` with mode 0700, or checks that the existing one belongs to
/// this user and is closed to others (a shared /tmp holds it).
pub fn prepare_private_dir(dir: &Path) -> Result<(), NetnsError> {
    match std::fs::create_dir(dir) {
        Ok(()) => std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
            .map_err(io_err(format!("setting mode 0700 on {}", dir.display()))),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            let m = std::fs::symlink_metadata(dir)
                .map_err(io_err(format!("reading {}", dir.display())))?;
            let me = nix::unistd::geteuid().as_raw();
            if !m.is_dir() || m.uid() != me || m.mode() & 0o077 != 0 {
                return Err(rootless_err(format!(
                    "{} must be a directory of uid {} with mode 0700 (it has uid {}, mode {:o}): \
                     remove it or set daemon.control_socket elsewhere",
                    dir.display(),
                    outside_uid(),
                    m.uid(),
                    m.mode() & 0o7777
                )));
            }
            Ok(())
        }
        Err(e) => Err(io_err(format!("creating {}", dir.display()))(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn explicit_backends_resolve_to_themselves() {
        assert_eq!(Backend::Tap.resolve(), Backend::Tap);
        assert_eq!(Backend::Veth.resolve(), Backend::Veth);
        let auto = Backend::Auto.resolve();
        assert_eq!(auto == Backend::Tap, tun_is_usable(), "{auto:?}");
    }

    #[test]
    fn outside_uid_of_the_initial_namespace_is_the_uid() {
        // In the initial user namespace the map is the identity.
        let map = std::fs::read_to_string("/proc/self/uid_map").unwrap();
        if map.split_whitespace().take(2).eq(["0", "0"]) {
            assert_eq!(outside_uid(), nix::unistd::geteuid().as_raw());
        }
    }

    #[test]
    fn private_dir_is_created_closed_and_a_foreign_one_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("bb");
        prepare_private_dir(&dir).unwrap();
        let mode = std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700);
        prepare_private_dir(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
        let e = prepare_private_dir(&dir).unwrap_err().to_string();
        assert!(e.contains("mode 0700") && e.contains("777"), "{e}");
    }

    #[test]
    fn unshare_errors_say_what_to_do() {
        assert!(explain_unshare(nix::Error::EINVAL).contains("several threads"));
        let e = explain_unshare(nix::Error::EPERM);
        assert!(e.contains("max_user_namespaces"), "{e}");
    }

    #[test]
    fn a_process_with_threads_is_told_to_enter_first() {
        // Kept from ever succeeding: with one thread it would move the
        // whole test process into a user namespace.
        let spare = std::thread::spawn(|| std::thread::sleep(std::time::Duration::from_secs(1)));
        let e = enter_user_namespace().unwrap_err().to_string();
        assert!(
            e.contains("several threads") && e.contains("unshare -Ur"),
            "{e}"
        );
        spare.join().unwrap();
    }

    #[test]
    #[ignore = "needs root"]
    fn anonymous_namespace_runs_code_and_ip_inside_and_vanishes() {
        assert!(
            crate::netns::require_privileges().is_ok(),
            "needs CAP_SYS_ADMIN and CAP_NET_ADMIN (root or `unshare -Ur`)"
        );
        let ns = AnonNetns::new().unwrap();
        let mine = std::fs::read_link("/proc/thread-self/ns/net").unwrap();
        let inside = ns
            .enter(|| std::fs::read_link("/proc/thread-self/ns/net").unwrap())
            .unwrap();
        assert_eq!(inside.to_string_lossy(), format!("net:[{}]", ns.inode()));
        assert_ne!(inside, mine);
        ns.ip(&["link", "set", "lo", "up"]).unwrap();
        let e = ns.ip(&["link", "set", "bbr-nope", "up"]).unwrap_err();
        assert!(e.to_string().contains("bbr-nope"), "{e}");
        let mut child = ns.command("sleep").unwrap().arg("5").spawn().unwrap();
        assert_eq!(ns.pids(), vec![child.id() as i32]);
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(ns.pids().is_empty());
    }

    #[test]
    #[ignore = "needs root"]
    fn packet_port_reads_what_the_peer_sends_and_not_its_own_frames() {
        assert!(
            crate::netns::require_privileges().is_ok(),
            "needs CAP_SYS_ADMIN and CAP_NET_ADMIN (root or `unshare -Ur`)"
        );
        let ns = AnonNetns::new().unwrap();
        ns.ip(&[
            "link", "add", "bbpa", "type", "veth", "peer", "name", "bbpb",
        ])
        .unwrap();
        for dev in ["bbpa", "bbpb"] {
            ns.enter(|| std::fs::write(format!("/proc/sys/net/ipv6/conf/{dev}/disable_ipv6"), "1"))
                .unwrap()
                .unwrap();
            ns.ip(&["link", "set", dev, "up"]).unwrap();
        }
        for dev in ["bbpa", "bbpb"] {
            ns.wait_until_ready(dev).unwrap();
        }
        // `a` and `other` on one end, `b` on the peer.
        let (mut a, mut other, mut b) = ns
            .enter(|| {
                Ok::<_, io::Error>((
                    PacketPort::bind("bbpa")?,
                    PacketPort::bind("bbpa")?,
                    PacketPort::bind("bbpb")?,
                ))
            })
            .unwrap()
            .unwrap();
        let mut frame = [0u8; 60];
        frame[..6].copy_from_slice(&[0xff; 6]);
        frame[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 7]);
        frame[12..14].copy_from_slice(&[0x88, 0xb5]); // local experimental ethertype
        let mut buf = [0u8; 2048];
        let wait_for = |port: &mut PacketPort, buf: &mut [u8]| {
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
            loop {
                if let Some(n) = port.recv(buf).unwrap() {
                    return n;
                }
                assert!(std::time::Instant::now() < deadline, "nothing arrived");
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
        };
        frame[14] = 1;
        other.send(&frame).unwrap();
        let n = wait_for(&mut b, &mut buf);
        assert_eq!(&buf[..n], &frame[..]);
        assert_eq!(
            a.recv(&mut buf).unwrap(),
            None,
            "frames bbpa sends are not read"
        );
        frame[14] = 2;
        b.send(&frame).unwrap();
        let n = wait_for(&mut a, &mut buf);
        assert_eq!(&buf[..n], &frame[..], "frames bbpa receives are");
        assert_eq!((other.counters().tx_frames, a.counters().rx_frames), (1, 1));
        assert!(ns.enter(|| PacketPort::bind("bbp-none")).unwrap().is_err());
    }
}
