//! The `plug` qdisc's tc syntax (iproute2 v6.18.0 tc/q_plug.c):
//! `plug_parse_opt` reads `block`, `release`, `release_indefinite` and
//! `limit SIZE` into one `tc_plug_qopt` (the last action given wins; no
//! word, no options), `plug_print_opt` prints nothing: the kernel's plug
//! has no dump.

use crate::dir::Dir;
use crate::qdisc::plug::{PlugAction, PlugOptions};
use crate::qdisc::QdiscOptions;
use crate::tc::syntax::{example_rate, replace_root, Bench, Sample, Syntax};
use crate::tc::tokens::{incomplete, Tokens};
use crate::tc::TcError;
use crate::units::parse_size;

/// q_plug.c `explain`.
const USAGE: &str = "Usage: ... plug [block | release | release_indefinite | limit NUMBER]";

/// `plug_parse_opt`.
fn parse(t: &mut Tokens) -> Result<QdiscOptions, TcError> {
    let mut o = PlugOptions::default();
    let mut ok = false;
    while let Some(word) = t.next() {
        o.action = match word {
            "block" => PlugAction::Buffer,
            "release" => PlugAction::ReleaseOne,
            "release_indefinite" => PlugAction::ReleaseIndefinite,
            "limit" => {
                let v = t.value(|| incomplete("limit"))?;
                o.limit = parse_size(v)
                    .ok()
                    .and_then(|b| u32::try_from(b).ok())
                    .ok_or_else(|| TcError::new(format!("Illegal value for \"limit\": \"{v}\"")))?;
                PlugAction::Limit
            }
            "help" => return Err(TcError::new(USAGE)),
            other => {
                return Err(TcError::new(format!(
                    "plug: unknown parameter \"{other}\"\n{USAGE}"
                )))
            }
        };
        ok = true;
    }
    Ok(if ok {
        QdiscOptions::Plug(o)
    } else {
        QdiscOptions::None
    })
}

/// The qdisc menu's plug: a limit of 100 ms of the link (1gbit when
/// unlimited; at least ten full frames), then released for good
/// (`release_indefinite`: a new plug starts plugged, which would leave the
/// link dead), so that it passes traffic as a byte FIFO until a `tc qdisc
/// change ... plug block` (typed at the TUI's `e` prompt) holds it.
fn example(dir: Dir, rate_bytes_ps: u64) -> Vec<String> {
    let limit = (example_rate(rate_bytes_ps) / 10).clamp(15_140, u64::from(u32::MAX));
    vec![
        format!("{} plug limit {limit}", replace_root(dir)),
        format!(
            "tc qdisc change dev {} root plug release_indefinite",
            dir.dev()
        ),
    ]
}

/// plug's tc syntax: no classes, nothing printed; its menu entry installs
/// it released.
pub static SYNTAX: Syntax = Syntax {
    kind: "plug",
    qdisc: parse,
    class: None,
    print: |_| None,
    print_class: |_| None,
    example: Some(example),
    table: None,
    trailing_space: true,
    xstats: None,
    benches: &[Bench::new(
        "plug",
        &[
            "tc qdisc add dev D root plug limit 100000000",
            "tc qdisc change dev D root plug release_indefinite",
        ],
    )],
    samples: &[Sample::new(
        "plug",
        &[
            "tc qdisc add dev D root plug limit 30000",
            "tc qdisc change dev D root plug release_indefinite",
        ],
    )],
};

#[cfg(test)]
mod tests {
    use super::super::run_on_left as run;
    use super::*;
    use crate::qdisc::kinds::BUILTIN;
    use crate::tc::syntax::parse_qdisc;

    fn parsed(words: &str) -> Result<QdiscOptions, String> {
        let words: Vec<&str> = words.split_whitespace().collect();
        parse_qdisc(BUILTIN, "plug", &words).map_err(|e| e.0)
    }

    #[test]
    fn words_become_one_tc_plug_qopt() {
        assert_eq!(parsed(""), Ok(QdiscOptions::None));
        let plug = |action, limit| Ok(QdiscOptions::Plug(PlugOptions { action, limit }));
        assert_eq!(parsed("block"), plug(PlugAction::Buffer, 0));
        assert_eq!(parsed("release"), plug(PlugAction::ReleaseOne, 0));
        assert_eq!(
            parsed("release_indefinite"),
            plug(PlugAction::ReleaseIndefinite, 0)
        );
        assert_eq!(parsed("limit 64kb"), plug(PlugAction::Limit, 65536));
        // The last action wins; the limit stays in the struct.
        assert_eq!(parsed("limit 1000 block"), plug(PlugAction::Buffer, 1000));
        assert_eq!(
            parsed("limit x").unwrap_err(),
            "Illegal value for \"limit\": \"x\""
        );
        assert_eq!(
            parsed("unplug").unwrap_err(),
            format!("plug: unknown parameter \"unplug\"\n{USAGE}")
        );
        assert_eq!(parsed("help").unwrap_err(), USAGE);
    }

    #[test]
    fn shows_its_head_only_and_changes_by_command() {
        let shown = run(&[
            "tc qdisc add dev left root plug limit 10000",
            "tc qdisc change dev left root plug release",
            "tc -s qdisc show dev left",
        ])
        .unwrap()
        .unwrap();
        assert_eq!(
            shown,
            "qdisc plug 8001: root refcnt 2 \n Sent 0 bytes 0 pkt (dropped 0, overlimits 0 requeues 0) \n backlog 0b 0p requeues 0\n"
        );
        // No words, no TCA_OPTIONS: qdisc_change does not call plug_change.
        let quiet = run(&[
            "tc qdisc add dev left root plug",
            "tc qdisc change dev left root plug",
        ]);
        assert!(matches!(quiet, Ok(None)), "{quiet:?}");
        let trees = SYNTAX.samples.iter().map(|s| s.lines);
        for lines in trees.chain(SYNTAX.benches.iter().map(|b| b.lines)) {
            let lines: Vec<String> = lines.iter().map(|l| l.replace(" D ", " left ")).collect();
            let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
            assert!(run(&lines).is_ok(), "{lines:?}");
        }
    }
}
