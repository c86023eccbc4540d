//! The command line's value parsers that read the configuration's units:
//! every duration flag (`--duration`, `--timeout`, ...) takes the
//! configuration's delay rule, so a flag and a file read a time alike.

/// clap's parser of every duration flag (`--duration`, `--timeout`...):
/// the `Delay` rule of the configuration and `set` (tc's time units plus
/// `ns`; a bare number is µs, as tc reads it, taken with the
/// `tc::hint::time` warning on stderr, naming the flag).
#[derive(Clone, Copy, Debug, Default)]
pub struct DurationFlag;

impl clap::builder::TypedValueParser for DurationFlag {
    type Value = std::time::Duration;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<Self::Value, clap::Error> {
        let delay = clap::builder::StringValueParser::new()
            .try_map(|text| crate::config::Delay::parse(&text))
            .parse_ref(cmd, arg, value)?;
        if let Some(hint) = crate::tc::hint::time(delay.text()) {
            let flag = arg.and_then(|a| a.get_long()).unwrap_or("value");
            // Logging is not set up while the arguments are parsed.
            crate::errln!("warning: --{flag} {}: {hint}", delay.text());
        }
        Ok(std::time::Duration::from_nanos(delay.value()))
    }
}
