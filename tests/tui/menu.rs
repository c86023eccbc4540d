//! The qdisc menu's layout and reach: 26 entries (the 23 of today and room
//! for three more) laid out whole, keys and all, at 80×24 and larger with
//! the longest entries' tc lines below; multiq offered on a multi-queue
//! device only; tc lines typed at the `e` prompt (plug's block and
//! release).

use bloatbox::dir::Dir;
use bloatbox::time::NS_PER_MS;
use bloatbox::tui::fixtures::{app_after, Scenario};
use bloatbox::tui::render::{capture, draw_menu, menu_grid};
use bloatbox::tui::state::Mode;
use bloatbox::tui::{Action, App, Preset};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::layout::Rect;

fn key(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

/// fq_codel in both directions after 1 s of load, the left device with
/// `tx_queues` TX queues.
fn app_with_queues(tx_queues: u16) -> App {
    let mut s = Scenario::fq_codel_under_load();
    let now = s.now();
    s.bridge_mut()
        .path_mut(Dir::LeftToRight)
        .set_tx_queues(tx_queues, now)
        .unwrap();
    app_after(&mut s, 10, 100 * NS_PER_MS)
}

/// The text inside the box whose top border row holds `title`: its rows
/// between the side borders, joined and with runs of blanks made one
/// space; `None` when the box has no bottom border on the screen.
fn box_text(screen: &str, title: &str) -> Option<String> {
    let rows: Vec<&str> = screen.lines().collect();
    let top = rows.iter().position(|r| r.contains(title))?;
    let bottom = top + rows[top..].iter().position(|r| r.contains('└'))?;
    let inner: Vec<String> = rows[top + 1..bottom]
        .iter()
        .map(|r| {
            let from = r.find('│').map_or(0, |i| i + '│'.len_utf8());
            let to = r.rfind('│').filter(|&i| i >= from).unwrap_or(r.len());
            r[from..to].to_string()
        })
        .collect();
    Some(
        inner
            .join(" ")
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" "),
    )
}

/// 26 entries (the menu of a multi-queue device and three made-up kinds
/// as long as the longest, `pfifo_fast`) with each real entry's tc lines:
/// every label and every tc line is inside the box, whole, at 80×24,
/// 100×30, 120×40 and 160×48.
#[test]
fn twenty_six_entries_fit_whole_at_80x24_and_larger() {
    let menu = Preset::menu(4);
    assert_eq!(menu.len(), 23);
    let mut names: Vec<&str> = menu.iter().map(|p| p.name()).collect();
    names.extend(["new_kind_a", "new_kind_b", "new_kind_c"]);
    for (width, height) in [(80, 24), (100, 30), (120, 40), (160, 48)] {
        for (selected, p) in menu.iter().enumerate() {
            let tc = p.tc_lines(Dir::LeftToRight, 1_250_000);
            let screen = capture(width, height, |f| {
                let area = f.area();
                draw_menu(f, area, Dir::LeftToRight, &names, selected, tc.clone())
            });
            let title = "root qdisc of L→R (1-9 a-u, ↑↓ Enter, Esc)";
            let text = box_text(&screen, title)
                .unwrap_or_else(|| panic!("{width}×{height} {}: clipped\n{screen}", p.name()));
            for (i, name) in names.iter().enumerate() {
                let label = format!("{} {name}", Preset::key(i).unwrap());
                assert_eq!(
                    text.matches(&format!(" {label} ")).count()
                        + usize::from(text.starts_with(&format!("{label} "))),
                    1,
                    "{width}×{height} {}: {label}\n{screen}",
                    p.name()
                );
            }
            for line in &tc {
                let line = line.split_whitespace().collect::<Vec<_>>().join(" ");
                assert!(
                    text.contains(&line),
                    "{width}×{height} {}: {line}\n{screen}",
                    p.name()
                );
            }
        }
    }
}

/// The grid's arithmetic at 80×24: 23 labels of at most 13 characters
/// take two columns of 12 rows while the tc lines leave 12 rows or more,
/// and more columns (up to five of 14 characters in the box's 76) when
/// they leave fewer; a taller screen takes one column.
#[test]
fn the_grid_takes_columns_as_the_height_asks() {
    let screen = Rect::new(0, 0, 80, 24);
    assert_eq!(menu_grid(23, 13, 3, screen), (2, 12));
    assert_eq!(menu_grid(23, 13, 7, screen), (2, 12));
    assert_eq!(menu_grid(23, 13, 8, screen), (3, 8));
    assert_eq!(menu_grid(23, 13, 12, screen), (4, 6));
    assert_eq!(menu_grid(23, 13, 16, screen), (5, 5));
    assert_eq!(menu_grid(23, 13, 40, screen), (5, 5));
    assert_eq!(menu_grid(23, 13, 3, Rect::new(0, 0, 160, 48)), (1, 23));
    assert_eq!(menu_grid(17, 13, 3, screen), (2, 9));
}

/// The keys: digits, then letters other than the menu's own j, k, m and q;
/// each picks one entry, enough for 23 and more.
#[test]
fn menu_keys_are_distinct_and_not_the_menus_own() {
    let keys: Vec<char> = (0..31).map_while(Preset::key).collect();
    assert_eq!(keys.len(), 31);
    assert_eq!(Preset::key(31), None);
    for (i, k) in keys.iter().enumerate() {
        assert_eq!(Preset::index_of_key(*k), Some(i), "{k}");
        assert!(!"jkmq0".contains(*k), "{k}");
    }
}

/// multiq's entry needs a multi-queue device: the menu of a single-queue
/// one leaves it out, that of a 4-queue one has it after htb.
#[test]
fn multiq_is_offered_on_a_multi_queue_device_only() {
    let names =
        |menu: Vec<Preset>| -> Vec<&'static str> { menu.iter().map(|p| p.name()).collect() };
    assert!(!names(Preset::menu(1)).contains(&"multiq"));
    let four = names(Preset::menu(4));
    let htb = four.iter().position(|n| *n == "htb").unwrap();
    assert_eq!(four[htb + 1], "multiq");
    assert_eq!(four.len(), Preset::menu(1).len() + 1);

    let mut app = app_with_queues(4);
    assert_eq!(names(app.menu()), four, "left: 4 queues");
    app.on_key(key(KeyCode::Char('m')));
    assert_eq!(app.mode, Mode::Presets { selected: 3 }, "fq_codel");
    // 7 picks multiq on the left device.
    assert_eq!(
        app.on_key(key(KeyCode::Char('7'))),
        Some(Action::Tc(
            "tc qdisc replace dev left root handle 1: multiq".into()
        ))
    );
    app.on_key(key(KeyCode::Char('2')));
    assert!(!names(app.menu()).contains(&"multiq"), "right: 1 queue");
}

/// plug's entry leaves it released (a new plug holds everything), and
/// the `e` prompt sends a tc line as typed: block, then release.
#[test]
fn plug_is_installed_released_and_blocked_from_the_prompt() {
    let plug = Preset::named("plug").unwrap();
    assert_eq!(
        plug.tc_lines(Dir::LeftToRight, 1_250_000),
        [
            "tc qdisc replace dev left root plug limit 125000",
            "tc qdisc change dev left root plug release_indefinite"
        ]
    );
    // At least ten full frames on a slow link.
    assert!(plug.tc_lines(Dir::RightToLeft, 12_500)[0].ends_with(" limit 15140"));
    let mut app = app_with_queues(1);
    for words in [
        "tc qdisc change dev left root plug block",
        "tc qdisc change dev left root plug release_indefinite",
    ] {
        app.on_key(key(KeyCode::Char('e')));
        for c in words.chars() {
            app.on_key(key(KeyCode::Char(c)));
        }
        assert_eq!(
            app.on_key(key(KeyCode::Enter)),
            Some(Action::Tc(words.into()))
        );
    }
}

/// skbprio's limit is 100 ms of the link in full frames, at least 64.
#[test]
fn skbprio_limit_is_sized_to_the_link() {
    let skbprio = Preset::named("skbprio").unwrap();
    let limit = |rate| skbprio.tc_lines(Dir::LeftToRight, rate)[0].clone();
    assert_eq!(
        limit(12_500_000),
        "tc qdisc replace dev left root skbprio limit 825"
    );
    assert!(limit(1_250_000).ends_with(" limit 82"));
    assert!(limit(125_000).ends_with(" limit 64"));
    assert!(limit(0).ends_with(" limit 8256"));
}
