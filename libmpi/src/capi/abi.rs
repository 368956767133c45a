//! The MPI 5.0 ABI's introspection calls: `MPI_Abi_get_info` (the sizes of the integer types
//! the ABI leaves to the implementation) and the Fortran ones. rmpi has no Fortran binding, so
//! there is no Fortran information until a Fortran layer over the C ABI sets it
//! (`MPI_Abi_set_fortran_info` / `_booleans`, which it calls once, before MPI_Init); until then
//! `MPI_Abi_get_fortran_info` gives MPI_INFO_NULL and the booleans are not set. Like the other
//! info calls these work before MPI_Init; errors go to MPI_COMM_WORLD's handler.

use std::ffi::{c_int, c_void};
use std::sync::Mutex;

use super::comm::outside;
use super::info::{hints, new_handle, INFO_NULL};
use super::*;
use crate::info::Info;

/// A Fortran layer's LOGICAL: its size, and its true and false values.
type Booleans = (usize, Vec<u8>, Vec<u8>);

/// What a Fortran layer set: its info, and its booleans.
static FORTRAN: Mutex<(Option<Info>, Option<Booleans>)> = Mutex::new((None, None));

fn arg_ptr<T>(p: *const T, what: &str) -> Result<()> {
    if p.is_null() {
        return Err(Error::new(ErrorClass::Arg, format!("{what} is NULL")));
    }
    Ok(())
}

/// LOGICAL sizes a Fortran compiler uses (bytes).
fn logical_size(n: c_int) -> Result<usize> {
    match n {
        1 | 2 | 4 | 8 | 16 => Ok(n as usize),
        _ => Err(Error::new(
            ErrorClass::Arg,
            format!("logical_size {n} is not 1, 2, 4, 8 or 16"),
        )),
    }
}

mpi_fn! {
    fn MPI_Abi_get_info / PMPI_Abi_get_info(info: *mut Handle) -> c_int {
        outside("MPI_Abi_get_info", crate::comm::WORLD, || {
            arg_ptr(info, "info")?;
            let mut i = Info::new();
            i.set("mpi_aint_size", &std::mem::size_of::<isize>().to_string())?;
            i.set("mpi_count_size", &std::mem::size_of::<i64>().to_string())?;
            i.set("mpi_offset_size", &std::mem::size_of::<i64>().to_string())?;
            // SAFETY: checked non-NULL.
            unsafe { info.write(new_handle(i)) };
            Ok(())
        })
    }
}

mpi_fn! {
    fn MPI_Abi_get_fortran_info / PMPI_Abi_get_fortran_info(info: *mut Handle) -> c_int {
        outside("MPI_Abi_get_fortran_info", crate::comm::WORLD, || {
            arg_ptr(info, "info")?;
            let set = FORTRAN.lock().unwrap_or_else(|e| e.into_inner()).0.clone();
            let h = set.map_or(INFO_NULL as Handle, new_handle);
            // SAFETY: checked non-NULL.
            unsafe { info.write(h) };
            Ok(())
        })
    }
}

mpi_fn! {
    fn MPI_Abi_set_fortran_info / PMPI_Abi_set_fortran_info(info: Handle) -> c_int {
        outside("MPI_Abi_set_fortran_info", crate::comm::WORLD, || {
            let i = hints(info)?;
            FORTRAN.lock().unwrap_or_else(|e| e.into_inner()).0 = Some(i);
            Ok(())
        })
    }
}

mpi_fn! {
    fn MPI_Abi_get_fortran_booleans / PMPI_Abi_get_fortran_booleans(logical_size_: c_int, logical_true: *mut c_void, logical_false: *mut c_void, is_set: *mut c_int) -> c_int {
        outside("MPI_Abi_get_fortran_booleans", crate::comm::WORLD, || {
            let n = logical_size(logical_size_)?;
            arg_ptr(is_set, "is_set")?;
            let f = FORTRAN.lock().unwrap_or_else(|e| e.into_inner());
            match &f.1 {
                Some((size, t, fl)) if *size == n => {
                    arg_ptr(logical_true, "logical_true")?;
                    arg_ptr(logical_false, "logical_false")?;
                    // SAFETY: the caller's buffers hold logical_size bytes each (checked
                    // non-NULL); the stored values have exactly n bytes.
                    unsafe {
                        std::ptr::copy_nonoverlapping(t.as_ptr(), logical_true.cast::<u8>(), n);
                        std::ptr::copy_nonoverlapping(fl.as_ptr(), logical_false.cast::<u8>(), n);
                        is_set.write(1);
                    }
                }
                // SAFETY: checked non-NULL.
                _ => unsafe { is_set.write(0) },
            }
            Ok(())
        })
    }
}

mpi_fn! {
    fn MPI_Abi_set_fortran_booleans / PMPI_Abi_set_fortran_booleans(logical_size_: c_int, logical_true: *mut c_void, logical_false: *mut c_void) -> c_int {
        outside("MPI_Abi_set_fortran_booleans", crate::comm::WORLD, || {
            let n = logical_size(logical_size_)?;
            arg_ptr(logical_true, "logical_true")?;
            arg_ptr(logical_false, "logical_false")?;
            // SAFETY: the caller's values hold logical_size bytes each (checked non-NULL).
            let (t, fl) = unsafe {
                (
                    std::slice::from_raw_parts(logical_true.cast::<u8>(), n).to_vec(),
                    std::slice::from_raw_parts(logical_false.cast::<u8>(), n).to_vec(),
                )
            };
            if t == fl {
                return Err(Error::new(
                    ErrorClass::Arg,
                    "logical_true and logical_false are the same value",
                ));
            }
            FORTRAN.lock().unwrap_or_else(|e| e.into_inner()).1 = Some((n, t, fl));
            Ok(())
        })
    }
}
