//! `parse_request` never panics, whatever the line, and accepts what the
//! client sends.

use bloatbox::control::{parse_request, Request};
use proptest::prelude::*;

proptest! {
    #![proptest_config(crate::common::proptest_config(256, file!()))]
    #[test]
    fn parse_request_never_panics(line in ".{0,200}") {
        let _ = parse_request(&line);
    }

    #[test]
    fn parse_request_never_panics_on_json_like_input(
        cmd in "(snapshot|stats|tc|set|reset_stats|shutdown|[a-z_]{0,8})",
        key in "(line|args|[a-z]{0,5})",
        value in "(\"[^\"\\\\]{0,20}\"|[0-9]{1,5}|null|\\[\\]|\\[\"[a-z.=0-9]{0,12}\"\\]|\\{)",
    ) {
        let _ = parse_request(&format!("{{\"cmd\":\"{cmd}\",\"{key}\":{value}}}"));
    }

    #[test]
    fn what_the_client_sends_parses_back(line in "[ -~]{0,100}", args in proptest::collection::vec("[ -~]{0,30}", 0..4)) {
        for req in [Request::Tc { line: line.clone() }, Request::Set { args: args.clone() }] {
            let text = serde_json::to_string(&req).unwrap();
            prop_assert_eq!(parse_request(&text), Ok(req));
        }
    }
}
