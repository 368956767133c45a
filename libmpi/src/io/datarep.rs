//! Data representations: "native" and "internal" (the same bytes), "external32" (big-endian,
//! converted per element by `access` with `datatype::external32`; a view takes it for types
//! whose external32 size is their native size, so the view's layout is the same), and the ones
//! the program registers (MPI_Register_datarep). A registered representation without conversion functions
//! moves the bytes unchanged, as native; one with conversion functions is accepted by
//! registration but refused by a view (conversion is not implemented).

use std::sync::Mutex;

use crate::error::{err, ErrorClass, Result};

/// Registered names, and whether they came with conversion functions.
static REGISTERED: Mutex<Vec<(String, bool)>> = Mutex::new(Vec::new());

fn registered() -> std::sync::MutexGuard<'static, Vec<(String, bool)>> {
    REGISTERED.lock().unwrap_or_else(|p| p.into_inner())
}

/// MPI_Register_datarep.
pub fn register(name: &str, converts: bool) -> Result<()> {
    if name.is_empty() || name.len() > 127 {
        return err(
            ErrorClass::Arg,
            "a data representation name has 1 to 127 characters (MPI_MAX_DATAREP_STRING)",
        );
    }
    let mut r = registered();
    if matches!(name, "native" | "internal" | "external32") || r.iter().any(|(n, _)| n == name) {
        return err(
            ErrorClass::DupDatarep,
            format!("data representation {name:?} is defined already"),
        );
    }
    r.push((name.to_string(), converts));
    Ok(())
}

/// Whether a view may use `name`.
pub fn check(name: &str) -> Result<()> {
    match name {
        "native" | "internal" | "external32" => return Ok(()),
        _ => {}
    }
    match registered().iter().find(|(n, _)| n == name) {
        Some((_, false)) => Ok(()),
        Some((_, true)) => err(
            ErrorClass::UnsupportedDatarep,
            format!("data representation {name:?} has conversion functions, which rmpi does not call yet"),
        ),
        None => err(
            ErrorClass::UnsupportedDatarep,
            format!("unknown data representation {name:?}"),
        ),
    }
}
