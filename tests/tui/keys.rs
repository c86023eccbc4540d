//! Key handling of the TUI as pure state changes: every key of every mode,
//! and the `Action`s they produce, on an `App` fed with snapshots of the
//! real core.

use bloatbox::control::field::FieldError;
use bloatbox::dir::Dir;
use bloatbox::time::NS_PER_MS;
use bloatbox::tui::fixtures::{app_after, Scenario};
use bloatbox::tui::state::{Focus, Mode, SortKey};
use bloatbox::tui::{Action, App, LinkField, Preset};
use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

fn key(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

fn ch(c: char) -> KeyEvent {
    key(KeyCode::Char(c))
}

fn typed(app: &mut App, text: &str) -> Option<Action> {
    let mut last = None;
    for c in text.chars() {
        last = app.on_key(ch(c));
    }
    last
}

/// fq_codel in both directions after 1 s of load: 6 flows left→right.
fn fq_app() -> App {
    app_after(&mut Scenario::fq_codel_under_load(), 10, 100 * NS_PER_MS)
}

#[test]
fn q_and_ctrl_c_quit_in_every_mode() {
    let mut app = fq_app();
    assert_eq!(app.on_key(ch('q')), Some(Action::Quit));
    for open in ['?', 'm', 'e'] {
        let mut app = fq_app();
        app.on_key(ch(open));
        assert_ne!(app.mode, Mode::Normal);
        let ctrl_c = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
        assert_eq!(app.on_key(ctrl_c), Some(Action::Quit), "mode after {open}");
    }
    // In help, q quits too; in the set prompt it is text.
    let mut app = fq_app();
    app.on_key(ch('?'));
    assert_eq!(app.on_key(ch('q')), Some(Action::Quit));
    let mut app = fq_app();
    app.on_key(ch('e'));
    assert_eq!(app.on_key(ch('q')), None);
    assert_eq!(app.mode, Mode::Set { input: "q".into() });
}

#[test]
fn key_releases_are_ignored() {
    let mut app = fq_app();
    let release = KeyEvent::new_with_kind(
        KeyCode::Char('q'),
        KeyModifiers::NONE,
        KeyEventKind::Release,
    );
    assert_eq!(app.on_key(release), None);
    assert_eq!(app.mode, Mode::Normal);
}

#[test]
fn help_opens_and_closes() {
    let mut app = fq_app();
    app.on_key(ch('?'));
    assert_eq!(app.mode, Mode::Help);
    app.on_key(ch('x'));
    assert_eq!(app.mode, Mode::Help, "other keys keep the help open");
    for close in [ch('?'), key(KeyCode::Esc), key(KeyCode::Enter)] {
        app.mode = Mode::Help;
        assert_eq!(app.on_key(close), None);
        assert_eq!(app.mode, Mode::Normal);
    }
}

#[test]
fn pause_freezes_the_display_and_counts_skipped_snapshots() {
    let mut s = Scenario::fq_codel_under_load();
    let mut app = app_after(&mut s, 3, 100 * NS_PER_MS);
    let at = app.latest.as_ref().unwrap().bridge.at;
    app.on_key(ch('p'));
    assert!(app.paused);
    for snap in s.snapshots(2, 100 * NS_PER_MS) {
        app.on_snapshot(snap);
    }
    assert_eq!(app.latest.as_ref().unwrap().bridge.at, at, "frozen");
    assert_eq!(app.skipped, 2);
    app.on_key(ch(' '));
    assert!(!app.paused);
    assert_eq!(app.skipped, 0);
    app.on_snapshot(s.snapshots(1, 100 * NS_PER_MS).remove(0));
    assert!(app.latest.as_ref().unwrap().bridge.at > at);
}

#[test]
fn direction_keys() {
    let mut app = fq_app();
    assert_eq!(app.dir, Dir::LeftToRight);
    app.on_key(ch('d'));
    assert_eq!(app.dir, Dir::RightToLeft);
    app.on_key(ch('d'));
    assert_eq!(app.dir, Dir::LeftToRight);
    app.on_key(ch('2'));
    assert_eq!(app.dir, Dir::RightToLeft);
    app.on_key(ch('1'));
    assert_eq!(app.dir, Dir::LeftToRight);
    // Switching resets the selection to the top.
    app.on_key(key(KeyCode::Down));
    assert_eq!(app.flow_sel, 1);
    app.on_key(ch('2'));
    assert_eq!(app.flow_sel, 0);
}

#[test]
fn tab_moves_focus_and_arrows_move_the_focused_selection() {
    let mut app = fq_app();
    let n = app.view().flows.len();
    assert!(n >= 5, "{n} flows");
    assert_eq!(app.focus, Focus::Flows);
    app.on_key(key(KeyCode::Down));
    app.on_key(ch('j'));
    assert_eq!(app.flow_sel, 2);
    app.on_key(key(KeyCode::Up));
    assert_eq!(app.flow_sel, 1);
    app.on_key(ch('k'));
    app.on_key(ch('k'));
    assert_eq!(app.flow_sel, 0, "stops at the top");
    app.on_key(key(KeyCode::PageDown));
    assert_eq!(
        app.flow_sel,
        n - 1,
        "a page past the end stops at the last row"
    );
    app.on_key(key(KeyCode::PageUp));
    assert_eq!(app.flow_sel, 0);
    app.on_key(key(KeyCode::End));
    assert_eq!(app.flow_sel, n - 1);
    app.on_key(key(KeyCode::Home));
    assert_eq!(app.flow_sel, 0);

    app.on_key(key(KeyCode::Tab));
    assert_eq!(app.focus, Focus::Tree);
    let nodes = app.view().tree.len();
    app.on_key(key(KeyCode::Down));
    assert_eq!(app.tree_sel, 1.min(nodes - 1));
    assert_eq!(app.flow_sel, 0, "the flow selection stays");
    app.on_key(key(KeyCode::BackTab));
    assert_eq!(app.focus, Focus::Flows);
}

#[test]
fn tree_selection_is_bounded_by_the_nodes() {
    // (Selection through a real class tree: state.rs, with QFQ.)
    let mut app = fq_app();
    app.on_key(key(KeyCode::Tab));
    let nodes = app.view().tree.len();
    for _ in 0..nodes + 3 {
        app.on_key(key(KeyCode::Down));
    }
    assert_eq!(app.tree_sel, nodes - 1);
    app.on_key(key(KeyCode::Home));
    assert_eq!(app.tree_sel, 0);
}

#[test]
fn sort_cycles_through_every_key_and_reverses() {
    let mut app = fq_app();
    assert_eq!(app.sort, SortKey::Backlog);
    let mut seen = vec![app.sort];
    for _ in 1..SortKey::ALL.len() {
        app.on_key(ch('s'));
        seen.push(app.sort);
    }
    assert_eq!(seen, SortKey::ALL.to_vec());
    app.on_key(ch('s'));
    assert_eq!(app.sort, SortKey::Backlog, "wraps around");
    let backlogs: Vec<u64> = app.view().flows.iter().map(|f| f.backlog).collect();
    assert!(backlogs.windows(2).all(|w| w[0] >= w[1]), "{backlogs:?}");
    app.on_key(ch('S'));
    assert!(!app.sort_desc);
    let backlogs: Vec<u64> = app.view().flows.iter().map(|f| f.backlog).collect();
    assert!(backlogs.windows(2).all(|w| w[0] <= w[1]), "{backlogs:?}");
    // Each key orders the rows by its own value.
    app.on_key(ch('S'));
    for _ in 0..SortKey::ALL.len() {
        app.on_key(ch('s'));
        let rows = &app.view().flows;
        let ok = rows.windows(2).all(|w| match app.sort {
            SortKey::Backlog => w[0].backlog >= w[1].backlog,
            SortKey::Packets => w[0].qlen >= w[1].qlen,
            SortKey::Sojourn => w[0].sojourn_ns >= w[1].sojourn_ns,
            SortKey::Drops => w[0].drops >= w[1].drops,
            SortKey::Marks => w[0].ecn_marks >= w[1].ecn_marks,
            SortKey::Throughput => w[0].throughput_bps >= w[1].throughput_bps,
            SortKey::Flow => w[0].bucket >= w[1].bucket,
        });
        assert!(ok, "sorted by {:?}", app.sort);
    }
}

#[test]
fn prompt_keys_prefill_the_set_prompt() {
    for (k, prefill) in [
        ('r', "rate "),
        ('l', "delay "),
        ('g', "ring "),
        ('c', "rx-usecs "),
        ('e', ""),
        (':', ""),
    ] {
        let mut app = fq_app();
        assert_eq!(app.on_key(ch(k)), None);
        assert_eq!(
            app.mode,
            Mode::Set {
                input: prefill.into()
            },
            "key {k}"
        );
    }
}

/// A likely typo is sent as typed (tc's meaning) and warned about on the
/// status line; a good value clears the warning.
#[test]
fn set_prompt_warns_about_likely_typos() {
    let mut app = fq_app();
    app.on_key(ch('e'));
    typed(&mut app, "rate 100");
    let got = app.on_key(key(KeyCode::Enter));
    assert_eq!(
        got,
        Some(Action::SetLink {
            dir: Dir::LeftToRight,
            field: LinkField::Rate,
            value: 12
        })
    );
    let status = app.status.clone().unwrap_or_default();
    assert!(
        status.starts_with("warning: rate \"100\" is 96bit") && status.contains("100mbit"),
        "{status}"
    );
    app.on_key(ch('e'));
    typed(&mut app, "delay 20ms");
    app.on_key(key(KeyCode::Enter));
    assert_eq!(app.status, None);
}

#[test]
fn set_prompt_produces_link_actions_in_core_units() {
    let cases = [
        ("rate 50mbit", LinkField::Rate, 6_250_000),
        ("delay 20ms", LinkField::Delay, 20_000_000),
        ("ring 512", LinkField::TxRing, 512),
        ("bql off", LinkField::Bql, 0),
        ("bql on", LinkField::Bql, 1),
        ("tx-usecs 50", LinkField::TxUsecs, 50),
        ("tx-frames 16", LinkField::TxFrames, 16),
        ("rx-usecs 20", LinkField::RxUsecs, 20),
        ("rx-frames 0", LinkField::RxFrames, 0),
    ];
    for (text, field, value) in cases {
        let mut app = fq_app();
        app.on_key(ch('2'));
        app.on_key(ch('e'));
        typed(&mut app, text);
        let got = app.on_key(key(KeyCode::Enter));
        assert_eq!(
            got,
            Some(Action::SetLink {
                dir: Dir::RightToLeft,
                field,
                value
            }),
            "{text}"
        );
        assert_eq!(app.mode, Mode::Normal);
    }
}

#[test]
fn ctrl_u_clears_the_set_prompt_and_other_control_keys_type_nothing() {
    let mut app = fq_app();
    app.on_key(ch('r'));
    typed(&mut app, "5mbit");
    app.on_key(KeyEvent::new(KeyCode::Char('w'), KeyModifiers::CONTROL));
    assert_eq!(
        app.mode,
        Mode::Set {
            input: "rate 5mbit".into()
        }
    );
    app.on_key(KeyEvent::new(KeyCode::Char('u'), KeyModifiers::CONTROL));
    assert_eq!(
        app.mode,
        Mode::Set {
            input: String::new()
        }
    );
    typed(&mut app, "ring 0");
    app.on_key(key(KeyCode::Enter));
    assert_eq!(app.mode, Mode::Normal);
    let status = app.status.clone().unwrap_or_default();
    assert!(status.contains("expected 1..=4096"), "{status}");
}

#[test]
fn set_prompt_editing_and_errors() {
    let mut app = fq_app();
    app.on_key(ch('r'));
    typed(&mut app, "5x");
    app.on_key(key(KeyCode::Backspace));
    typed(&mut app, "mbit");
    assert_eq!(
        app.mode,
        Mode::Set {
            input: "rate 5mbit".into()
        }
    );
    app.on_key(key(KeyCode::Left));
    assert_eq!(
        app.mode,
        Mode::Set {
            input: "rate 5mbit".into()
        },
        "other keys are ignored"
    );
    assert_eq!(
        app.on_key(key(KeyCode::Enter)),
        Some(Action::SetLink {
            dir: Dir::LeftToRight,
            field: LinkField::Rate,
            value: 625_000
        })
    );

    for (text, needle) in [
        ("rate fast", "invalid rate \"fast\""),
        ("speed 5", "unknown field \"speed\""),
        ("ring 0", "ring \"0\": expected 1..=4096"),
        ("ring 5000", "ring \"5000\": expected 1..=4096"),
        ("bql maybe", "expected on or off"),
        ("rate", "expected FIELD VALUE"),
        ("rate 1 2", "expected FIELD VALUE"),
    ] {
        let mut app = fq_app();
        app.on_key(ch('e'));
        typed(&mut app, text);
        assert_eq!(app.on_key(key(KeyCode::Enter)), None, "{text}");
        assert_eq!(app.mode, Mode::Normal);
        let status = app.status.clone().unwrap_or_default();
        assert!(status.contains(needle), "{text}: {status}");
        // The next key clears the message.
        app.on_key(ch('x'));
        assert_eq!(app.status, None);
    }

    let mut app = fq_app();
    app.on_key(ch('r'));
    assert_eq!(app.on_key(key(KeyCode::Esc)), None);
    assert_eq!(app.mode, Mode::Normal);
    // The prompt holds at most 64 characters.
    app.on_key(ch('e'));
    typed(&mut app, &"x".repeat(100));
    assert_eq!(
        app.mode,
        Mode::Set {
            input: "x".repeat(64)
        }
    );
}

#[test]
fn b_toggles_bql_of_the_selected_direction() {
    let mut app = App::new();
    assert_eq!(app.on_key(ch('b')), None, "no snapshot yet");
    assert!(app.status.as_deref().unwrap().contains("no snapshot"));
    let mut app = fq_app();
    assert_eq!(
        app.on_key(ch('b')),
        Some(Action::SetLink {
            dir: Dir::LeftToRight,
            field: LinkField::Bql,
            value: 0
        }),
        "BQL is on in the fixture: b turns it off"
    );
}

#[test]
fn preset_menu_keys() {
    let mut app = fq_app();
    app.on_key(ch('m'));
    assert_eq!(
        app.mode,
        Mode::Presets { selected: 3 },
        "opens on the current kind"
    );
    app.on_key(key(KeyCode::Down));
    app.on_key(ch('j'));
    assert_eq!(app.mode, Mode::Presets { selected: 5 });
    app.on_key(key(KeyCode::Up));
    app.on_key(ch('k'));
    app.on_key(ch('k'));
    app.on_key(ch('k'));
    app.on_key(ch('k'));
    assert_eq!(app.mode, Mode::Presets { selected: 0 });
    app.on_key(ch('k'));
    let last = app.menu().len() - 1;
    assert_eq!(app.mode, Mode::Presets { selected: last }, "wraps");
    app.on_key(ch('x'));
    assert_eq!(
        app.mode,
        Mode::Presets { selected: last },
        "other keys keep the menu"
    );
    for close in [key(KeyCode::Esc), ch('m'), ch('q')] {
        app.mode = Mode::Presets { selected: 0 };
        assert_eq!(app.on_key(close), None);
        assert_eq!(app.mode, Mode::Normal);
    }
    // Enter picks the highlighted preset, digits pick directly.
    app.on_key(ch('m'));
    app.on_key(key(KeyCode::Up));
    app.on_key(key(KeyCode::Up));
    let Some(Action::Tc(lines)) = app.on_key(key(KeyCode::Enter)) else {
        panic!("Enter picks");
    };
    assert_eq!(lines, "tc qdisc replace dev left root sfq perturb 10");
    // Digits pick the first nine, letters the rest; the menu's arrows and
    // Enter reach every one.
    app.on_key(ch('2'));
    let menu = app.menu();
    for (i, p) in menu.iter().enumerate() {
        app.on_key(ch('2'));
        app.on_key(ch('m'));
        let k = Preset::key(i).unwrap();
        assert_eq!(k, "123456789abcdefghilnopr".chars().nth(i).unwrap());
        let got = app.on_key(ch(k));
        assert_eq!(
            got,
            Some(Action::Tc(
                p.tc_lines(Dir::RightToLeft, 1_250_000).join("\n")
            ))
        );
        assert_eq!(app.mode, Mode::Normal);
    }
    for (i, p) in menu.iter().enumerate().skip(9) {
        app.on_key(ch('2'));
        app.on_key(ch('m'));
        let Mode::Presets { selected } = app.mode else {
            panic!("the menu is open");
        };
        let n = menu.len();
        for _ in 0..(i + n - selected) % n {
            app.on_key(key(KeyCode::Down));
        }
        assert_eq!(
            app.on_key(key(KeyCode::Enter)),
            Some(Action::Tc(
                p.tc_lines(Dir::RightToLeft, 1_250_000).join("\n")
            ))
        );
    }
    // The digits 1 to 9 are the first nine kinds; 0 picks none.
    app.on_key(ch('m'));
    app.on_key(ch('0'));
    assert!(matches!(app.mode, Mode::Presets { .. }), "0 is no preset");
}

fn preset(kind: &str) -> Preset {
    Preset::named(kind).unwrap_or_else(|| panic!("{kind} is not on the menu"))
}

/// The menu is the kind table's entries with an example, in its order.
#[test]
fn the_menu_reads_the_kind_table() {
    let names: Vec<&str> = Preset::all().iter().map(|p| p.name()).collect();
    assert_eq!(
        names,
        [
            "pfifo_fast",
            "sfq",
            "codel",
            "fq_codel",
            "tbf",
            "htb",
            "multiq",
            "prio",
            "hfsc",
            "drr",
            "ets",
            "red",
            "choke",
            "pie",
            "fq_pie",
            "fq",
            "plug",
            "skbprio",
            "hhf",
            "sfb",
            "dualpi2",
            "netem",
            "cake"
        ]
    );
    assert_eq!(
        preset("codel").tc_lines(Dir::RightToLeft, 0),
        vec!["tc qdisc replace dev right root codel"]
    );
    assert!(Preset::named("qfq").is_none() && Preset::named("mq").is_none());
}

/// Every entry's lines are taken by tc, on either device, at 10mbit,
/// 100mbit and unlimited (1gbit; RED's entry is refused from 10gbit up),
/// and the menu of 80×24 shows the ones of HFSC, DRR and ETS whole (ETS's
/// priomap wrapped).
#[test]
fn every_menu_entry_is_taken_by_tc_and_shown_whole() {
    use bloatbox::packet::Drops;
    use bloatbox::qdisc::kinds::BUILTIN;
    use bloatbox::qdisc::tree::{DevSpec, QdiscTree};
    use bloatbox::tc::TcCommand;
    use bloatbox::time::Instant;
    for p in Preset::all() {
        // multiq's entry is on the menu of multi-queue devices only.
        let tx_queues = if Preset::menu(1).contains(p) { 1 } else { 4 };
        for dir in Dir::ALL {
            for rate in [0, 1_250_000, 12_500_000] {
                let spec = DevSpec {
                    tx_queues,
                    ..DevSpec::new(dir, BUILTIN)
                };
                let mut tree = QdiscTree::new(spec).unwrap();
                for line in p.tc_lines(dir, rate) {
                    let cmd = TcCommand::parse(&line).unwrap_or_else(|e| panic!("{line}: {e:?}"));
                    bloatbox::tc::run(&mut tree, &cmd, Instant::ZERO, &mut Drops::new())
                        .unwrap_or_else(|e| panic!("{line}: {e:?}"));
                }
            }
        }
    }
    let mut app = fq_app();
    for (kind, last) in [
        ("hfsc", "parent 1:10 handle 10: fq_codel"),
        ("drr", "matchall flowid 1:1"),
        ("ets", "0 0 1 1 1 1 1 1 1 1"),
    ] {
        let selected = app.menu().iter().position(|p| p.name() == kind).unwrap();
        app.mode = Mode::Presets { selected };
        let text = bloatbox::tui::text_capture(&app, 80, 24);
        assert!(text.contains(last), "{kind}:\n{text}");
        // The last entry's label (its key and kind) is shown whole.
        let n = app.menu().len();
        let last = format!(
            "{} {}",
            Preset::key(n - 1).unwrap(),
            app.menu()[n - 1].name()
        );
        assert!(text.contains(&last), "{kind}:\n{text}");
    }
}

#[test]
fn preset_lines_name_the_device_and_shape_to_the_link_rate() {
    assert_eq!(
        preset("fq_codel").tc_lines(Dir::LeftToRight, 1_250_000),
        vec!["tc qdisc replace dev left root fq_codel"]
    );
    assert_eq!(
        preset("pfifo_fast").tc_lines(Dir::RightToLeft, 0),
        vec!["tc qdisc replace dev right root pfifo_fast"]
    );
    let htb = preset("htb").tc_lines(Dir::LeftToRight, 12_500_000);
    assert_eq!(
        htb,
        vec![
            "tc qdisc replace dev left root handle 1: htb default 10",
            "tc class add dev left parent 1: classid 1:10 htb rate 100Mbit ceil 100Mbit",
            "tc qdisc add dev left parent 1:10 handle 10: sfq perturb 10",
        ]
    );
    // 4 ms of bytes at 100 Mbit/s; never under two frames; unlimited links
    // shape to 1 Gbit/s.
    assert_eq!(
        preset("tbf").tc_lines(Dir::LeftToRight, 12_500_000),
        vec!["tc qdisc replace dev left root tbf rate 100Mbit burst 50000b latency 50ms"]
    );
    assert!(preset("tbf").tc_lines(Dir::LeftToRight, 1000)[0].contains("burst 3028b"));
    assert!(preset("tbf").tc_lines(Dir::LeftToRight, 0)[0].contains("rate 1Gbit"));
}

#[test]
fn unbound_keys_change_nothing() {
    let mut app = fq_app();
    let before = (app.dir, app.focus, app.sort, app.flow_sel, app.paused);
    for k in [
        ch('z'),
        key(KeyCode::F(5)),
        key(KeyCode::Esc),
        key(KeyCode::Insert),
    ] {
        assert_eq!(app.on_key(k), None);
    }
    assert_eq!(
        before,
        (app.dir, app.focus, app.sort, app.flow_sel, app.paused)
    );
    assert_eq!(app.mode, Mode::Normal);
}

#[test]
fn link_field_values_parse_and_print() {
    assert_eq!(LinkField::Rate.show(0), "unlimited");
    assert_eq!(LinkField::Rate.show(1_250_000), "10Mbit");
    assert_eq!(LinkField::Delay.show(5_000_000), "5ms");
    assert_eq!(LinkField::Bql.show(1), "on");
    assert_eq!(LinkField::TxRing.show(512), "512");
    let e = LinkField::RxUsecs.parse("1000001").unwrap_err();
    assert_eq!(
        e,
        FieldError::NotANumber {
            field: LinkField::RxUsecs,
            text: "1000001".into(),
            max: 1_000_000
        }
    );
    assert_eq!(
        e.to_string(),
        "rx-usecs \"1000001\": expected a whole number 0..=1000000"
    );
    assert!(LinkField::Delay.parse("-1").is_err());
    let described = Action::SetLink {
        dir: Dir::RightToLeft,
        field: LinkField::Rate,
        value: 625_000,
    }
    .describe();
    assert_eq!(described, "set rate 5Mbit");
    assert_eq!(Action::Tc("a\nb".into()).describe(), "a; b");
    let tc = |s: &str| Action::Tc(s.into()).dir();
    assert_eq!(
        tc("tc qdisc replace dev right root sfq"),
        Some(Dir::RightToLeft)
    );
    assert_eq!(
        tc("tc qdisc replace dev left root sfq\ntc class add dev left"),
        Some(Dir::LeftToRight)
    );
    assert_eq!(tc("tc qdisc show"), None);
    assert_eq!(tc("tc qdisc add dev"), None);
    assert_eq!(Action::Quit.dir(), None);
}

mod any_input {
    use super::*;
    use bloatbox::tui::text_capture;
    use proptest::prelude::*;

    fn any_key() -> impl Strategy<Value = KeyEvent> {
        let codes = prop_oneof![
            any::<char>().prop_map(KeyCode::Char),
            proptest::sample::select(vec![
                KeyCode::Enter,
                KeyCode::Esc,
                KeyCode::Tab,
                KeyCode::BackTab,
                KeyCode::Backspace,
                KeyCode::Up,
                KeyCode::Down,
                KeyCode::PageUp,
                KeyCode::PageDown,
                KeyCode::Home,
                KeyCode::End,
                KeyCode::Char('m'),
                KeyCode::Char('e'),
                KeyCode::Char('s'),
            ]),
        ];
        (codes, any::<bool>()).prop_map(|(c, shift)| {
            let m = if shift {
                KeyModifiers::SHIFT
            } else {
                KeyModifiers::NONE
            };
            KeyEvent::new(c, m)
        })
    }

    proptest! {
        #![proptest_config(crate::common::proptest_config(64, file!()))]
        /// Any key sequence at any terminal size: no panic, selections in
        /// range, the screen exactly the terminal's size.
        #[test]
        fn keys_and_sizes_never_panic(
            keys in proptest::collection::vec(any_key(), 0..40),
            w in 1u16..200,
            h in 1u16..70,
        ) {
            let mut app = fq_app();
            for k in keys {
                let _ = app.on_key(k);
                prop_assert!(app.flow_sel < app.view().flows.len().max(1));
                prop_assert!(app.tree_sel < app.view().tree.len().max(1));
            }
            let text = text_capture(&app, w, h);
            prop_assert_eq!(text.lines().count(), h as usize);
        }
    }
}
