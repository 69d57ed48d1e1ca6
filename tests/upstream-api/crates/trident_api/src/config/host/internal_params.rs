use std::collections::HashMap;

use anyhow::Context;
use log::warn;
use serde::{de::DeserializeOwned, Deserialize, Serialize};
use serde_yaml::Value;

use crate::error::InvalidInputError;

/// Struct to hold free-form preview parameters.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct InternalParams(HashMap<String, Value>);

type Parameter<T> = Option<Result<T, InvalidInputError>>;

impl InternalParams {
    /// Get the value of a key as a generic type.
    pub fn get<T>(&self, key: impl AsRef<str>) -> Parameter<T>
    where
        T: DeserializeOwned,
    {
        self.0.get(key.as_ref()).map(|v| {
            warn!(
                "USING INTERNAL OVERRIDE PARAMETER '{}':\n{:#?}",
                key.as_ref(),
                v
            );
            serde_yaml::from_value(v.clone())
                .with_context(|| format!("Failed to parse as '{}'", std::any::type_name::<T>()))
                .map_err(|e| InvalidInputError::InvalidInternalParameter {
                    name: key.as_ref().to_string(),
                    explanation: e.to_string(),
                })
        })
    }

    /// Get the value of a key as a string.
    pub fn get_string(&self, key: impl AsRef<str>) -> Parameter<String> {
        self.get(key)
    }

    /// Get the value of a key as a vector of strings.
    pub fn get_vec_string(&self, key: impl AsRef<str>) -> Parameter<Vec<String>> {
        self.get(key)
    }

    /// Get the value of a key as a u64.
    pub fn get_u64(&self, key: impl AsRef<str>) -> Parameter<u64> {
        self.get(key)
    }

    /// Get the value of a key as a u16.
    pub fn get_u16(&self, key: impl AsRef<str>) -> Parameter<u16> {
        self.get(key)
    }

    /// Get the value of a key as a boolean.
    pub fn get_flag(&self, key: impl AsRef<str>) -> bool {
        self.get(key).transpose().ok().flatten().unwrap_or(false)
    }

    /// Set a key to be a boolean flag with a value of 'true'.
    pub fn set_flag(&mut self, key: impl Into<String>) {
        self.0.insert(key.into(), true.into());
    }

    /// Set a key to be a boolean flag with a value of 'false'.
    // TODO: instead, should there just be a clear_flag/reset_flag that removes the key?
    pub fn set_flag_false(&mut self, key: String) {
        self.0.insert(key, false.into());
    }

    /// Get list of keys that are set as internal params.
    pub fn get_set_params(&self) -> Vec<String> {
        self.0.keys().cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_get_string() {
        let params: InternalParams = serde_yaml::from_str(
            r#"
            key: value
        "#,
        )
        .unwrap();

        // Assert we get string correctly
        assert_eq!(params.get_string("key").unwrap().unwrap().as_str(), "value");

        // Assert we get None for missing key
        assert!(params.get_string("missing").is_none());
    }

    #[test]
    fn test_get_vec_string() {
        let params: InternalParams = serde_yaml::from_str(
            r#"
            key:
              - value1
              - value2
            myString: myValue
            myBadList:
              - value1
              - 1
              - -500
        "#,
        )
        .unwrap();

        // Assert we get list correctly
        assert_eq!(
            params.get_vec_string("key").unwrap().unwrap(),
            ["value1".to_string(), "value2".to_string()]
        );

        // Assert we get an error for a non-string value
        params.get_vec_string("myBadList").unwrap().unwrap_err();

        // Assert we get None for missing key
        assert!(params.get_vec_string("missing").is_none());
    }

    #[test]
    fn test_get_u16() {
        let params: InternalParams = serde_yaml::from_str(
            r#"
            badU16_as_list:
              - value1
              - value2
            badU16_with_chars: 22a
            badU16_negative: -22
            badU16_too_big: 128000
            validU16: 1234
        "#,
        )
        .unwrap();

        // Assert we None when list provided
        assert_eq!(params.get_u16("validU16").unwrap().unwrap(), 1234);

        // Assert we get None when list provided
        params.get_u16("badU16_as_list").unwrap().unwrap_err();
        // Assert we get None when chars exist
        params.get_u16("badU16_with_chars").unwrap().unwrap_err();
        // Assert we get None when negative
        params.get_u16("badU16_negative").unwrap().unwrap_err();
        // Assert we get None when too big
        params.get_u16("badU16_too_big").unwrap().unwrap_err();
    }

    #[test]
    fn test_get_flag() {
        let params: InternalParams = serde_yaml::from_str(
            r#"
            key:
              - value1
              - value2
            myString: true
            x: false
        "#,
        )
        .unwrap();

        assert!(!params.get_flag("key"));
        assert!(params.get_flag("myString"));
        assert!(!params.get_flag("x"));
        assert!(!params.get_flag("missing"));
    }

    #[test]
    fn test_get_set_params() {
        // Test with multiple parameters
        let params: InternalParams = serde_yaml::from_str(
            r#"
            param1: value1
            param2: 123
            param3:
              - item1
              - item2
            flag: true
        "#,
        )
        .unwrap();

        let keys = params.get_set_params();
        assert_eq!(keys.len(), 4);
        assert!(keys.contains(&"param1".to_string()));
        assert!(keys.contains(&"param2".to_string()));
        assert!(keys.contains(&"param3".to_string()));
        assert!(keys.contains(&"flag".to_string()));

        // Test with empty params
        let empty_params = InternalParams::default();
        let empty_keys = empty_params.get_set_params();
        assert_eq!(empty_keys.len(), 0);

        // Test with single parameter
        let single_params: InternalParams = serde_yaml::from_str(
            r#"
            only_key: only_value
        "#,
        )
        .unwrap();

        let single_keys = single_params.get_set_params();
        assert_eq!(single_keys.len(), 1);
        assert_eq!(single_keys[0], "only_key");
    }
}
