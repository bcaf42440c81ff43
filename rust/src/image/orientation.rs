//! The EXIF orientation Pillow's `ImageOps.exif_transpose` finds, from the same places and in
//! the same order as `Image.getexif` (PIL/Image.py) and the JPEG and PNG plugins fill
//! `Image.info`:
//!
//! - the EXIF block: JPEG APP1 "Exif\0\0" segments (concatenated, as Pillow appends them), PNG
//!   eXIf chunks and tEXt "exif" (before or after the image data; the last one wins), else a
//!   PNG text chunk "Raw profile type exif" (ImageMagick's hex dump);
//! - only from IFD0, whose entries are read one by one: a bad next-IFD offset or a truncated
//!   IFD keeps the entries read before it (Pillow's `ImageFileDirectory_v2.load`);
//! - where that has no Orientation tag, XMP (`tiff:Orientation="N"` or `>N`): JPEG APP1
//!   "http://ns.adobe.com/xap/1.0/" (the last), PNG iTXt "XML:com.adobe.xmp".
//!
//! Our own small reader rather than an EXIF crate: parity needs Pillow's leniency exactly (the
//! crate used before refused a whole block for a bad next-IFD offset).
use super::decode::DecodeError;

/// Pillow's `PngImagePlugin.MAX_TEXT_CHUNK`: a compressed text chunk inflating to more is
/// refused ("Decompressed data too large for PngImagePlugin.MAX_TEXT_CHUNK").
const MAX_TEXT_CHUNK: usize = 1 << 20;

/// What IFD0 says about orientation, as Pillow's `Exif` reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tiff {
    /// Pillow's `Exif.load` raises (a header shorter than 8 bytes, or not a TIFF header): the
    /// error is swallowed where Pillow first reads the EXIF (JpegImagePlugin's DPI probe),
    /// leaving an empty EXIF *and* no XMP fallback, so no orientation at all.
    Broken,
    /// No Orientation entry: Pillow falls back to XMP.
    Absent,
    /// An Orientation entry; its value where it is one integer (else None: no transpose).
    Present(Option<i64>),
}

/// The Orientation tag (274) of IFD0 of a TIFF-structured EXIF block (after any "Exif\0\0"
/// prefixes).
pub fn tiff_orientation(mut exif: &[u8]) -> Tiff {
    while let Some(rest) = exif.strip_prefix(b"Exif\0\0") {
        exif = rest;
    }
    if exif.is_empty() {
        return Tiff::Absent;
    }
    // Pillow's PREFIXES; the byte order is the first two bytes'. BigTIFF's IFDs differ and
    // are not read here.
    let little = match exif.get(..4) {
        Some(b"II*\0" | b"II\0*") => true,
        Some(b"MM\0*" | b"MM*\0") => false,
        Some(b"II+\0" | b"MM\0+") if exif.len() >= 8 => return Tiff::Absent,
        _ => return Tiff::Broken,
    };
    if exif.len() < 8 {
        return Tiff::Broken;
    }
    let u16_at = |i: usize| {
        exif.get(i..i + 2).map(|b| {
            if little {
                u16::from_le_bytes([b[0], b[1]])
            } else {
                u16::from_be_bytes([b[0], b[1]])
            }
        })
    };
    let u32_at = |i: usize| {
        exif.get(i..i + 4).map(|b| {
            let a = [b[0], b[1], b[2], b[3]];
            if little {
                u32::from_le_bytes(a)
            } else {
                u32::from_be_bytes(a)
            }
        })
    };
    let Some(ifd) = u32_at(4).map(|v| v as usize) else {
        return Tiff::Broken;
    };
    let Some(count) = u16_at(ifd) else {
        return Tiff::Absent;
    };
    let mut found = Tiff::Absent;
    for k in 0..usize::from(count) {
        let e = ifd + 2 + 12 * k;
        // A truncated IFD: Pillow keeps the entries read so far.
        if exif.len() < e + 12 {
            break;
        }
        let (Some(tag), Some(typ), Some(n)) = (u16_at(e), u16_at(e + 2), u32_at(e + 4)) else {
            break;
        };
        // Pillow's TYPES and their sizes; an unknown type's entry is skipped.
        let unit: u64 = match typ {
            1 | 2 | 6 | 7 => 1,
            3 | 8 => 2,
            4 | 9 | 11 | 13 => 4,
            5 | 10 | 12 | 16..=18 => 8,
            _ => continue,
        };
        if tag != 0x112 {
            continue;
        }
        let size = unit * u64::from(n);
        let at = if size > 4 {
            match u32_at(e + 8) {
                Some(off) if u64::from(off) + size <= exif.len() as u64 => off as usize,
                // Data past the end: Pillow warns and skips the entry.
                _ => continue,
            }
        } else {
            e + 8
        };
        let v = match (typ, n) {
            (1 | 7, 1) => Some(i64::from(exif[at])),
            (6, 1) => Some(i64::from(exif[at] as i8)),
            (3, 1) => u16_at(at).map(i64::from),
            (8, 1) => u16_at(at).map(|v| i64::from(v as i16)),
            (4, 1) => u32_at(at).map(i64::from),
            (9, 1) => u32_at(at).map(|v| i64::from(v as i32)),
            // A rational equal to an integer hashes as that integer in Pillow's lookup.
            (5, 1) => match (u32_at(at), u32_at(at + 4)) {
                (Some(num), Some(den)) if den != 0 && num % den == 0 => Some(i64::from(num / den)),
                _ => None,
            },
            _ => None,
        };
        // A repeated tag: the later entry replaces the earlier, as in Pillow's dict.
        found = Tiff::Present(v);
    }
    found
}

/// Pillow's XMP fallback: the first `tiff:Orientation="N"` or `tiff:Orientation>N` (one digit).
pub fn xmp_orientation(xmp: &[u8]) -> Option<i64> {
    const KEY: &[u8] = b"tiff:Orientation";
    let mut from = 0;
    while let Some(k) = find(&xmp[from..], KEY) {
        let at = from + k + KEY.len();
        let rest = &xmp[at..];
        let digit = match rest {
            [b'=', b'"', d, ..] | [b'>', d, ..] if d.is_ascii_digit() => Some(d),
            _ => None,
        };
        if let Some(d) = digit {
            return Some(i64::from(d - b'0'));
        }
        from = at;
    }
    None
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    memchr::memmem::find(hay, needle)
}

/// What Pillow's `getexif` ends with: EXIF's orientation, else XMP's; 1 without either.
fn resolve(exif: Option<&[u8]>, xmp: Option<&[u8]>) -> u32 {
    let o = match exif.map_or(Tiff::Absent, tiff_orientation) {
        Tiff::Broken => None,
        Tiff::Present(v) => v,
        Tiff::Absent => xmp.and_then(xmp_orientation),
    };
    o.and_then(|v| u32::try_from(v).ok())
        .filter(|v| (1..=8).contains(v))
        .unwrap_or(1)
}

/// The orientation of a JPEG: its APP1 segments before the first scan, walked as Pillow's
/// JpegImagePlugin walks them (bytes that are not a marker skipped one by one).
pub fn jpeg(data: &[u8]) -> u32 {
    let mut exif: Vec<u8> = Vec::new();
    let mut has_exif = false;
    let mut xmp: Option<&[u8]> = None;
    let mut i = 2;
    while i + 4 <= data.len() {
        if data[i] != 0xFF {
            i += 1;
            continue;
        }
        let marker = data[i + 1];
        match marker {
            0xFF => {
                i += 1;
                continue;
            }
            0xDA | 0xD9 => break,
            0x01 | 0xD0..=0xD8 => {
                i += 2;
                continue;
            }
            _ => {}
        }
        let len = usize::from(u16::from_be_bytes([data[i + 2], data[i + 3]]));
        let Some(seg) = data.get(i + 4..(i + 2 + len).max(i + 4)) else {
            break;
        };
        if marker == 0xE1 {
            if let Some(body) = seg.strip_prefix(b"Exif\0\0") {
                if has_exif {
                    exif.extend_from_slice(body);
                } else {
                    exif.extend_from_slice(seg);
                    has_exif = true;
                }
            } else if let Some(body) = seg.strip_prefix(b"http://ns.adobe.com/xap/1.0/\0") {
                xmp = Some(body);
            }
        }
        i += 2 + len;
    }
    resolve(has_exif.then_some(&exif[..]), xmp)
}

/// The orientation of a PNG, from every chunk (also after the image data, which Pillow reads
/// when loading). Err where Pillow refuses the file for its text (a compressed text chunk over
/// `MAX_TEXT_CHUNK`).
pub fn png(data: &[u8]) -> Result<u32, DecodeError> {
    let mut exif: Option<Vec<u8>> = None;
    let mut raw_profile: Option<Vec<u8>> = None;
    let mut xmp_text: Option<Vec<u8>> = None;
    let mut xmp_bytes: Option<Vec<u8>> = None;
    let mut i = 8;
    while let Some(h) = data.get(i..i + 8) {
        let len = u32::from_be_bytes([h[0], h[1], h[2], h[3]]) as usize;
        let kind = &h[4..8];
        let Some(body) = data.get(i + 8..(i + 8).saturating_add(len)) else {
            break;
        };
        match kind {
            b"IEND" => break,
            b"eXIf" => {
                let mut e = b"Exif\0\0".to_vec();
                e.extend_from_slice(body);
                exif = Some(e);
            }
            b"tEXt" => {
                let (k, v) = split0(body);
                match k {
                    b"exif" => exif = Some(v.to_vec()),
                    b"Raw profile type exif" => raw_profile = Some(v.to_vec()),
                    b"XML:com.adobe.xmp" => xmp_text = Some(v.to_vec()),
                    _ => {}
                }
            }
            b"zTXt" => {
                // Every zTXt is inflated, whatever its keyword: Pillow refuses the file for
                // any that inflates past MAX_TEXT_CHUNK or names another method.
                let (k, v) = split0(body);
                if v.first().copied().unwrap_or(0) != 0 {
                    return Err(DecodeError::Corrupt(
                        "PNG",
                        "unknown compression method in a zTXt chunk (Pillow refuses it)".into(),
                    ));
                }
                let text = inflate_text(v.get(1..).unwrap_or(&[]))?.unwrap_or_default();
                if k == b"XML:com.adobe.xmp" {
                    xmp_text = Some(text);
                } else if k == b"Raw profile type exif" {
                    raw_profile = Some(text);
                }
            }
            b"iTXt" => {
                if let Some((k, v)) = itxt(body)? {
                    if k == b"XML:com.adobe.xmp" {
                        xmp_bytes = Some(v.clone());
                        if std::str::from_utf8(&v).is_ok() {
                            xmp_text = Some(v);
                        }
                    } else if k == b"Raw profile type exif" && std::str::from_utf8(&v).is_ok() {
                        raw_profile = Some(v);
                    }
                }
            }
            _ => {}
        }
        i = i + 12 + len;
    }
    let exif = exif.or_else(|| raw_profile.as_deref().and_then(raw_profile_exif));
    Ok(resolve(
        exif.as_deref(),
        xmp_text.as_deref().or(xmp_bytes.as_deref()),
    ))
}

fn split0(body: &[u8]) -> (&[u8], &[u8]) {
    match body.iter().position(|&b| b == 0) {
        Some(z) => (&body[..z], &body[z + 1..]),
        None => (body, &[]),
    }
}

/// A compressed text chunk's text: None where zlib fails (Pillow then keeps no text), Err
/// where it inflates to more than Pillow allows.
fn inflate_text(z: &[u8]) -> Result<Option<Vec<u8>>, DecodeError> {
    match fdeflate::decompress_to_vec_bounded(z, MAX_TEXT_CHUNK + 1) {
        Ok(v) if v.len() <= MAX_TEXT_CHUNK => Ok(Some(v)),
        Ok(_) | Err(fdeflate::BoundedDecompressionError::OutputTooLarge { .. }) => {
            Err(DecodeError::Corrupt(
                "PNG",
                "a compressed text chunk inflates to over 1 MiB (Pillow's MAX_TEXT_CHUNK \
                 refuses it as a decompression bomb)"
                    .into(),
            ))
        }
        Err(_) => Ok(None),
    }
}

/// An iTXt chunk's keyword and text, as Pillow's `chunk_iTXt` reads it (None where Pillow
/// skips the chunk).
fn itxt(body: &[u8]) -> Result<Option<(&[u8], Vec<u8>)>, DecodeError> {
    let (k, r) = split0(body);
    if r.len() < 2 || !body.contains(&0) {
        return Ok(None);
    }
    let (cf, cm, r) = (r[0], r[1], &r[2..]);
    let (_lang, r) = split0(r);
    let Some(z) = r.iter().position(|&b| b == 0) else {
        return Ok(None);
    };
    let v = &r[z + 1..];
    if cf == 0 {
        return Ok(Some((k, v.to_vec())));
    }
    if cm != 0 {
        return Ok(None);
    }
    Ok(inflate_text(v)?.map(|t| (k, t)))
}

/// Pillow: `bytes.fromhex("".join(text.split("\n")[3:]))` (whitespace ignored; invalid hex
/// gives no EXIF here, where Pillow's `exif_transpose` would raise).
fn raw_profile_exif(text: &[u8]) -> Option<Vec<u8>> {
    let mut lines = text.split(|&b| b == b'\n');
    for _ in 0..3 {
        lines.next()?;
    }
    let digits: Vec<u8> = lines
        .flatten()
        .copied()
        .filter(|b| !b.is_ascii_whitespace())
        .collect();
    if digits.len() % 2 != 0 {
        return None;
    }
    digits
        .chunks_exact(2)
        .map(|p| {
            let h = (p[0] as char).to_digit(16)?;
            let l = (p[1] as char).to_digit(16)?;
            Some((h * 16 + l) as u8)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ifd(little: bool, entries: &[(u16, u16, u32, u32)], next: u32) -> Vec<u8> {
        let mut v = if little {
            b"II*\0\x08\0\0\0".to_vec()
        } else {
            b"MM\0*\0\0\0\x08".to_vec()
        };
        let p16 = |v: &mut Vec<u8>, x: u16| {
            v.extend(if little {
                x.to_le_bytes()
            } else {
                x.to_be_bytes()
            });
        };
        let p32 = |v: &mut Vec<u8>, x: u32| {
            v.extend(if little {
                x.to_le_bytes()
            } else {
                x.to_be_bytes()
            });
        };
        p16(&mut v, entries.len() as u16);
        for &(tag, typ, n, val) in entries {
            p16(&mut v, tag);
            p16(&mut v, typ);
            p32(&mut v, n);
            if typ == 3 {
                p16(&mut v, val as u16);
                p16(&mut v, 0);
            } else {
                p32(&mut v, val);
            }
        }
        p32(&mut v, next);
        v
    }

    #[test]
    fn ifd0_orientation_as_pillow_reads_it() {
        for little in [true, false] {
            let e = ifd(little, &[(0x110, 2, 4, 0), (0x112, 3, 1, 6)], 0xFFFF_FF00);
            assert_eq!(
                tiff_orientation(&e),
                Tiff::Present(Some(6)),
                "bad next-IFD offset"
            );
            let mut prefixed = b"Exif\0\0Exif\0\0".to_vec();
            prefixed.extend(&e);
            assert_eq!(tiff_orientation(&prefixed), Tiff::Present(Some(6)));
            assert_eq!(
                tiff_orientation(&e[..e.len() - 4]),
                Tiff::Present(Some(6)),
                "next offset cut"
            );
            assert_eq!(
                tiff_orientation(&e[..e.len() - 6]),
                Tiff::Absent,
                "entry cut"
            );
            assert_eq!(tiff_orientation(&e[..7]), Tiff::Broken, "header cut");
        }
        let long = ifd(true, &[(0x112, 4, 1, 8)], 0);
        assert_eq!(tiff_orientation(&long), Tiff::Present(Some(8)));
        let two = ifd(true, &[(0x112, 3, 1, 3), (0x112, 3, 1, 5)], 0);
        assert_eq!(tiff_orientation(&two), Tiff::Present(Some(5)));
        let pair = ifd(true, &[(0x112, 3, 2, 3)], 0);
        assert_eq!(tiff_orientation(&pair), Tiff::Present(None));
        assert_eq!(tiff_orientation(b"XX*\0\x08\0\0\0"), Tiff::Broken);
        assert_eq!(
            resolve(Some(b"II*\0\x08\0\0"), Some(b"tiff:Orientation=\"6\"")),
            1
        );
        assert_eq!(
            resolve(Some(&long[..10]), Some(b"tiff:Orientation=\"6\"")),
            6
        );
    }

    #[test]
    fn xmp_patterns() {
        assert_eq!(xmp_orientation(br#"<x tiff:Orientation="3"/>"#), Some(3));
        assert_eq!(
            xmp_orientation(b"<tiff:Orientation>6</tiff:Orientation>"),
            Some(6)
        );
        assert_eq!(
            xmp_orientation(br#"tiff:Orientation='3' tiff:Orientation="8""#),
            Some(8)
        );
        assert_eq!(xmp_orientation(b"tiff:Orientation=\"x\""), None);
    }

    #[test]
    fn raw_profile_hex() {
        assert_eq!(
            raw_profile_exif(b"\nexif\n   4\n4578\n6966\n"),
            Some(b"Exif".to_vec())
        );
        assert_eq!(raw_profile_exif(b"\nexif\n   4\n45z8\n"), None);
    }
}
