//! A detached tmux session on a private tmux server, for the tests that
//! drive a terminal UI (capture its screen, send keys) or take its terminal
//! away (`kill`, as a closed SSH session or killed tmux does).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use super::text;

/// A detached tmux session on a private server (`tmux -L NAME`, its own
/// config), so the test never touches anyone's tmux; the server is killed
/// on drop. Panes stay after their command ends (`remain-on-exit`), so
/// what the command left on the screen can still be captured.
pub struct Tmux {
    server: String,
    conf: PathBuf,
}

impl Tmux {
    pub fn start(dir: &Path, width: u16, height: u16, command: &str) -> Tmux {
        let conf = dir.join("tmux.conf");
        std::fs::write(&conf, "set -g remain-on-exit on\nset -g status off\n").unwrap();
        let t = Tmux {
            server: format!(
                "bbtui-{}-{}",
                std::process::id(),
                dir.file_name().unwrap().to_string_lossy()
            ),
            conf,
        };
        let out = t.run(&[
            "new-session",
            "-d",
            "-s",
            "tui",
            "-x",
            &width.to_string(),
            "-y",
            &height.to_string(),
            command,
        ]);
        assert!(out.status.success(), "tmux new-session: {}", text(&out));
        t
    }

    pub fn run(&self, args: &[&str]) -> Output {
        Command::new("tmux")
            .args(["-L", &self.server, "-f"])
            .arg(&self.conf)
            .args(args)
            .env_remove("TMUX")
            .output()
            .unwrap()
    }

    pub fn capture(&self) -> String {
        let out = self.run(&["capture-pane", "-p", "-t", "tui"]);
        assert!(out.status.success(), "tmux capture-pane: {}", text(&out));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Whether the command in the pane has ended.
    pub fn dead(&self) -> bool {
        let out = self.run(&["display-message", "-p", "-t", "tui", "#{pane_dead}"]);
        String::from_utf8_lossy(&out.stdout).trim() == "1"
    }

    /// Sends `q` and waits (at most `limit`) for the command to end;
    /// whether it did.
    pub fn quit(&self, limit: Duration) -> bool {
        let out = self.run(&["send-keys", "-t", "tui", "q"]);
        assert!(out.status.success(), "tmux send-keys: {}", text(&out));
        self.wait_dead(limit)
    }

    /// Waits (at most `limit`) for the command in the pane to end;
    /// whether it did.
    pub fn wait_dead(&self, limit: Duration) -> bool {
        let t0 = Instant::now();
        while !self.dead() && t0.elapsed() < limit {
            std::thread::sleep(Duration::from_millis(100));
        }
        self.dead()
    }

    /// Captures until `ok` holds (at most `limit`), returning the last one.
    pub fn wait_for(&self, limit: Duration, ok: impl Fn(&str) -> bool) -> String {
        let t0 = Instant::now();
        loop {
            let pane = self.capture();
            if ok(&pane) || t0.elapsed() > limit {
                return pane;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

impl Tmux {
    /// Kills the server: every pane's terminal hangs up, as when a tmux
    /// session is killed or an SSH connection drops.
    pub fn kill(&self) {
        let out = self.run(&["kill-server"]);
        assert!(out.status.success(), "tmux kill-server: {}", text(&out));
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.run(&["kill-server"]);
    }
}
