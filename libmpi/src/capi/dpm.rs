//! Dynamic process calls of the C ABI (`crate::dpm` does the work): spawn, parent, ports,
//! accept/connect and the name service.

use std::ffi::{c_char, c_int, CStr};

use super::*;
use crate::dpm::{self, Meet, SpawnCmd};

const MAX_PORT_NAME: usize = 1024;

fn nonnull<T>(p: *const T, what: &str) -> Result<()> {
    if p.is_null() {
        return Err(Error::new(ErrorClass::Arg, format!("{what} is NULL")));
    }
    Ok(())
}

/// # Safety
/// `s` is NULL (an error) or a NUL-terminated string.
unsafe fn string(s: *const c_char, what: &str) -> Result<String> {
    nonnull(s, what)?;
    // SAFETY: the caller's contract.
    Ok(unsafe { CStr::from_ptr(s) }.to_string_lossy().into_owned())
}

/// A NULL-terminated `char *argv[]` (MPI_ARGV_NULL: none).
///
/// # Safety
/// `argv` is NULL or an array of strings ending with NULL.
unsafe fn argv_of(argv: *const *const c_char) -> Result<Vec<String>> {
    let mut v = Vec::new();
    if argv.is_null() {
        return Ok(v);
    }
    for i in 0.. {
        // SAFETY: the array ends with NULL, which stops the loop.
        let a = unsafe { *argv.add(i) };
        if a.is_null() {
            break;
        }
        // SAFETY: a non-NULL element is a NUL-terminated string.
        v.push(unsafe { string(a, "argv element")? });
    }
    Ok(v)
}

/// Writes a port or service name (at most MPI_MAX_PORT_NAME bytes with its NUL).
///
/// # Safety
/// `out` has MPI_MAX_PORT_NAME writable bytes.
unsafe fn write_name(out: *mut c_char, s: &str) {
    let n = s.len().min(MAX_PORT_NAME - 1);
    // SAFETY: the caller's contract; n + 1 <= MAX_PORT_NAME.
    unsafe {
        std::ptr::copy_nonoverlapping(s.as_ptr().cast(), out, n);
        *out.add(n) = 0;
    }
}

fn spawn_common(
    name: &str,
    comm: Handle,
    root: c_int,
    cmds: impl FnOnce() -> Result<Vec<SpawnCmd>>,
    intercomm: *mut Handle,
    errcodes: *mut c_int,
) -> c_int {
    super::comm::outside(name, comm_index(comm).unwrap_or(crate::comm::WORLD), || {
        let comm = comm_index(comm)?;
        nonnull(intercomm, "intercomm")?;
        // The arguments count at the root only.
        let is_root = runtime::with(|rt| Ok(rt.comm(comm)?.rank == root))?;
        let cmds = if is_root { cmds()? } else { Vec::new() };
        let (total, r) = dpm::spawn(comm, root, &cmds);
        let code = match &r {
            Ok(_) => MPI_SUCCESS,
            Err(e) => e.code(),
        };
        // Filled at every member, as MPICH and Open MPI do (mpi4py checks).
        if !errcodes.is_null() {
            for i in 0..total {
                // SAFETY: array_of_errcodes has maxprocs (summed, the root's) entries.
                unsafe { errcodes.add(i).write(code) };
            }
        }
        let id = r?;
        // SAFETY: checked non-NULL.
        unsafe { intercomm.write(comm_handle(id)) };
        Ok(())
    })
}

fn info_pairs(info: Handle) -> Result<Vec<(String, String)>> {
    let hints = super::info::hints(info)?;
    Ok(hints
        .entries()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect())
}

fn check_maxprocs(n: c_int) -> Result<()> {
    if n <= 0 {
        return Err(Error::new(
            ErrorClass::Spawn,
            format!("maxprocs {n} must be positive"),
        ));
    }
    Ok(())
}

mpi_fn! {
    fn MPI_Comm_spawn / PMPI_Comm_spawn(command: *const c_char, argv: *const *const c_char, maxprocs: c_int, info: Handle, root: c_int, comm: Handle, intercomm: *mut Handle, array_of_errcodes: *mut c_int) -> c_int {
        spawn_common("MPI_Comm_spawn", comm, root, || {
                check_maxprocs(maxprocs)?;
                Ok(vec![SpawnCmd {
                    // SAFETY: the standard's arguments, read at the root.
                    command: unsafe { string(command, "command")? },
                    // SAFETY: as above.
                    args: unsafe { argv_of(argv)? },
                    maxprocs,
                    info: info_pairs(info)?,
                }])
        }, intercomm, array_of_errcodes)
    }
}

mpi_fn! {
    fn MPI_Comm_spawn_multiple / PMPI_Comm_spawn_multiple(count: c_int, array_of_commands: *const *const c_char, array_of_argv: *const *const *const c_char, array_of_maxprocs: *const c_int, array_of_info: *const Handle, root: c_int, comm: Handle, intercomm: *mut Handle, array_of_errcodes: *mut c_int) -> c_int {
        spawn_common("MPI_Comm_spawn_multiple", comm, root, || {
                if count <= 0 {
                    return Err(Error::new(ErrorClass::Count, format!("count {count} must be positive")));
                }
                nonnull(array_of_commands, "array_of_commands")?;
                nonnull(array_of_maxprocs, "array_of_maxprocs")?;
                nonnull(array_of_info, "array_of_info")?;
                let mut cmds = Vec::new();
                for i in 0..count as usize {
                    // SAFETY: the arrays have `count` entries (MPI_ARGVS_NULL: no argv).
                    let (cmd, maxprocs, info) = unsafe { (*array_of_commands.add(i), *array_of_maxprocs.add(i), *array_of_info.add(i)) };
                    let argv = if array_of_argv.is_null() {
                        std::ptr::null()
                    } else {
                        // SAFETY: as above.
                        unsafe { *array_of_argv.add(i) }
                    };
                    check_maxprocs(maxprocs)?;
                    cmds.push(SpawnCmd {
                        // SAFETY: the standard's arguments.
                        command: unsafe { string(cmd, "command")? },
                        // SAFETY: as above.
                        args: unsafe { argv_of(argv)? },
                        maxprocs,
                        info: info_pairs(info)?,
                    });
                }
                Ok(cmds)
        }, intercomm, array_of_errcodes)
    }
}

mpi_fn! {
    fn MPI_Comm_get_parent / PMPI_Comm_get_parent(parent: *mut Handle) -> c_int {
        call("MPI_Comm_get_parent", crate::comm::WORLD, |rt| {
            nonnull(parent, "parent")?;
            let h = dpm::parent(rt).map_or(COMM_NULL as Handle, comm_handle);
            // SAFETY: checked non-NULL.
            unsafe { parent.write(h) };
            Ok(())
        })
    }
}

mpi_fn! {
    fn MPI_Open_port / PMPI_Open_port(info: Handle, port_name: *mut c_char) -> c_int {
        call("MPI_Open_port", crate::comm::WORLD, |_| {
            super::info::hints(info)?;
            nonnull(port_name, "port_name")?;
            let name = dpm::open_port()?;
            // SAFETY: port_name has MPI_MAX_PORT_NAME bytes.
            unsafe { write_name(port_name, &name) };
            Ok(())
        })
    }
}

mpi_fn! {
    fn MPI_Close_port / PMPI_Close_port(port_name: *const c_char) -> c_int {
        call("MPI_Close_port", crate::comm::WORLD, |_| {
            // SAFETY: a NUL-terminated string.
            let name = unsafe { string(port_name, "port_name")? };
            dpm::close_port(&name)
        })
    }
}

fn join_common(
    name: &str,
    port_name: *const c_char,
    info: Handle,
    root: c_int,
    comm: Handle,
    newcomm: *mut Handle,
    accept: bool,
) -> c_int {
    super::comm::outside(name, comm_index(comm).unwrap_or(crate::comm::WORLD), || {
        let c = comm_index(comm)?;
        nonnull(newcomm, "newcomm")?;
        let at_root = runtime::with(|rt| Ok(rt.comm(c)?.rank == root))?;
        let port = if at_root {
            super::info::hints(info)?;
            // SAFETY: significant at the root: a NUL-terminated string.
            unsafe { string(port_name, "port_name")? }
        } else {
            String::new()
        };
        let meet = if accept {
            Meet::Accept(&port)
        } else {
            Meet::Connect(&port)
        };
        let id = dpm::join(c, root, meet)?;
        // SAFETY: checked non-NULL.
        unsafe { newcomm.write(comm_handle(id)) };
        Ok(())
    })
}

mpi_fn! {
    fn MPI_Comm_accept / PMPI_Comm_accept(port_name: *const c_char, info: Handle, root: c_int, comm: Handle, newcomm: *mut Handle) -> c_int {
        join_common("MPI_Comm_accept", port_name, info, root, comm, newcomm, true)
    }
}

mpi_fn! {
    fn MPI_Comm_connect / PMPI_Comm_connect(port_name: *const c_char, info: Handle, root: c_int, comm: Handle, newcomm: *mut Handle) -> c_int {
        join_common("MPI_Comm_connect", port_name, info, root, comm, newcomm, false)
    }
}

/// A service or port name that fits on a PMI line.
fn plain(s: &str, what: &str, class: ErrorClass) -> Result<()> {
    if s.is_empty() || s.chars().any(|c| c.is_whitespace() || c == '=') {
        return Err(Error::new(
            class,
            format!("{what} \"{s}\" is empty or holds spaces or '='"),
        ));
    }
    Ok(())
}

fn launcher(rt: &mut Runtime) -> Result<&mut crate::pmi::Pmi> {
    rt.pmi_mut().ok_or_else(|| {
        Error::new(
            ErrorClass::Service,
            "the name service needs a launcher (run under mpirun)",
        )
    })
}

mpi_fn! {
    fn MPI_Publish_name / PMPI_Publish_name(service_name: *const c_char, info: Handle, port_name: *const c_char) -> c_int {
        call("MPI_Publish_name", crate::comm::WORLD, |rt| {
            super::info::hints(info)?;
            // SAFETY: NUL-terminated strings.
            let (s, p) = unsafe { (string(service_name, "service_name")?, string(port_name, "port_name")?) };
            plain(&s, "service name", ErrorClass::Service)?;
            plain(&p, "port name", ErrorClass::Port)?;
            launcher(rt)?.publish_name(&s, &p)
        })
    }
}

mpi_fn! {
    fn MPI_Unpublish_name / PMPI_Unpublish_name(service_name: *const c_char, info: Handle, port_name: *const c_char) -> c_int {
        call("MPI_Unpublish_name", crate::comm::WORLD, |rt| {
            super::info::hints(info)?;
            nonnull(port_name, "port_name")?;
            // SAFETY: a NUL-terminated string.
            let s = unsafe { string(service_name, "service_name")? };
            plain(&s, "service name", ErrorClass::Service)?;
            launcher(rt)?.unpublish_name(&s)
        })
    }
}

mpi_fn! {
    fn MPI_Lookup_name / PMPI_Lookup_name(service_name: *const c_char, info: Handle, port_name: *mut c_char) -> c_int {
        call("MPI_Lookup_name", crate::comm::WORLD, |rt| {
            super::info::hints(info)?;
            nonnull(port_name, "port_name")?;
            // SAFETY: a NUL-terminated string.
            let s = unsafe { string(service_name, "service_name")? };
            plain(&s, "service name", ErrorClass::Name)?;
            let p = launcher(rt)?.lookup_name(&s)?;
            // SAFETY: port_name has MPI_MAX_PORT_NAME bytes.
            unsafe { write_name(port_name, &p) };
            Ok(())
        })
    }
}

mpi_fn! {
    fn MPI_Comm_join / PMPI_Comm_join(fd: c_int, intercomm: *mut Handle) -> c_int {
        super::comm::outside("MPI_Comm_join", crate::comm::WORLD, || {
            nonnull(intercomm, "intercomm")?;
            let id = dpm::comm_join(fd)?;
            // SAFETY: checked non-NULL.
            unsafe { intercomm.write(comm_handle(id)) };
            Ok(())
        })
    }
}
