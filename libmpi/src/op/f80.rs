//! `long double` on x86-64: the x87 80-bit format in 16 bytes. Rust has no such float, so the
//! operations MPI defines on it (SUM, PROD, MIN, MAX, and MINLOC/MAXLOC on
//! MPI_LONG_DOUBLE_INT) run on the x87 unit, one element at a time.

use std::arch::asm;

/// `b = a + b` or `b = a * b` for one element (the first 10 bytes of each slice).
fn arith(a: &[u8], b: &mut [u8], mul: bool) {
    assert!(a.len() >= 10 && b.len() >= 10);
    let (pa, pb) = (a.as_ptr(), b.as_mut_ptr());
    // SAFETY: both pointers address at least 10 bytes (asserted), read (a) and written (b) as
    // one 80-bit value each; the x87 stack is used only inside and left as found (two loads,
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

/// How `a` compares with `b`: (a < b, a > b); both false when equal or unordered (NaN).
fn compare(a: &[u8], b: &[u8]) -> (bool, bool) {
    assert!(a.len() >= 10 && b.len() >= 10);
    let (lt, gt): (u8, u8);
    // SAFETY: both pointers address at least 10 readable bytes (asserted); the two loads are
    // popped again (fcomip pops one, fstp the other); fstp leaves the flags fcomip set.
    unsafe {
        asm!(
            "fld tbyte ptr [{b}]",
            "fld tbyte ptr [{a}]",
            "fcomip st, st(1)",
            "fstp st(0)",
            "setb {lt}",
            "seta {gt}",
            a = in(reg) a.as_ptr(),
            b = in(reg) b.as_ptr(),
            lt = out(reg_byte) lt,
            gt = out(reg_byte) gt,
            out("st(0)") _, out("st(1)") _,
            options(nostack),
        );
    }
    // Unordered sets CF and ZF: `seta` is then false, `setb` true; treat as equal.
    let unordered = lt == 1 && gt == 0 && compare_eq_unordered(a, b);
    (lt == 1 && !unordered, gt == 1)
}

/// Whether a comparison that reported "below" was really unordered (a NaN on either side).
fn compare_eq_unordered(a: &[u8], b: &[u8]) -> bool {
    is_nan(a) || is_nan(b)
}

/// An 80-bit NaN: exponent all ones and a nonzero fraction below the integer bit.
fn is_nan(x: &[u8]) -> bool {
    let exp = u16::from_le_bytes([x[8], x[9]]) & 0x7fff;
    let mant = u64::from_le_bytes(x[..8].try_into().expect("8 bytes"));
    exp == 0x7fff && (mant << 1) != 0
}

/// SUM, PROD, MIN or MAX over 16-byte elements: `b[i] = a[i] op b[i]`.
pub fn op(sum: bool, prod: bool, max: bool, a: &[u8], b: &mut [u8]) {
    for (x, y) in a.chunks_exact(16).zip(b.chunks_exact_mut(16)) {
        if sum || prod {
            arith(x, y, prod);
        } else {
            let (lt, gt) = compare(x, y);
            if (max && gt) || (!max && lt) {
                y[..10].copy_from_slice(&x[..10]);
            }
        }
    }
}

/// MINLOC/MAXLOC over MPI_LONG_DOUBLE_INT structs (value at 0, int at 16, 32 bytes).
pub fn loc(a: &[u8], b: &mut [u8], max: bool) {
    for (x, y) in a.chunks_exact(32).zip(b.chunks_exact_mut(32)) {
        let (lt, gt) = compare(x, y);
        let (i, j) = (
            i32::from_ne_bytes(x[16..20].try_into().expect("4 bytes")),
            i32::from_ne_bytes(y[16..20].try_into().expect("4 bytes")),
        );
        if (max && gt) || (!max && lt) {
            y[..10].copy_from_slice(&x[..10]);
            y[16..20].copy_from_slice(&x[16..20]);
        } else if !lt && !gt && i < j {
            y[16..20].copy_from_slice(&x[16..20]);
        }
    }
}

#[cfg(test)]
mod tests {
    /// 80-bit encodings of small integers: 1.0, 2.0, 3.0.
    fn f(v: u32) -> [u8; 16] {
        let mut b = [0u8; 16];
        let lz = v.leading_zeros();
        let e = 31 - lz;
        let mant = (v as u64) << (63 - e);
        b[..8].copy_from_slice(&mant.to_le_bytes());
        b[8..10].copy_from_slice(&((16383 + e) as u16).to_le_bytes());
        b
    }

    #[test]
    fn sum_prod_min_max() {
        let (one, two, three) = (f(1), f(2), f(3));
        let mut y = two;
        super::op(true, false, false, &one, &mut y);
        assert_eq!(y, three);
        let mut y = three;
        super::op(false, true, false, &two, &mut y);
        assert_eq!(y, f(6));
        let mut y = three;
        super::op(false, false, false, &two, &mut y);
        assert_eq!(y, two);
        let mut y = one;
        super::op(false, false, true, &three, &mut y);
        assert_eq!(y, three);
    }
}
