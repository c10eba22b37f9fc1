//! The conformance operator `enrich` in Rust: a configured filter that
//! enriches JSON objects, exactly as the Go plugin `plugins/enrich` does.
//!
//! Configuration (JSON, all optional): `{"require": [names], "min": {name:
//! number}, "set": {name: value}}`. A record whose value is a JSON object
//! that has every `require`d field and every `min` field at or above its
//! minimum goes on with the `set` fields set (replacing an existing field
//! in place, else appended, in the configuration's order); other objects
//! are dropped; a value that is not a JSON object, or a `min` field that is
//! not a number, dead-letters the record.
//!
//! "Exactly" includes what is accepted and the messages: JSON is read as
//! Go's `encoding/json` reads it (see [`json`]), names are compared after
//! Go's decoding of strings, and the last of duplicate names counts.

pub mod json;

use std::collections::BTreeMap;

use json::{compact, kind, trim_left, Decoder, ObjectReader, Scanner, Token};
use sluice::{Config, Emitter, Error, Operator, Record};

/// A parsed configuration.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Rules {
    /// Fields that must be present (decoded names).
    require: Vec<Vec<u8>>,
    /// Fields that must be numbers at or above their minimum, sorted by
    /// name for a deterministic order of checks.
    min: Vec<(Vec<u8>, f64)>,
    /// Fields to set, in the configuration's order.
    set: Vec<SetField>,
}

/// A field `set` sets.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
struct SetField {
    /// The decoded name.
    name: Vec<u8>,
    /// The name's JSON text, quotes included.
    key: Vec<u8>,
    /// The value's JSON text, compacted.
    value: Vec<u8>,
}

/// The operator: its rules and the buffers it reuses from record to record.
#[derive(Default)]
pub struct Enrich {
    rules: Rules,
    obj: ObjectReader,
    buf: Vec<u8>,
}

impl Operator for Enrich {
    fn configure(&mut self, config: &Config<'_>) -> Result<(), Error> {
        self.rules = parse_rules(config.json()).map_err(Error::new)?;
        Ok(())
    }

    fn process(&mut self, r: &Record<'_>, out: &mut Emitter<'_>) -> Result<(), Error> {
        self.buf.clear();
        if self
            .rules
            .apply(&mut self.obj, &mut self.buf, r.value)
            .map_err(Error::new)?
        {
            out.emit(&r.with_value(&self.buf));
        }
        Ok(())
    }
}

sluice::export_operator!(Enrich);

/// The configuration's shape, as Go names its type in messages.
const CONFIG_TYPE: &str = "struct { Require []string \"json:\\\"require\\\"\"; Min map[string]float64 \"json:\\\"min\\\"\"; Set json.RawMessage \"json:\\\"set\\\"\" }";

/// What the configuration decodes to before it is checked: Go's decoding
/// into the plugin's struct, duplicates and all.
#[derive(Default)]
struct RawConfig {
    /// The `require` slice as Go's decoder leaves it: its backing array
    /// (which a later duplicate key may partly reuse) and its length.
    require: Vec<Vec<u8>>,
    require_len: usize,
    min: Option<BTreeMap<Vec<u8>, f64>>,
    set: Option<(usize, usize)>,
}

/// Go's name for the JSON type of a value's text in unmarshal errors.
fn go_kind(v: &[u8]) -> &'static str {
    match v.first() {
        Some(b'"') => "string",
        Some(b'{') => "object",
        Some(b'[') => "array",
        Some(b't') | Some(b'f') => "bool",
        Some(b'n') => "null",
        _ => "number",
    }
}

/// Reports whether the decoded key `key` names field `field` (ASCII
/// lower case) as Go's decoder matches struct fields: exactly, or equal
/// under Unicode simple case folding, where only U+017F (ſ) and U+212A
/// (Kelvin sign) fold to ASCII letters besides the letters themselves.
fn field_matches(key: &[u8], field: &str) -> bool {
    let key = match std::str::from_utf8(key) {
        Ok(k) => k,
        Err(_) => return false,
    };
    let mut f = field.chars();
    for c in key.chars() {
        let folded = match c {
            '\u{17f}' => 's',
            '\u{212a}' => 'k',
            _ => c.to_ascii_lowercase(),
        };
        if f.next() != Some(folded) {
            return false;
        }
    }
    f.next().is_none()
}

fn unmarshal_error(kind: &str, field: &str, ty: &str) -> String {
    format!(
        "json: cannot unmarshal {} into Go struct field .{} of type {}",
        kind, field, ty
    )
}

/// Decodes the configuration as `json.NewDecoder(...).Decode(&raw)` with
/// unknown fields refused: the first value of `config` only, the first
/// problem in document order.
fn decode_config(config: &[u8], scan: &mut Scanner) -> Result<RawConfig, String> {
    let end = scan.read_value(config, 0).map_err(|e| e.to_string())?;
    let text = &config[..end];
    let mut raw = RawConfig::default();
    match trim_left(text).first() {
        Some(b'n') => return Ok(raw),
        Some(b'{') => {}
        _ => {
            return Err(format!(
                "json: cannot unmarshal {} into Go value of type {}",
                go_kind(trim_left(text)),
                CONFIG_TYPE
            ))
        }
    }
    let mut inner = Scanner::default();
    let mut d = Decoder::new(text, &mut inner);
    d.token().map_err(|e| e.to_string())?;
    while d.more() {
        let (kf, kt) = match d.token().map_err(|e| e.to_string())? {
            Token::Key(f, t) => (f, t),
            _ => return Err("json: internal error: expected an object key".to_string()),
        };
        let key = json::unquote(&text[kf..kt]);
        let (vf, vt) = d.decode_raw().map_err(|e| e.to_string())?;
        let value = &text[vf..vt];
        if field_matches(&key, "require") {
            decode_require(value, &mut raw, scan)?;
        } else if field_matches(&key, "min") {
            decode_min(value, &mut raw, scan)?;
        } else if field_matches(&key, "set") {
            raw.set = Some((vf, vt));
        } else {
            return Err(format!("json: unknown field {}", gocompat::quote(&key)));
        }
    }
    Ok(raw)
}

/// Decodes `value` into the `require` slice as Go does.
fn decode_require(value: &[u8], raw: &mut RawConfig, scan: &mut Scanner) -> Result<(), String> {
    match value[0] {
        b'n' => {
            raw.require.clear();
            raw.require_len = 0;
            return Ok(());
        }
        b'[' => {}
        _ => return Err(unmarshal_error(go_kind(value), "require", "[]string")),
    }
    let mut d = Decoder::new(value, scan);
    d.token().map_err(|e| e.to_string())?;
    let mut i = 0;
    while d.more() {
        let (f, t) = d.decode_raw().map_err(|e| e.to_string())?;
        let e = &value[f..t];
        if i >= raw.require.len() {
            raw.require.push(Vec::new());
        }
        match e[0] {
            b'"' => raw.require[i] = json::unquote(e),
            b'n' => {} // null leaves a string as it is
            _ => return Err(unmarshal_error(go_kind(e), "require", "string")),
        }
        i += 1;
    }
    if i == 0 {
        raw.require.clear();
    }
    raw.require_len = i;
    Ok(())
}

/// Decodes `value` into the `min` map as Go does: merging into the map of
/// an earlier duplicate key, null elements as 0.
fn decode_min(value: &[u8], raw: &mut RawConfig, scan: &mut Scanner) -> Result<(), String> {
    match value[0] {
        b'n' => {
            raw.min = None;
            return Ok(());
        }
        b'{' => {}
        _ => return Err(unmarshal_error(go_kind(value), "min", "map[string]float64")),
    }
    let min = raw.min.get_or_insert_with(BTreeMap::new);
    let mut d = Decoder::new(value, scan);
    d.token().map_err(|e| e.to_string())?;
    while d.more() {
        let (kf, kt) = match d.token().map_err(|e| e.to_string())? {
            Token::Key(f, t) => (f, t),
            _ => return Err("json: internal error: expected an object key".to_string()),
        };
        let name = json::unquote(&value[kf..kt]);
        let (f, t) = d.decode_raw().map_err(|e| e.to_string())?;
        let e = &value[f..t];
        let n = match e[0] {
            b'n' => 0.0,
            b'-' | b'0'..=b'9' => {
                let n = parse_number(e);
                if !n.is_finite() {
                    return Err(unmarshal_error(
                        &format!("number {}", String::from_utf8_lossy(e)),
                        "min",
                        "float64",
                    ));
                }
                n
            }
            _ => return Err(unmarshal_error(go_kind(e), "min", "float64")),
        };
        min.insert(name, n);
    }
    Ok(())
}

/// Parses a JSON number's text as Go's `strconv.ParseFloat` does: the
/// nearest float64, ±Inf past its range.
fn parse_number(v: &[u8]) -> f64 {
    std::str::from_utf8(v)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(f64::NAN)
}

/// The message suffix of a configuration Go cannot decode.
const WANT: &str = "(want {\"require\": [names], \"min\": {name: number}, \"set\": {name: value}})";

/// Reads the operator's configuration; null means no rules.
pub fn parse_rules(config: &[u8]) -> Result<Rules, String> {
    let mut scan = Scanner::default();
    let raw = decode_config(config, &mut scan)
        .map_err(|e| format!("enrich configuration: {} {}", e, WANT))?;
    let mut r = Rules {
        require: raw.require[..raw.require_len].to_vec(),
        ..Rules::default()
    };
    if r.require.iter().any(|f| f.is_empty()) {
        return Err("enrich configuration: \"require\" holds an empty field name".to_string());
    }
    if let Some(min) = raw.min {
        r.min = min.into_iter().collect();
    }
    if let Some((f, t)) = raw.set {
        let text = &config[f..t];
        if text != b"null" {
            let mut obj = ObjectReader::default();
            obj.read_object(text)
                .map_err(|e| format!("enrich configuration: \"set\": {}", e))?;
            for i in 0..obj.members.len() {
                let name = obj.name(text, i);
                if r.set.iter().any(|s| s.name == name) {
                    return Err(format!(
                        "enrich configuration: \"set\" names field {} twice",
                        gocompat::quote(name)
                    ));
                }
                let m = obj.members[i];
                let mut value = Vec::new();
                compact(&mut value, &text[m.value.0..m.value.1]);
                r.set.push(SetField {
                    name: name.to_vec(),
                    key: text[m.key.0..m.key.1].to_vec(),
                    value,
                });
            }
        }
    }
    Ok(r)
}

impl Rules {
    /// Checks `value` against the rules and, when it passes, appends the
    /// enriched object to `dst` and returns true; false drops the record,
    /// and an error dead-letters it.
    pub fn apply(
        &self,
        obj: &mut ObjectReader,
        dst: &mut Vec<u8>,
        value: &[u8],
    ) -> Result<bool, String> {
        obj.read_object(value)
            .map_err(|e| format!("value is not a JSON object: {}", e))?;
        for f in &self.require {
            if obj.find(value, f).is_none() {
                return Ok(false);
            }
        }
        for (field, min) in &self.min {
            let i = match obj.find(value, field) {
                Some(i) => i,
                None => return Ok(false),
            };
            let m = obj.members[i];
            let v = &value[m.value.0..m.value.1];
            if v.is_empty() || v[0] != b'-' && !v[0].is_ascii_digit() {
                return Err(format!(
                    "field {} is {}, not a number",
                    gocompat::quote(field),
                    kind(v)
                ));
            }
            if parse_number(v) < *min {
                return Ok(false);
            }
        }
        dst.push(b'{');
        for (i, m) in obj.members.iter().enumerate() {
            if i > 0 {
                dst.push(b',');
            }
            dst.extend_from_slice(&value[m.key.0..m.key.1]);
            dst.push(b':');
            let name = obj.name(value, i);
            match self.set.iter().find(|s| s.name == name) {
                Some(s) => dst.extend_from_slice(&s.value),
                None => dst.extend_from_slice(&value[m.value.0..m.value.1]),
            }
        }
        let mut n = obj.members.len();
        for s in &self.set {
            if obj.find(value, &s.name).is_some() {
                continue;
            }
            if n > 0 {
                dst.push(b',');
            }
            n += 1;
            dst.extend_from_slice(&s.key);
            dst.push(b':');
            dst.extend_from_slice(&s.value);
        }
        dst.push(b'}');
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice::testing::Harness;
    use sluice::OwnedRecord;

    const TEST_CONFIG: &str = r#"{"require": ["user"], "min": {"amount": 10, "age": 18}, "set": {"source": "web", "v": [1, 2]}}"#;

    fn apply(r: &Rules, input: &str) -> Result<Option<String>, String> {
        let mut obj = ObjectReader::default();
        let mut out = Vec::new();
        Ok(r.apply(&mut obj, &mut out, input.as_bytes())?
            .then(|| String::from_utf8(out).unwrap()))
    }

    /// The Go plugin's own table of cases.
    #[test]
    fn rules() {
        let r = parse_rules(TEST_CONFIG.as_bytes()).unwrap();
        let keep = |i: &str, o: &str| assert_eq!(apply(&r, i), Ok(Some(o.to_string())), "{}", i);
        let drop = |i: &str| assert_eq!(apply(&r, i), Ok(None), "{}", i);
        let fail = |i: &str, e: &str| {
            let got = apply(&r, i).unwrap_err();
            assert!(got.contains(e), "{}: {} does not contain {}", i, got, e);
        };
        keep(
            r#"{"user":"ann","amount":12,"age":30}"#,
            r#"{"user":"ann","amount":12,"age":30,"source":"web","v":[1,2]}"#,
        );
        keep(
            r#" { "user" : "bo" , "age":18, "amount": 1e3, "source": "app" } "#,
            r#"{"user":"bo","age":18,"amount":1e3,"source":"web","v":[1,2]}"#,
        );
        keep(
            r#"{"user":"a\u0062","x":{"nested":[1, 2]},"amount":10,"age":99}"#,
            r#"{"user":"a\u0062","x":{"nested":[1, 2]},"amount":10,"age":99,"source":"web","v":[1,2]}"#,
        );
        drop(r#"{"amount":12,"age":30}"#);
        drop(r#"{"user":"c","amount":9.99,"age":30}"#);
        drop(r#"{"user":"c","age":30}"#);
        drop(r#"{"user":"c","amount":-5e400,"age":30}"#);
        drop(r#"{"user":"c","amount":11,"amount":2,"age":30}"#);
        fail(
            r#"{"user":"c","amount":"12","age":30}"#,
            r#"field "amount" is a string, not a number"#,
        );
        fail(
            r#"{"user":"c","amount":null,"age":30}"#,
            r#"field "amount" is null, not a number"#,
        );
        fail("[1,2]", "value is not a JSON object: it is an array");
        fail(r#""text""#, "value is not a JSON object: it is a string");
        fail(
            r#"{"user":"#,
            "value is not a JSON object: unexpected end of JSON",
        );
        fail(
            r#"{"user":1} {}"#,
            "value is not a JSON object: data after the object",
        );
        fail("", "value is not a JSON object");
        fail("not json", "value is not a JSON object");
    }

    #[test]
    fn empty_rules_and_empty_object() {
        let r = parse_rules(b"null").unwrap();
        assert_eq!(apply(&r, "{}"), Ok(Some("{}".to_string())));
        let r = parse_rules(br#"{"set":{"a":1}}"#).unwrap();
        assert_eq!(apply(&r, "{}"), Ok(Some(r#"{"a":1}"#.to_string())));
    }

    /// Configuration errors, with the messages Go's decoder gives.
    #[test]
    fn config_errors() {
        for (config, want) in [
            (r#"{"requires": ["x"]}"#, r#"json: unknown field "requires""#),
            (r#"{"require": "x"}"#, "json: cannot unmarshal string into Go struct field .require of type []string"),
            (r#"{"require": [1]}"#, "json: cannot unmarshal number into Go struct field .require of type string"),
            (r#"{"require": [""]}"#, "empty field name"),
            (r#"{"min": {"a": "1"}}"#, "json: cannot unmarshal string into Go struct field .min of type float64"),
            (r#"{"min": {"a": 1e400}}"#, "json: cannot unmarshal number 1e400 into Go struct field .min of type float64"),
            (r#"{"min": 5}"#, "json: cannot unmarshal number into Go struct field .min of type map[string]float64"),
            ("[1]", "json: cannot unmarshal array into Go value of type struct {"),
            (r#"{"set": [1]}"#, r#""set": it is an array"#),
            (r#"{"set": {"a": 1, "a": 2}}"#, r#""set" names field "a" twice"#),
            ("[", "enrich configuration: unexpected EOF (want"),
        ] {
            let got = parse_rules(config.as_bytes()).unwrap_err();
            assert!(got.contains(want), "{}: {} does not contain {}", config, got, want);
        }
    }

    /// Go's decoder quirks: case-insensitive fields, duplicates, trailing
    /// data after the first value.
    #[test]
    fn config_quirks() {
        let r =
            parse_rules(r#"{"REQUIRE": ["x"], "\u017fet": {"a": 1}} trailing"#.as_bytes()).unwrap();
        assert_eq!(r.require, vec![b"x".to_vec()]);
        assert_eq!(r.set.len(), 1);
        let r =
            parse_rules(br#"{"require":["a","b"],"require":["c"],"require":[null,null]}"#).unwrap();
        assert_eq!(r.require, vec![b"c".to_vec(), b"b".to_vec()]);
        let r = parse_rules(br#"{"min":{"a":1},"min":{"b":2,"c":null}}"#).unwrap();
        assert_eq!(
            r.min,
            vec![
                (b"a".to_vec(), 1.0),
                (b"b".to_vec(), 2.0),
                (b"c".to_vec(), 0.0)
            ]
        );
    }

    #[test]
    fn through_the_harness() {
        let mut h = Harness::operator(Enrich::default());
        h.configure(TEST_CONFIG.as_bytes()).unwrap();
        let out = h.process(&[
            OwnedRecord::new("k1", r#"{"user":"ann","amount":12,"age":30}"#)
                .with_time(5)
                .with_header("trace", "t1"),
            OwnedRecord::new("k2", r#"{"user":"bo","amount":3,"age":30}"#),
            OwnedRecord::new("k3", "oops"),
            OwnedRecord::new("k4", r#"{"user":"cy","amount":50,"age":"old"}"#),
        ]);
        assert_eq!(out.records.len(), 1);
        let o = &out.records[0];
        assert_eq!(o.origin, 0);
        assert_eq!(
            o.record,
            OwnedRecord::new(
                "k1",
                r#"{"user":"ann","amount":12,"age":30,"source":"web","v":[1,2]}"#
            )
            .with_time(5)
            .with_header("trace", "t1")
        );
        assert_eq!(out.rejects.len(), 2);
        assert_eq!((out.rejects[0].origin, out.rejects[1].origin), (2, 3));
        assert_eq!(
            out.rejects[0].message,
            "value is not a JSON object: invalid character 'o' looking for beginning of value"
        );
        assert_eq!(
            out.rejects[1].message,
            r#"field "age" is a string, not a number"#
        );
        let err = Harness::operator(Enrich::default())
            .configure(br#"{"bogus":1}"#)
            .unwrap_err();
        assert!(
            err.message().contains(r#"unknown field "bogus""#),
            "{}",
            err
        );
    }
}
