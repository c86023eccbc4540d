//! Which running daemon a client subcommand (`tc`, `set`, `ethtool`,
//! `stats`, `metrics`, `top`) talks to: the configuration (`-c FILE`, else
//! `BLOATBOX_CONFIG`, else the embedded default) names its control socket,
//! and `--socket PATH` (else `BLOATBOX_SOCKET`) names one directly. The
//! client's options may come before or after the command's own words
//! (`bloatbox tc -s qdisc show dev left -c my.toml`). A command never
//! silently addresses another daemon: two configurations, two sockets, or
//! a socket and a configuration that names another one, are an error.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context};

use crate::config::Config;

/// The configuration file a command names: `config` (`-c`), else
/// `BLOATBOX_CONFIG`; none: the embedded default. `exec` and the client
/// subcommands read it alike.
pub fn config_or_env(config: Option<&Path>) -> Option<PathBuf> {
    config
        .map(Path::to_path_buf)
        .or_else(|| std::env::var_os("BLOATBOX_CONFIG").map(PathBuf::from))
}

/// The client's options as given on the command line (before the
/// command's words; `take_from` adds those after them).
#[derive(clap::Args, Clone, Debug, Default, PartialEq)]
pub struct Target {
    /// Configuration naming the daemon's control socket (default:
    /// $BLOATBOX_CONFIG, else the embedded default)
    #[arg(short, long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// The daemon's control socket (default: $BLOATBOX_SOCKET, else the
    /// configuration's)
    #[arg(long, value_name = "PATH")]
    pub socket: Option<PathBuf>,
}

impl Target {
    /// Takes `-c FILE`, `--config FILE|=FILE` and `--socket PATH|=PATH`
    /// out of a command's words, merged with those given before them; the
    /// same option twice with different values is an error.
    pub fn take_from(mut self, words: Vec<String>) -> anyhow::Result<(Target, Vec<String>)> {
        let mut rest = Vec::with_capacity(words.len());
        let mut it = words.into_iter();
        while let Some(word) = it.next() {
            // `ethtool -c DEV` is ethtool's (show coalescing), not ours.
            let after_ethtool = rest.last().is_some_and(|w: &String| w == "ethtool");
            let (slot, name, value) = match word.as_str() {
                "-c" if after_ethtool => {
                    rest.push(word);
                    continue;
                }
                "-c" | "--config" => (&mut self.config, "--config", it.next()),
                "--socket" => (&mut self.socket, "--socket", it.next()),
                w => match w.split_once('=') {
                    Some(("--config", v)) => (&mut self.config, "--config", Some(v.to_string())),
                    Some(("--socket", v)) => (&mut self.socket, "--socket", Some(v.to_string())),
                    _ => {
                        rest.push(word);
                        continue;
                    }
                },
            };
            let value = PathBuf::from(value.with_context(|| format!("{name} needs a value"))?);
            match slot {
                Some(earlier) if *earlier != value => bail!(
                    "{name} given twice ({} and {}): which daemon is meant? give it once",
                    earlier.display(),
                    value.display()
                ),
                _ => *slot = Some(value),
            }
        }
        Ok((self, rest))
    }

    /// The configuration file: `-c`, else `BLOATBOX_CONFIG` (none: the
    /// embedded default).
    fn config_path(&self) -> Option<PathBuf> {
        config_or_env(self.config.as_deref())
    }

    /// The control socket of `cfg`, or the one named by `--socket` (else
    /// `BLOATBOX_SOCKET`); a configuration given explicitly that names
    /// another socket is an error.
    fn socket(&self, cfg: &Config) -> anyhow::Result<PathBuf> {
        let named =
            self.socket.clone().map(|s| (s, "--socket")).or_else(|| {
                std::env::var_os("BLOATBOX_SOCKET").map(|s| (s.into(), "BLOATBOX_SOCKET"))
            });
        let from_config = cfg.control_socket();
        match (named, self.config_path()) {
            (Some((socket, how)), Some(config)) if !same_path(&socket, &from_config) => bail!(
                "{how} names {} but {} names {}: which daemon is meant? give one of them",
                socket.display(),
                config.display(),
                from_config.display()
            ),
            (Some((socket, _)), _) => Ok(socket),
            (None, _) => Ok(from_config),
        }
    }

    /// The configuration (loaded as `up` loads it) and the socket.
    pub fn resolve(&self) -> anyhow::Result<(Config, PathBuf)> {
        let cfg = crate::live::load(self.config_path().as_deref())?;
        let socket = self.socket(&cfg)?;
        Ok((cfg, socket))
    }
}

fn same_path(a: &Path, b: &Path) -> bool {
    a == b || matches!((a.canonicalize(), b.canonicalize()), (Ok(x), Ok(y)) if x == y)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(w: &[&str]) -> Vec<String> {
        w.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn client_options_come_out_of_the_command_s_words_anywhere() {
        let (t, rest) = Target::default()
            .take_from(words(&[
                "-s", "qdisc", "show", "dev", "left", "-c", "my.toml",
            ]))
            .unwrap();
        assert_eq!(t.config, Some(PathBuf::from("my.toml")));
        assert_eq!(rest, words(&["-s", "qdisc", "show", "dev", "left"]));
        let (t, rest) = Target::default()
            .take_from(words(&[
                "--socket=/run/x.sock",
                "left.rate=1mbit",
                "--config",
                "a.toml",
            ]))
            .unwrap();
        assert_eq!(t.socket, Some(PathBuf::from("/run/x.sock")));
        assert_eq!(t.config, Some(PathBuf::from("a.toml")));
        assert_eq!(rest, words(&["left.rate=1mbit"]));
        // The same value before and after is fine; two values are not.
        let before = Target {
            config: Some("a.toml".into()),
            socket: None,
        };
        assert!(before.clone().take_from(words(&["-c", "a.toml"])).is_ok());
        let e = before.take_from(words(&["-c", "b.toml"])).unwrap_err();
        assert!(
            e.to_string()
                .contains("--config given twice (a.toml and b.toml)"),
            "{e}"
        );
        assert!(Target::default().take_from(words(&["show", "-c"])).is_err());
        let (t, rest) = Target::default()
            .take_from(words(&["ethtool", "-c", "left"]))
            .unwrap();
        assert_eq!(
            (t, rest),
            (Target::default(), words(&["ethtool", "-c", "left"]))
        );
    }

    #[test]
    fn a_socket_and_a_configuration_that_disagree_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.toml");
        std::fs::write(
            &path,
            "[daemon]\ncontrol_socket = \"/run/bloatbox/a.sock\"\n",
        )
        .unwrap();
        let t = Target {
            config: Some(path.clone()),
            socket: Some("/run/bloatbox/b.sock".into()),
        };
        let e = t.resolve().unwrap_err().to_string();
        assert!(e.contains("--socket names /run/bloatbox/b.sock but"), "{e}");
        assert!(e.contains("names /run/bloatbox/a.sock"), "{e}");
        let agree = Target {
            socket: Some("/run/bloatbox/a.sock".into()),
            ..t
        };
        assert_eq!(
            agree.resolve().unwrap().1,
            PathBuf::from("/run/bloatbox/a.sock")
        );
        let only_socket = Target {
            config: None,
            socket: Some("/run/bloatbox/b.sock".into()),
        };
        if std::env::var_os("BLOATBOX_CONFIG").is_none() {
            assert_eq!(
                only_socket.resolve().unwrap().1,
                PathBuf::from("/run/bloatbox/b.sock")
            );
        }
    }
}
