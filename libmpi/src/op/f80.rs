//! `long double` SUM and PROD on x86-64: the x87 80-bit format in 16 bytes. Rust has no such
//! float, so the additions and products run on the x87 unit, one element at a time (the
//! orderings, MIN/MAX/MINLOC/MAXLOC, compare the bits in op.rs).

use std::arch::asm;

/// `b[i] = a[i] + b[i]` (or `*` with `mul`) over 16-byte elements.
pub fn arith(a: &[u8], b: &mut [u8], mul: bool) {
    for (x, y) in a.chunks_exact(16).zip(b.chunks_exact_mut(16)) {
        let (pa, pb) = (x.as_ptr(), y.as_mut_ptr());
        // SAFETY: both pointers address 16 bytes (the chunks), read (x) and written (y) as one
        // 80-bit value each; the x87 stack is used only inside and left as found (two loads,
        // one popping combine, one popping store).
        unsafe {
            if mul {
                asm!(
                    "fld tbyte ptr [{a}]",
                    "fld tbyte ptr [{b}]",
                    "fmulp st(1), st",
                    "fstp tbyte ptr [{b}]",
                    a = in(reg) pa,
                    b = in(reg) pb,
                    out("st(0)") _, out("st(1)") _,
                    options(nostack),
                );
            } else {
                asm!(
                    "fld tbyte ptr [{a}]",
                    "fld tbyte ptr [{b}]",
                    "faddp st(1), st",
                    "fstp tbyte ptr [{b}]",
                    a = in(reg) pa,
                    b = in(reg) pb,
                    out("st(0)") _, out("st(1)") _,
                    options(nostack),
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    /// The 80-bit encoding of a small positive integer.
    fn f(v: u32) -> [u8; 16] {
        let mut b = [0u8; 16];
        let e = 31 - v.leading_zeros();
        b[..8].copy_from_slice(&((v as u64) << (63 - e)).to_le_bytes());
        b[8..10].copy_from_slice(&((16383 + e) as u16).to_le_bytes());
        b
    }

    #[test]
    fn sum_and_prod() {
        let mut y = f(2);
        super::arith(&f(1), &mut y, false);
        assert_eq!(y, f(3));
        super::arith(&f(2), &mut y, true);
        assert_eq!(y, f(6));
    }
}
