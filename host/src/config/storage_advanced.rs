//! Upstream's advanced storage sections: RAID, encryption, dm-verity, swap
//! and adopted partitions. Modelled in full so documents that use them
//! parse (and name a bad key inside them); what the engine does not apply
//! yet (encryption, verity), [`super::unsupported`] refuses.

use std::borrow::Cow;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Raid {
    #[serde(default)]
    pub software: Vec<SoftwareRaidArray>,
    #[serde(default)]
    #[schemars(range(max = 4294967295u64))]
    pub sync_timeout: Option<u64>,
}

impl Raid {
    /// No arrays and no `syncTimeout`: what an absent `raid` means.
    pub fn is_empty(&self) -> bool {
        self.software.is_empty() && self.sync_timeout.is_none()
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SoftwareRaidArray {
    pub id: String,
    pub name: String,
    pub level: RaidLevel,
    pub devices: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum RaidLevel {
    Raid0,
    Raid1,
    Raid5,
    Raid6,
    Raid10,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Encryption {
    #[serde(default)]
    pub recovery_key_url: Option<String>,
    pub volumes: Vec<EncryptedVolume>,
    pub pcrs: Vec<Pcr>,
    #[serde(default)]
    pub clear_tpm_on_install: Option<bool>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EncryptedVolume {
    pub id: String,
    pub device_name: String,
    pub device_id: String,
}

/// A TPM PCR: upstream accepts `PcrN`, its name (`secure-boot-policy`)
/// or its number.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Pcr {
    Number(u8),
    Name(String),
}

impl JsonSchema for Pcr {
    fn schema_name() -> Cow<'static, str> {
        "Pcr".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "A TPM PCR: PcrN, its name (e.g. secure-boot-policy) or its number.",
            "oneOf": [
                { "type": "integer", "minimum": 0, "maximum": 23 },
                { "type": "string" }
            ]
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct VerityDevice {
    pub id: String,
    pub name: String,
    pub data_device_id: String,
    pub hash_device_id: String,
    #[serde(default)]
    pub corruption_option: VerityCorruptionOption,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum VerityCorruptionOption {
    #[default]
    IoError,
    Ignore,
    Panic,
    Restart,
}

/// A swap device: `{ deviceId }` or the id alone as a string.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Swap {
    pub device_id: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct SwapSpec {
    device_id: String,
}

impl<'de> Deserialize<'de> for Swap {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct SwapVisitor;
        impl<'de> serde::de::Visitor<'de> for SwapVisitor {
            type Value = Swap;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a device id or a map with 'deviceId'")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Swap, E> {
                Ok(Swap {
                    device_id: v.to_owned(),
                })
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<Swap, A::Error> {
                SwapSpec::deserialize(serde::de::value::MapAccessDeserializer::new(map)).map(|s| {
                    Swap {
                        device_id: s.device_id,
                    }
                })
            }
        }
        d.deserialize_any(SwapVisitor)
    }
}

impl JsonSchema for Swap {
    fn schema_name() -> Cow<'static, str> {
        "Swap".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "A swap device: its id, or { deviceId }.",
            "oneOf": [
                {
                    "type": "object",
                    "required": ["deviceId"],
                    "properties": { "deviceId": { "type": "string" } },
                    "additionalProperties": false
                },
                { "type": "string" }
            ]
        })
    }
}

/// An existing partition a clean install keeps, byte for byte: matched by
/// its GPT name (`matchLabel`) or unique GUID (`matchUuid`), one of them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AdoptedPartition {
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub match_label: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "super::schema::optional_uuid")]
    pub match_uuid: Option<String>,
}
