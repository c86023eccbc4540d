//! The record every harness link (`bloatbox run`, the `Link` guard) keeps
//! while it is up: `/run/bloatbox/runs/NAME.json` names the owner process
//! (pid and start time, so that a reused pid is not taken for the owner),
//! the namespaces, the TAPs and the control socket. A clean exit removes it;
//! after a SIGKILL it stays, and `bloatbox down --runs` (`remove_dead`)
//! removes what runs with a dead owner left: processes inside the
//! namespaces, the namespaces, root-namespace TAPs, the control socket and
//! the record itself.

use std::io;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::config::Config;

/// Where the records live.
pub const RUNS_DIR: &str = "/run/bloatbox/runs";

/// What one running link made, and who owns it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RunRecord {
    /// The link's name (`bloatbox run --name`, or the configuration's).
    pub name: String,
    /// The owning process.
    pub pid: u32,
    /// The owner's start time (`/proc/PID/stat` field 22, clock ticks since
    /// boot), if it could be read.
    pub started: Option<u64>,
    /// Left, right.
    pub namespaces: [String; 2],
    /// The TAPs' names: left, right.
    pub taps: [String; 2],
    /// The daemon's control socket.
    pub control_socket: PathBuf,
}

/// Start time of process `pid`, from the fields after its command name
/// (which may hold spaces and parentheses); None if there is no such
/// process or it has ended: a zombie (state `Z`, killed but not yet reaped
/// by its parent) or dead (`X`) owner runs nothing any more
/// (`fs/proc/array.c` `task_state_array`).
fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let mut fields = stat[stat.rfind(')')? + 1..].split_whitespace();
    // Field 3 (state) comes first; field 22 is the start time.
    if matches!(fields.next()?, "Z" | "X" | "x") {
        return None;
    }
    fields.nth(18)?.parse().ok()
}

impl RunRecord {
    /// The record of link `name` with configuration `cfg`, owned by this
    /// process.
    pub fn of(name: &str, cfg: &Config) -> RunRecord {
        let pid = std::process::id();
        RunRecord {
            name: name.to_string(),
            pid,
            started: start_time(pid),
            namespaces: [cfg.left.namespace.clone(), cfg.right.namespace.clone()],
            taps: [cfg.left.tap.clone(), cfg.right.tap.clone()],
            control_socket: cfg.control_socket(),
        }
    }

    /// Where the record is kept: `RUNS_DIR/NAME.json`.
    pub fn path(&self) -> PathBuf {
        Path::new(RUNS_DIR).join(format!("{}.json", self.name))
    }

    /// Writes the record; returns where.
    pub fn write(&self) -> io::Result<PathBuf> {
        std::fs::create_dir_all(RUNS_DIR)?;
        let path = self.path();
        let text = serde_json::to_string_pretty(self).map_err(io::Error::other)?;
        std::fs::write(&path, text + "\n")?;
        Ok(path)
    }

    /// The owner process still runs (same pid and, where known, same start
    /// time).
    pub fn owner_alive(&self) -> bool {
        match (start_time(self.pid), self.started) {
            (None, _) => false,
            (Some(now), Some(then)) => now == then,
            (Some(_), None) => true,
        }
    }

    /// Removes the namespaces (killing what runs inside first), TAPs left in
    /// the root namespace and a control socket no server holds; returns
    /// what was removed.
    pub fn remove_leftovers(&self) -> Vec<String> {
        let mut removed = Vec::new();
        for ns in &self.namespaces {
            if Path::new("/run/netns").join(ns).exists() {
                crate::netns::kill_netns_processes(ns);
                if ip(&["netns", "del", ns]) {
                    removed.push(format!("network namespace {ns:?}"));
                }
            }
        }
        for tap in &self.taps {
            if Path::new("/sys/class/net").join(tap).exists() && ip(&["link", "del", "dev", tap]) {
                removed.push(format!("interface {tap:?}"));
            }
        }
        let sock = &self.control_socket;
        if sock.exists()
            && crate::control::request_stats(sock).is_err()
            && std::fs::remove_file(sock).is_ok()
        {
            removed.push(format!("control socket {}", sock.display()));
        }
        removed
    }
}

fn ip(args: &[&str]) -> bool {
    let ok = Command::new("ip")
        .args(args)
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        tracing::warn!("`ip {}` failed", args.join(" "));
    }
    ok
}

/// What `remove_dead` did with one record.
#[derive(Debug)]
pub enum RunCleanup {
    /// The owner is dead: these were removed (and the record).
    Removed {
        /// The link's name.
        name: String,
        /// The dead owner.
        pid: u32,
        /// The namespaces and TAPs removed.
        removed: Vec<String>,
    },
    /// The owner still runs: left alone.
    Alive {
        /// The link's name.
        name: String,
        /// The living owner.
        pid: u32,
    },
    /// A record that cannot be read (removed).
    Unreadable {
        /// The record's file.
        path: PathBuf,
        /// Why it could not be read.
        error: RecordError,
    },
}

/// Why a run record could not be read.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// The file could not be read.
    #[error(transparent)]
    Io(#[from] io::Error),
    /// The file is not a record.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
}

/// Every run record of this machine.
pub fn records() -> io::Result<Vec<(PathBuf, Result<RunRecord, RecordError>)>> {
    let entries = match std::fs::read_dir(RUNS_DIR) {
        Ok(e) => e,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut out = Vec::new();
    for entry in entries {
        let path = entry?.path();
        if path.extension().is_some_and(|x| x == "json") {
            let record = std::fs::read(&path)
                .map_err(RecordError::from)
                .and_then(|b| Ok(serde_json::from_slice(&b)?));
            out.push((path, record));
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}

/// `bloatbox down --runs`: cleans up after every run whose owner is dead.
pub fn remove_dead() -> io::Result<Vec<RunCleanup>> {
    let mut done = Vec::new();
    for (path, record) in records()? {
        match record {
            Ok(r) if r.owner_alive() => done.push(RunCleanup::Alive {
                name: r.name,
                pid: r.pid,
            }),
            Ok(r) => {
                let removed = r.remove_leftovers();
                std::fs::remove_file(&path)?;
                done.push(RunCleanup::Removed {
                    name: r.name,
                    pid: r.pid,
                    removed,
                });
            }
            Err(error) => {
                std::fs::remove_file(&path)?;
                done.push(RunCleanup::Unreadable { path, error });
            }
        }
    }
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_alive_and_a_changed_start_time_is_not() {
        let mut r = RunRecord::of("bbtest", &Config::embedded_default());
        assert_eq!(r.pid, std::process::id());
        assert!(r.started.is_some(), "reads /proc/self/stat");
        assert!(r.owner_alive());
        r.started = r.started.map(|t| t + 1);
        assert!(!r.owner_alive(), "a reused pid is not the owner");
        r.pid = u32::MAX;
        assert!(!r.owner_alive());
        assert_eq!(r.path(), Path::new(RUNS_DIR).join("bbtest.json"));
    }

    #[test]
    fn an_unreaped_zombie_owner_is_dead() {
        // A child that exits and is not waited for stays a zombie.
        let mut child = Command::new("true").spawn().expect("spawn true");
        let pid = child.id();
        let zombie = (0..1_000_000).any(|_| {
            std::thread::yield_now();
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .is_ok_and(|stat| stat.contains(") Z "))
        });
        assert!(zombie, "the child became a zombie");
        let r = RunRecord {
            pid,
            started: None,
            ..RunRecord::of("bbzombie", &Config::embedded_default())
        };
        assert!(!r.owner_alive(), "a killed owner its parent has not reaped");
        child.wait().unwrap();
    }

    #[test]
    fn records_round_trip_through_json() {
        let r = RunRecord::of("bbrt", &Config::embedded_default());
        let text = serde_json::to_string(&r).unwrap();
        let back: RunRecord = serde_json::from_str(&text).unwrap();
        assert_eq!(back, r);
        assert_eq!(back.namespaces, ["bb-left".to_string(), "bb-right".into()]);
    }
}
