//! The "external32" data representation (MPI_Pack_external): every basic element big-endian
//! at its canonical size (MPI_LONG and MPI_UNSIGNED_LONG 4 bytes, MPI_WCHAR 2, long double
//! IEEE binary128). A message is first packed natively (the type map's order, `Msg::read`),
//! then each basic element is converted; the element sequence comes from the layout when all
//! basic elements share one type, else from the recorded constructor (`contents`).

use super::contents::{combiner as cb, Contents, TypeArg};
use super::Layout;
use crate::error::{err, ErrorClass, Result};

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    /// Two's complement integer (sign-extended when widened).
    Int,
    /// Unsigned integer (or bits, floats: reversed as they are).
    Uint,
    /// x87 80-bit extended in 16 bytes <-> IEEE binary128.
    LongDouble,
}

/// One converted piece of a basic type: kind, native bytes, external32 bytes.
type Part = (Kind, usize, usize);

/// The pieces of predefined type `h` (the pair types and complex types are two pieces).
fn parts(h: usize) -> Option<&'static [Part]> {
    use Kind::*;
    const B1: &[Part] = &[(Uint, 1, 1)];
    const I2: &[Part] = &[(Int, 2, 2)];
    const I4: &[Part] = &[(Int, 4, 4)];
    const I8: &[Part] = &[(Int, 8, 8)];
    const U2: &[Part] = &[(Uint, 2, 2)];
    const U4: &[Part] = &[(Uint, 4, 4)];
    const U8: &[Part] = &[(Uint, 8, 8)];
    const U16: &[Part] = &[(Uint, 16, 16)];
    const LONG: &[Part] = &[(Int, 8, 4)];
    const ULONG: &[Part] = &[(Uint, 8, 4)];
    const WCHAR: &[Part] = &[(Uint, 4, 2)];
    const LD: &[Part] = &[(LongDouble, 16, 16)];
    const C4: &[Part] = &[(Uint, 2, 2), (Uint, 2, 2)];
    const C8: &[Part] = &[(Uint, 4, 4), (Uint, 4, 4)];
    const C16: &[Part] = &[(Uint, 8, 8), (Uint, 8, 8)];
    const C32: &[Part] = &[(Uint, 16, 16), (Uint, 16, 16)];
    const CLD: &[Part] = &[(LongDouble, 16, 16), (LongDouble, 16, 16)];
    const FLOAT_INT: &[Part] = &[(Uint, 4, 4), (Int, 4, 4)];
    const DOUBLE_INT: &[Part] = &[(Uint, 8, 8), (Int, 4, 4)];
    const LONG_INT: &[Part] = &[(Int, 8, 4), (Int, 4, 4)];
    const SHORT_INT: &[Part] = &[(Int, 2, 2), (Int, 4, 4)];
    const LD_INT: &[Part] = &[(LongDouble, 16, 16), (Int, 4, 4)];
    const TWO4: &[Part] = &[(Int, 4, 4), (Int, 4, 4)];
    const TWO8: &[Part] = &[(Uint, 8, 8), (Uint, 8, 8)];
    Some(match h {
        0x207 | 0x21e | 0x238 | 0x239 | 0x240 | 0x241 | 0x243 | 0x244 | 0x245 | 0x247 | 0x2c0
        | 0x2c1 => B1,
        0x208 | 0x248 | 0x2c8 | 0x2c9 => I2,
        0x20c | 0x249 | 0x2ca => U2,
        0x209 | 0x218 | 0x219 | 0x250 | 0x2d0 | 0x2d1 => I4,
        0x20d | 0x251 | 0x210 | 0x21a | 0x2d2 => U4,
        0x20a => LONG,
        0x20e => ULONG,
        0x201..=0x203 | 0x20b | 0x258 | 0x2d8 | 0x2d9 => I8,
        0x20f | 0x259 | 0x214 | 0x21c | 0x2da => U8,
        0x2e0..=0x2e2 => U16,
        0x23c => WCHAR,
        0x220 => LD,
        0x2d3 => C4,
        0x212 | 0x213 | 0x21b | 0x2db => C8,
        0x216 | 0x217 | 0x21d | 0x2e3 => C16,
        0x2eb => C32,
        0x224 | 0x225 => CLD,
        0x228 | 0x230 => FLOAT_INT,
        0x229 => DOUBLE_INT,
        0x22a => LONG_INT,
        0x22b | 0x232 => TWO4,
        0x22c => SHORT_INT,
        0x22d => LD_INT,
        0x231 => TWO8,
        _ => return None,
    })
}

/// The basic elements of one element of a type, in type-map order: (predefined handle, n).
pub type Seq = Vec<(usize, usize)>;

fn push(seq: &mut Seq, h: usize, n: usize) {
    if n == 0 {
        return;
    }
    match seq.last_mut() {
        Some((lh, ln)) if *lh == h => *ln += n,
        _ => seq.push((h, n)),
    }
}

fn append(seq: &mut Seq, sub: &Seq, times: usize) -> Result<()> {
    if times == 0 {
        return Ok(());
    }
    if sub.len() == 1 {
        push(seq, sub[0].0, sub[0].1 * times);
        return Ok(());
    }
    if seq.len().saturating_add(sub.len().saturating_mul(times)) > super::layout::MAX_BLOCKS {
        return err(ErrorClass::NoMem, "datatype too fragmented for external32");
    }
    for _ in 0..times {
        for &(h, n) in sub {
            push(seq, h, n);
        }
    }
    Ok(())
}

/// The element sequence of a type (its layout, and its constructor when the basic types mix).
pub fn sequence(layout: &Layout, contents: Option<&Contents>, handle: usize) -> Result<Seq> {
    if let Some(bt) = layout.basic_type() {
        let bs = super::lookup(bt).map_or(1, |d| d.size);
        // Pair types count as one element of their own size in their layout's `size`.
        let one = Layout::predefined(bt, bs).size().max(1);
        return Ok(vec![(bt, layout.size() / one)]);
    }
    if super::lookup(handle).is_some() {
        return Ok(vec![(handle, 1)]);
    }
    let Some(c) = contents else {
        return err(
            ErrorClass::Type,
            "external32 needs the datatype's constructor (not recorded for this type)",
        );
    };
    let arg = |t: &TypeArg| sequence(&t.layout, t.contents.as_deref(), t.handle);
    let mut seq = Seq::new();
    let n = |i: usize| c.ints.get(i).copied().unwrap_or(0).max(0) as usize;
    match c.combiner {
        cb::DUP | cb::RESIZED => seq = arg(&c.types[0])?,
        cb::CONTIGUOUS => append(&mut seq, &arg(&c.types[0])?, n(0))?,
        cb::VECTOR | cb::HVECTOR | cb::INDEXED_BLOCK | cb::HINDEXED_BLOCK => {
            append(&mut seq, &arg(&c.types[0])?, n(0) * n(1))?
        }
        cb::INDEXED | cb::HINDEXED => {
            let sub = arg(&c.types[0])?;
            for i in 0..n(0) {
                append(&mut seq, &sub, n(1 + i))?;
            }
        }
        cb::STRUCT => {
            for (i, t) in c.types.iter().enumerate() {
                append(&mut seq, &arg(t)?, n(1 + i))?;
            }
        }
        cb::VALUE_INDEX => {
            for t in &c.types {
                append(&mut seq, &arg(t)?, 1)?;
            }
        }
        _ => {
            // Subarray, darray: whole copies of the old type.
            let t = &c.types[0];
            let per = t.layout.size().max(1);
            append(&mut seq, &arg(t)?, layout.size() / per)?;
        }
    }
    Ok(seq)
}

/// (native bytes, external32 bytes) of one element with this sequence.
pub fn sizes(seq: &Seq) -> Result<(usize, usize)> {
    let (mut nat, mut ext) = (0usize, 0usize);
    for &(h, n) in seq {
        let p = parts(h).ok_or_else(|| {
            crate::error::Error::new(
                ErrorClass::Type,
                format!("datatype {h:#x} has no external32 representation"),
            )
        })?;
        nat += n * p.iter().map(|x| x.1).sum::<usize>();
        ext += n * p.iter().map(|x| x.2).sum::<usize>();
    }
    Ok((nat, ext))
}

/// Convert `count` elements from the native packed stream to external32 (`to_ext`) or back.
/// `src` and `dst` hold exactly the stream's bytes in their representation.
pub fn convert(seq: &Seq, count: usize, src: &[u8], dst: &mut [u8], to_ext: bool) {
    let (mut si, mut di) = (0, 0);
    for _ in 0..count {
        for &(h, n) in seq {
            let p = parts(h).expect("checked by sizes()");
            for _ in 0..n {
                for &(kind, nat, ext) in p {
                    let (sn, dn) = if to_ext { (nat, ext) } else { (ext, nat) };
                    piece(kind, &src[si..si + sn], &mut dst[di..di + dn], to_ext);
                    si += sn;
                    di += dn;
                }
            }
        }
    }
}

/// One basic value: native little-endian <-> big-endian, resized as its kind says.
fn piece(kind: Kind, s: &[u8], d: &mut [u8], to_ext: bool) {
    match kind {
        Kind::LongDouble => {
            if to_ext {
                let v = x87_to_quad(s);
                for (i, b) in d.iter_mut().enumerate() {
                    *b = v[15 - i];
                }
            } else {
                let mut v = [0u8; 16];
                for (i, b) in s.iter().rev().enumerate() {
                    v[i] = *b;
                }
                d.copy_from_slice(&quad_to_x87(&v));
            }
        }
        Kind::Int | Kind::Uint => {
            // As a little-endian value of s.len() bytes, written with d.len() bytes.
            let mut le = [0u8; 16];
            if to_ext {
                le[..s.len()].copy_from_slice(s);
            } else {
                for (i, b) in s.iter().rev().enumerate() {
                    le[i] = *b;
                }
            }
            if kind == Kind::Int && s.len() < 16 && le[s.len() - 1] & 0x80 != 0 {
                le[s.len()..].fill(0xff);
            }
            if to_ext {
                let n = d.len();
                for (i, b) in d.iter_mut().enumerate() {
                    *b = le[n - 1 - i];
                }
            } else {
                d.copy_from_slice(&le[..d.len()]);
            }
        }
    }
}

/// x87 extended (16 bytes, little-endian: 64-bit significand with explicit integer bit, then
/// sign and 15-bit exponent) to IEEE binary128, little-endian.
fn x87_to_quad(s: &[u8]) -> [u8; 16] {
    let mant = u64::from_le_bytes(s[..8].try_into().expect("8 bytes"));
    let se = u16::from_le_bytes([s[8], s[9]]);
    let frac = (mant & !(1u64 << 63)) as u128; // 63 fraction bits
    let q = ((se as u128) << 112) | (frac << 49);
    q.to_le_bytes()
}

fn quad_to_x87(q: &[u8; 16]) -> [u8; 16] {
    let q = u128::from_le_bytes(*q);
    let se = (q >> 112) as u16;
    let frac = ((q >> 49) as u64) & !(1u64 << 63);
    let int_bit = if se & 0x7fff != 0 { 1u64 << 63 } else { 0 };
    let mut out = [0u8; 16];
    out[..8].copy_from_slice(&(frac | int_bit).to_le_bytes());
    out[8..10].copy_from_slice(&se.to_le_bytes());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ints_longs_and_long_double() {
        let seq = vec![(0x20a, 2)]; // MPI_LONG
        let src: Vec<u8> = [1i64, -2].iter().flat_map(|v| v.to_le_bytes()).collect();
        let mut ext = vec![0u8; 8];
        convert(&seq, 1, &src, &mut ext, true);
        assert_eq!(ext, [0, 0, 0, 1, 0xff, 0xff, 0xff, 0xfe]);
        let mut back = vec![0u8; 16];
        convert(&seq, 1, &ext, &mut back, false);
        assert_eq!(back, src);
        // 1.0L: x87 significand 0x8000..., exponent 0x3fff.
        let mut one = [0u8; 16];
        one[7] = 0x80;
        one[8] = 0xff;
        one[9] = 0x3f;
        let mut e = [0u8; 16];
        piece(Kind::LongDouble, &one, &mut e, true);
        assert_eq!(&e[..2], &[0x3f, 0xff]);
        assert!(e[2..].iter().all(|&b| b == 0));
        let mut r = [0u8; 16];
        piece(Kind::LongDouble, &e, &mut r, false);
        assert_eq!(r, one);
    }
}
