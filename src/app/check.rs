//! `bloatbox check`: a configuration file validated as `up` would use it,
//! and what it sets up printed.

use std::path::Path;

use crate::live::{build_bridge, load};

/// `bloatbox check FILE`: the configuration loads, every tc line passes the
/// tc front end and both qdisc trees build.
pub fn check(file: &Path) -> anyhow::Result<()> {
    let cfg = load(Some(file))?;
    // Lines that pass one by one can still fail together (parents, classes).
    build_bridge(&cfg)?;
    crate::out!("{}", crate::config::check_report(&cfg))?;
    Ok(())
}
