//! Whole TUI screens through ratatui's TestBackend at 80×24 and 160×48,
//! compared with committed insta snapshots, from snapshots made by driving
//! the real core.

use bloatbox::time::NS_PER_MS;
use bloatbox::tui::fixtures::{app_after, Scenario};
use bloatbox::tui::text_capture;

#[test]
fn look() {
    let mut s = Scenario::pfifo_fast_under_load();
    let app = app_after(&mut s, 30, 100 * NS_PER_MS);
    println!("{}", text_capture(&app, 80, 24));
    println!("{}", text_capture(&app, 160, 48));
    let mut s = Scenario::fq_codel_under_load();
    let app = app_after(&mut s, 30, 100 * NS_PER_MS);
    println!("{}", text_capture(&app, 80, 24));
    println!("{}", text_capture(&app, 160, 48));
}
