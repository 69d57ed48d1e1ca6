//! One chunk's frame: decompressed within bounds, its content hashed.

use sha2::{Digest, Sha256};
use zstd::stream::raw::{DParameter, Decoder, InBuffer, Operation, OutBuffer};

/// Lowercase hex SHA-256 of `bytes` (a chunk's content hash).
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// Decompresses the zstd frame(s) in `frame` into `out`, which must come
/// out exactly `out.len()` bytes long (the chunk's length); a frame that
/// yields more or fewer, needs a window above `max_window_log` or is
/// malformed is an error (its text). The caller hashes `out`.
pub fn decompress_frame(frame: &[u8], out: &mut [u8], max_window_log: u32) -> Result<(), String> {
    let mut decoder = Decoder::new().map_err(|e| e.to_string())?;
    decoder
        .set_parameter(DParameter::WindowLogMax(max_window_log))
        .map_err(|e| e.to_string())?;
    let mut input = InBuffer::around(frame);
    let mut produced = 0usize;
    let mut spare = [0u8; 1];
    // zstd's hint from the last call that consumed or produced anything
    // (0: the data ends on a frame boundary); a call that did neither, at
    // the end of a frame, reports the next frame's header size instead.
    let mut last_hint = 1usize;
    loop {
        let before = input.pos();
        let (n, hint) = if produced < out.len() {
            let mut output = OutBuffer::around(&mut out[produced..]);
            let hint = decoder
                .run(&mut input, &mut output)
                .map_err(|e| e.to_string())?;
            (output.pos(), hint)
        } else {
            // Full: one more byte would mean the frame is too long.
            let mut output = OutBuffer::around(&mut spare[..]);
            let hint = decoder
                .run(&mut input, &mut output)
                .map_err(|e| e.to_string())?;
            if output.pos() > 0 {
                return Err(format!(
                    "the frame holds more than the chunk's {} bytes",
                    out.len()
                ));
            }
            (0, hint)
        };
        produced += n;
        if input.pos() > before || n > 0 {
            last_hint = hint;
        }
        if input.pos() == frame.len() && n == 0 {
            if last_hint != 0 {
                return Err("the data ends inside a zstd frame".to_owned());
            }
            if produced != out.len() {
                return Err(format!(
                    "the frame holds {produced} bytes, the chunk {}",
                    out.len()
                ));
            }
            return Ok(());
        }
        if input.pos() == before && n == 0 {
            return Err("the decoder makes no progress".to_owned());
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_frame_decompresses_to_exactly_its_chunk() {
        let data: Vec<u8> = (0..10_000u32).map(|i| (i % 251) as u8).collect();
        let frame = zstd::bulk::compress(&data, 3).unwrap();
        let mut out = vec![0u8; data.len()];
        decompress_frame(&frame, &mut out, 27).unwrap();
        assert_eq!(out, data);
        let mut short = vec![0u8; data.len() - 1];
        assert!(decompress_frame(&frame, &mut short, 27).is_err());
        let mut long = vec![0u8; data.len() + 1];
        assert!(decompress_frame(&frame, &mut long, 27).is_err());
        assert!(decompress_frame(&frame[..frame.len() - 3], &mut out, 27).is_err());
    }
}
