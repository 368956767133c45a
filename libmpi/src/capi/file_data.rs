//! The data access calls of MPI-IO: every read/write form (explicit offset, individual and
//! shared file pointers, ordered, collective, non-blocking, split collective; int and `_c`
//! counts), each a line here over the shared code of `file.rs`.

// The C signatures are the standard's, however many parameters they have.
#![allow(clippy::too_many_arguments)]

use std::ffi::{c_int, c_void};

use super::file::{begin, blocking, end, nonblocking, Data, Pos};
use super::*;

mpi_fn! {
    fn MPI_File_read / PMPI_File_read(fh: Handle, buf: *mut c_void, count: c_int, datatype: Handle, status: *mut MpiStatus) -> c_int {
        blocking("MPI_File_read", fh, Pos::Individual, Data { buf, count: count as Count, datatype, write: false }, status)
    }
}

mpi_fn! {
    fn MPI_File_iread / PMPI_File_iread(fh: Handle, buf: *mut c_void, count: c_int, datatype: Handle, request: *mut Handle) -> c_int {
        nonblocking("MPI_File_iread", fh, Pos::Individual, Data { buf, count: count as Count, datatype, write: false }, request)
    }
}

mpi_fn! {
    fn MPI_File_read_c / PMPI_File_read_c(fh: Handle, buf: *mut c_void, count: Count, datatype: Handle, status: *mut MpiStatus) -> c_int {
        blocking("MPI_File_read_c", fh, Pos::Individual, Data { buf, count, datatype, write: false }, status)
    }
}

mpi_fn! {
    fn MPI_File_iread_c / PMPI_File_iread_c(fh: Handle, buf: *mut c_void, count: Count, datatype: Handle, request: *mut Handle) -> c_int {
        nonblocking("MPI_File_iread_c", fh, Pos::Individual, Data { buf, count, datatype, write: false }, request)
    }
}

mpi_fn! {
    fn MPI_File_read_at / PMPI_File_read_at(fh: Handle, offset: i64, buf: *mut c_void, count: c_int, datatype: Handle, status: *mut MpiStatus) -> c_int {
        blocking("MPI_File_read_at", fh, Pos::At(offset), Data { buf, count: count as Count, datatype, write: false }, status)
    }
}

mpi_fn! {
    fn MPI_File_iread_at / PMPI_File_iread_at(fh: Handle, offset: i64, buf: *mut c_void, count: c_int, datatype: Handle, request: *mut Handle) -> c_int {
        nonblocking("MPI_File_iread_at", fh, Pos::At(offset), Data { buf, count: count as Count, datatype, write: false }, request)
    }
}

mpi_fn! {
    fn MPI_File_read_at_c / PMPI_File_read_at_c(fh: Handle, offset: i64, buf: *mut c_void, count: Count, datatype: Handle, status: *mut MpiStatus) -> c_int {
        blocking("MPI_File_read_at_c", fh, Pos::At(offset), Data { buf, count, datatype, write: false }, status)
    }
}

mpi_fn! {
    fn MPI_File_iread_at_c / PMPI_File_iread_at_c(fh: Handle, offset: i64, buf: *mut c_void, count: Count, datatype: Handle, request: *mut Handle) -> c_int {
        nonblocking("MPI_File_iread_at_c", fh, Pos::At(offset), Data { buf, count, datatype, write: false }, request)
    }
}

mpi_fn! {
    fn MPI_File_read_all / PMPI_File_read_all(fh: Handle, buf: *mut c_void, count: c_int, datatype: Handle, status: *mut MpiStatus) -> c_int {
        blocking("MPI_File_read_all", fh, Pos::Individual, Data { buf, count: count as Count, datatype, write: false }, status)
    }
}

mpi_fn! {
    fn MPI_File_iread_all / PMPI_File_iread_all(fh: Handle, buf: *mut c_void, count: c_int, datatype: Handle, request: *mut Handle) -> c_int {
        nonblocking("MPI_File_iread_all", fh, Pos::Individual, Data { buf, count: count as Count, datatype, write: false }, request)
    }
}

mpi_fn! {
    fn MPI_File_read_all_begin / PMPI_File_read_all_begin(fh: Handle, buf: *mut c_void, count: c_int, datatype: Handle) -> c_int {
        begin("MPI_File_read_all_begin", fh, Pos::Individual, Data { buf, count: count as Count, datatype, write: false })
    }
}

mpi_fn! {
    fn MPI_File_read_all_c / PMPI_File_read_all_c(fh: Handle, buf: *mut c_void, count: Count, datatype: Handle, status: *mut MpiStatus) -> c_int {
        blocking("MPI_File_read_all_c", fh, Pos::Individual, Data { buf, count, datatype, write: false }, status)
    }
}

mpi_fn! {
    fn MPI_File_iread_all_c / PMPI_File_iread_all_c(fh: Handle, buf: *mut c_void, count: Count, datatype: Handle, request: *mut Handle) -> c_int {
        nonblocking("MPI_File_iread_all_c", fh, Pos::Individual, Data { buf, count, datatype, write: false }, request)
    }
}

mpi_fn! {
    fn MPI_File_read_all_begin_c / PMPI_File_read_all_begin_c(fh: Handle, buf: *mut c_void, count: Count, datatype: Handle) -> c_int {
        begin("MPI_File_read_all_begin_c", fh, Pos::Individual, Data { buf, count, datatype, write: false })
    }
}

mpi_fn! {
    fn MPI_File_read_all_end / PMPI_File_read_all_end(fh: Handle, _buf: *mut c_void, status: *mut MpiStatus) -> c_int {
        end("MPI_File_read_all_end", fh, status)
    }
}

mpi_fn! {
    fn MPI_File_read_at_all / PMPI_File_read_at_all(fh: Handle, offset: i64, buf: *mut c_void, count: c_int, datatype: Handle, status: *mut MpiStatus) -> c_int {
        blocking("MPI_File_read_at_all", fh, Pos::At(offset), Data { buf, count: count as Count, datatype, write: false }, status)
    }
}

mpi_fn! {
    fn MPI_File_iread_at_all / PMPI_File_iread_at_all(fh: Handle, offset: i64, buf: *mut c_void, count: c_int, datatype: Handle, request: *mut Handle) -> c_int {
        nonblocking("MPI_File_iread_at_all", fh, Pos::At(offset), Data { buf, count: count as Count, datatype, write: false }, request)
    }
}

mpi_fn! {
    fn MPI_File_read_at_all_begin / PMPI_File_read_at_all_begin(fh: Handle, offset: i64, buf: *mut c_void, count: c_int, datatype: Handle) -> c_int {
        begin("MPI_File_read_at_all_begin", fh, Pos::At(offset), Data { buf, count: count as Count, datatype, write: false })
    }
}

mpi_fn! {
    fn MPI_File_read_at_all_c / PMPI_File_read_at_all_c(fh: Handle, offset: i64, buf: *mut c_void, count: Count, datatype: Handle, status: *mut MpiStatus) -> c_int {
        blocking("MPI_File_read_at_all_c", fh, Pos::At(offset), Data { buf, count, datatype, write: false }, status)
    }
}

mpi_fn! {
    fn MPI_File_iread_at_all_c / PMPI_File_iread_at_all_c(fh: Handle, offset: i64, buf: *mut c_void, count: Count, datatype: Handle, request: *mut Handle) -> c_int {
        nonblocking("MPI_File_iread_at_all_c", fh, Pos::At(offset), Data { buf, count, datatype, write: false }, request)
    }
}

mpi_fn! {
    fn MPI_File_read_at_all_begin_c / PMPI_File_read_at_all_begin_c(fh: Handle, offset: i64, buf: *mut c_void, count: Count, datatype: Handle) -> c_int {
        begin("MPI_File_read_at_all_begin_c", fh, Pos::At(offset), Data { buf, count, datatype, write: false })
    }
}

mpi_fn! {
    fn MPI_File_read_at_all_end / PMPI_File_read_at_all_end(fh: Handle, _buf: *mut c_void, status: *mut MpiStatus) -> c_int {
        end("MPI_File_read_at_all_end", fh, status)
    }
}

mpi_fn! {
    fn MPI_File_read_shared / PMPI_File_read_shared(fh: Handle, buf: *mut c_void, count: c_int, datatype: Handle, status: *mut MpiStatus) -> c_int {
        blocking("MPI_File_read_shared", fh, Pos::Shared, Data { buf, count: count as Count, datatype, write: false }, status)
    }
}

mpi_fn! {
    fn MPI_File_iread_shared / PMPI_File_iread_shared(fh: Handle, buf: *mut c_void, count: c_int, datatype: Handle, request: *mut Handle) -> c_int {
        nonblocking("MPI_File_iread_shared", fh, Pos::Shared, Data { buf, count: count as Count, datatype, write: false }, request)
    }
}

mpi_fn! {
    fn MPI_File_read_shared_c / PMPI_File_read_shared_c(fh: Handle, buf: *mut c_void, count: Count, datatype: Handle, status: *mut MpiStatus) -> c_int {
        blocking("MPI_File_read_shared_c", fh, Pos::Shared, Data { buf, count, datatype, write: false }, status)
    }
}

mpi_fn! {
    fn MPI_File_iread_shared_c / PMPI_File_iread_shared_c(fh: Handle, buf: *mut c_void, count: Count, datatype: Handle, request: *mut Handle) -> c_int {
        nonblocking("MPI_File_iread_shared_c", fh, Pos::Shared, Data { buf, count, datatype, write: false }, request)
    }
}

mpi_fn! {
    fn MPI_File_read_ordered / PMPI_File_read_ordered(fh: Handle, buf: *mut c_void, count: c_int, datatype: Handle, status: *mut MpiStatus) -> c_int {
        blocking("MPI_File_read_ordered", fh, Pos::Ordered, Data { buf, count: count as Count, datatype, write: false }, status)
    }
}

mpi_fn! {
    fn MPI_File_read_ordered_begin / PMPI_File_read_ordered_begin(fh: Handle, buf: *mut c_void, count: c_int, datatype: Handle) -> c_int {
        begin("MPI_File_read_ordered_begin", fh, Pos::Ordered, Data { buf, count: count as Count, datatype, write: false })
    }
}

mpi_fn! {
    fn MPI_File_read_ordered_c / PMPI_File_read_ordered_c(fh: Handle, buf: *mut c_void, count: Count, datatype: Handle, status: *mut MpiStatus) -> c_int {
        blocking("MPI_File_read_ordered_c", fh, Pos::Ordered, Data { buf, count, datatype, write: false }, status)
    }
}

mpi_fn! {
    fn MPI_File_read_ordered_begin_c / PMPI_File_read_ordered_begin_c(fh: Handle, buf: *mut c_void, count: Count, datatype: Handle) -> c_int {
        begin("MPI_File_read_ordered_begin_c", fh, Pos::Ordered, Data { buf, count, datatype, write: false })
    }
}

mpi_fn! {
    fn MPI_File_read_ordered_end / PMPI_File_read_ordered_end(fh: Handle, _buf: *mut c_void, status: *mut MpiStatus) -> c_int {
        end("MPI_File_read_ordered_end", fh, status)
    }
}

mpi_fn! {
    fn MPI_File_write / PMPI_File_write(fh: Handle, buf: *const c_void, count: c_int, datatype: Handle, status: *mut MpiStatus) -> c_int {
        blocking("MPI_File_write", fh, Pos::Individual, Data { buf: buf.cast_mut(), count: count as Count, datatype, write: true }, status)
    }
}

mpi_fn! {
    fn MPI_File_iwrite / PMPI_File_iwrite(fh: Handle, buf: *const c_void, count: c_int, datatype: Handle, request: *mut Handle) -> c_int {
        nonblocking("MPI_File_iwrite", fh, Pos::Individual, Data { buf: buf.cast_mut(), count: count as Count, datatype, write: true }, request)
    }
}

mpi_fn! {
    fn MPI_File_write_c / PMPI_File_write_c(fh: Handle, buf: *const c_void, count: Count, datatype: Handle, status: *mut MpiStatus) -> c_int {
        blocking("MPI_File_write_c", fh, Pos::Individual, Data { buf: buf.cast_mut(), count, datatype, write: true }, status)
    }
}

mpi_fn! {
    fn MPI_File_iwrite_c / PMPI_File_iwrite_c(fh: Handle, buf: *const c_void, count: Count, datatype: Handle, request: *mut Handle) -> c_int {
        nonblocking("MPI_File_iwrite_c", fh, Pos::Individual, Data { buf: buf.cast_mut(), count, datatype, write: true }, request)
    }
}

mpi_fn! {
    fn MPI_File_write_at / PMPI_File_write_at(fh: Handle, offset: i64, buf: *const c_void, count: c_int, datatype: Handle, status: *mut MpiStatus) -> c_int {
        blocking("MPI_File_write_at", fh, Pos::At(offset), Data { buf: buf.cast_mut(), count: count as Count, datatype, write: true }, status)
    }
}

mpi_fn! {
    fn MPI_File_iwrite_at / PMPI_File_iwrite_at(fh: Handle, offset: i64, buf: *const c_void, count: c_int, datatype: Handle, request: *mut Handle) -> c_int {
        nonblocking("MPI_File_iwrite_at", fh, Pos::At(offset), Data { buf: buf.cast_mut(), count: count as Count, datatype, write: true }, request)
    }
}

mpi_fn! {
    fn MPI_File_write_at_c / PMPI_File_write_at_c(fh: Handle, offset: i64, buf: *const c_void, count: Count, datatype: Handle, status: *mut MpiStatus) -> c_int {
        blocking("MPI_File_write_at_c", fh, Pos::At(offset), Data { buf: buf.cast_mut(), count, datatype, write: true }, status)
    }
}

mpi_fn! {
    fn MPI_File_iwrite_at_c / PMPI_File_iwrite_at_c(fh: Handle, offset: i64, buf: *const c_void, count: Count, datatype: Handle, request: *mut Handle) -> c_int {
        nonblocking("MPI_File_iwrite_at_c", fh, Pos::At(offset), Data { buf: buf.cast_mut(), count, datatype, write: true }, request)
    }
}

mpi_fn! {
    fn MPI_File_write_all / PMPI_File_write_all(fh: Handle, buf: *const c_void, count: c_int, datatype: Handle, status: *mut MpiStatus) -> c_int {
        blocking("MPI_File_write_all", fh, Pos::Individual, Data { buf: buf.cast_mut(), count: count as Count, datatype, write: true }, status)
    }
}

mpi_fn! {
    fn MPI_File_iwrite_all / PMPI_File_iwrite_all(fh: Handle, buf: *const c_void, count: c_int, datatype: Handle, request: *mut Handle) -> c_int {
        nonblocking("MPI_File_iwrite_all", fh, Pos::Individual, Data { buf: buf.cast_mut(), count: count as Count, datatype, write: true }, request)
    }
}

mpi_fn! {
    fn MPI_File_write_all_begin / PMPI_File_write_all_begin(fh: Handle, buf: *const c_void, count: c_int, datatype: Handle) -> c_int {
        begin("MPI_File_write_all_begin", fh, Pos::Individual, Data { buf: buf.cast_mut(), count: count as Count, datatype, write: true })
    }
}

mpi_fn! {
    fn MPI_File_write_all_c / PMPI_File_write_all_c(fh: Handle, buf: *const c_void, count: Count, datatype: Handle, status: *mut MpiStatus) -> c_int {
        blocking("MPI_File_write_all_c", fh, Pos::Individual, Data { buf: buf.cast_mut(), count, datatype, write: true }, status)
    }
}

mpi_fn! {
    fn MPI_File_iwrite_all_c / PMPI_File_iwrite_all_c(fh: Handle, buf: *const c_void, count: Count, datatype: Handle, request: *mut Handle) -> c_int {
        nonblocking("MPI_File_iwrite_all_c", fh, Pos::Individual, Data { buf: buf.cast_mut(), count, datatype, write: true }, request)
    }
}

mpi_fn! {
    fn MPI_File_write_all_begin_c / PMPI_File_write_all_begin_c(fh: Handle, buf: *const c_void, count: Count, datatype: Handle) -> c_int {
        begin("MPI_File_write_all_begin_c", fh, Pos::Individual, Data { buf: buf.cast_mut(), count, datatype, write: true })
    }
}

mpi_fn! {
    fn MPI_File_write_all_end / PMPI_File_write_all_end(fh: Handle, _buf: *const c_void, status: *mut MpiStatus) -> c_int {
        end("MPI_File_write_all_end", fh, status)
    }
}

mpi_fn! {
    fn MPI_File_write_at_all / PMPI_File_write_at_all(fh: Handle, offset: i64, buf: *const c_void, count: c_int, datatype: Handle, status: *mut MpiStatus) -> c_int {
        blocking("MPI_File_write_at_all", fh, Pos::At(offset), Data { buf: buf.cast_mut(), count: count as Count, datatype, write: true }, status)
    }
}

mpi_fn! {
    fn MPI_File_iwrite_at_all / PMPI_File_iwrite_at_all(fh: Handle, offset: i64, buf: *const c_void, count: c_int, datatype: Handle, request: *mut Handle) -> c_int {
        nonblocking("MPI_File_iwrite_at_all", fh, Pos::At(offset), Data { buf: buf.cast_mut(), count: count as Count, datatype, write: true }, request)
    }
}

mpi_fn! {
    fn MPI_File_write_at_all_begin / PMPI_File_write_at_all_begin(fh: Handle, offset: i64, buf: *const c_void, count: c_int, datatype: Handle) -> c_int {
        begin("MPI_File_write_at_all_begin", fh, Pos::At(offset), Data { buf: buf.cast_mut(), count: count as Count, datatype, write: true })
    }
}

mpi_fn! {
    fn MPI_File_write_at_all_c / PMPI_File_write_at_all_c(fh: Handle, offset: i64, buf: *const c_void, count: Count, datatype: Handle, status: *mut MpiStatus) -> c_int {
        blocking("MPI_File_write_at_all_c", fh, Pos::At(offset), Data { buf: buf.cast_mut(), count, datatype, write: true }, status)
    }
}

mpi_fn! {
    fn MPI_File_iwrite_at_all_c / PMPI_File_iwrite_at_all_c(fh: Handle, offset: i64, buf: *const c_void, count: Count, datatype: Handle, request: *mut Handle) -> c_int {
        nonblocking("MPI_File_iwrite_at_all_c", fh, Pos::At(offset), Data { buf: buf.cast_mut(), count, datatype, write: true }, request)
    }
}

mpi_fn! {
    fn MPI_File_write_at_all_begin_c / PMPI_File_write_at_all_begin_c(fh: Handle, offset: i64, buf: *const c_void, count: Count, datatype: Handle) -> c_int {
        begin("MPI_File_write_at_all_begin_c", fh, Pos::At(offset), Data { buf: buf.cast_mut(), count, datatype, write: true })
    }
}

mpi_fn! {
    fn MPI_File_write_at_all_end / PMPI_File_write_at_all_end(fh: Handle, _buf: *const c_void, status: *mut MpiStatus) -> c_int {
        end("MPI_File_write_at_all_end", fh, status)
    }
}

mpi_fn! {
    fn MPI_File_write_shared / PMPI_File_write_shared(fh: Handle, buf: *const c_void, count: c_int, datatype: Handle, status: *mut MpiStatus) -> c_int {
        blocking("MPI_File_write_shared", fh, Pos::Shared, Data { buf: buf.cast_mut(), count: count as Count, datatype, write: true }, status)
    }
}

mpi_fn! {
    fn MPI_File_iwrite_shared / PMPI_File_iwrite_shared(fh: Handle, buf: *const c_void, count: c_int, datatype: Handle, request: *mut Handle) -> c_int {
        nonblocking("MPI_File_iwrite_shared", fh, Pos::Shared, Data { buf: buf.cast_mut(), count: count as Count, datatype, write: true }, request)
    }
}

mpi_fn! {
    fn MPI_File_write_shared_c / PMPI_File_write_shared_c(fh: Handle, buf: *const c_void, count: Count, datatype: Handle, status: *mut MpiStatus) -> c_int {
        blocking("MPI_File_write_shared_c", fh, Pos::Shared, Data { buf: buf.cast_mut(), count, datatype, write: true }, status)
    }
}

mpi_fn! {
    fn MPI_File_iwrite_shared_c / PMPI_File_iwrite_shared_c(fh: Handle, buf: *const c_void, count: Count, datatype: Handle, request: *mut Handle) -> c_int {
        nonblocking("MPI_File_iwrite_shared_c", fh, Pos::Shared, Data { buf: buf.cast_mut(), count, datatype, write: true }, request)
    }
}

mpi_fn! {
    fn MPI_File_write_ordered / PMPI_File_write_ordered(fh: Handle, buf: *const c_void, count: c_int, datatype: Handle, status: *mut MpiStatus) -> c_int {
        blocking("MPI_File_write_ordered", fh, Pos::Ordered, Data { buf: buf.cast_mut(), count: count as Count, datatype, write: true }, status)
    }
}

mpi_fn! {
    fn MPI_File_write_ordered_begin / PMPI_File_write_ordered_begin(fh: Handle, buf: *const c_void, count: c_int, datatype: Handle) -> c_int {
        begin("MPI_File_write_ordered_begin", fh, Pos::Ordered, Data { buf: buf.cast_mut(), count: count as Count, datatype, write: true })
    }
}

mpi_fn! {
    fn MPI_File_write_ordered_c / PMPI_File_write_ordered_c(fh: Handle, buf: *const c_void, count: Count, datatype: Handle, status: *mut MpiStatus) -> c_int {
        blocking("MPI_File_write_ordered_c", fh, Pos::Ordered, Data { buf: buf.cast_mut(), count, datatype, write: true }, status)
    }
}

mpi_fn! {
    fn MPI_File_write_ordered_begin_c / PMPI_File_write_ordered_begin_c(fh: Handle, buf: *const c_void, count: Count, datatype: Handle) -> c_int {
        begin("MPI_File_write_ordered_begin_c", fh, Pos::Ordered, Data { buf: buf.cast_mut(), count, datatype, write: true })
    }
}

mpi_fn! {
    fn MPI_File_write_ordered_end / PMPI_File_write_ordered_end(fh: Handle, _buf: *const c_void, status: *mut MpiStatus) -> c_int {
        end("MPI_File_write_ordered_end", fh, status)
    }
}
