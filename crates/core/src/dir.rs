//! The link's two directions, each named after the device whose egress it
//! is (`left` sends left→right, `right` its mirror): the one type the
//! config, the core, the datapath, the TUI and the simulator all use.

use serde::{Deserialize, Serialize};

/// One direction of the link, named after the device whose egress it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Dir {
    /// Egress of device `left`: frames from the left namespace to the right.
    LeftToRight,
    /// Egress of device `right`.
    RightToLeft,
}

impl Dir {
    /// Both directions, in `index()` order.
    pub const ALL: [Dir; 2] = [Dir::LeftToRight, Dir::RightToLeft];

    /// Position in per-direction arrays: 0 left→right, 1 right→left.
    pub fn index(self) -> usize {
        match self {
            Dir::LeftToRight => 0,
            Dir::RightToLeft => 1,
        }
    }

    /// `left_to_right` / `right_to_left`: the key of the config's override
    /// table under `[link]`, and the name in JSON and file names.
    pub fn name(self) -> &'static str {
        match self {
            Dir::LeftToRight => "left_to_right",
            Dir::RightToLeft => "right_to_left",
        }
    }

    /// `left→right` / `right→left`, for people.
    pub fn arrow(self) -> &'static str {
        match self {
            Dir::LeftToRight => "left→right",
            Dir::RightToLeft => "right→left",
        }
    }

    /// The device name tc and ethtool lines use: `left` or `right`.
    pub fn dev(self) -> &'static str {
        match self {
            Dir::LeftToRight => "left",
            Dir::RightToLeft => "right",
        }
    }

    /// The direction whose egress device is `dev`.
    pub fn from_dev(dev: &str) -> Option<Dir> {
        Dir::ALL.into_iter().find(|d| d.dev() == dev)
    }

    /// The other direction (a request's reply travels the reverse way).
    pub fn reverse(self) -> Dir {
        match self {
            Dir::LeftToRight => Dir::RightToLeft,
            Dir::RightToLeft => Dir::LeftToRight,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_serde_uses_the_config_keys() {
        for d in Dir::ALL {
            assert_eq!(Dir::from_dev(d.dev()), Some(d));
            assert_eq!(Dir::ALL[d.index()], d);
            assert_eq!(d.reverse().reverse(), d);
            assert_ne!(d.reverse(), d);
            assert_eq!(
                serde_json::to_string(&d).unwrap(),
                format!("\"{}\"", d.name())
            );
        }
        assert_eq!(Dir::from_dev("middle"), None);
    }
}
