//! The keys a kind takes in the configuration's structured qdisc table
//! (`[link.qdisc]` with `kind = "..."`, and `[[link.qdisc.class]]` for a
//! classful kind): each key's name, the type of its value and the tc words
//! it stands for. A kind's syntax carries its keys (`Syntax::table`); the
//! configuration reads a table by them and hands the words they make to the
//! kind's own parser, so a table means exactly what the tc line it prints
//! means. A kind without keys is written as a string there (`qdisc = "kind
//! options"`).

/// The keys of a kind's structured table.
#[derive(Debug, PartialEq)]
pub struct KeyTable {
    /// The qdisc's keys, in the order their tc words are written.
    pub qdisc: &'static [Key],
    /// The keys of each of its classes besides `classid`, `parent` and
    /// `qdisc` (the leaf), for a classful kind whose tree the table builds
    /// whole under a root `1:` (HTB); `None`: the table takes no `class`.
    pub class: Option<&'static [Key]>,
}

impl KeyTable {
    /// A table of qdisc keys and no classes.
    pub const fn qdisc(keys: &'static [Key]) -> KeyTable {
        KeyTable {
            qdisc: keys,
            class: None,
        }
    }
}

/// One key of a structured table.
#[derive(Debug, PartialEq)]
pub struct Key {
    /// The key, which is also the tc word before its value (`limit`).
    pub name: &'static str,
    /// What its value is and how tc takes it.
    pub value: Value,
    /// Whether the table must set it (tbf's `rate`).
    pub required: bool,
}

impl Key {
    /// A key the table may leave out.
    pub const fn opt(name: &'static str, value: Value) -> Key {
        Key {
            name,
            value,
            required: false,
        }
    }

    /// A key the table must set.
    pub const fn required(name: &'static str, value: Value) -> Key {
        Key {
            name,
            value,
            required: true,
        }
    }
}

/// The type of a key's value and the tc words it becomes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Value {
    /// A whole number 0..=4294967295 (a TOML integer): `name N`.
    Count,
    /// A whole number tc takes up to `max` only (sfq's `perturb`, an `int`
    /// in the kernel): `name N`; a larger one is refused with the field
    /// named, in `unit`, suggesting `example`.
    Bounded {
        /// The largest value tc takes.
        max: u64,
        /// The unit, for the message (`seconds`).
        unit: &'static str,
        /// A value to suggest (`10`).
        example: &'static str,
    },
    /// A decimal number (RED's `probability`): `name N`.
    Decimal,
    /// A size in tc's units (`"64kb"`, or a bare integer of bytes): `name
    /// SIZE` as written.
    Size,
    /// A size tc reads into an unsigned int, so at most 4294967295 bytes;
    /// `plain`: written as its number of bytes, for a kind whose parser
    /// reads a plain number there (fq_codel's `quantum`, `get_unsigned`).
    Size32 {
        /// Write the number of bytes rather than the text.
        plain: bool,
    },
    /// A rate in tc's units (`"10mbit"`): `name RATE` as written.
    Rate,
    /// A time in tc's units (`"5ms"`; a bare number is µs as in tc):
    /// `name TIME` as written.
    Time,
    /// A boolean: `true` writes `on`, `false` writes `off` (nothing when
    /// there is no word for it).
    Flag {
        /// The word of `true` (`ecn`).
        on: &'static str,
        /// The word of `false` (`noecn`), if tc has one.
        off: Option<&'static str>,
    },
    /// A class minor number in hexadecimal as tc writes it (`"10"` for
    /// 1:10, HTB's `default`): `name MINOR`.
    Minor,
    /// The words after the keyword as written, for an option of several
    /// positional values (netem's `delay = "20ms 5ms 25%"`): `name WORDS`.
    Words,
    /// One of tc's words (CAKE's `diffserv = "diffserv4"`): the word
    /// alone, which must be one of `words`.
    Word {
        /// The words the key takes.
        words: &'static [&'static str],
    },
}
