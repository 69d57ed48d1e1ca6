//! Minimal protobuf wire writing for the hot path: lengths first, then
//! bytes, straight into one buffer (no intermediate prost structs).

use prost::encoding::{WireType, encoded_len_varint, key_len};

/// Appends a varint (prost's generic `BufMut` version is several times
/// slower on a `Vec`, and this is the hot path).
#[inline]
pub fn encode_varint(mut value: u64, buf: &mut Vec<u8>) {
    while value >= 0x80 {
        buf.push((value as u8) | 0x80);
        value >>= 7;
    }
    buf.push(value as u8);
}

/// Appends a field key.
#[inline]
pub fn encode_key(tag: u32, wire_type: WireType, buf: &mut Vec<u8>) {
    encode_varint((u64::from(tag) << 3) | wire_type as u64, buf);
}

/// Encoded length of a string/bytes field; 0 when empty (proto3 default).
pub fn str_len(tag: u32, value: &[u8]) -> usize {
    if value.is_empty() {
        0
    } else {
        len_delimited_len(tag, value.len())
    }
}

/// Encoded length of a length-delimited field with a body of `len` bytes.
pub fn len_delimited_len(tag: u32, len: usize) -> usize {
    key_len(tag) + encoded_len_varint(len as u64) + len
}

/// Encoded length of a varint field; 0 when zero (proto3 default).
pub fn varint_len(tag: u32, value: u64) -> usize {
    if value == 0 {
        0
    } else {
        key_len(tag) + encoded_len_varint(value)
    }
}

/// Writes a string/bytes field unless empty.
pub fn put_str(tag: u32, value: &[u8], buf: &mut Vec<u8>) {
    if !value.is_empty() {
        put_len_delimited(tag, value.len(), buf);
        buf.extend_from_slice(value);
    }
}

/// Writes the key and length of a length-delimited field; the caller
/// writes exactly `len` body bytes next.
pub fn put_len_delimited(tag: u32, len: usize, buf: &mut Vec<u8>) {
    encode_key(tag, WireType::LengthDelimited, buf);
    encode_varint(len as u64, buf);
}

/// Writes a varint field unless zero.
pub fn put_varint(tag: u32, value: u64, buf: &mut Vec<u8>) {
    if value != 0 {
        encode_key(tag, WireType::Varint, buf);
        encode_varint(value, buf);
    }
}

/// Writes a varint field even when zero (oneof members).
pub fn put_varint_always(tag: u32, value: u64, buf: &mut Vec<u8>) {
    encode_key(tag, WireType::Varint, buf);
    encode_varint(value, buf);
}

/// Writes a double field even when zero (oneof members).
pub fn put_double_always(tag: u32, value: f64, buf: &mut Vec<u8>) {
    encode_key(tag, WireType::SixtyFourBit, buf);
    buf.extend_from_slice(&value.to_le_bytes());
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// A trace id as 32 lowercase hex digits, without allocating.
pub fn hex128(value: u128) -> [u8; 32] {
    let mut out = [0u8; 32];
    for (i, slot) in out.iter_mut().enumerate() {
        *slot = HEX[((value >> (124 - 4 * i)) & 0xf) as usize];
    }
    out
}

/// A span id as 16 lowercase hex digits, without allocating.
pub fn hex64(value: u64) -> [u8; 16] {
    let mut out = [0u8; 16];
    for (i, slot) in out.iter_mut().enumerate() {
        *slot = HEX[((value >> (60 - 4 * i)) & 0xf) as usize];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_and_keys_match_prost() {
        for value in [0u64, 1, 127, 128, 300, u64::from(u32::MAX), u64::MAX] {
            let (mut ours, mut theirs) = (Vec::new(), Vec::new());
            encode_varint(value, &mut ours);
            prost::encoding::encode_varint(value, &mut theirs);
            assert_eq!(ours, theirs);
        }
        let (mut ours, mut theirs) = (Vec::new(), Vec::new());
        encode_key(10, WireType::LengthDelimited, &mut ours);
        prost::encoding::encode_key(10, WireType::LengthDelimited, &mut theirs);
        assert_eq!(ours, theirs);
    }

    #[test]
    fn hex_matches_format() {
        let trace = 0x4bf92f3577b34da6a3ce929d0e0e4736u128;
        assert_eq!(&hex128(trace), format!("{trace:032x}").as_bytes());
        assert_eq!(&hex64(0xf067aa0ba902b7), b"00f067aa0ba902b7");
    }
}
