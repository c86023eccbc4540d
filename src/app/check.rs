//! `bloatbox check`: a configuration file validated as `up` would use it,
//! and what it sets up printed.

use std::path::Path;

use crate::live::{build_bridge, load};

/// `bloatbox check FILE`: the configuration loads, every tc line passes the
/// tc front end and both qdisc trees build. A simulator scenario (which
/// `bloatbox sim` runs) is refused with that said.
pub fn check(file: &Path) -> anyhow::Result<()> {
    let cfg = load(Some(file)).map_err(|e| {
        if crate::sim::Scenario::from_file(file).is_ok() {
            anyhow::anyhow!(
                "{e:#}\n{} is a simulator scenario, not a link configuration: run it with \
                 `bloatbox sim {}`",
                file.display(),
                file.display()
            )
        } else {
            e
        }
    })?;
    // Lines that pass one by one can still fail together (parents, classes).
    build_bridge(&cfg)?;
    crate::out!("{}", crate::config::check_report(&cfg))?;
    Ok(())
}
