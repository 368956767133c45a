//! Reduction operations: the predefined ops on every predefined type they apply to, user ops
//! (C functions from MPI_Op_create, Rust closures), and the one entry point collectives use:
//! `apply(op, dt, a, b)`, which computes `b = a op b` elementwise (`a` holds the lower ranks'
//! contribution, as MPI's `invec`/`inoutvec` convention has it).

use std::cell::RefCell;
use std::ffi::{c_int, c_void};
use std::rc::Rc;

use crate::datatype::Datatype;
use crate::error::{err, Error, ErrorClass, Result};

#[cfg(target_arch = "x86_64")]
mod f80;

/// The predefined operations, by their MPI 5.0 ABI handle values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Builtin {
    Sum,
    Min,
    Max,
    Prod,
    Band,
    Bor,
    Bxor,
    Land,
    Lor,
    Lxor,
    Minloc,
    Maxloc,
    Replace,
    NoOp,
}

impl Builtin {
    pub fn from_handle(h: usize) -> Option<Builtin> {
        use Builtin::*;
        Some(match h {
            0x21 => Sum,
            0x22 => Min,
            0x23 => Max,
            0x24 => Prod,
            0x28 => Band,
            0x29 => Bor,
            0x2a => Bxor,
            0x30 => Land,
            0x31 => Lor,
            0x32 => Lxor,
            0x38 => Minloc,
            0x39 => Maxloc,
            0x3c => Replace,
            0x3d => NoOp,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        use Builtin::*;
        match self {
            Sum => "MPI_SUM",
            Min => "MPI_MIN",
            Max => "MPI_MAX",
            Prod => "MPI_PROD",
            Band => "MPI_BAND",
            Bor => "MPI_BOR",
            Bxor => "MPI_BXOR",
            Land => "MPI_LAND",
            Lor => "MPI_LOR",
            Lxor => "MPI_LXOR",
            Minloc => "MPI_MINLOC",
            Maxloc => "MPI_MAXLOC",
            Replace => "MPI_REPLACE",
            NoOp => "MPI_NO_OP",
        }
    }
}

/// A C user function: `(invec, inoutvec, len, datatype)` (MPI_User_function).
pub type CUserFn = unsafe extern "C" fn(*mut c_void, *mut c_void, *mut c_int, *mut c_void);

/// The large-count C user function of MPI_Op_create_c: `len` is an MPI_Count
/// (MPI_User_function_c).
pub type CUserFnC = unsafe extern "C" fn(*mut c_void, *mut c_void, *mut i64, *mut c_void);

/// A C user function of either kind: from MPI_Op_create or MPI_Op_create_c.
#[derive(Clone, Copy)]
pub enum CFn {
    Int(CUserFn),
    Large(CUserFnC),
}

/// A Rust user function over the bytes of `count` elements: `b = a op b`.
pub type RustFn = Rc<dyn Fn(&[u8], &mut [u8])>;

#[derive(Clone)]
pub enum Op {
    Builtin(Builtin),
    C { f: CFn, commute: bool },
    Rust { f: RustFn, commute: bool },
}

impl Op {
    pub fn commutative(&self) -> bool {
        match self {
            Op::Builtin(_) => true,
            Op::C { commute, .. } | Op::Rust { commute, .. } => *commute,
        }
    }
}

/// MPI_OP_NULL; user ops get handles from `USER_BASE` up.
pub const OP_NULL: usize = 0x20;
pub const USER_BASE: usize = 0x10000;

/// User ops from MPI_Op_create(_c), by handle - USER_BASE; None once freed. Used by whichever
/// thread may call MPI now (runtime.rs).
static USER_OPS: crate::runtime::Local<RefCell<Vec<Option<UserOp>>>> =
    crate::runtime::Local::new(RefCell::new(Vec::new()));

/// A user function and whether it commutes.
type UserOp = (CFn, bool);

/// MPI_Op_create(_c): a handle for a C user function.
pub fn create(f: CFn, commute: bool) -> Result<usize> {
    USER_OPS.with(|t| {
        let mut t = t.borrow_mut();
        let i = match t.iter().position(Option::is_none) {
            Some(i) => {
                t[i] = Some((f, commute));
                i
            }
            None => {
                t.push(Some((f, commute)));
                t.len() - 1
            }
        };
        USER_BASE + i
    })
}

/// MPI_Op_free. Started collectives keep their own copy of the function, so this is safe
/// while they are pending, as MPI allows.
pub fn free(h: usize) -> Result<()> {
    if Builtin::from_handle(h).is_some() {
        return err(ErrorClass::Op, "a predefined operation cannot be freed");
    }
    USER_OPS.with(|t| {
        let mut t = t.borrow_mut();
        match h.checked_sub(USER_BASE).and_then(|i| t.get_mut(i)) {
            Some(slot @ Some(_)) => {
                *slot = None;
                // The handle may come back as another op: no cached schedule may use it.
                crate::handle_epoch::bump();
                Ok(())
            }
            _ => err(ErrorClass::Op, format!("{h:#x} is not a user operation")),
        }
    })?
}

/// The operation behind a C handle.
pub fn lookup(h: usize) -> Result<Op> {
    if let Some(b) = Builtin::from_handle(h) {
        return Ok(Op::Builtin(b));
    }
    if h == OP_NULL {
        return err(ErrorClass::Op, "MPI_OP_NULL is not an operation");
    }
    USER_OPS.with(|t| {
        match h
            .checked_sub(USER_BASE)
            .and_then(|i| t.borrow().get(i).copied())
        {
            Some(Some((f, commute))) => Ok(Op::C { f, commute }),
            _ => err(ErrorClass::Op, format!("{h:#x} is not a valid operation")),
        }
    })?
}

/// How a predefined datatype's elements are laid out, for the predefined ops.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Elem {
    I8,
    I16,
    I32,
    I64,
    I128,
    U8,
    U16,
    U32,
    U64,
    F32,
    F64,
    /// Complex of f32 / f64 (real, imaginary).
    C32,
    C64,
    /// C bool or Fortran LOGICAL of this many bytes: nonzero is true.
    Logical(usize),
    Byte,
    /// (value, index) pairs for MINLOC/MAXLOC.
    FloatInt,
    DoubleInt,
    LongInt,
    TwoInt,
    ShortInt,
    TwoFloat,
    TwoDouble,
    /// x87 extended `long double` (16 bytes) and its MINLOC pair: ordered only (MIN, MAX,
    /// MINLOC, MAXLOC); no arithmetic.
    LongDouble,
    LongDoubleInt,
}

fn elem(handle: usize) -> Option<Elem> {
    use Elem::*;
    Some(match handle {
        0x201..=0x203 | 0x20a | 0x20b | 0x258 | 0x2d9 => I64,
        0x208 | 0x248 | 0x2c9 => I16,
        0x209 | 0x219 | 0x250 | 0x2d1 => I32,
        0x240 | 0x243 | 0x244 | 0x2c1 => I8,
        0x2e1 => I128,
        0x241 | 0x245 => U8,
        0x20c | 0x249 => U16,
        0x20d | 0x251 => U32,
        0x20e | 0x20f | 0x259 => U64,
        0x210 | 0x21a | 0x2d2 => F32,
        0x214 | 0x21c | 0x2da => F64,
        0x212 | 0x213 | 0x21b | 0x2db => C32,
        0x216 | 0x217 | 0x21d | 0x2e3 => C64,
        0x238 | 0x239 | 0x2c0 => Logical(1),
        0x2c8 => Logical(2),
        0x218 | 0x2d0 => Logical(4),
        0x2d8 => Logical(8),
        0x2e0 => Logical(16),
        0x247 => Byte,
        0x228 => FloatInt,
        0x229 => DoubleInt,
        0x22a => LongInt,
        0x22b | 0x232 => TwoInt,
        0x22c => ShortInt,
        0x230 => TwoFloat,
        0x231 => TwoDouble,
        0x220 if cfg!(target_arch = "x86_64") => LongDouble,
        0x22d if cfg!(target_arch = "x86_64") => LongDoubleInt,
        _ => return None,
    })
}

/// Whether MPI_Compare_and_swap may use predefined type `handle`: C and Fortran integers,
/// multi-language types, logicals and MPI_BYTE (MPI 4.1 §12.3.4), not floating point.
pub fn cas_type(handle: usize) -> bool {
    elem(handle).is_some_and(|e| is_int(e) || matches!(e, Elem::Logical(_) | Elem::Byte))
}

fn is_int(e: Elem) -> bool {
    use Elem::*;
    matches!(e, I8 | I16 | I32 | I64 | I128 | U8 | U16 | U32 | U64)
}

/// Whether `op` may be used in a collective reduction over `dt`: MPI_ERR_OP if not.
pub fn check(op: &Op, dt: Datatype) -> Result<()> {
    let Op::Builtin(b) = op else { return Ok(()) };
    use Builtin::*;
    use Elem::*;
    let e = elem(dt.handle);
    let ok = match (b, e) {
        (Replace | NoOp, _) => {
            return err(
                ErrorClass::Op,
                format!("{} is for one-sided accumulate only", b.name()),
            )
        }
        (_, None) => false,
        (Sum | Prod, Some(e)) => is_int(e) || matches!(e, F32 | F64 | C32 | C64 | LongDouble),
        (Min | Max, Some(e)) => is_int(e) || matches!(e, F32 | F64 | LongDouble),
        (Land | Lor | Lxor, Some(e)) => is_int(e) || matches!(e, Logical(_)),
        (Band | Bor | Bxor, Some(e)) => is_int(e) || e == Byte,
        (Minloc | Maxloc, Some(e)) => matches!(
            e,
            FloatInt
                | DoubleInt
                | LongInt
                | TwoInt
                | ShortInt
                | TwoFloat
                | TwoDouble
                | LongDoubleInt
        ),
    };
    if ok {
        Ok(())
    } else {
        let name = crate::datatype::name(dt.handle).unwrap_or("this datatype");
        Err(Error::new(
            ErrorClass::Op,
            format!("{} is not defined on {name}", b.name()),
        ))
    }
}

/// A fixed-size number read from and written to native-endian bytes (no alignment needed).
trait Lane: Copy + PartialOrd {
    const N: usize;
    fn get(b: &[u8]) -> Self;
    fn put(self, b: &mut [u8]);
}

macro_rules! lane {
    ($($t:ty),*) => {$(
        impl Lane for $t {
            const N: usize = std::mem::size_of::<$t>();
            #[inline(always)]
            fn get(b: &[u8]) -> Self {
                <$t>::from_ne_bytes(b[..Self::N].try_into().expect("lane width"))
            }
            #[inline(always)]
            fn put(self, b: &mut [u8]) {
                b[..Self::N].copy_from_slice(&self.to_ne_bytes());
            }
        }
    )*};
}
lane!(i8, i16, i32, i64, i128, u8, u16, u32, u64, f32, f64);

#[inline(always)]
fn zip<T: Lane>(a: &[u8], b: &mut [u8], f: impl Fn(T, T) -> T) {
    if a.as_ptr().cast::<T>().is_aligned() && b.as_ptr().cast::<T>().is_aligned() {
        // Aligned (the usual case): typed slices, which the compiler vectorises.
        let n = a.len().min(b.len()) / T::N;
        // SAFETY: `Lane` types are primitive numbers, valid for every bit pattern; both
        // pointers are aligned for T and `n` whole elements lie within each slice, which
        // stay borrowed (b exclusively) for as long as the typed views live.
        let (xs, ys) = unsafe {
            (
                std::slice::from_raw_parts(a.as_ptr().cast::<T>(), n),
                std::slice::from_raw_parts_mut(b.as_mut_ptr().cast::<T>(), n),
            )
        };
        for (x, y) in xs.iter().zip(ys.iter_mut()) {
            *y = f(*x, *y);
        }
        return;
    }
    for (x, y) in a.chunks_exact(T::N).zip(b.chunks_exact_mut(T::N)) {
        f(T::get(x), T::get(y)).put(y);
    }
}

macro_rules! int_op {
    ($t:ty, $op:expr, $a:expr, $b:expr) => {{
        use Builtin::*;
        let z: $t = 0;
        match $op {
            Sum => zip::<$t>($a, $b, |x, y| x.wrapping_add(y)),
            Prod => zip::<$t>($a, $b, |x, y| x.wrapping_mul(y)),
            Min => zip::<$t>($a, $b, |x, y| x.min(y)),
            Max => zip::<$t>($a, $b, |x, y| x.max(y)),
            Band => zip::<$t>($a, $b, |x, y| x & y),
            Bor => zip::<$t>($a, $b, |x, y| x | y),
            Bxor => zip::<$t>($a, $b, |x, y| x ^ y),
            Land => zip::<$t>($a, $b, |x, y| ((x != z) && (y != z)) as $t),
            Lor => zip::<$t>($a, $b, |x, y| ((x != z) || (y != z)) as $t),
            Lxor => zip::<$t>($a, $b, |x, y| ((x != z) != (y != z)) as $t),
            _ => unreachable!("checked by op::check"),
        }
    }};
}

macro_rules! float_op {
    ($t:ty, $op:expr, $a:expr, $b:expr) => {{
        use Builtin::*;
        match $op {
            Sum => zip::<$t>($a, $b, |x, y| x + y),
            Prod => zip::<$t>($a, $b, |x, y| x * y),
            Min => zip::<$t>($a, $b, |x, y| if y < x { y } else { x }),
            Max => zip::<$t>($a, $b, |x, y| if y > x { y } else { x }),
            _ => unreachable!("checked by op::check"),
        }
    }};
}

macro_rules! complex_op {
    ($t:ty, $op:expr, $a:expr, $b:expr) => {{
        const W: usize = std::mem::size_of::<$t>();
        match $op {
            Builtin::Sum => zip::<$t>($a, $b, |x, y| x + y),
            Builtin::Prod => {
                for (x, y) in $a.chunks_exact(2 * W).zip($b.chunks_exact_mut(2 * W)) {
                    let (p, q) = (<$t>::get(x), <$t>::get(&x[W..]));
                    let (r, s) = (<$t>::get(y), <$t>::get(&y[W..]));
                    (p * r - q * s).put(y);
                    (p * s + q * r).put(&mut y[W..]);
                }
            }
            _ => unreachable!("checked by op::check"),
        }
    }};
}

/// MINLOC/MAXLOC on (value V at 0, index I at `ioff`) pairs `stride` bytes apart.
fn loc<V: Lane, I: Lane>(a: &[u8], b: &mut [u8], stride: usize, ioff: usize, max: bool) {
    for (x, y) in a.chunks_exact(stride).zip(b.chunks_exact_mut(stride)) {
        let (u, i) = (V::get(x), I::get(&x[ioff..]));
        let (v, j) = (V::get(y), I::get(&y[ioff..]));
        let better = if max { u > v } else { u < v };
        if better {
            u.put(y);
            i.put(&mut y[ioff..]);
        } else if u == v && i < j {
            i.put(&mut y[ioff..]);
        }
    }
}

fn logical(a: &[u8], b: &mut [u8], n: usize, op: Builtin) {
    for (x, y) in a.chunks_exact(n).zip(b.chunks_exact_mut(n)) {
        let (p, q) = (x.iter().any(|&c| c != 0), y.iter().any(|&c| c != 0));
        let r = match op {
            Builtin::Land => p && q,
            Builtin::Lor => p || q,
            Builtin::Lxor => p != q,
            _ => unreachable!("checked by op::check"),
        };
        y.fill(0);
        // Little-endian: the value 1 of any width has its low byte first.
        y[0] = r as u8;
    }
}

/// `b = a op b` over `count` elements of `dt` (`a` and `b` each hold exactly that many bytes).
/// The op/type pair must have passed `check`.
pub fn apply(op: &Op, dt: Datatype, count: usize, a: &[u8], b: &mut [u8]) {
    debug_assert_eq!(a.len(), b.len());
    if count == 0 {
        return;
    }
    match op {
        Op::Builtin(o) => builtin(*o, dt, a, b),
        Op::Rust { f, .. } => f(a, b),
        Op::C { f, .. } => {
            let mut dth = dt.handle as *mut c_void;
            let dthp = (&mut dth as *mut *mut c_void).cast();
            match *f {
                CFn::Large(f) => {
                    let mut len = count as i64;
                    // SAFETY: the user registered `f` with MPI_Op_create_c, promising an
                    // MPI_User_function_c; both vectors hold `count` elements of `dt`, and
                    // `invec` is not written by conforming functions (the buffer is ours anyway).
                    unsafe {
                        f(
                            a.as_ptr() as *mut c_void,
                            b.as_mut_ptr().cast(),
                            &mut len,
                            dthp,
                        )
                    };
                }
                CFn::Int(f) => {
                    // An int `len` holds at most c_int::MAX elements: larger counts go in
                    // pieces (the op is elementwise), never a truncated length.
                    let mut done = 0;
                    while done < count {
                        let n = (count - done).min(c_int::MAX as usize);
                        let (lo, hi) = (done * dt.size, (done + n) * dt.size);
                        let mut len = n as c_int;
                        // SAFETY: as above, for MPI_Op_create's MPI_User_function; each piece
                        // holds `len` whole elements of `dt`.
                        unsafe {
                            f(
                                a[lo..hi].as_ptr() as *mut c_void,
                                b[lo..hi].as_mut_ptr().cast(),
                                &mut len,
                                dthp,
                            )
                        };
                        done += n;
                    }
                }
            }
        }
    }
}

fn builtin(op: Builtin, dt: Datatype, a: &[u8], b: &mut [u8]) {
    use Elem::*;
    match op {
        Builtin::NoOp => return,
        Builtin::Replace => return b.copy_from_slice(a),
        _ => {}
    }
    let max = op == Builtin::Maxloc;
    match elem(dt.handle).expect("checked by op::check") {
        I8 => int_op!(i8, op, a, b),
        I16 => int_op!(i16, op, a, b),
        I32 => int_op!(i32, op, a, b),
        I64 => int_op!(i64, op, a, b),
        I128 => int_op!(i128, op, a, b),
        U8 => int_op!(u8, op, a, b),
        U16 => int_op!(u16, op, a, b),
        U32 => int_op!(u32, op, a, b),
        U64 => int_op!(u64, op, a, b),
        F32 => float_op!(f32, op, a, b),
        F64 => float_op!(f64, op, a, b),
        C32 => complex_op!(f32, op, a, b),
        C64 => complex_op!(f64, op, a, b),
        Logical(n) => logical(a, b, n, op),
        Byte => int_op!(u8, op, a, b),
        FloatInt => loc::<f32, i32>(a, b, 8, 4, max),
        DoubleInt => loc::<f64, i32>(a, b, 16, 8, max),
        LongInt => loc::<i64, i32>(a, b, 16, 8, max),
        TwoInt => loc::<i32, i32>(a, b, 8, 4, max),
        ShortInt => loc::<i16, i32>(a, b, 8, 4, max),
        TwoFloat => loc::<f32, f32>(a, b, 8, 4, max),
        TwoDouble => loc::<f64, f64>(a, b, 16, 8, max),
        #[cfg(target_arch = "x86_64")]
        LongDouble if matches!(op, Builtin::Sum | Builtin::Prod) => {
            f80::arith(a, b, op == Builtin::Prod)
        }
        LongDouble => x87_minmax(a, b, 16, None, op == Builtin::Max),
        LongDoubleInt => x87_minmax(a, b, 32, Some(16), max),
    }
}

/// An x87 extended value's order: None for NaN; otherwise comparable keys (+0 == -0).
fn x87_key(b: &[u8]) -> Option<(i8, u128)> {
    let mant = u64::from_le_bytes(b[..8].try_into().expect("8 bytes"));
    let se = u16::from_le_bytes([b[8], b[9]]);
    let (neg, exp) = (se & 0x8000 != 0, se & 0x7fff);
    if exp == 0x7fff && mant << 1 != 0 {
        return None;
    }
    let mag = ((exp as u128) << 64) | mant as u128;
    Some(match (mag, neg) {
        (0, _) => (0, 0),
        (m, false) => (1, m),
        (m, true) => (-1, u128::MAX - m),
    })
}

/// MIN/MAX on long doubles `stride` bytes apart, or MINLOC/MAXLOC with an int index at
/// `ioff` (the lower index wins ties), comparing without arithmetic.
fn x87_minmax(a: &[u8], b: &mut [u8], stride: usize, ioff: Option<usize>, max: bool) {
    for (x, y) in a.chunks_exact(stride).zip(b.chunks_exact_mut(stride)) {
        let (Some(u), Some(v)) = (x87_key(x), x87_key(y)) else {
            continue;
        };
        let better = if max { u > v } else { u < v };
        if better {
            y[..16].copy_from_slice(&x[..16]);
        }
        if let Some(o) = ioff {
            let (i, j) = (i32::get(&x[o..]), i32::get(&y[o..]));
            if better || (u == v && i < j) {
                i.put(&mut y[o..]);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datatype::lookup;

    fn dt(h: usize) -> Datatype {
        lookup(h).unwrap()
    }

    fn bytes<T: Copy>(v: &[T]) -> Vec<u8> {
        // SAFETY: test helper over plain numbers: every byte is initialised.
        unsafe { std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), std::mem::size_of_val(v)) }
            .to_vec()
    }

    #[test]
    fn int_and_float_ops() {
        let op = Op::Builtin(Builtin::Sum);
        let a = bytes(&[1i32, -2, 3]);
        let mut b = bytes(&[10i32, 20, 30]);
        apply(&op, dt(0x209), 3, &a, &mut b);
        assert_eq!(b, bytes(&[11i32, 18, 33]));
        let mut b = bytes(&[0.5f64, 4.0]);
        apply(
            &Op::Builtin(Builtin::Max),
            dt(0x214),
            2,
            &bytes(&[1.0f64, 2.0]),
            &mut b,
        );
        assert_eq!(b, bytes(&[1.0f64, 4.0]));
        let mut b = bytes(&[0b1100u8]);
        apply(&Op::Builtin(Builtin::Bxor), dt(0x247), 1, &[0b1010], &mut b);
        assert_eq!(b, [0b0110]);
    }

    #[test]
    fn complex_product_and_minloc() {
        let mut b = bytes(&[3.0f64, 4.0]);
        apply(
            &Op::Builtin(Builtin::Prod),
            dt(0x216),
            1,
            &bytes(&[1.0f64, 2.0]),
            &mut b,
        );
        assert_eq!(b, bytes(&[3.0 - 8.0, 4.0 + 6.0f64]));
        // (value, index): the lower index wins a tie.
        let mut b = bytes(&[5i32, 7, 1, 9]);
        apply(
            &Op::Builtin(Builtin::Minloc),
            dt(0x22b),
            2,
            &bytes(&[5i32, 3, 2, 0]),
            &mut b,
        );
        assert_eq!(b, bytes(&[5i32, 3, 1, 9]));
    }

    #[test]
    fn invalid_pairs_are_err_op() {
        let e = check(&Op::Builtin(Builtin::Band), dt(0x214)).unwrap_err();
        assert_eq!(e.class, ErrorClass::Op);
        assert!(check(&Op::Builtin(Builtin::Sum), dt(0x22b)).is_err());
        assert!(check(&Op::Builtin(Builtin::Lor), dt(0x238)).is_ok());
        // long double: SUM/PROD on x86-64 only (x87), never bitwise ops.
        assert_eq!(
            check(&Op::Builtin(Builtin::Sum), dt(0x220)).is_ok(),
            cfg!(target_arch = "x86_64")
        );
        assert!(check(&Op::Builtin(Builtin::Band), dt(0x220)).is_err());
    }

    #[test]
    fn long_double_min_max_and_loc() {
        // x87 extended: 64-bit significand (explicit integer bit), then sign and exponent.
        fn ld(v: f64) -> [u8; 16] {
            let mut o = [0u8; 16];
            if v == 0.0 {
                return o;
            }
            let (bits, neg) = (v.abs().to_bits(), v < 0.0);
            let exp = ((bits >> 52) as u16) + 16383 - 1023;
            let mant = (1u64 << 63) | ((bits & ((1 << 52) - 1)) << 11);
            o[..8].copy_from_slice(&mant.to_le_bytes());
            o[8..10].copy_from_slice(&(exp | if neg { 0x8000 } else { 0 }).to_le_bytes());
            o
        }
        let a: Vec<u8> = [ld(-3.0), ld(2.5), ld(0.0)].concat();
        let mut b: Vec<u8> = [ld(1.0), ld(-7.0), ld(-0.5)].concat();
        builtin(Builtin::Min, dt(0x220), &a, &mut b);
        assert_eq!(b, [ld(-3.0), ld(-7.0), ld(-0.5)].concat());
        builtin(Builtin::Max, dt(0x220), &a, &mut b);
        assert_eq!(b, [ld(-3.0), ld(2.5), ld(0.0)].concat());
        let pair = |v: f64, i: i32| [&ld(v)[..], &i.to_ne_bytes(), &[0u8; 12]].concat();
        let a = [pair(4.0, 1), pair(2.0, 5)].concat();
        let mut b = [pair(4.0, 3), pair(1.0, 2)].concat();
        builtin(Builtin::Maxloc, dt(0x22d), &a, &mut b);
        assert_eq!(b, [pair(4.0, 1), pair(2.0, 5)].concat());
    }
}
