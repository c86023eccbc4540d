//! The one tokenizer of bloatbox's command languages: a cursor over the
//! whitespace-separated words of a tc, netem, framing or filter argument
//! list, read front to back as iproute2's argument loops do (`NEXT_ARG()`,
//! `PREV_ARG()`, `matches()`). Each parser brings its own messages: a word
//! missing after a keyword is reported with the error the caller builds,
//! and what tc prints on standard error when it accepts the line (RED's
//! "set bandwidth to 10Mbit") is kept as a notice beside the cursor.

/// A cursor over the words of one argument list.
#[derive(Clone, Debug)]
pub struct Tokens<'a> {
    words: &'a [&'a str],
    pos: usize,
    notices: Vec<String>,
}

impl<'a> Tokens<'a> {
    /// A cursor at the first of `words`.
    pub fn new(words: &'a [&'a str]) -> Self {
        Tokens {
            words,
            pos: 0,
            notices: Vec::new(),
        }
    }

    /// Keeps a line tc's parser prints on standard error for a line it
    /// accepts (iproute2's `fprintf(stderr, ...)` followed by success).
    pub fn notice(&mut self, line: impl Into<String>) {
        self.notices.push(line.into());
    }

    /// The notices kept so far, in the order they were made.
    pub fn into_notices(self) -> Vec<String> {
        self.notices
    }

    /// The next word, consumed.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Option<&'a str> {
        let word = self.words.get(self.pos).copied();
        self.pos += usize::from(word.is_some());
        word
    }

    /// The next word, left in place.
    pub fn peek(&self) -> Option<&'a str> {
        self.words.get(self.pos).copied()
    }

    /// `NEXT_ARG()`: the word after a keyword, or the caller's error for a
    /// list that ends there.
    pub fn value<E>(&mut self, missing: impl FnOnce() -> E) -> Result<&'a str, E> {
        self.next().ok_or_else(missing)
    }

    /// The next word if it reads as a number (a digit or a dot first): the
    /// optional positional values of netem's `delay TIME [JITTER]`.
    pub fn number(&mut self) -> Option<&'a str> {
        let numeric = self
            .peek()
            .is_some_and(|w| w.starts_with(|c: char| c.is_ascii_digit() || c == '.'));
        if numeric {
            self.next()
        } else {
            None
        }
    }

    /// Every word not read yet, consumed.
    pub fn rest(&mut self) -> &'a [&'a str] {
        let rest = &self.words[self.pos..];
        self.pos = self.words.len();
        rest
    }

    /// True when every word has been read.
    pub fn is_empty(&self) -> bool {
        self.pos >= self.words.len()
    }
}

/// A word as C's `strtoul(word, &end, 0)` reads it when the whole word must
/// be the number (iproute2's `get_unsigned`, `get_u8(.., 0)`, and the
/// filter parsers): `0x` hex, a leading `0` octal, else decimal.
pub fn c_number(word: &str) -> Option<u64> {
    if let Some(h) = word.strip_prefix("0x").or_else(|| word.strip_prefix("0X")) {
        u64::from_str_radix(h, 16).ok()
    } else if word.len() > 1 && word.starts_with('0') {
        u64::from_str_radix(&word[1..], 8).ok()
    } else {
        word.parse().ok()
    }
}

/// iproute2's `NEXT_ARG()` at the end of the line (`incomplete_command`,
/// exit 255): keyword `key` needs a value, which bloatbox says on a line
/// of its own.
pub fn incomplete(key: &str) -> super::TcError {
    use super::TcError;
    TcError::new(format!(
        "Command line is not complete. Try option \"help\"\n(\"{key}\" needs a value)"
    ))
    .exit(TcError::ARGS)
}

#[cfg(test)]
mod tests {
    use super::{c_number, Tokens};

    #[test]
    fn numbers_read_as_strtoul_base_0() {
        assert_eq!(c_number("10"), Some(10));
        assert_eq!(c_number("0x1f"), Some(31));
        assert_eq!(c_number("0X1F"), Some(31));
        assert_eq!(c_number("010"), Some(8));
        assert_eq!(c_number("0"), Some(0));
        for bad in ["", "08", "0x", "1k", "-1", "ten"] {
            assert_eq!(c_number(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn reads_front_to_back() {
        let words = ["delay", "10ms", "2ms", "loss", "1%"];
        let mut t = Tokens::new(&words);
        assert_eq!(t.next(), Some("delay"));
        assert_eq!(t.value(|| "missing"), Ok("10ms"));
        assert_eq!(t.number(), Some("2ms"));
        assert_eq!(t.number(), None, "a keyword is not a number");
        assert_eq!(t.peek(), Some("loss"));
        assert_eq!(t.rest(), &["loss", "1%"]);
        assert!(t.is_empty());
        assert_eq!(t.next(), None);
        assert_eq!(t.value(|| "missing"), Err("missing"));
    }
}
