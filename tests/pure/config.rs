//! Configuration tests: the default file equals the Rust default, every file
//! in configs/ loads and validates, each invalid fixture in
//! tests/fixtures/config/ gives the message its `# expect:` lines name,
//! precedence, overrides, the tc check hook, and no panic on any input.

use bloatbox::config::{apply_ethtool, check_report, Config, DEFAULT_TOML};
use bloatbox::dir::Dir;
use bloatbox::link::LinkParams;
use proptest::prelude::*;
use std::path::{Path, PathBuf};

use crate::common;

const L: Dir = Dir::LeftToRight;
const R: Dir = Dir::RightToLeft;

fn toml_files(dir: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    files
}

fn seed(name: &str) -> Config {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("configs")
        .join(name);
    Config::load(&path).unwrap_or_else(|e| panic!("{e}"))
}

fn parse(text: &str) -> Config {
    Config::from_str(text, "test.toml").unwrap_or_else(|e| panic!("{e}"))
}

fn parse_err(text: &str) -> String {
    Config::from_str(text, "test.toml").unwrap_err().to_string()
}

#[test]
fn default_file_equals_rust_default() {
    let from_file = Config::from_str(DEFAULT_TOML, "configs/default.toml").unwrap();
    assert_eq!(from_file, Config::default());
    assert_eq!(Config::embedded_default(), Config::default());
    assert_eq!(seed("default.toml"), Config::default());
}

#[test]
fn defaults_are_the_documented_values() {
    let c = Config::default();
    assert_eq!(
        (c.left.namespace.as_str(), c.right.namespace.as_str()),
        ("bb-left", "bb-right")
    );
    assert_eq!(
        (c.left.tap.as_str(), c.right.tap.as_str()),
        ("bbl0", "bbr0")
    );
    assert_eq!(c.left.ipv4.to_string(), "10.77.0.1/24");
    assert_eq!(c.right.ipv6.to_string(), "fd00:77::2/64");
    assert_eq!((c.tap.mtu, c.tap.txqueuelen), (1500, 128));
    let p = c.link_params(L);
    assert_eq!(
        p,
        LinkParams {
            rate_bytes_ps: 12_500_000,
            overhead: 0,
            delay_ns: 5_000_000,
            tx_ring: 256,
            tx_stop_threshold: 0,
            tx_post_ns: 0,
            bql: true,
            tx_usecs: 0,
            tx_frames: 1,
            rx_usecs: 0,
            rx_frames: 1,
            rx_cqe: false,
            tx_cqe: false,
            rx_adaptive: false,
            tx_adaptive: false,
            bulk_dequeue: true,
            mtu: 1500,
            txqueuelen: 1000,
            tx_queues: 1,
            features: Default::default(),
        }
    );
    assert_eq!(c.link_params(R), p);
    assert_eq!(c.tc_lines(L), vec!["tc qdisc add dev left root pfifo_fast"]);
    assert_eq!(
        c.tc_lines(R),
        vec!["tc qdisc add dev right root pfifo_fast"]
    );
    assert_eq!(c.tx_queues(L), 1);
    assert_eq!(
        c.control_socket(),
        PathBuf::from("/run/bloatbox/bb-left.sock")
    );
    assert_eq!((c.daemon.snapshot_hz, c.daemon.spin_us), (20, 0));
}

#[test]
fn empty_file_resolves_like_the_default() {
    let empty = parse("");
    for dir in Dir::ALL {
        assert_eq!(empty.link_params(dir), Config::default().link_params(dir));
        assert_eq!(empty.tc_lines(dir), Config::default().tc_lines(dir));
    }
}

#[test]
fn every_config_file_loads_and_validates() {
    let files = toml_files("configs");
    assert!(files.len() >= 13, "seed configs missing: {files:?}");
    for path in files {
        let config = Config::load(&path).unwrap_or_else(|e| panic!("{e}"));
        config.validate().unwrap();
        for dir in Dir::ALL {
            let lines = config.tc_lines(dir);
            assert!(
                !lines.is_empty(),
                "{}: no tc lines for {dir:?}",
                path.display()
            );
            assert!(lines
                .iter()
                .all(|l| l.contains(&format!("dev {}", dir.dev()))));
        }
        assert!(check_report(&config).contains("left→right (dev left):"));
        // The configuration survives a round trip through TOML text.
        let text = toml::to_string(&config).unwrap();
        assert_eq!(parse(&text), config, "{}", path.display());
    }
}

/// The AQM zoo's lesson (configs/zoo/, `bloatbox test --tui -c
/// configs/zoo/*.toml`): every phase loads, has a caption, runs on one
/// link (rate, delay, ring, BQL, framing: only the qdisc changes), and
/// each puts a different kind at the root, in the order the files name.
#[test]
fn the_zoo_lesson_changes_only_the_qdisc() {
    let files = toml_files("configs/zoo");
    let kinds: Vec<String> = files
        .iter()
        .map(|path| {
            let config = Config::load(path).unwrap_or_else(|e| panic!("{e}"));
            config.validate().unwrap();
            assert!(
                config
                    .lesson
                    .caption
                    .as_deref()
                    .is_some_and(|c| !c.is_empty()),
                "{}: no caption",
                path.display()
            );
            for dir in Dir::ALL {
                assert_eq!(
                    config.link_params(dir),
                    Config::load(&files[0]).unwrap().link_params(dir),
                    "{}: the link differs from the first phase's",
                    path.display()
                );
            }
            let line = &config.tc_lines(L)[0];
            let kind = line
                .split_whitespace()
                .skip_while(|w| *w != "root")
                .nth(1)
                .unwrap_or_else(|| panic!("{}: {line}", path.display()));
            let stem = path.file_stem().unwrap().to_string_lossy();
            assert!(
                stem.contains(&kind.replace('_', "-")),
                "{stem}: root kind {kind}"
            );
            kind.to_string()
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "pfifo_fast",
            "red",
            "codel",
            "pie",
            "fq_codel",
            "fq_pie",
            "cake"
        ]
    );
}

#[test]
fn seed_configs_mean_what_they_say() {
    let deep = seed("pfifo-fast-deep-ring.toml");
    let p = deep.link_params(L);
    assert_eq!((p.tx_ring, p.bql), (1024, false));
    assert!(
        check_report(&deep).contains("drains in 124ms (no BQL"),
        "{}",
        check_report(&deep)
    );

    assert_eq!(
        seed("fq-codel.toml").tc_lines(R),
        vec!["tc qdisc add dev right root fq_codel limit 10240 flows 1024 quantum 1514 target 5ms interval 100ms ecn"]
    );
    assert_eq!(
        seed("tbf-1560mbit.toml").tc_lines(L),
        vec!["tc qdisc add dev left root tbf rate 1560mbit burst 20280b latency 5ms"]
    );
    assert_eq!(
        seed("tbf-1560mbit.toml").link_params(L).rate_bytes_ps,
        1_250_000_000
    );
    let plain = seed("fq-codel-5p.toml").tc_lines(L);
    let ecn = seed("fq-codel-5p-ecn.toml").tc_lines(L);
    assert_eq!(plain, vec!["tc qdisc add dev left root fq_codel limit 5 flows 5 quantum 1514 target 499us interval 5ms noecn"]);
    assert_eq!(ecn, vec!["tc qdisc add dev left root fq_codel limit 5 flows 5 quantum 1514 target 499us interval 5ms ecn"]);

    let htb = seed("htb-sfq-100mbit.toml");
    assert_eq!(htb.tc_lines(L).len(), 3);
    assert_eq!(
        htb.tc_lines(R)[2],
        "tc qdisc add dev right parent 1:10 handle 10: sfq perturb 10"
    );
    assert_eq!(seed("qfq-100mbit.toml").tc_lines(R).len(), 10);

    for (file, usecs) in [("rx-usecs-20.toml", 20), ("rx-usecs-1.toml", 1)] {
        let c = seed(file);
        for dir in Dir::ALL {
            let p = c.link_params(dir);
            assert_eq!((p.rx_usecs, p.rx_frames), (usecs, 0), "{file}");
        }
    }
    let on = seed("udp-rr-coalesce-on.toml").link_params(R);
    let off = seed("udp-rr-coalesce-off.toml").link_params(R);
    assert_eq!((on.rx_usecs, on.rx_frames), (50, 32));
    assert_eq!((off.rx_usecs, off.rx_frames), (0, 1));
    assert_eq!(on.delay_ns, 0);

    let mq = seed("mq-fq-codel.toml");
    assert_eq!(mq.tx_queues(L), 4);
    assert_eq!(
        mq.tc_lines(L),
        vec![
            "tc qdisc add dev left root handle 1: mq",
            "tc qdisc add dev left parent 1:1 fq_codel",
            "tc qdisc add dev left parent 1:2 fq_codel",
            "tc qdisc add dev left parent 1:3 fq_codel",
            "tc qdisc add dev left parent 1:4 fq_codel",
        ]
    );
}

/// Loads each `.toml` file of `dir` (at least `at_least` of them) with
/// `load(text, file name)`: each must fail, and its error must contain
/// each of the `# expect: TEXT` lines the file holds (one at least). The
/// file names with their errors.
fn fixture_errors(
    dir: &str,
    at_least: usize,
    load: impl Fn(&str, &str) -> Result<Config, String>,
) -> Vec<(String, String)> {
    let files = toml_files(dir);
    assert!(files.len() >= at_least);
    let mut errors = Vec::new();
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let expected: Vec<&str> = text
            .lines()
            .filter_map(|l| l.strip_prefix("# expect: "))
            .collect();
        assert!(!expected.is_empty(), "{name} has no # expect: line");
        let Err(err) = load(&text, &name) else {
            panic!("{name} loaded but should fail")
        };
        for want in expected {
            assert!(err.contains(want), "{name}:\n  got:  {err}\n  want: {want}");
        }
        errors.push((name, err));
    }
    errors
}

/// Each fixture holds `# expect: TEXT` lines; the error must contain each,
/// and a fix.
#[test]
fn invalid_fixtures_give_their_messages() {
    let errors = fixture_errors("tests/fixtures/config", 12, |text, name| {
        Config::from_str(text, name).map_err(|e| e.to_string())
    });
    for (name, err) in errors {
        assert!(err.contains("fix:"), "{name}: no fix in {err}");
    }
}

#[test]
fn load_names_the_file_in_errors() {
    let missing = Config::load("/nonexistent/bloatbox.toml").unwrap_err();
    assert!(missing
        .to_string()
        .starts_with("/nonexistent/bloatbox.toml: cannot read the configuration"));
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/config/ring-out-of-range.toml");
    let err = Config::load(&path).unwrap_err();
    assert_eq!(err.origin, path.display().to_string());
    assert_eq!(err.path, "link.tx_ring");
    assert_eq!(err.position.map(|p| (p.line, p.column)), Some((3, 11)));
    // An endless file is refused after MAX_INPUT_BYTES, not read into memory.
    let endless = Config::load("/dev/zero").unwrap_err().to_string();
    assert!(endless.contains("larger than 64 MiB"), "{endless}");
}

#[test]
fn direction_tables_override_shared_values() {
    let c = parse(
        "[link]\nrate = \"100mbit\"\ndelay = \"10ms\"\nqdisc = \"sfq\"\n\
         [link.left_to_right]\nrate = \"20mbit\"\nbql = false\n\
         [link.right_to_left]\nqdisc = { kind = \"fq_codel\", ecn = true }\n",
    );
    let (l, r) = (c.link_params(L), c.link_params(R));
    assert_eq!(
        (l.rate_bytes_ps, l.bql, l.delay_ns),
        (2_500_000, false, 10_000_000)
    );
    assert_eq!(
        (r.rate_bytes_ps, r.bql, r.delay_ns),
        (12_500_000, true, 10_000_000)
    );
    assert_eq!(c.tc_lines(L), vec!["tc qdisc add dev left root sfq"]);
    assert_eq!(
        c.tc_lines(R),
        vec!["tc qdisc add dev right root fq_codel ecn"]
    );
}

#[test]
fn ethtool_lines_apply_after_fields_and_by_device() {
    let c = parse(
        "[link]\ntx_ring = 128\nethtool = [\"ethtool -G left tx 512\", \"ethtool -K right tso off gso off\"]\n\
         [link.right_to_left]\nethtool = [\"ethtool -C right tx-usecs 64 tx-frames 32 cqe-mode-rx on adaptive-rx on\"]\n",
    );
    assert_eq!(c.link_params(L).tx_ring, 512);
    assert!(c.link_params(R).rx_cqe && !c.link_params(R).tx_cqe);
    assert!(c.link_params(R).rx_adaptive && !c.link_params(R).tx_adaptive);
    assert!(!c.link_params(L).rx_cqe);
    assert_eq!(c.link_params(R).tx_ring, 128);
    assert_eq!(
        (c.link_params(R).tx_usecs, c.link_params(R).tx_frames),
        (64, 32)
    );
    // TSO and GSO off on the right device: its qdisc sees per-MTU segments.
    assert!(!c.link_params(R).features.passes_super_frames());
    assert!(c.link_params(L).features.passes_super_frames());
    assert_eq!(c.link_params(L).features, Default::default());
    let report = check_report(&c);
    assert!(
        report.contains(
            "features tx-generic-segmentation off tx-tcp-segmentation off \
             tx-tcp-ecn-segmentation off tx-tcp6-segmentation off \
             (TSO and GSO off: the qdisc sees per-MTU segments)"
        ),
        "{report}"
    );
    assert_eq!(report.matches("  features ").count(), 1, "{report}");
    assert!(
        report.contains("tx-usecs 64 tx-frames 32 cqe-mode-rx on adaptive-rx on\n"),
        "{report}"
    );
    assert_eq!(report.matches("cqe-mode").count(), 1, "{report}");
    // A query changes nothing: refused in a configuration, with the fix.
    let e = parse_err("[link]\nethtool = [\"ethtool -G left tx 512\", \"ethtool -k left\"]\n");
    assert!(
        e.contains("link.ethtool[1]") && e.contains("a query (-k, -c, -g) changes nothing"),
        "{e}"
    );
    // The daemon reuses the same parser on live parameters.
    let mut live = c.link_params(L);
    apply_ethtool("ethtool -C left rx-usecs 20 rx-frames 0", &mut live).unwrap();
    assert_eq!((live.rx_usecs, live.rx_frames), (20, 0));
}

#[test]
fn tc_lines_route_by_device_and_fall_back_to_qdisc() {
    let c = parse("[link]\nqdisc = \"fq_codel\"\ntc = [\"tc qdisc add dev right root sfq\"]\n");
    assert_eq!(c.tc_lines(L), vec!["tc qdisc add dev left root fq_codel"]);
    assert_eq!(c.tc_lines(R), vec!["tc qdisc add dev right root sfq"]);
    let both = "[link]\nqdisc = \"fq_codel\"\ntc = [\"tc qdisc add dev right root sfq\", \"tc qdisc add dev left root sfq\"]\n";
    assert!(parse_err(both)
        .contains("link.qdisc = \"fq_codel\": unused: tc lines configure both directions"));
}

#[test]
fn structured_htb_tree_validates_and_converts() {
    let c = parse(
        r#"
[link]
rate = "1gbit"
[link.qdisc]
kind = "htb"
default = "20"
[[link.qdisc.class]]
classid = "1:1"
rate = "100mbit"
[[link.qdisc.class]]
classid = "1:10"
parent = "1:1"
rate = "30mbit"
ceil = "100mbit"
prio = 0
qdisc = "fq_codel"
[[link.qdisc.class]]
classid = "1:20"
parent = "1:1"
rate = "70mbit"
ceil = "100mbit"
qdisc = { kind = "sfq", perturb = 10 }
"#,
    );
    assert_eq!(
        c.tc_lines(R),
        vec![
            "tc qdisc add dev right root handle 1: htb default 20",
            "tc class add dev right parent 1: classid 1:1 htb rate 100mbit",
            "tc class add dev right parent 1:1 classid 1:10 htb rate 30mbit ceil 100mbit prio 0",
            "tc class add dev right parent 1:1 classid 1:20 htb rate 70mbit ceil 100mbit",
            "tc qdisc add dev right parent 1:10 fq_codel",
            "tc qdisc add dev right parent 1:20 sfq perturb 10",
        ]
    );
}

#[test]
fn tc_check_hook_sees_every_line_and_locates_errors() {
    let seen = std::cell::RefCell::new(Vec::new());
    let check = |_: bloatbox::qdisc::tree::DevSpec, steps: &[bloatbox::tc::Step]| {
        for (i, line) in steps.iter().map(|s| s.line()).enumerate() {
            seen.borrow_mut().push(line.to_string());
            if line.contains("sfq") {
                return Err((Some(i), "Error: sfq is not wanted here.".to_string()));
            }
        }
        Ok(())
    };
    let text = "[link]\nqdisc = \"fq_codel\"\ntc = [\n  \"tc qdisc add dev right root sfq\",\n]\n";
    let err = Config::from_str_with(text, "hook.toml", Some(&check))
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with(
            "hook.toml:4:3: link.tc[0] = \"tc qdisc add dev right root sfq\": tc rejects"
        ),
        "{err}"
    );
    assert!(seen
        .borrow()
        .contains(&"tc qdisc add dev left root fq_codel".to_string()));
    let ok = Config::from_str_with("", "hook.toml", Some(&check)).unwrap();
    assert_eq!(ok, parse(""));
}

/// With the real tc front end, a line that fails only because of the lines
/// before it (a class under a qdisc never made) is named with its place.
#[test]
fn tc_lines_are_checked_together_and_the_failing_one_located() {
    let text = "[link]\ntc = [\n  \"tc qdisc add dev left root handle 1: htb default 10\",\n  \
                \"tc class add dev left parent 2: classid 2:10 htb rate 10mbit\",\n]\n";
    let err = Config::from_str_with(text, "tree.toml", Some(&bloatbox::tc::check_steps))
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("tree.toml:4:3: link.tc[1] = \"tc class add dev left parent 2:")
            && err.contains("no qdisc 2: on dev left"),
        "{err}"
    );
}

/// prio in both forms, checked by the real tc front end: the string form,
/// a literal tree with a band's child and a filter, and a refusal the
/// kernel makes (2 bands under the default priomap, which names band 2).
#[test]
fn prio_qdisc_string_and_tc_lines_build() {
    let check = Some(&bloatbox::tc::check_steps as bloatbox::config::TcCheck);
    let c = Config::from_str_with(
        "[link]\nqdisc = \"prio bands 4 priomap 3 2 1 0\"\n",
        "prio.toml",
        check,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        c.tc_lines(L),
        vec!["tc qdisc add dev left root prio bands 4 priomap 3 2 1 0"]
    );
    let text = "[link]\ntc = [\n  \"tc qdisc add dev left root handle 1: prio\",\n  \
                \"tc qdisc add dev left parent 1:1 handle 10: pfifo limit 20\",\n  \
                \"tc filter add dev left parent 1: protocol ip prio 1 u32 match ip dport 22 0xffff flowid 1:1\",\n]\n";
    let c = Config::from_str_with(text, "prio.toml", check).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(c.tc_lines(L).len(), 3);
    let err = Config::from_str_with("[link]\nqdisc = \"prio bands 2\"\n", "prio.toml", check)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("link.qdisc") && err.contains("priomap entry 1 is band 2"),
        "{err}"
    );
}

/// hfsc in both forms, checked by the real tc front end: the string form
/// (a qdisc alone: its classes come as tc lines), a tree of classes with a
/// filter, and tc's own refusal of an upper limit without a link-share
/// curve.
#[test]
fn hfsc_qdisc_string_and_tc_lines_build() {
    let check = Some(&bloatbox::tc::check_steps as bloatbox::config::TcCheck);
    let c = Config::from_str_with("[link]\nqdisc = \"hfsc default 20\"\n", "hfsc.toml", check)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        c.tc_lines(L),
        vec!["tc qdisc add dev left root hfsc default 20"]
    );
    let text = "[link]\ntc = [\n  \"tc qdisc add dev left root handle 1: hfsc default 20\",\n  \
                \"tc class add dev left parent 1: classid 1:1 hfsc ls m2 20mbit ul m2 20mbit\",\n  \
                \"tc class add dev left parent 1:1 classid 1:10 hfsc rt umax 200b dmax 5ms rate 100kbit\",\n  \
                \"tc class add dev left parent 1:1 classid 1:20 hfsc ls m2 19mbit\",\n  \
                \"tc filter add dev left parent 1: protocol ip prio 1 u32 match ip protocol 17 0xff flowid 1:10\",\n]\n";
    let c = Config::from_str_with(text, "hfsc.toml", check).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(c.tc_lines(L).len(), 5);
    let text = "[link]\ntc = [\n  \"tc qdisc add dev left root handle 1: hfsc\",\n  \
                \"tc class add dev left parent 1: classid 1:1 hfsc ul m2 1mbit\",\n]\n";
    let err = Config::from_str_with(text, "hfsc.toml", check)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("Upper-limit Service Curve without Link-Share Service Curve"),
        "{err}"
    );
}

/// DRR and ETS, checked by the real tc front end: ETS's string form, a
/// DRR tree with classes, a child and filters in the tc form, and the
/// refusals tc and the kernel make.
#[test]
fn drr_and_ets_string_and_tc_lines_build() {
    let check = Some(&bloatbox::tc::check_steps as bloatbox::config::TcCheck);
    let c = Config::from_str_with(
        "[link]\nqdisc = \"ets bands 4 strict 1 quanta 3000 1514 priomap 0 1 2 3\"\n",
        "ets.toml",
        check,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        c.tc_lines(L),
        vec!["tc qdisc add dev left root ets bands 4 strict 1 quanta 3000 1514 priomap 0 1 2 3"]
    );
    let text = "[link]\ntc = [\n  \"tc qdisc add dev left root handle 1: drr\",\n  \
                \"tc class add dev left parent 1: classid 1:1 drr quantum 3000\",\n  \
                \"tc class add dev left parent 1: classid 1:2 drr\",\n  \
                \"tc qdisc add dev left parent 1:1 handle 10: fq_codel\",\n  \
                \"tc filter add dev left parent 1: protocol ip prio 1 u32 match ip dport 22 0xffff flowid 1:1\",\n  \
                \"tc filter add dev left parent 1: protocol all prio 2 matchall flowid 1:2\",\n]\n";
    let c = Config::from_str_with(text, "drr.toml", check).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(c.tc_lines(L).len(), 6);
    for (qdisc, says) in [
        (
            "ets bands 2 strict 1 quanta 10 20",
            "Not enough total bands",
        ),
        ("ets", "needs to be specified"),
        ("drr quantum 5", "Usage: ... drr"),
    ] {
        let err = Config::from_str_with(&format!("[link]\nqdisc = \"{qdisc}\"\n"), "x.toml", check)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("link.qdisc") && err.contains(says),
            "{qdisc}: {err}"
        );
    }
    let text = "[link]\ntc = [\n  \"tc qdisc add dev left root handle 1: drr\",\n  \
                \"tc class add dev left parent 1: classid 1:1 drr quantum 0\",\n]\n";
    let err = Config::from_str_with(text, "drr.toml", check)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("Specified DRR quantum cannot be zero."),
        "{err}"
    );
}

#[test]
fn overrides_set_any_field_by_path() {
    let mut c = Config::default();
    c.apply_override("left.rate=10mbit").unwrap();
    assert_eq!(c.link_params(L).rate_bytes_ps, 1_250_000);
    assert_eq!(c.link_params(R).rate_bytes_ps, 12_500_000);
    c.apply_override("link.delay = 20ms").unwrap();
    assert_eq!(
        (c.link_params(L).delay_ns, c.link_params(R).delay_ns),
        (20_000_000, 20_000_000)
    );
    c.apply_override("link.right_to_left.bql=false").unwrap();
    assert!(!c.link_params(R).bql && c.link_params(L).bql);
    c.apply_override("right.qdisc=fq_codel limit 5 noecn")
        .unwrap();
    assert_eq!(
        c.tc_lines(R),
        vec!["tc qdisc add dev right root fq_codel limit 5 noecn"]
    );
    c.apply_override("left.qdisc={ kind = \"fq_codel\", ecn = true }")
        .unwrap();
    c.apply_override("left.qdisc.limit=100").unwrap();
    assert_eq!(
        c.tc_lines(L),
        vec!["tc qdisc add dev left root fq_codel limit 100 ecn"]
    );
    c.apply_override("tap.mtu=9000").unwrap();
    assert_eq!(c.link_params(L).mtu, 9000);
    c.apply_override("left.namespace=ns-a").unwrap();
    assert_eq!(c.control_socket(), PathBuf::from("/run/bloatbox/ns-a.sock"));
    c.apply_override("daemon.control_socket=/tmp/bb.sock")
        .unwrap();
    assert_eq!(c.control_socket(), PathBuf::from("/tmp/bb.sock"));
    c.apply_override("link.ethtool=[\"ethtool -C left rx-usecs 20 rx-frames 0\"]")
        .unwrap();
    assert_eq!(c.link_params(L).rx_usecs, 20);
    c.apply_override("link.rate=unlimited").unwrap();
    assert_eq!(c.link_params(R).rate_bytes_ps, 0);
    assert!(check_report(&c).contains("rate unlimited"));
}

#[test]
fn bad_overrides_explain_and_change_nothing() {
    let mut c = Config::default();
    let before = c.clone();
    let unknown = c.apply_override("left.rte=10mbit").unwrap_err().to_string();
    assert!(
        unknown.starts_with("--set: left.rte = 10mbit: unknown key; valid keys: "),
        "{unknown}"
    );
    assert!(unknown.contains("left.namespace") && unknown.contains("rx_frames"));
    let bad = c
        .apply_override("left.rate=100mbps/s")
        .unwrap_err()
        .to_string();
    assert!(bad.contains("invalid rate"), "{bad}");
    let range = c.apply_override("right.tx_ring=0").unwrap_err();
    assert_eq!(range.path, "link.right_to_left.tx_ring");
    assert!(range.to_string().contains("expected 1..=4096 descriptors"));
    let typed = c.apply_override("link.bql=yes").unwrap_err().to_string();
    assert!(typed.contains("expected boolean"), "{typed}");
    let coalesce = c
        .apply_override("right.rx_frames=0")
        .unwrap_err()
        .to_string();
    assert!(
        coalesce.contains("rx_usecs and rx_frames are both 0"),
        "{coalesce}"
    );
    assert!(c
        .apply_override("no equals sign")
        .unwrap_err()
        .to_string()
        .contains("expected KEY=VALUE"));
    assert!(
        c.apply_override("link.qdisc.limit=5").is_err(),
        "qdisc is a string, not a table"
    );
    assert_eq!(c, before);
}

#[test]
fn toml_errors_point_at_the_key_or_value() {
    let text = "[link.qdisc]\nkind = \"htb\"\n[[link.qdisc.class]]\nclassid = \"1:1\"\nrate = \"1mbit\"\nfoo = 1\n";
    assert!(
        parse_err(text).starts_with("test.toml:6:7: link.qdisc.class[0].foo: unknown field `foo`")
    );
    assert!(
        parse_err("[left]\nfoo = 1\n").starts_with("test.toml:2:1: left.foo: unknown field `foo`")
    );
    assert!(parse_err("left = 5\n").contains(
        "left = 5: invalid type: integer `5`, expected a table with namespace, tap, ipv4, ipv6;"
    ));
    let dup = parse_err("[link]\nrate = \"100mbit\"\nrate = \"1mbit\"\n");
    assert!(
        dup.starts_with("test.toml:3:1: duplicate key `rate` in table `link`"),
        "{dup}"
    );
    let missing = parse_err("[link]\nqdisc = { kind = \"tbf\", rate = \"1mbit\" }\n");
    assert!(missing.contains("link.qdisc = { kind = \"tbf\", rate = \"1mbit\" }: missing field `burst`; fix: add the key"));
    assert!(
        parse_err("[link]\ntc = [\"tc qdisc add dev left root sfq\", 5]\n")
            .starts_with("test.toml:2:41: link.tc[1] = 5: invalid type")
    );
    assert!(parse_err("[link]\ntx_ring = 4294967296\n").contains("expected u32"));
}

#[test]
fn nested_direction_tables_and_tap_names_are_rejected() {
    assert!(parse_err("[left]\ntap = \"bbr0\"\n")
        .contains("right.tap = \"bbr0\": both sides use the same TAP name"));
    assert!(
        parse_err("[right]\nipv4 = \"10.77.0.1/24\"\n").contains("the same address as left.ipv4")
    );
    assert!(parse_err("[right]\nipv4 = \"10.77.0.255/24\"\n").contains("broadcast"));
    assert!(parse_err("[link]\ntx_queues = 4\nqdisc = \"htb\"\n")
        .contains("cannot be repeated under mq"));
}

proptest! {
    #![proptest_config(crate::common::proptest_config(256, file!()))]

    #[test]
    fn no_panic_on_arbitrary_text(text in "\\PC{0,200}") {
        let _ = Config::from_str(&text, "fuzz.toml");
        let mut c = Config::default();
        let _ = c.apply_override(&text);
        let mut p = LinkParams::default();
        let _ = apply_ethtool(&text, &mut p);
    }

    #[test]
    fn no_panic_on_arbitrary_link_values(
        key in prop::sample::select(vec!["rate", "delay", "tx_ring", "rx_usecs", "rx_frames", "qdisc", "tc", "ethtool", "overhead", "tx_queues"]),
        value in prop::sample::select(vec!["0", "-1", "4294967296", "\"\"", "\"1e999mbit\"", "\"unlimited\"", "[\"tc\"]", "{ kind = \"htb\" }", "\"ethtool -C left\"", "true"]),
        dir in prop::sample::select(vec!["", ".left_to_right", ".right_to_left"]),
    ) {
        let text = format!("[link{dir}]\n{key} = {value}\n");
        if let Ok(c) = Config::from_str(&text, "fuzz.toml") {
            for d in Dir::ALL {
                let _ = (c.link_params(d), c.tc_lines(d), check_report(&c));
            }
        }
    }

    #[test]
    fn ethtool_coalescing_always_interrupts(
        ru in 0u32..3, rf in 0u32..3, tu in 0u32..3, tf in 0u32..3,
    ) {
        let mut p = LinkParams::default();
        let line = format!("ethtool -C left rx-usecs {ru} rx-frames {rf} tx-usecs {tu} tx-frames {tf}");
        let ok = apply_ethtool(&line, &mut p).is_ok();
        // Legal: a timer, or an interrupt per frame (frames-only batching of
        // more than one frame would stall a lone frame).
        let legal = |usecs: u32, frames: u32| usecs > 0 || frames == 1;
        prop_assert_eq!(ok, legal(ru, rf) && legal(tu, tf));
        prop_assert!(legal(p.rx_usecs, p.rx_frames));
        prop_assert!(legal(p.tx_usecs, p.tx_frames));
    }
}

/// The seed's filter lines are ones the filter parser accepts (the tc front
/// end will run them; QFQ drops what no filter classifies).
#[test]
fn qfq_seed_filters_parse() {
    let check = |_: bloatbox::qdisc::tree::DevSpec, steps: &[bloatbox::tc::Step]| {
        for (i, line) in steps.iter().map(|s| s.line()).enumerate() {
            let words: Vec<&str> = line.split_whitespace().collect();
            if let ["tc", "filter", "add", "dev", _, rest @ ..] = words.as_slice() {
                bloatbox::tc::filter::parse(rest).map_err(|e| (Some(i), e.0))?;
            }
        }
        Ok(())
    };
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("configs/qfq-100mbit.toml");
    Config::load_with(&path, Some(&check)).unwrap_or_else(|e| panic!("{e}"));
}

// ---- link shape: netem, trace/schedule, framing, seed ----

use bloatbox::link::impair::{Distribution, Loss};
use bloatbox::link::Schedule;
use bloatbox::units::LinkLayer;

/// Each file in tests/fixtures/shape/ gives its `# expect:` message when
/// loaded from its own directory (trace paths are relative to it).
#[test]
fn shape_fixtures_give_their_messages() {
    fixture_errors("tests/fixtures/shape", 10, |_, name| {
        Config::load(Path::new("tests/fixtures/shape").join(name)).map_err(|e| e.to_string())
    });
}

#[test]
fn netem_resolves_per_direction_with_precedence() {
    let c = parse(
        r#"
[link]
netem = "delay 10ms 2ms distribution normal loss 1% duplicate 0.1%"
[link.right_to_left]
netem = "loss 20% 25%"
"#,
    );
    let l = c.link_shape(L).impairments;
    assert_eq!((l.delay_ns, l.jitter_ns), (10_000_000, 2_000_000));
    assert_eq!(l.distribution, Distribution::Normal);
    assert_eq!(
        l.loss,
        Loss::Random {
            percent: 1.0,
            correlation: 0.0
        }
    );
    assert_eq!(l.duplicate, 0.1);
    let r = c.link_shape(R).impairments;
    assert_eq!(
        r.loss,
        Loss::Random {
            percent: 20.0,
            correlation: 25.0
        }
    );
    assert_eq!((r.delay_ns, r.duplicate), (0, 0.0));
    // No netem: nothing impaired.
    assert!(Config::default().link_shape(L).impairments.is_none());
}

#[test]
fn seeds_differ_per_direction_and_are_reproducible() {
    let d = Config::default();
    assert_eq!((d.seed(L), d.seed(R)), (1, 2));
    let shared = parse("[link]\nseed = 42\nnetem = \"loss 1%\"\n");
    assert_eq!((shared.seed(L), shared.seed(R)), (42, 43));
    assert_eq!(shared.link_shape(L).impairments.seed, 42);
    assert_eq!(shared.link_shape(R).impairments.seed, 43);
    let own = parse("[link]\nseed = 42\n[link.right_to_left]\nseed = 5\n");
    assert_eq!((own.seed(L), own.seed(R)), (42, 5));
    let top = parse(&format!("[link]\nseed = {}\n", i64::MAX));
    assert_eq!((top.seed(L), top.seed(R)), (i64::MAX as u64, 1 << 63));
    assert_eq!(shared.link_shape(R), shared.clone().link_shape(R));
}

#[test]
fn framing_takes_stab_options_or_a_preset() {
    let c = parse(
        "[link]\nframing = \"overhead 24 mpu 64 linklayer atm\"\n[link.left_to_right]\nframing = \"pppoe\"\n",
    );
    let l = c.link_shape(L).framing;
    assert_eq!(
        (l.overhead, l.mpu, l.linklayer),
        (8, 0, LinkLayer::Ethernet)
    );
    let r = c.link_shape(R).framing;
    assert_eq!((r.overhead, r.mpu, r.linklayer), (24, 64, LinkLayer::Atm));
    let negative = parse("[link]\nframing = \"overhead -4\"\n");
    assert_eq!(negative.link_shape(L).framing.overhead, -4);
}

#[test]
fn traces_and_schedules_are_relative_to_the_config_file() {
    let c = seed("trace-mahimahi.toml");
    assert!(c.link_shape(L).schedule.is_none());
    match c.link_shape(R).schedule {
        Some(Schedule::Trace { opportunities_ms }) => {
            assert_eq!(opportunities_ms.len(), 75);
            assert_eq!(opportunities_ms.last(), Some(&100));
        }
        other => panic!("expected the trace, got {other:?}"),
    }
    let s = seed("trace-schedule.toml");
    for dir in [L, R] {
        match s.link_shape(dir).schedule {
            Some(Schedule::Steps { steps, repeat_ns }) => {
                assert_eq!(steps.len(), 3);
                assert_eq!(repeat_ns, Some(6_000_000_000));
                assert_eq!(steps[1].delay_ns, Some(20_000_000));
            }
            other => panic!("expected the schedule, got {other:?}"),
        }
        assert_eq!(s.link_shape(dir).framing.overhead, 8);
    }
    // Text without a file: relative to the working directory.
    let cwd = parse("[link.left_to_right]\ntrace = \"configs/traces/12-6mbit.up\"\n");
    assert!(matches!(
        cwd.link_shape(L).schedule,
        Some(Schedule::Trace { .. })
    ));
}

#[test]
fn a_direction_trace_beats_a_shared_schedule() {
    let c = parse(
        "[link]\nschedule = \"configs/traces/step-down.sched\"\n[link.left_to_right]\ntrace = \"configs/traces/12-6mbit.up\"\n",
    );
    assert!(matches!(
        c.link_shape(L).schedule,
        Some(Schedule::Trace { .. })
    ));
    assert!(matches!(
        c.link_shape(R).schedule,
        Some(Schedule::Steps { .. })
    ));
    // An empty path is none: the direction clears the shared schedule.
    let cleared = parse(
        "[link]\nschedule = \"configs/traces/step-down.sched\"\n[link.left_to_right]\nschedule = \"\"\n",
    );
    assert!(cleared.link_shape(L).schedule.is_none());
    assert!(cleared.link_shape(R).schedule.is_some());
}

#[test]
fn shape_overrides_by_short_path() {
    let mut c = Config::default();
    c.apply_override("left.netem=loss 1%").unwrap();
    assert_eq!(
        c.link_shape(L).impairments.loss,
        Loss::Random {
            percent: 1.0,
            correlation: 0.0
        }
    );
    assert!(c.link_shape(R).impairments.is_none());
    c.apply_override("link.seed=100").unwrap();
    assert_eq!((c.seed(L), c.seed(R)), (100, 101));
    c.apply_override("right.seed=7").unwrap();
    assert_eq!((c.seed(L), c.seed(R)), (100, 7));
    c.apply_override("right.framing=bridged-llcsnap").unwrap();
    assert_eq!(c.link_shape(R).framing.linklayer, LinkLayer::Atm);
    c.apply_override("right.trace=configs/traces/12-6mbit.up")
        .unwrap();
    assert!(c.link_shape(R).schedule.is_some());
    c.apply_override("right.trace=").unwrap();
    assert!(c.link_shape(R).schedule.is_none());
    // Keys untouched by an override survive the rebuild.
    c.apply_override("link.rate=10mbit").unwrap();
    assert_eq!(c.seed(R), 7);
    assert!(!c.link_shape(L).impairments.is_none());

    let before = c.clone();
    let e = c.apply_override("left.netem=loss 200%").unwrap_err();
    assert_eq!(
        e.to_string(),
        "--set: link.left_to_right.netem = \"loss 200%\": invalid loss \"200%\": expected a percentage in 0..=100 such as 1% or 0.5; fix: write tc-netem options such as \"delay 10ms 2ms distribution normal loss 1% duplicate 0.1%\""
    );
    let e = c.apply_override("left.seed=many").unwrap_err().to_string();
    assert!(e.contains("link.left_to_right.seed"), "{e}");
    assert_eq!(c, before);
}

#[test]
fn check_report_shows_shape_and_seed() {
    let default = check_report(&Config::default());
    assert!(default.contains("  netem none  seed 1\n"), "{default}");
    assert!(default.contains("  netem none  seed 2\n"), "{default}");
    let loss = check_report(&seed("netem-loss.toml"));
    let lines: Vec<&str> = loss.lines().filter(|l| l.contains("netem")).collect();
    assert_eq!(
        lines,
        [
            "  netem loss 1% duplicate 0.1% seed 42",
            "  netem loss 0.5% 25% seed 43"
        ]
    );
    let jitter = check_report(&seed("netem-jitter.toml"));
    assert!(jitter.contains("  netem delay 10ms 2ms distribution normal seed 7\n"));
    let trace = check_report(&seed("trace-mahimahi.toml"));
    let line = trace.lines().find(|l| l.contains("trace ")).unwrap();
    assert!(
        line.starts_with("  trace ")
            && line.ends_with(
                "configs/traces/12-6mbit.up (75 delivery opportunities, repeating every 100ms; replaces the rate)"
            ),
        "{line}"
    );
    let sched = check_report(&seed("trace-schedule.toml"));
    assert!(sched.contains(
        "configs/traces/step-down.sched (3 steps, repeating every 6s; replaces the rate)\n"
    ));
    assert!(sched.contains("  framing overhead 8 mpu 0 linklayer ethernet\n"));
    assert!(!default.contains("framing"));
}

/// A bare link rate, a rate in bytes and a delay without a unit are taken
/// as tc reads them, and each is warned about by its field.
#[test]
fn likely_typos_are_accepted_with_a_warning_naming_the_field() {
    let c =
        parse("[link]\nrate = \"100\"\ndelay = \"20\"\n[link.right_to_left]\nrate = \"10mbps\"\n");
    assert_eq!(c.link_params(L).rate_bytes_ps, 12);
    assert_eq!(c.link_params(L).delay_ns, 20_000);
    assert_eq!(c.link_params(R).rate_bytes_ps, 10_000_000);
    let w: Vec<String> = c.warnings().iter().map(|w| w.to_string()).collect();
    assert_eq!(w.len(), 3, "{w:?}");
    assert!(
        w[0].contains("link.rate") && w[0].contains("did you mean \"100mbit\"?"),
        "{}",
        w[0]
    );
    assert!(
        w[1].contains("link.delay") && w[1].contains("did you mean \"20ms\" or \"20s\"?"),
        "{}",
        w[1]
    );
    assert!(
        w[2].contains("link.right_to_left.rate") && w[2].contains("80Mbit"),
        "{}",
        w[2]
    );
    assert!(parse("[link]\nrate = \"100mbit\"\ndelay = \"5ms\"\n")
        .warnings()
        .is_empty());
    // A shared qdisc that one side's tc lines override is said.
    let c = parse("[link]\nqdisc = \"fq_codel\"\ntc = [\"tc qdisc add dev left root sfq\"]\n");
    let w: Vec<String> = c.warnings().iter().map(|w| w.to_string()).collect();
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(
        w[0].contains("link.qdisc")
            && w[0].contains(
                "applies to dev right only: dev left is built by its tc lines (link.tc[0])"
            ),
        "{}",
        w[0]
    );
    assert_eq!(c.tc_lines(R), vec!["tc qdisc add dev right root fq_codel"]);
}

/// `bloatbox tc -c FILE ...` with no daemon at FILE's socket answers from
/// the configuration as the link would start, says so on stderr, keeps no
/// change, and fails as tc fails.
#[test]
fn tc_with_a_config_and_no_daemon_answers_offline() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("none.sock");
    let text = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("configs/htb-sfq-100mbit.toml"),
    )
    .unwrap();
    let cfg = dir.path().join("htb.toml");
    let text = format!(
        "{}\n[daemon]\ncontrol_socket = \"{}\"\n",
        text.replace("[daemon]", "[daemon_unused]"),
        socket.display()
    );
    std::fs::write(&cfg, text).unwrap();
    let tc = |args: &[&str]| {
        let cfg = cfg.to_str().unwrap();
        common::bloatbox()
            .args(["tc", "-c", cfg])
            .args(args)
            .output()
            .unwrap()
    };
    let show = tc(&["-s", "class", "show", "dev", "left"]);
    let (out, err) = (
        String::from_utf8_lossy(&show.stdout),
        String::from_utf8_lossy(&show.stderr),
    );
    assert!(show.status.success(), "{out}{err}");
    assert!(
        out.contains("class htb 1:10 root leaf 10: prio 0 rate 100Mbit"),
        "{out}"
    );
    assert!(out.contains(" Sent 0 bytes 0 pkt"), "{out}");
    assert!(
        err.contains("no daemon at") && err.contains("offline"),
        "{err}"
    );
    // A change is carried out, not kept.
    assert!(tc(&["qdisc", "replace", "dev", "left", "root", "pfifo"])
        .status
        .success());
    let again = tc(&["qdisc", "show", "dev", "left"]);
    assert!(String::from_utf8_lossy(&again.stdout).contains("qdisc htb 1: root"));
    let bad = tc(&[
        "class", "change", "dev", "left", "classid", "1:99", "htb", "rate", "1mbit",
    ]);
    assert!(!bad.status.success());
    assert!(!bad.stderr.is_empty());
}

/// The CPUs `daemon.cpus` is checked against are the process's affinity,
/// as sched_getaffinity(2) gives it.
#[test]
fn the_cpus_the_configuration_allows_are_the_process_affinity() {
    let set = nix::sched::sched_getaffinity(nix::unistd::Pid::from_raw(0)).unwrap();
    let affinity: Vec<u32> = (0..nix::sched::CpuSet::count())
        .filter(|&c| set.is_set(c).unwrap())
        .map(|c| c as u32)
        .collect();
    assert_eq!(bloatbox::config::allowed_cpus(), Some(affinity));
}

/// A TAP MTU below 1280 is taken, IPv4 only, with a warning on `tap.mtu`
/// (IPv6 needs 1280: RFC 8200); from 1280 the TAPs get both addresses.
#[test]
fn an_mtu_below_ipv6s_least_warns_and_runs_ipv4_only() {
    let small = Config::from_str("[tap]\nmtu = 576\n", "t.toml").unwrap();
    assert!(!small.ipv6_on_taps());
    let warned = small.warnings();
    assert_eq!(warned.len(), 1, "{warned:?}");
    assert_eq!(warned[0].path, "tap.mtu");
    assert!(warned[0].message.contains("1280"), "{}", warned[0]);
    let v6 = Config::from_str("[tap]\nmtu = 1280\n", "t.toml").unwrap();
    assert!(v6.ipv6_on_taps());
    assert!(v6.warnings().is_empty());
}

/// dualpi2 in the string and table forms, checked by the real tc front
/// end, and a refusal the kernel makes (coupling factor 0).
#[test]
fn dualpi2_qdisc_string_and_table_build() {
    let check = Some(&bloatbox::tc::check_steps as bloatbox::config::TcCheck);
    let c = Config::from_str_with(
        "[link]\nqdisc = \"dualpi2 any_ect step_thresh 5p\"\n",
        "dualpi2.toml",
        check,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        c.tc_lines(L),
        vec!["tc qdisc add dev left root dualpi2 any_ect step_thresh 5p"]
    );
    let table = "[link]\nqdisc = { kind = \"dualpi2\", limit = 500, alpha = 0.5, \
                 step_thresh = \"5p\", classic_protection = \"30%\", ecn = \"any_ect\", \
                 drop_on_overload = false, split_gso = false }\n";
    let c = Config::from_str_with(table, "dualpi2.toml", check).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        c.tc_lines(L),
        vec![
            "tc qdisc add dev left root dualpi2 limit 500 alpha 0.5 step_thresh 5p \
              classic_protection 30% any_ect overflow no_split_gso"
        ]
    );
    let err = Config::from_str_with(
        "[link]\nqdisc = \"dualpi2 coupling_factor 0\"\n",
        "dualpi2.toml",
        check,
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("link.qdisc") && err.contains("integer out of range"),
        "{err}"
    );
}
