//! COSI reader: tar framing, metadata.json, region sizes and hashes. Any
//! byte stream is read to its end or refused with a `CosiError`; never a
//! panic, never an allocation the input's length fields alone decide.
#![no_main]

use std::io::Cursor;

use libfuzzer_sys::fuzz_target;
use trident_cosi::{CosiSource, ExpectedHash};

fuzz_target!(|data: &[u8]| {
    let reader = Box::new(Cursor::new(data.to_vec()));
    let expected = ExpectedHash::Ignored;
    let Ok(mut source) = CosiSource::from_reader("fuzz.cosi", reader, &expected) else {
        return;
    };
    let _ = source.total_uncompressed();
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        match source.next_region() {
            Ok(Some(mut region)) => {
                // Decompress (bounded by the region's declared size) and
                // hash; stop at the first error like the daemon does.
                loop {
                    match region.read_chunk(&mut chunk) {
                        Ok(0) | Err(_) => break,
                        Ok(_) => {}
                    }
                }
            }
            Ok(None) | Err(_) => break,
        }
    }
});
