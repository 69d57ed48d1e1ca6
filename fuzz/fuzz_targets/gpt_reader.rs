//! GPT reader: a primary GPT region (as StreamDisk receives it) and a whole
//! disk read back and verified. Any bytes parse or give a `GptError`.
#![no_main]

use std::io::Write;

use libfuzzer_sys::fuzz_target;
use trident_cosi::gpt::Gpt;

fuzz_target!(|data: &[u8]| {
    for lba_size in [512, 4096] {
        if let Ok(gpt) = Gpt::parse_primary(data, lba_size) {
            let _ = gpt.min_disk_size();
            let _ = gpt.for_disk_size(gpt.min_disk_size());
            let _ = gpt.primary_bytes();
            let _ = gpt.check_backup(data);
        }
    }
    // The read-back path: the same bytes as a whole disk file.
    let Ok(mut file) = tempfile::tempfile() else {
        return;
    };
    if file.write_all(data).is_ok() {
        let _ = Gpt::read_and_verify(&file, 512, data.len() as u64);
    }
});
