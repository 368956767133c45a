//! Reduction operations of the C ABI: MPI_Reduce_local(_c) and user operations
//! (MPI_Op_create(_c), MPI_Op_free, MPI_Op_commutative); the operations themselves are in
//! `crate::op`.

use std::ffi::{c_int, c_void};

use super::coll::{check_buf, count_of, reduction_of, Wide};
use super::*;
use crate::datatype::Msg;
use crate::op;

/// MPI_Reduce_local(_c).
fn reduce_local(
    name: &str,
    inbuf: *const c_void,
    inoutbuf: *mut c_void,
    count: impl Wide,
    datatype: Handle,
    op: Handle,
) -> c_int {
    let r = (|| {
        let n = count_of(count, "count")?;
        let (red, basic, sh) = reduction_of(op, datatype, n)?;
        let len = sh.bytes(n)?;
        if let Some(l) = &sh.layout {
            // A derived type with holes: reduce its packed elements, write them back.
            let (mi, mo) = (
                Msg::typed(inbuf.cast(), n, l),
                Msg::typed(inoutbuf.cast_const().cast(), n, l),
            );
            let (mut a, mut b) = (vec![0u8; len], vec![0u8; len]);
            // SAFETY: both buffers hold `count` elements of `datatype` (the call's contract).
            unsafe {
                mi.read(0, &mut a);
                mo.read(0, &mut b);
            }
            op::apply(&red.op, red.dt, basic, &a, &mut b);
            // SAFETY: as above; inoutbuf is writable.
            unsafe { mo.write(0, &b) };
            return Ok(());
        }
        check_buf(inbuf, len, "inbuf")?;
        check_buf(inoutbuf, len, "inoutbuf")?;
        if len == 0 {
            return Ok(());
        }
        let (i, o) = (inbuf as usize, inoutbuf as usize);
        if i < o + len && o < i + len {
            return Err(Error::new(ErrorClass::Buffer, "inbuf and inoutbuf overlap"));
        }
        // SAFETY: both buffers hold `count` elements of `datatype` (MPI_Reduce_local's
        // contract) and were just checked not to overlap.
        let (a, b) = unsafe {
            (
                std::slice::from_raw_parts(inbuf.cast::<u8>(), len),
                std::slice::from_raw_parts_mut(inoutbuf.cast::<u8>(), len),
            )
        };
        op::apply(&red.op, red.dt, basic, a, b);
        Ok(())
    })();
    match r {
        Ok(()) => MPI_SUCCESS,
        Err(e) => fail(name, crate::comm::WORLD, e),
    }
}

mpi_fn! {
    fn MPI_Reduce_local / PMPI_Reduce_local(inbuf: *const c_void, inoutbuf: *mut c_void, count: c_int, datatype: Handle, op: Handle) -> c_int {
        // Outside Init..Finalize: an error, not a result.
        if let Err(e) = running() {
            return fail("MPI_Reduce_local", crate::comm::WORLD, e);
        }
        reduce_local("MPI_Reduce_local", inbuf, inoutbuf, count, datatype, op)
    }
}

mpi_fn! {
    fn MPI_Reduce_local_c / PMPI_Reduce_local_c(inbuf: *const c_void, inoutbuf: *mut c_void, count: Count, datatype: Handle, op: Handle) -> c_int {
        // Outside Init..Finalize: an error, not a result.
        if let Err(e) = running() {
            return fail("MPI_Reduce_local_c", crate::comm::WORLD, e);
        }
        reduce_local("MPI_Reduce_local_c", inbuf, inoutbuf, count, datatype, op)
    }
}

/// MPI_Op_create(_c): `f` is None when the user function pointer is NULL.
fn op_create(name: &str, f: Option<op::CFn>, commute: c_int, op: *mut Handle) -> c_int {
    let (Some(f), false) = (f, op.is_null()) else {
        return fail(
            name,
            crate::comm::WORLD,
            Error::new(ErrorClass::Arg, "user function or op pointer is NULL"),
        );
    };
    match op::create(f, commute != 0) {
        Ok(h) => {
            // SAFETY: checked non-NULL; the caller passes a writable MPI_Op.
            unsafe { op.write(h as Handle) };
            MPI_SUCCESS
        }
        Err(e) => fail(name, crate::comm::WORLD, e),
    }
}

mpi_fn! {
    fn MPI_Op_create / PMPI_Op_create(user_fn: Option<op::CUserFn>, commute: c_int, op: *mut Handle) -> c_int {
        // Outside Init..Finalize: an error, not a result.
        if let Err(e) = running() {
            return fail("MPI_Op_create", crate::comm::WORLD, e);
        }
        op_create("MPI_Op_create", user_fn.map(op::CFn::Int), commute, op)
    }
}

mpi_fn! {
    fn MPI_Op_create_c / PMPI_Op_create_c(user_fn: Option<op::CUserFnC>, commute: c_int, op: *mut Handle) -> c_int {
        // Outside Init..Finalize: an error, not a result.
        if let Err(e) = running() {
            return fail("MPI_Op_create_c", crate::comm::WORLD, e);
        }
        op_create("MPI_Op_create_c", user_fn.map(op::CFn::Large), commute, op)
    }
}

mpi_fn! {
    fn MPI_Op_free / PMPI_Op_free(op: *mut Handle) -> c_int {
        if op.is_null() {
            return fail("MPI_Op_free", crate::comm::WORLD, Error::new(ErrorClass::Arg, "op pointer is NULL"));
        }
        // SAFETY: checked non-NULL; the caller's MPI_Op.
        match op::free(unsafe { *op } as usize) {
            Ok(()) => {
                // SAFETY: as above.
                unsafe { *op = op::OP_NULL as Handle };
                MPI_SUCCESS
            }
            Err(e) => fail("MPI_Op_free", crate::comm::WORLD, e),
        }
    }
}

mpi_fn! {
    fn MPI_Op_commutative / PMPI_Op_commutative(op: Handle, commute: *mut c_int) -> c_int {
        // Outside Init..Finalize: an error, not a result.
        if let Err(e) = running() {
            return fail("MPI_Op_commutative", crate::comm::WORLD, e);
        }
        if commute.is_null() {
            return fail("MPI_Op_commutative", crate::comm::WORLD, Error::new(ErrorClass::Arg, "commute pointer is NULL"));
        }
        match op::lookup(op as usize) {
            Ok(o) => {
                // SAFETY: checked non-NULL.
                unsafe { *commute = o.commutative() as c_int };
                MPI_SUCCESS
            }
            Err(e) => fail("MPI_Op_commutative", crate::comm::WORLD, e),
        }
    }
}
