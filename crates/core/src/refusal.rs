//! The kernel's refusal of a tc request, as data: the errno its handler
//! returns (`-EINVAL` from `tc_modify_qdisc`, `-ENOENT` from `qdisc_leaf`,
//! ...), the extack message it sets with it (`NL_SET_ERR_MSG`), if any, and
//! bloatbox's own explanation after it (the `Hint`: what was wrong here and
//! what to write instead). The qdiscs, the device tree and the filter chains
//! answer with a `Refusal`; how it reads is the front end's (`tc::TcError`
//! prints it as iproute2 does: the extack message, or without one the
//! errno's `strerror`, then the hint), so no tc wording lives in the core.

use std::fmt;

/// The errno of a refused request, among those the emulated handlers give.
#[allow(clippy::upper_case_acronyms)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Errno {
    /// The object is in use (a class with children or filters, an mq root
    /// whose children are the queues).
    EBUSY,
    /// The object exists already, or the flags forbid overriding it.
    EEXIST,
    /// A request the handler cannot carry out with these values.
    EINVAL,
    /// No such qdisc, class or filter.
    ENOENT,
    /// No automatic handle left.
    ENOSPC,
    /// The qdisc does not have the operation (adding a class to tbf or mq,
    /// a child under a classless parent, filters on a class without a
    /// block).
    EOPNOTSUPP,
    /// A number outside the range a netlink policy allows (`nla_validate`'s
    /// "integer out of range").
    ERANGE,
}

/// bloatbox's explanation after the kernel's refusal, and where it goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Hint {
    /// In parentheses on a line of its own below the refusal (most hints).
    Below(String),
    /// In parentheses on the refusal's line, after it.
    Beside(String),
    /// In parentheses on the refusal's line, which a full stop then ends.
    BesideStop(String),
}

/// A refused tc request: the kernel's errno, its extack message if it sets
/// one, and bloatbox's hint if it has one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    /// What the kernel's handler returns.
    pub errno: Errno,
    /// The extack message, as printed (iproute2 prints it instead of the
    /// errno).
    pub message: Option<String>,
    /// bloatbox's explanation.
    pub hint: Option<Hint>,
}

impl Refusal {
    /// A refusal with `errno` and the extack `message`.
    pub fn new(errno: Errno, message: impl Into<String>) -> Refusal {
        Refusal {
            errno,
            message: Some(message.into()),
            hint: None,
        }
    }

    /// A refusal with `errno` and no extack message.
    pub fn bare(errno: Errno) -> Refusal {
        Refusal {
            errno,
            message: None,
            hint: None,
        }
    }

    /// The same refusal with `hint` on a line of its own below it.
    pub fn below(self, hint: impl Into<String>) -> Refusal {
        self.hint(Hint::Below(hint.into()))
    }

    /// The same refusal with `hint` on its line, after it.
    pub fn beside(self, hint: impl Into<String>) -> Refusal {
        self.hint(Hint::Beside(hint.into()))
    }

    /// The same refusal with `hint` after it, ending its line with a full
    /// stop.
    pub fn beside_stop(self, hint: impl Into<String>) -> Refusal {
        self.hint(Hint::BesideStop(hint.into()))
    }

    fn hint(self, hint: Hint) -> Refusal {
        Refusal {
            hint: Some(hint),
            ..self
        }
    }

    /// The hint's words, wherever they go.
    fn hint_text(&self) -> Option<&str> {
        match &self.hint {
            Some(Hint::Below(h) | Hint::Beside(h) | Hint::BesideStop(h)) => Some(h),
            None => None,
        }
    }

    /// Whether the message or the hint has `words` in it (the core's tests
    /// look for the words bloatbox wrote, not for tc's wording around them).
    #[cfg(test)]
    pub fn says(&self, words: &str) -> bool {
        let message = self.message.as_deref().unwrap_or("");
        message.contains(words) || self.hint_text().is_some_and(|h| h.contains(words))
    }
}

/// bloatbox's plain account of a refusal, for logs and for callers that
/// want one line without the front end: the errno's name, the message and
/// the hint (`EINVAL: Invalid quantum. (quantum 9)`). It is not what tc
/// prints; that is `tc::TcError`'s rendering.
impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.errno)?;
        if let Some(message) = &self.message {
            write!(f, ": {message}")?;
        }
        if let Some(hint) = self.hint_text() {
            write!(f, " ({hint})")?;
        }
        Ok(())
    }
}

impl std::error::Error for Refusal {}
