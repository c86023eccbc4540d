//! The control protocol: one JSON object per line in each direction, any
//! number of requests per connection, answered in order.
//!
//! Requests (`cmd` names the kind; a bare word such as `stats` is accepted
//! for the kinds without arguments, for `socat` users):
//! - `{"cmd":"snapshot"}`: the latest datapath snapshot (`LiveSnapshot`), raw;
//! - `{"cmd":"stats"}`: the same, with each path's counters counted since
//!   the last `reset_stats`;
//! - `{"cmd":"tc","line":"tc qdisc replace dev left root fq_codel"}`: one tc
//!   line, applied atomically by the datapath; `{"output":TEXT,"config":TEXT}`
//!   with tc's output and, for a change, `tc qdisc show` of that device;
//! - `{"cmd":"set","args":["left.rate=10mbit","right.delay=20ms"]}` (an
//!   argument may also be a whole `ethtool -C|-G left|right ...` line),
//!   as may link shape keys (`left.loss=1%`, `left.trace=/abs/file`, see
//!   `set`), applied all or nothing; `{"left":LinkParams,"right":LinkParams,
//!   "shape":{"left":ShapeReport,"right":ShapeReport}}`;
//! - `{"cmd":"reset_stats"}`: a baseline kept by the server (the datapath's
//!   counters are never zeroed); `stats` subtracts it and counts the frames
//!   held at the reset as arrived after it, so `frames_in + duplicated =
//!   frames_out + drops + held` still holds; `snapshot` stays raw;
//! - `{"cmd":"metrics"}`: every counter of the latest snapshot (raw, like
//!   `snapshot`) as OpenMetrics text (`crate::metrics::render`), a string;
//! - `{"cmd":"shutdown"}`: stops the datapath, and with it `bloatbox up`.
//!
//! Replies are `{"ok":VALUE}` or `{"error":"MESSAGE"}`. `parse_request` is
//! pure (no I/O) so that it can be fuzzed.

use serde::Deserialize;

/// Longest request line accepted, bytes (without the newline).
pub const MAX_LINE: usize = 64 * 1024;

/// One request to the daemon.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(tag = "cmd", rename_all = "snake_case", deny_unknown_fields)]
pub enum Request {
    /// `{"cmd":"snapshot"}`: the latest datapath snapshot, raw.
    Snapshot,
    /// `{"cmd":"stats"}`: the snapshot with counters since the last
    /// `reset_stats`.
    Stats,
    /// `{"cmd":"tc","line":LINE}`: one tc command line for a device's tree.
    Tc {
        /// The tc command line (`tc qdisc replace dev left root fq_codel`).
        line: String,
    },
    /// `{"cmd":"set","args":[...]}`: link settings, ethtool lines and shape
    /// keys of both directions, all or nothing.
    Set {
        /// The arguments (`left.rate=10mbit`, `ethtool -C left rx-usecs 20`).
        args: Vec<String>,
    },
    /// `{"cmd":"reset_stats"}`: start the counters of `stats` from now.
    ResetStats,
    /// `{"cmd":"metrics"}`: every counter as OpenMetrics text.
    Metrics,
    /// `{"cmd":"shutdown"}`: stop the daemon like Ctrl-C.
    Shutdown,
}

/// The reply to a `tc` request: tc's output and, for a change, `tc qdisc
/// show` of that device.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, serde::Serialize)]
pub struct TcReply {
    /// What tc prints for the command (empty for a change that succeeded).
    pub output: String,
    /// For a change, `tc qdisc show` of the device afterwards.
    pub config: Option<String>,
}

/// Why a request line was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ProtoError {
    /// The line exceeds `MAX_LINE` bytes.
    #[error("request line longer than {MAX_LINE} bytes: send one JSON object per line")]
    TooLong,
    /// The line is not JSON; the parser's message.
    #[error("request is not valid JSON ({0}); send e.g. {{\"cmd\":\"stats\"}}")]
    Json(String),
    /// JSON, but not one of the requests; serde's message.
    #[error("unknown or malformed request ({0}); {REQUESTS}")]
    Unknown(String),
}

const REQUESTS: &str =
    "requests are {\"cmd\":\"snapshot\"|\"stats\"|\"reset_stats\"|\"metrics\"|\"shutdown\"}, \
{\"cmd\":\"tc\",\"line\":\"tc ...\"} and {\"cmd\":\"set\",\"args\":[\"left.rate=10mbit\", ...]}";

/// Parses one request line (without its newline). Never panics.
pub fn parse_request(line: &str) -> Result<Request, ProtoError> {
    let line = line.trim();
    if line.len() > MAX_LINE {
        return Err(ProtoError::TooLong);
    }
    match line {
        "snapshot" => return Ok(Request::Snapshot),
        "stats" => return Ok(Request::Stats),
        "reset_stats" => return Ok(Request::ResetStats),
        "shutdown" => return Ok(Request::Shutdown),
        "metrics" => return Ok(Request::Metrics),
        _ => {}
    }
    let value: serde_json::Value =
        serde_json::from_str(line).map_err(|e| ProtoError::Json(e.to_string()))?;
    serde_json::from_value(value).map_err(|e| ProtoError::Unknown(e.to_string()))
}

/// A success reply line (no newline): `value` serialized straight into
/// the line (no `serde_json::Value` in between), its fields in their
/// declaration order.
pub fn ok_line(value: &impl serde::Serialize) -> String {
    match serde_json::to_string(value) {
        Ok(v) => format!("{{\"ok\":{v}}}"),
        Err(e) => error_line(&format!("serializing the reply: {e}")),
    }
}

/// An error reply line (no newline).
pub fn error_line(msg: &str) -> String {
    serde_json::json!({ "error": msg }).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_kind() {
        assert_eq!(parse_request("stats"), Ok(Request::Stats));
        assert_eq!(
            parse_request(r#"{"cmd":"snapshot"}"#),
            Ok(Request::Snapshot)
        );
        assert_eq!(
            parse_request(r#" {"cmd":"reset_stats"} "#),
            Ok(Request::ResetStats)
        );
        assert_eq!(parse_request("metrics"), Ok(Request::Metrics));
        assert_eq!(parse_request(r#"{"cmd":"metrics"}"#), Ok(Request::Metrics));
        assert_eq!(
            parse_request(r#"{"cmd":"shutdown"}"#),
            Ok(Request::Shutdown)
        );
        assert_eq!(
            parse_request(r#"{"cmd":"tc","line":"tc qdisc show"}"#),
            Ok(Request::Tc {
                line: "tc qdisc show".into()
            })
        );
        assert_eq!(
            parse_request(r#"{"cmd":"set","args":["left.rate=1mbit"]}"#),
            Ok(Request::Set {
                args: vec!["left.rate=1mbit".into()]
            })
        );
    }

    #[test]
    fn refuses_bad_lines_with_a_reason() {
        assert!(matches!(parse_request("{"), Err(ProtoError::Json(_))));
        assert!(matches!(parse_request("frob"), Err(ProtoError::Json(_))));
        let e = parse_request(r#"{"cmd":"frob"}"#).unwrap_err().to_string();
        assert!(e.contains("frob") && e.contains("requests are"), "{e}");
        let e = parse_request(r#"{"cmd":"tc"}"#).unwrap_err().to_string();
        assert!(e.contains("line"), "{e}");
        let e = parse_request(r#"{"cmd":"tc","line":"x","extra":1}"#).unwrap_err();
        assert!(matches!(e, ProtoError::Unknown(_)), "{e}");
        let long = format!("\"{}\"", "a".repeat(MAX_LINE));
        assert_eq!(parse_request(&long), Err(ProtoError::TooLong));
    }
}
