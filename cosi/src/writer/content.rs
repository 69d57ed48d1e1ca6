//! Deterministic partition content for fixtures.
//!
//! Each 64 KiB block is, by a hash of (seed, partition, block), either zeros,
//! random bytes or low-entropy "text-like" bytes, so images compress roughly
//! like real filesystems (~2-3x) and differ completely between seeds.

use std::io::{self, Read};

const BLOCK: u64 = 64 * 1024;

fn splitmix64(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// Fills `out` with the content at `offset` of partition `number` for `seed`.
/// Blocks are independent, so any range can be produced directly.
pub fn fill(seed: u64, number: u32, offset: u64, out: &mut [u8]) {
    let mut pos = 0usize;
    while pos < out.len() {
        let abs = offset + pos as u64;
        let block = abs / BLOCK;
        let in_block = (abs % BLOCK) as usize;
        let n = (BLOCK as usize - in_block).min(out.len() - pos);
        let key = splitmix64(seed ^ (u64::from(number) << 48) ^ block);
        let dst = &mut out[pos..pos + n];
        match key % 8 {
            0 | 1 => dst.fill(0),
            kind => {
                // Word w of the block is the (w+1)-th xorshift state, so any
                // sub-range is consistent with a full-block read.
                let mut state = key | 1;
                for _ in 0..in_block / 8 {
                    state = xorshift(state);
                }
                let mut skip = in_block % 8;
                let mut i = 0;
                while i < n {
                    state = xorshift(state);
                    let word = if kind >= 5 {
                        // Low-entropy "text": bytes 'a'..='p'.
                        (state & 0x0F0F_0F0F_0F0F_0F0F) + 0x6161_6161_6161_6161
                    } else {
                        state
                    };
                    let bytes = word.to_le_bytes();
                    let take = (8 - skip).min(n - i);
                    dst[i..i + take].copy_from_slice(&bytes[skip..skip + take]);
                    i += take;
                    skip = 0;
                }
            }
        }
        pos += n;
    }
}

fn xorshift(mut x: u64) -> u64 {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    x
}

/// `Read` over `len` bytes of a partition's deterministic content.
#[derive(Debug, Clone)]
pub struct ContentReader {
    seed: u64,
    number: u32,
    pos: u64,
    len: u64,
}

impl ContentReader {
    pub fn new(seed: u64, number: u32, len: u64) -> Self {
        ContentReader {
            seed,
            number,
            pos: 0,
            len,
        }
    }
}

impl Read for ContentReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = (buf.len() as u64).min(self.len - self.pos) as usize;
        fill(self.seed, self.number, self.pos, &mut buf[..n]);
        self.pos += n as u64;
        Ok(n)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn any_range_matches_the_full_stream() {
        let mut full = vec![0u8; 300_000];
        fill(7, 2, 0, &mut full);
        let mut part = vec![0u8; 100_003];
        fill(7, 2, 65_531, &mut part);
        assert_eq!(&full[65_531..65_531 + 100_003], &part[..]);
    }

    #[test]
    fn seeds_and_partitions_give_different_content() {
        let mut a = vec![0u8; 1 << 20];
        let mut b = vec![0u8; 1 << 20];
        fill(1, 2, 0, &mut a);
        fill(2, 2, 0, &mut b);
        assert_ne!(a, b);
        fill(1, 3, 0, &mut b);
        assert_ne!(a, b);
    }
}
