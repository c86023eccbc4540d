//! `bloatbox tc -c FILE ...` with no daemon running: the configuration's
//! link is built as the daemon builds it (`live::build_bridge`) inside a
//! stepped datapath on socketpair ports (`Datapath::stepped`: no root, no
//! namespace, no thread), and the tc line is answered by the control
//! server's own request handler, so what it prints is exactly what the
//! daemon would print for that configuration at start. Changes are carried
//! out (and their errors reported) but not kept.

use crate::config::Config;
use crate::control::{parse_reply, DaemonRefusal, Request};
use crate::control_server::RequestHandler;
use crate::datapath::{Datapath, DatapathConfig};
use crate::port::SocketPairPort;

/// The answer to `request` from a link of `cfg` that exists only for it:
/// the daemon's reply (`Ok`) or its refusal.
pub fn answer(
    cfg: &Config,
    request: &Request,
) -> anyhow::Result<Result<serde_json::Value, DaemonRefusal>> {
    let bridge = crate::live::build_bridge(cfg)?;
    let (left, _left_host) = SocketPairPort::pair()?;
    let (right, _right_host) = SocketPairPort::pair()?;
    let datapath = Datapath::stepped(
        bridge,
        Box::new(left),
        Box::new(right),
        DatapathConfig::default(),
    )?;
    let handler = RequestHandler::new(datapath.snapshots(), Some(datapath.commander()));
    let line = serde_json::to_string(request)?;
    let reply = handler
        .reply(line.as_bytes())
        .ok_or_else(|| anyhow::anyhow!("no reply to {line}"))?;
    parse_reply(&reply)
}
