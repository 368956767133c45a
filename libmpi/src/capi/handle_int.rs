//! MPI_<kind>_toint / MPI_<kind>_fromint for every handle kind. In this ABI a handle is an
//! integer cast to a pointer, and every handle rmpi hands out fits an int (predefined ones at
//! the ABI's values, ours at a kind's base plus a small table slot), so each way is a cast.

use std::ffi::c_int;

use super::*;

macro_rules! int_conversions {
    ($($to:ident / $pto:ident, $from:ident / $pfrom:ident;)*) => {$(
        mpi_fn! {
            fn $to / $pto(handle: Handle) -> c_int {
                handle as usize as c_int
            }
        }

        mpi_fn! {
            fn $from / $pfrom(value: c_int) -> Handle {
                value as u32 as usize as Handle
            }
        }
    )*};
}

int_conversions! {
    MPI_Comm_toint / PMPI_Comm_toint, MPI_Comm_fromint / PMPI_Comm_fromint;
    MPI_Errhandler_toint / PMPI_Errhandler_toint, MPI_Errhandler_fromint / PMPI_Errhandler_fromint;
    MPI_File_toint / PMPI_File_toint, MPI_File_fromint / PMPI_File_fromint;
    MPI_Group_toint / PMPI_Group_toint, MPI_Group_fromint / PMPI_Group_fromint;
    MPI_Info_toint / PMPI_Info_toint, MPI_Info_fromint / PMPI_Info_fromint;
    MPI_Message_toint / PMPI_Message_toint, MPI_Message_fromint / PMPI_Message_fromint;
    MPI_Op_toint / PMPI_Op_toint, MPI_Op_fromint / PMPI_Op_fromint;
    MPI_Request_toint / PMPI_Request_toint, MPI_Request_fromint / PMPI_Request_fromint;
    MPI_Session_toint / PMPI_Session_toint, MPI_Session_fromint / PMPI_Session_fromint;
    MPI_Type_toint / PMPI_Type_toint, MPI_Type_fromint / PMPI_Type_fromint;
    MPI_Win_toint / PMPI_Win_toint, MPI_Win_fromint / PMPI_Win_fromint;
}
