//! The sections of a PE/COFF file (a UKI is one: the systemd stub with
//! `.linux`, `.initrd`, `.cmdline`, `.osrel` added): just enough of the
//! format to read one section's bytes. Bounds are checked everywhere; a
//! file that is not PE has no sections.

/// The bytes of section `name` (e.g. `.cmdline`) of PE file `file`, up to
/// its virtual size (the raw data is padded to the file alignment).
pub fn section<'a>(file: &'a [u8], name: &str) -> Option<&'a [u8]> {
    let u16_at = |at: usize| {
        file.get(at..at + 2)
            .map(|b| u16::from_le_bytes([b[0], b[1]]) as usize)
    };
    let u32_at = |at: usize| {
        file.get(at..at + 4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
    };
    if file.get(..2)? != b"MZ" {
        return None;
    }
    let pe = u32_at(0x3c)?;
    if file.get(pe..pe + 4)? != b"PE\0\0" {
        return None;
    }
    let coff = pe + 4;
    let sections = u16_at(coff + 2)?;
    let optional_size = u16_at(coff + 16)?;
    let table = coff + 20 + optional_size;
    (0..sections).find_map(|i| {
        let entry = table + i * 40;
        let raw_name = file.get(entry..entry + 8)?;
        let end = raw_name.iter().position(|&b| b == 0).unwrap_or(8);
        if &raw_name[..end] != name.as_bytes() {
            return None;
        }
        let virtual_size = u32_at(entry + 8)?;
        let raw_size = u32_at(entry + 16)?;
        let raw_at = u32_at(entry + 20)?;
        let len = if virtual_size == 0 {
            raw_size
        } else {
            virtual_size.min(raw_size)
        };
        file.get(raw_at..raw_at.checked_add(len)?)
    })
}
