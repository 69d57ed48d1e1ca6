//! Partition sizes: `64M`, `2G`, `1GiB`, `4096` (bytes) or `grow`.
//! Single-letter suffixes are binary (upstream convention: `M` = MiB).
//! Zero and unaligned sizes parse; [`super::validate`] refuses them.

use std::borrow::Cow;
use std::fmt;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};

use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

const KIB: u64 = 1024;

/// Size of a partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PartitionSize {
    Bytes(u64),
    /// Takes the rest of the disk (last partition only).
    Grow,
}

impl PartitionSize {
    pub fn parse(text: &str) -> Result<Self, String> {
        let text = text.trim();
        if text == "grow" {
            return Ok(Self::Grow);
        }
        let split = text
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(text.len());
        let (digits, suffix) = text.split_at(split);
        if digits.is_empty() {
            return Err(format!(
                "invalid size '{text}': expected a number with an optional unit \
                 (K, M, G, T, KiB, MiB, GiB, TiB) or 'grow'"
            ));
        }
        let number: u64 = digits
            .parse()
            .map_err(|_| format!("invalid size '{text}': number too large"))?;
        let multiplier = match suffix.trim() {
            "" | "B" => 1,
            "K" | "KiB" => KIB,
            "M" | "MiB" => KIB.pow(2),
            "G" | "GiB" => KIB.pow(3),
            "T" | "TiB" => KIB.pow(4),
            other => {
                return Err(format!(
                    "invalid size '{text}': unknown unit '{other}' \
                     (use K, M, G, T, KiB, MiB, GiB or TiB)"
                ));
            }
        };
        let bytes = number
            .checked_mul(multiplier)
            .ok_or_else(|| format!("invalid size '{text}': too large"))?;
        Ok(Self::Bytes(bytes))
    }
}

impl fmt::Display for PartitionSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Grow => f.write_str("grow"),
            Self::Bytes(b) => {
                for (unit, div) in [
                    ("T", KIB.pow(4)),
                    ("G", KIB.pow(3)),
                    ("M", KIB.pow(2)),
                    ("K", KIB),
                ] {
                    if b % div == 0 {
                        return write!(f, "{}{unit}", b / div);
                    }
                }
                write!(f, "{b}")
            }
        }
    }
}

impl Serialize for PartitionSize {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for PartitionSize {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct SizeVisitor;
        impl Visitor<'_> for SizeVisitor {
            type Value = PartitionSize;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a size such as 64M, 2G, 1GiB, a byte count, or 'grow'")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
                PartitionSize::parse(&v.to_string()).map_err(E::custom)
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
                PartitionSize::parse(&v.to_string()).map_err(E::custom)
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                PartitionSize::parse(v).map_err(E::custom)
            }
        }
        d.deserialize_any(SizeVisitor)
    }
}

impl JsonSchema for PartitionSize {
    fn schema_name() -> Cow<'static, str> {
        "PartitionSize".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "A byte count, with an optional binary unit (K, M, G, T), or 'grow'.",
            "oneOf": [
                { "type": "string", "enum": ["grow"] },
                { "type": "integer", "minimum": 0, "maximum": 9007199254740991u64 },
                { "type": "string", "pattern": "^[0-9]{1,7} *([KMGT]|[KMGT]iB)?$" }
            ]
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_with_binary_units() {
        assert_eq!(
            PartitionSize::parse("64M"),
            Ok(PartitionSize::Bytes(64 << 20))
        );
        assert_eq!(
            PartitionSize::parse("2G"),
            Ok(PartitionSize::Bytes(2 << 30))
        );
        assert_eq!(
            PartitionSize::parse("1GiB"),
            Ok(PartitionSize::Bytes(1 << 30))
        );
        assert_eq!(PartitionSize::parse("4096"), Ok(PartitionSize::Bytes(4096)));
        assert_eq!(PartitionSize::parse("grow"), Ok(PartitionSize::Grow));
        assert!(
            PartitionSize::parse("2X")
                .unwrap_err()
                .contains("unknown unit")
        );
        assert!(PartitionSize::parse("M").is_err());
        assert_eq!(PartitionSize::parse("0"), Ok(PartitionSize::Bytes(0)));
        assert_eq!(
            PartitionSize::parse("5 G"),
            Ok(PartitionSize::Bytes(5 << 30))
        );
        assert_eq!(PartitionSize::Bytes(64 << 20).to_string(), "64M");
    }
}
