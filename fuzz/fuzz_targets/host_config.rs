//! Host Configuration parser and validator: any text is either a
//! configuration or a structured error, never a panic; a configuration it
//! accepts serializes back to YAML that parses again.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(yaml) = std::str::from_utf8(data) else {
        return;
    };
    match trident_host::config::parse(yaml) {
        Ok(hc) => {
            // What GetProvisionedConfig returns must be readable again.
            if let Ok(text) = trident_host::config::to_yaml(&hc) {
                let _ = trident_host::config::parse(&text);
            }
        }
        Err(err) => {
            // The record every RPC carries: category, subkind, message.
            let record = err.record();
            assert!(!record.message.is_empty(), "an error without a message");
        }
    }
});
