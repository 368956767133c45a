//! The communication calls on windows in the C ABI: Put, Get, Accumulate, Get_accumulate,
//! Fetch_and_op, Compare_and_swap and the request-based R* forms, int and `_c` counts
//! through one code path each. The work is in `crate::osc::ops`.

use std::ffi::{c_int, c_void};
use std::sync::Arc;

use super::*;
use crate::datatype::{Datatype, Layout};
use crate::osc::{self, ops::Target};

const PROC_NULL: c_int = -3;
const OP_REPLACE: usize = 0x3c;
const OP_NO_OP: usize = 0x3d;

/// The layout of a datatype used at the target (predefined or committed derived).
fn layout_of(dt: Handle) -> Result<Arc<Layout>> {
    let h = dt as usize;
    if crate::datatype::lookup(h).is_some() {
        return crate::datatype::table::layout(h);
    }
    crate::datatype::table::committed(h)
}

fn target(rank: c_int, disp: Aint, count: Count, dt: Handle) -> Result<Target> {
    if count < 0 {
        return Err(Error::new(
            ErrorClass::Count,
            format!("target count {count} is negative"),
        ));
    }
    if disp < 0 {
        return Err(Error::new(
            ErrorClass::Disp,
            format!("target displacement {disp} is negative"),
        ));
    }
    let layout = layout_of(dt)?;
    // count x extent beyond isize cannot describe memory (MPI_ERR_COUNT, not a hang).
    let fits = (count as usize)
        .checked_mul(layout.size())
        .is_some_and(|n| n <= super::datatype::MAX_BYTES)
        && layout.span(count as usize).is_some();
    if !fits {
        return Err(Error::new(
            ErrorClass::Count,
            format!("target count {count} of this datatype overflows the address space"),
        ));
    }
    Ok(Target {
        rank,
        disp,
        count: count as usize,
        layout,
    })
}

/// The basic type an accumulate works on: the predefined type the origin's (or, with no
/// origin data, the target's) datatype is made of (MPI requires both to be built from the
/// same one).
fn basic(origin: Handle, target: Handle) -> Result<Datatype> {
    let of = |h: Handle| -> Option<Datatype> {
        let h = h as usize;
        crate::datatype::lookup(h).or_else(|| {
            let b = crate::datatype::table::layout(h).ok()?.basic_type()?;
            crate::datatype::lookup(b)
        })
    };
    of(origin).or_else(|| of(target)).ok_or_else(|| {
        Error::new(
            ErrorClass::Type,
            "accumulate needs datatypes made of one predefined type",
        )
    })
}

/// A predefined op valid for one-sided accumulation over `dt`.
fn check_op(op: Handle, dt: Datatype) -> Result<usize> {
    let h = op as usize;
    match crate::op::lookup(h)? {
        crate::op::Op::Builtin(_) if h == OP_REPLACE || h == OP_NO_OP => Ok(h),
        o @ crate::op::Op::Builtin(_) => {
            crate::op::check(&o, dt)?;
            Ok(h)
        }
        _ => Err(Error::new(
            ErrorClass::Op,
            "one-sided accumulate takes predefined operations only",
        )),
    }
}

/// Store a request handle for an R* call.
fn store_req(request: *mut Handle, r: pml::ReqId) {
    // SAFETY: checked non-NULL by the caller.
    unsafe { *request = request_handle(r) };
}

fn check_req(request: *mut Handle) -> Result<()> {
    if request.is_null() {
        return Err(Error::new(ErrorClass::Arg, "request pointer is NULL"));
    }
    Ok(())
}

/// Run `f`; errors through the window's handler.
fn rcall(name: &str, win: Handle, f: impl FnOnce(&mut Runtime, usize) -> Result<()>) -> c_int {
    super::win::wcall(name, win, f)
}

#[allow(clippy::too_many_arguments)]
fn put(
    name: &str,
    oaddr: *const c_void,
    ocount: Count,
    odt: Handle,
    rank: c_int,
    disp: Aint,
    tcount: Count,
    tdt: Handle,
    win: Handle,
    request: *mut Handle,
) -> c_int {
    rcall(name, win, |rt, id| {
        let want_req = name.starts_with("MPI_Rput");
        if want_req {
            check_req(request)?;
        }
        let m = message_c(oaddr, ocount, odt)?;
        let t = target(rank, disp, tcount, tdt)?;
        let r = if rank != PROC_NULL {
            osc::ops::put(rt, id, m, t, want_req)?
        } else {
            None
        };
        if want_req {
            let r = r.unwrap_or_else(|| rt.pml.request_for(pml::Started::Done(empty_status())));
            store_req(request, r);
        }
        Ok(())
    })
}

#[allow(clippy::too_many_arguments)]
fn get(
    name: &str,
    oaddr: *mut c_void,
    ocount: Count,
    odt: Handle,
    rank: c_int,
    disp: Aint,
    tcount: Count,
    tdt: Handle,
    win: Handle,
    request: *mut Handle,
) -> c_int {
    rcall(name, win, |rt, id| {
        let want_req = name.starts_with("MPI_Rget");
        if want_req {
            check_req(request)?;
        }
        let m = message_c(oaddr, ocount, odt)?;
        let t = target(rank, disp, tcount, tdt)?;
        let r = if rank != PROC_NULL {
            osc::ops::get(rt, id, m, t, want_req)?
        } else {
            None
        };
        if want_req {
            let r = r.unwrap_or_else(|| rt.pml.request_for(pml::Started::Done(empty_status())));
            store_req(request, r);
        }
        Ok(())
    })
}

#[allow(clippy::too_many_arguments)]
fn acc(
    name: &str,
    oaddr: *const c_void,
    ocount: Count,
    odt: Handle,
    rank: c_int,
    disp: Aint,
    tcount: Count,
    tdt: Handle,
    op: Handle,
    win: Handle,
    request: *mut Handle,
) -> c_int {
    rcall(name, win, |rt, id| {
        let want_req = name.starts_with("MPI_Racc");
        if want_req {
            check_req(request)?;
        }
        let m = message_c(oaddr, ocount, odt)?;
        let t = target(rank, disp, tcount, tdt)?;
        if m.len == 0 {
            // Nothing moves: any types and ops will do.
            crate::op::lookup(op as usize)?;
        } else if rank != PROC_NULL && op as usize != OP_NO_OP {
            let dt = basic(odt, tdt)?;
            let op = check_op(op, dt)?;
            osc::ops::accumulate(rt, id, m, t, op, dt)?;
        }
        if want_req {
            let r = rt.pml.request_for(pml::Started::Done(empty_status()));
            store_req(request, r);
        }
        Ok(())
    })
}

/// Get_accumulate's arguments after the origin: result buffer, target, op.
struct GetAcc {
    raddr: *mut c_void,
    rcount: Count,
    rdt: Handle,
    rank: c_int,
    disp: Aint,
    tcount: Count,
    tdt: Handle,
    op: Handle,
}

fn get_acc(
    name: &str,
    oaddr: *const c_void,
    ocount: Count,
    odt: Handle,
    g: GetAcc,
    win: Handle,
    request: *mut Handle,
) -> c_int {
    rcall(name, win, |rt, id| {
        let want_req = name.starts_with("MPI_Rget");
        if want_req {
            check_req(request)?;
        }
        let res = message_c(g.raddr, g.rcount, g.rdt)?;
        let (dt, op) = if res.len == 0 {
            crate::op::lookup(g.op as usize)?;
            (crate::datatype::BYTE, OP_NO_OP)
        } else {
            let dt = basic(g.rdt, g.tdt)?;
            (dt, check_op(g.op, dt)?)
        };
        let m = if op == OP_NO_OP {
            crate::datatype::Msg::bytes(std::ptr::null(), 0)
        } else {
            message_c(oaddr, ocount, odt)?
        };
        let t = target(g.rank, g.disp, g.tcount, g.tdt)?;
        let r = if g.rank != PROC_NULL {
            osc::ops::get_accumulate(rt, id, m, res, t, op, dt, want_req)?
        } else {
            None
        };
        if want_req {
            let r = r.unwrap_or_else(|| rt.pml.request_for(pml::Started::Done(empty_status())));
            store_req(request, r);
        }
        Ok(())
    })
}

mpi_fn! {
    fn MPI_Put / PMPI_Put(origin_addr: *const c_void, origin_count: c_int, origin_datatype: Handle, target_rank: c_int, target_disp: Aint, target_count: c_int, target_datatype: Handle, win: Handle) -> c_int {
        put("MPI_Put", origin_addr, origin_count as Count, origin_datatype, target_rank, target_disp, target_count as Count, target_datatype, win, std::ptr::null_mut())
    }
}

mpi_fn! {
    fn MPI_Put_c / PMPI_Put_c(origin_addr: *const c_void, origin_count: Count, origin_datatype: Handle, target_rank: c_int, target_disp: Aint, target_count: Count, target_datatype: Handle, win: Handle) -> c_int {
        put("MPI_Put_c", origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count, target_datatype, win, std::ptr::null_mut())
    }
}

mpi_fn! {
    fn MPI_Rput / PMPI_Rput(origin_addr: *const c_void, origin_count: c_int, origin_datatype: Handle, target_rank: c_int, target_disp: Aint, target_count: c_int, target_datatype: Handle, win: Handle, request: *mut Handle) -> c_int {
        put("MPI_Rput", origin_addr, origin_count as Count, origin_datatype, target_rank, target_disp, target_count as Count, target_datatype, win, request)
    }
}

mpi_fn! {
    fn MPI_Rput_c / PMPI_Rput_c(origin_addr: *const c_void, origin_count: Count, origin_datatype: Handle, target_rank: c_int, target_disp: Aint, target_count: Count, target_datatype: Handle, win: Handle, request: *mut Handle) -> c_int {
        put("MPI_Rput_c", origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count, target_datatype, win, request)
    }
}

mpi_fn! {
    fn MPI_Get / PMPI_Get(origin_addr: *mut c_void, origin_count: c_int, origin_datatype: Handle, target_rank: c_int, target_disp: Aint, target_count: c_int, target_datatype: Handle, win: Handle) -> c_int {
        get("MPI_Get", origin_addr, origin_count as Count, origin_datatype, target_rank, target_disp, target_count as Count, target_datatype, win, std::ptr::null_mut())
    }
}

mpi_fn! {
    fn MPI_Get_c / PMPI_Get_c(origin_addr: *mut c_void, origin_count: Count, origin_datatype: Handle, target_rank: c_int, target_disp: Aint, target_count: Count, target_datatype: Handle, win: Handle) -> c_int {
        get("MPI_Get_c", origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count, target_datatype, win, std::ptr::null_mut())
    }
}

mpi_fn! {
    fn MPI_Rget / PMPI_Rget(origin_addr: *mut c_void, origin_count: c_int, origin_datatype: Handle, target_rank: c_int, target_disp: Aint, target_count: c_int, target_datatype: Handle, win: Handle, request: *mut Handle) -> c_int {
        get("MPI_Rget", origin_addr, origin_count as Count, origin_datatype, target_rank, target_disp, target_count as Count, target_datatype, win, request)
    }
}

mpi_fn! {
    fn MPI_Rget_c / PMPI_Rget_c(origin_addr: *mut c_void, origin_count: Count, origin_datatype: Handle, target_rank: c_int, target_disp: Aint, target_count: Count, target_datatype: Handle, win: Handle, request: *mut Handle) -> c_int {
        get("MPI_Rget_c", origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count, target_datatype, win, request)
    }
}

mpi_fn! {
    fn MPI_Accumulate / PMPI_Accumulate(origin_addr: *const c_void, origin_count: c_int, origin_datatype: Handle, target_rank: c_int, target_disp: Aint, target_count: c_int, target_datatype: Handle, op: Handle, win: Handle) -> c_int {
        acc("MPI_Accumulate", origin_addr, origin_count as Count, origin_datatype, target_rank, target_disp, target_count as Count, target_datatype, op, win, std::ptr::null_mut())
    }
}

mpi_fn! {
    fn MPI_Accumulate_c / PMPI_Accumulate_c(origin_addr: *const c_void, origin_count: Count, origin_datatype: Handle, target_rank: c_int, target_disp: Aint, target_count: Count, target_datatype: Handle, op: Handle, win: Handle) -> c_int {
        acc("MPI_Accumulate_c", origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count, target_datatype, op, win, std::ptr::null_mut())
    }
}

mpi_fn! {
    fn MPI_Raccumulate / PMPI_Raccumulate(origin_addr: *const c_void, origin_count: c_int, origin_datatype: Handle, target_rank: c_int, target_disp: Aint, target_count: c_int, target_datatype: Handle, op: Handle, win: Handle, request: *mut Handle) -> c_int {
        acc("MPI_Raccumulate", origin_addr, origin_count as Count, origin_datatype, target_rank, target_disp, target_count as Count, target_datatype, op, win, request)
    }
}

mpi_fn! {
    fn MPI_Raccumulate_c / PMPI_Raccumulate_c(origin_addr: *const c_void, origin_count: Count, origin_datatype: Handle, target_rank: c_int, target_disp: Aint, target_count: Count, target_datatype: Handle, op: Handle, win: Handle, request: *mut Handle) -> c_int {
        acc("MPI_Raccumulate_c", origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count, target_datatype, op, win, request)
    }
}

mpi_fn! {
    fn MPI_Get_accumulate / PMPI_Get_accumulate(origin_addr: *const c_void, origin_count: c_int, origin_datatype: Handle, result_addr: *mut c_void, result_count: c_int, result_datatype: Handle, target_rank: c_int, target_disp: Aint, target_count: c_int, target_datatype: Handle, op: Handle, win: Handle) -> c_int {
        let g = GetAcc { raddr: result_addr, rcount: result_count as Count, rdt: result_datatype, rank: target_rank, disp: target_disp, tcount: target_count as Count, tdt: target_datatype, op };
        get_acc("MPI_Get_accumulate", origin_addr, origin_count as Count, origin_datatype, g, win, std::ptr::null_mut())
    }
}

mpi_fn! {
    fn MPI_Get_accumulate_c / PMPI_Get_accumulate_c(origin_addr: *const c_void, origin_count: Count, origin_datatype: Handle, result_addr: *mut c_void, result_count: Count, result_datatype: Handle, target_rank: c_int, target_disp: Aint, target_count: Count, target_datatype: Handle, op: Handle, win: Handle) -> c_int {
        let g = GetAcc { raddr: result_addr, rcount: result_count, rdt: result_datatype, rank: target_rank, disp: target_disp, tcount: target_count, tdt: target_datatype, op };
        get_acc("MPI_Get_accumulate_c", origin_addr, origin_count, origin_datatype, g, win, std::ptr::null_mut())
    }
}

mpi_fn! {
    fn MPI_Rget_accumulate / PMPI_Rget_accumulate(origin_addr: *const c_void, origin_count: c_int, origin_datatype: Handle, result_addr: *mut c_void, result_count: c_int, result_datatype: Handle, target_rank: c_int, target_disp: Aint, target_count: c_int, target_datatype: Handle, op: Handle, win: Handle, request: *mut Handle) -> c_int {
        let g = GetAcc { raddr: result_addr, rcount: result_count as Count, rdt: result_datatype, rank: target_rank, disp: target_disp, tcount: target_count as Count, tdt: target_datatype, op };
        get_acc("MPI_Rget_accumulate", origin_addr, origin_count as Count, origin_datatype, g, win, request)
    }
}

mpi_fn! {
    fn MPI_Rget_accumulate_c / PMPI_Rget_accumulate_c(origin_addr: *const c_void, origin_count: Count, origin_datatype: Handle, result_addr: *mut c_void, result_count: Count, result_datatype: Handle, target_rank: c_int, target_disp: Aint, target_count: Count, target_datatype: Handle, op: Handle, win: Handle, request: *mut Handle) -> c_int {
        let g = GetAcc { raddr: result_addr, rcount: result_count, rdt: result_datatype, rank: target_rank, disp: target_disp, tcount: target_count, tdt: target_datatype, op };
        get_acc("MPI_Rget_accumulate_c", origin_addr, origin_count, origin_datatype, g, win, request)
    }
}

mpi_fn! {
    fn MPI_Fetch_and_op / PMPI_Fetch_and_op(origin_addr: *const c_void, result_addr: *mut c_void, datatype: Handle, target_rank: c_int, target_disp: Aint, op: Handle, win: Handle) -> c_int {
        let g = GetAcc { raddr: result_addr, rcount: 1, rdt: datatype, rank: target_rank, disp: target_disp, tcount: 1, tdt: datatype, op };
        get_acc("MPI_Fetch_and_op", origin_addr, 1, datatype, g, win, std::ptr::null_mut())
    }
}

mpi_fn! {
    fn MPI_Compare_and_swap / PMPI_Compare_and_swap(origin_addr: *const c_void, compare_addr: *const c_void, result_addr: *mut c_void, datatype: Handle, target_rank: c_int, target_disp: Aint, win: Handle) -> c_int {
        rcall("MPI_Compare_and_swap", win, |rt, id| {
            if crate::datatype::lookup(datatype as usize).is_none() {
                return Err(Error::new(ErrorClass::Type, "MPI_Compare_and_swap takes a predefined datatype"));
            }
            if !crate::op::cas_type(datatype as usize) {
                return Err(Error::new(ErrorClass::Type, "MPI_Compare_and_swap takes an integer, logical or byte datatype"));
            }
            let o = message_c(origin_addr, 1, datatype)?;
            let c = message_c(compare_addr, 1, datatype)?;
            let r = message_c(result_addr, 1, datatype)?;
            let t = target(target_rank, target_disp, 1, datatype)?;
            if target_rank != PROC_NULL {
                osc::ops::compare_and_swap(rt, id, o, c, r, t)?;
            }
            Ok(())
        })
    }
}
