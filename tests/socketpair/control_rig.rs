//! The control server with the real datapath over socketpairs (no root):
//! `Rig`, shared by the `control_socket` and `reliability` modules of this
//! binary.
use bloatbox::dir::Dir;

use std::path::PathBuf;
use std::time::{Duration, Instant as StdInstant};

use bloatbox::bridge::Bridge;
use bloatbox::control::{Client, DaemonRefusal, Request};
use bloatbox::control_server::ControlServer;
use bloatbox::datapath::{Datapath, DatapathConfig};
use bloatbox::link::{LinkParams, Path as LinkPath};
use bloatbox::port::SocketPairPort;
use serde_json::Value;

/// A running datapath (10 Mbit/s, 1 ms each way, snapshots every 10 ms)
/// with its control server on `socket` (in a directory `run/` the server
/// creates), and the host ends of both ports.
pub struct Rig {
    pub dir: tempfile::TempDir,
    pub socket: PathBuf,
    server: Option<ControlServer>,
    pub datapath: Option<Datapath>,
    host: Option<[SocketPairPort; 2]>,
}

impl Rig {
    /// Starts the rig with the qdisc tree `tc(DEV)` on each device (`tc`
    /// lines for the device named DEV); returns once a snapshot is served.
    pub fn start(tc: fn(&str) -> Vec<String>) -> Rig {
        let params = LinkParams {
            rate_bytes_ps: 1_250_000,
            delay_ns: 1_000_000,
            ..LinkParams::default()
        };
        let path = |dev: Dir, name: &str| {
            let tree = bloatbox::tc::build_tree(
                params.dev_spec(dev, bloatbox::qdisc::kinds::BUILTIN),
                &tc(name),
            )
            .unwrap();
            LinkPath::new(params, tree)
        };
        let bridge = Bridge::new(
            path(Dir::LeftToRight, "left"),
            path(Dir::RightToLeft, "right"),
        );
        let (dp_left, host_left) = SocketPairPort::pair().unwrap();
        let (dp_right, host_right) = SocketPairPort::pair().unwrap();
        let cfg = DatapathConfig {
            publish_interval_ns: 10_000_000,
            ..DatapathConfig::default()
        };
        let datapath = Datapath::spawn(bridge, Box::new(dp_left), Box::new(dp_right), cfg).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("run").join("ctl.sock");
        let server =
            ControlServer::start(&socket, datapath.snapshots(), Some(datapath.commander()))
                .unwrap();
        let rig = Rig {
            dir,
            socket,
            server: Some(server),
            datapath: Some(datapath),
            host: Some([host_left, host_right]),
        };
        let t0 = StdInstant::now();
        let mut c = rig.client();
        while c.call(&Request::Snapshot).unwrap().is_err() {
            assert!(t0.elapsed() < Duration::from_secs(5), "no snapshot in 5 s");
            std::thread::sleep(Duration::from_millis(5));
        }
        rig
    }

    pub fn client(&self) -> Client {
        Client::connect(&self.socket).unwrap()
    }

    /// `req` on a connection of its own.
    pub fn call(&self, req: &Request) -> Result<Value, DaemonRefusal> {
        self.client().call(req).expect("the connection works")
    }

    /// The host ends of the left and right ports.
    pub fn host(&mut self) -> &mut [SocketPairPort; 2] {
        self.host.as_mut().expect("the host ends were taken")
    }

    /// Takes the host ends (to close them, or to use them elsewhere).
    pub fn take_host(&mut self) -> [SocketPairPort; 2] {
        self.host.take().expect("the host ends were taken")
    }
}

impl Drop for Rig {
    fn drop(&mut self) {
        drop(self.server.take());
        drop(self.datapath.take());
    }
}
