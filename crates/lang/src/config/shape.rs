//! The link shape of each direction from the configuration: the `netem`
//! impairments (tc-netem(8) options), a rate/delay `trace` (mahimahi
//! format) or `schedule` (native format, see `link::schedule`), the
//! link-layer `framing` (tc stab options or a preset name) and the `seed`
//! of the impairments' random generator.
//!
//! Seeds: a `seed` in a direction table is that direction's seed; otherwise
//! the shared seed S (`[link] seed`, default 1) gives left→right S and
//! right→left S + 1 (wrapping), so the two directions draw differently and
//! every run of one configuration draws the same. `seed` inside the `netem`
//! text is rejected, the key is the one place for it.
//!
//! Trace and schedule paths are relative to the configuration file's
//! directory (`Config::load` makes them absolute; a configuration parsed
//! from text resolves them against the working directory). An empty path
//! means none, so `--set left.trace=` clears it.

use super::error::{toml_text, ConfigError};
use super::{Config, LinkSettings, Sourced};
use crate::dir::Dir;
use crate::link::{Framing, Impairments, LinkShape, Schedule};
use crate::tc::framing::parse_framing;
use crate::tc::netem::parse_netem;
use std::path::Path;

/// The shared seed when no `seed` is written.
pub const DEFAULT_SEED: u64 = 1;

const NETEM_FIX: &str = "fix: write tc-netem options such as \"delay 10ms 2ms distribution normal loss 1% duplicate 0.1%\"";
const FRAMING_FIX: &str = "fix: write stab options such as \"overhead 24 linklayer ethernet\" or a preset such as \"pppoe\" or \"bridged-llcsnap\"";

/// Which file format a rate/delay source is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScheduleKind {
    /// `trace`: a mahimahi trace.
    Trace,
    /// `schedule`: the native step format.
    Schedule,
}

impl ScheduleKind {
    fn key(self) -> &'static str {
        match self {
            ScheduleKind::Trace => "trace",
            ScheduleKind::Schedule => "schedule",
        }
    }
}

impl LinkSettings {
    /// The trace or schedule this table names (an empty path is none).
    fn schedule_file(&self) -> [(ScheduleKind, Option<&str>); 2] {
        fn named(v: &Option<String>) -> Option<&str> {
            v.as_deref().filter(|p| !p.is_empty())
        }
        [
            (ScheduleKind::Trace, named(&self.trace)),
            (ScheduleKind::Schedule, named(&self.schedule)),
        ]
    }

    /// Joins relative trace and schedule paths to `base`.
    fn resolve_paths(&mut self, base: &Path) {
        for path in [&mut self.trace, &mut self.schedule].into_iter().flatten() {
            if !path.is_empty() && Path::new(path.as_str()).is_relative() {
                *path = base.join(path.as_str()).display().to_string();
            }
        }
    }
}

impl Config {
    /// Makes relative trace and schedule paths relative to `base` (the
    /// configuration file's directory).
    pub fn resolve_paths(&mut self, base: &Path) {
        self.link.resolve_paths(base);
        for table in [&mut self.link.left_to_right, &mut self.link.right_to_left]
            .into_iter()
            .flatten()
        {
            table.resolve_paths(base);
        }
    }

    /// The seed of `dir`'s impairments (see the module doc for the rule).
    pub fn seed(&self, dir: Dir) -> u64 {
        if let Some(seed) = self.link.direction(dir).and_then(|t| t.seed) {
            return seed;
        }
        let shared = self.link.seed.unwrap_or(DEFAULT_SEED);
        match dir {
            Dir::LeftToRight => shared,
            Dir::RightToLeft => shared.wrapping_add(1),
        }
    }

    /// The trace or schedule file of `dir`: the direction table's beats
    /// `[link]`'s (an empty path there clears it); one table may not name
    /// both.
    pub(crate) fn schedule_source(
        &self,
        dir: Dir,
    ) -> Result<Option<(ScheduleKind, Sourced<String>)>, ConfigError> {
        let tables = [
            (format!("link.{}", dir.name()), self.link.direction(dir)),
            ("link".to_string(), Some(&self.link)),
        ];
        for (prefix, table) in tables {
            let Some(table) = table else { continue };
            match table.schedule_file() {
                [(_, Some(_)), (_, Some(_))] => {
                    return Err(ConfigError::field(
                        format!("{prefix}.schedule"),
                        None,
                        format!("{prefix} has both a trace and a schedule; expected one of them; fix: remove trace or schedule"),
                    ))
                }
                [(kind, Some(path)), _] | [_, (kind, Some(path))] => {
                    return Ok(Some((
                        kind,
                        Sourced {
                            value: path.to_string(),
                            path: format!("{prefix}.{}", kind.key()),
                        },
                    )))
                }
                // Written but empty: this table clears the rate source.
                _ if table.trace.is_some() || table.schedule.is_some() => return Ok(None),
                _ => {}
            }
        }
        Ok(None)
    }

    fn impairments(&self, dir: Dir) -> Result<Impairments, ConfigError> {
        let seed = self.seed(dir);
        let Some(text) = self.pick(dir, "netem", |l| &l.netem) else {
            return Ok(Impairments {
                seed,
                ..Impairments::default()
            });
        };
        let error = |m: String| {
            ConfigError::field(text.path.clone(), Some(toml_text(text.value.as_str())), m)
        };
        let fail = |m: String| error(format!("{m}; {NETEM_FIX}"));
        let tokens: Vec<&str> = text.value.split_whitespace().collect();
        if tokens.contains(&"seed") {
            return Err(error(
                "seed is not a netem option here; expected the seed in its own key; fix: remove seed N from netem and write seed = N in the same table".into(),
            ));
        }
        let mut imp = parse_netem(&tokens).map_err(|e| fail(e.to_string()))?;
        imp.seed = seed;
        imp.validate().map_err(|e| fail(e.to_string()))?;
        Ok(imp)
    }

    fn framing(&self, dir: Dir) -> Result<Framing, ConfigError> {
        let Some(text) = self.pick(dir, "framing", |l| &l.framing) else {
            return Ok(Framing::default());
        };
        let tokens: Vec<&str> = text.value.split_whitespace().collect();
        parse_framing(&tokens).map_err(|e| {
            ConfigError::field(
                text.path,
                Some(toml_text(text.value.as_str())),
                format!("{e}; {FRAMING_FIX}"),
            )
        })
    }

    fn schedule(&self, dir: Dir) -> Result<Option<Schedule>, ConfigError> {
        let Some((kind, file)) = self.schedule_source(dir)? else {
            return Ok(None);
        };
        // No value: the loader shows the path as written, the message the
        // resolved one.
        let fail = |m: String| ConfigError::field(file.path.clone(), None, m);
        let text = super::read_input_file(Path::new(&file.value)).map_err(|e| {
            fail(format!(
                "cannot read the {} file {}: {e}; expected a readable file, relative to the configuration file's directory; fix: correct the path or remove the key",
                kind.key(),
                file.value
            ))
        })?;
        let parsed = match kind {
            ScheduleKind::Trace => Schedule::parse_mahimahi(&text),
            ScheduleKind::Schedule => Schedule::parse_native(&text),
        };
        parsed.map(Some).map_err(|e| {
            let e = format!("in {}: {e}", file.value);
            fail(match kind {
                ScheduleKind::Trace => format!("{e}; fix: write one delivery time in ms per line, increasing (a mahimahi trace), or use schedule for the native format"),
                ScheduleKind::Schedule => format!("{e}; fix: write lines such as \"0ms 100mbit\" and \"1500ms 10mbit delay 20ms\" (the native format), or use trace for a mahimahi trace"),
            })
        })
    }

    /// The shape of `dir`, reading its trace or schedule file (each part
    /// validated by its parser).
    pub fn try_link_shape(&self, dir: Dir) -> Result<LinkShape, ConfigError> {
        Ok(LinkShape {
            impairments: self.impairments(dir)?,
            schedule: self.schedule(dir)?,
            framing: self.framing(dir)?,
        })
    }

    /// The impairments, schedule and framing of `dir`, for
    /// `Path::set_shape`. On a validated configuration this is exact (a
    /// trace file that vanished since gives no schedule).
    pub fn link_shape(&self, dir: Dir) -> LinkShape {
        self.try_link_shape(dir).unwrap_or_else(|_| LinkShape {
            impairments: Impairments {
                seed: self.seed(dir),
                ..Impairments::default()
            },
            ..LinkShape::default()
        })
    }
}
