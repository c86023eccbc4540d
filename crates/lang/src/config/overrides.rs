//! `--set KEY=VALUE` overrides: any field by dotted path (`tap.mtu=9000`,
//! `link.rate=10mbit`, `link.left_to_right.delay=20ms`, with the short forms
//! `left.rate` / `right.rate` for the per-direction link fields). The value is
//! typed after the field it replaces (text for strings, TOML for numbers,
//! booleans, arrays and inline tables), the configuration is rebuilt through
//! the same deserialization and validation as a file, and unknown keys get
//! the list of valid ones.

use super::error::ConfigError;
use super::{Config, LinkSettings, QdiscSpec};
use crate::dir::Dir;
use toml::Value;

const ORIGIN: &str = "--set";

fn err(path: &str, value: Option<&str>, message: String) -> ConfigError {
    ConfigError::field(path, value.map(|v| v.to_string()), message).with_origin(ORIGIN)
}

impl Config {
    /// Applies one `KEY=VALUE` override; on error the configuration is unchanged.
    pub fn apply_override(&mut self, assignment: &str) -> Result<(), ConfigError> {
        let Some((key, raw)) = assignment.split_once('=') else {
            return Err(err(
                "",
                Some(assignment),
                "expected KEY=VALUE; fix: write e.g. --set left.rate=10mbit".into(),
            ));
        };
        let raw = raw.trim();
        let template = to_tree(&Config::template())?;
        let key = canonical_key(key.trim(), &template);
        let mut tree = to_tree(self)?;
        let current = lookup(&tree, &key)
            .or_else(|| lookup(&template, &key))
            .cloned();
        if current.is_none() && !parent_is_open_table(&tree, &key) {
            return Err(err(
                &key,
                Some(raw),
                format!(
                    "unknown key; {}; fix: use one of them",
                    valid_keys(&template)
                ),
            ));
        }
        let value =
            coerce(raw, current.as_ref()).map_err(|e| err(&key, Some(raw), e.to_string()))?;
        set(&mut tree, &key, value).map_err(|e| err(&key, Some(raw), e.to_string()))?;
        let next: Config = tree
            .try_into()
            .map_err(|e: toml::de::Error| err(&key, Some(raw), one_line(e.message())))?;
        next.validate().map_err(|e| e.with_origin(ORIGIN))?;
        // The warnings a file would get for this key (a likely typo, an
        // MTU too small for IPv6), said for the override too.
        let before = self.warnings();
        for warning in next.warnings() {
            if !before.contains(&warning) {
                tracing::warn!("{}", warning.with_origin(ORIGIN));
            }
        }
        *self = next;
        Ok(())
    }

    /// Every settable key present: the default with both direction tables,
    /// one tc and ethtool line, the shape keys and a control socket path.
    fn template() -> Config {
        let mut config = Config::default();
        let text = Some(String::new());
        config.link.netem = text.clone();
        config.link.trace = text.clone();
        config.link.schedule = text.clone();
        config.link.framing = text;
        config.link.seed = Some(0);
        let direction = LinkSettings {
            qdisc: Some(QdiscSpec::pfifo_fast()),
            ..config.link.clone()
        };
        config.link.left_to_right = Some(Box::new(direction.clone()));
        config.link.right_to_left = Some(Box::new(direction));
        config.link.tc = vec![String::new()];
        config.link.ethtool = vec![String::new()];
        config.daemon.control_socket = Some(String::new());
        config.lesson.caption = Some(String::new());
        config
    }
}

fn to_tree(config: &Config) -> Result<Value, ConfigError> {
    Value::try_from(config)
        .map_err(|e| err("", None, format!("cannot represent the configuration: {e}")))
}

/// `left.KEY` / `right.KEY` for a link key → `link.left_to_right.KEY` / ….
fn canonical_key(key: &str, template: &Value) -> String {
    for dir in Dir::ALL {
        let side = dir.dev();
        if let Some(field) = key.strip_prefix(side).and_then(|k| k.strip_prefix('.')) {
            let head = field.split('.').next().unwrap_or(field);
            if link_keys(template).contains(&head) {
                return format!("link.{}.{field}", dir.name());
            }
        }
    }
    key.to_string()
}

/// The per-direction link keys (`rate`, `delay`, …).
fn link_keys(template: &Value) -> Vec<&str> {
    template
        .get("link")
        .and_then(Value::as_table)
        .map(|t| {
            t.keys()
                .map(String::as_str)
                .filter(|k| Dir::ALL.iter().all(|d| d.name() != *k))
                .collect()
        })
        .unwrap_or_default()
}

fn lookup<'a>(tree: &'a Value, key: &str) -> Option<&'a Value> {
    key.split('.').try_fold(tree, |node, part| node.get(part))
}

/// Keys under an existing table of the current configuration (a qdisc
/// table's options) are accepted; deserialization judges their names.
fn parent_is_open_table(tree: &Value, key: &str) -> bool {
    match key.rsplit_once('.') {
        Some((parent, _)) => {
            parent.contains("qdisc") && lookup(tree, parent).is_some_and(Value::is_table)
        }
        None => false,
    }
}

/// Why a value cannot take the place of the one at its key.
#[derive(Debug, PartialEq, thiserror::Error)]
enum Unfit {
    /// The text is not of the replaced value's TOML type.
    #[error("expected {expected}; fix: write e.g. {example}")]
    Type {
        /// The replaced value's TOML type.
        expected: &'static str,
        /// A value of that type.
        example: &'static str,
    },
    /// A key on the way is not a table.
    #[error("\"{0}\" is not inside a table")]
    NotInTable(String),
    /// The key's parent is not a table.
    #[error("the parent of \"{0}\" is not a table")]
    ParentNotTable(String),
}

/// Types the text after the value it replaces.
fn coerce(raw: &str, current: Option<&Value>) -> Result<Value, Unfit> {
    let parsed = toml::from_str::<toml::Table>(&format!("v = {raw}"))
        .ok()
        .and_then(|mut t| t.remove("v"));
    match (current, parsed) {
        (Some(Value::String(_)), Some(v @ (Value::Table(_) | Value::String(_)))) => Ok(v),
        (Some(Value::String(_)), _) => Ok(Value::String(raw.to_string())),
        (_, Some(v)) => Ok(v),
        (None, None) => Ok(Value::String(raw.to_string())),
        (Some(cur), None) => Err(Unfit::Type {
            expected: cur.type_str(),
            example: match cur {
                Value::Integer(_) => "256",
                Value::Boolean(_) => "true or false",
                Value::Array(_) => "[\"tc qdisc add dev left root fq_codel\"]",
                _ => "a TOML value",
            },
        }),
    }
}

fn set(tree: &mut Value, key: &str, value: Value) -> Result<(), Unfit> {
    let mut parts: Vec<&str> = key.split('.').collect();
    let last = parts.pop().unwrap_or_default();
    let mut node = tree;
    for part in parts {
        let table = node
            .as_table_mut()
            .ok_or_else(|| Unfit::NotInTable(part.to_string()))?;
        node = table
            .entry(part)
            .or_insert_with(|| Value::Table(toml::Table::new()));
    }
    let table = node
        .as_table_mut()
        .ok_or_else(|| Unfit::ParentNotTable(last.to_string()))?;
    table.insert(last.to_string(), value);
    Ok(())
}

/// The list of valid keys, for error messages.
fn valid_keys(template: &Value) -> String {
    let mut plain = Vec::new();
    if let Some(root) = template.as_table() {
        for (section, body) in root {
            if section == "link" {
                continue;
            }
            if let Some(table) = body.as_table() {
                plain.extend(table.keys().map(|k| format!("{section}.{k}")));
            }
        }
    }
    format!(
        "valid keys: {}, and link.KEY, left.KEY (= link.left_to_right.KEY), right.KEY (= link.right_to_left.KEY) with KEY one of {}",
        plain.join(", "),
        link_keys(template).join(", ")
    )
}

fn one_line(message: &str) -> String {
    message
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_forms_map_to_direction_tables() {
        let t = to_tree(&Config::template()).unwrap();
        assert_eq!(canonical_key("left.rate", &t), "link.left_to_right.rate");
        assert_eq!(canonical_key("right.qdisc", &t), "link.right_to_left.qdisc");
        assert_eq!(canonical_key("left.namespace", &t), "left.namespace");
        assert_eq!(canonical_key("link.rate", &t), "link.rate");
    }

    #[test]
    fn coercion_follows_the_replaced_type() {
        let s = Value::String(String::new());
        assert_eq!(
            coerce("10mbit", Some(&s)),
            Ok(Value::String("10mbit".into()))
        );
        assert_eq!(
            coerce("\"10mbit\"", Some(&s)),
            Ok(Value::String("10mbit".into()))
        );
        assert_eq!(coerce("1000", Some(&s)), Ok(Value::String("1000".into())));
        assert!(coerce("{ kind = \"sfq\" }", Some(&s)).unwrap().is_table());
        assert_eq!(
            coerce("512", Some(&Value::Integer(1))),
            Ok(Value::Integer(512))
        );
        assert_eq!(
            coerce("abc", Some(&Value::Integer(1))),
            Err(Unfit::Type {
                expected: "integer",
                example: "256"
            })
        );
        assert_eq!(
            coerce("false", Some(&Value::Boolean(true))),
            Ok(Value::Boolean(false))
        );
    }

    #[test]
    fn valid_key_list_names_sections_and_link_keys() {
        let list = valid_keys(&to_tree(&Config::template()).unwrap());
        for k in [
            "left.namespace",
            "right.ipv6",
            "tap.mtu",
            "daemon.control_socket",
            "rate",
            "rx_frames",
            "qdisc",
            "ethtool",
        ] {
            assert!(list.contains(k), "{k} missing in {list}");
        }
    }
}
