//! The C interface's datatype handles: predefined ones are the ABI's values, derived ones are
//! `BASE + slot`. A slot holds an `Arc<Layout>`; operations in flight hold their own clone, so
//! MPI_Type_free while a send or receive is pending frees the handle at once and the layout
//! when the last operation completes.

use std::sync::{Arc, Mutex, MutexGuard};

use super::layout::Layout;
use crate::error::{err, ErrorClass, Result};

/// First derived-datatype handle: above every ABI constant and clear of the request and
/// communicator handles, so a handle of the wrong kind is not silently taken for a type.
pub const BASE: usize = 0x1000_0000;
pub const DATATYPE_NULL: usize = 0x200;

struct Entry {
    layout: Arc<Layout>,
    committed: bool,
    name: String,
}

#[derive(Default)]
struct Table {
    slots: Vec<Option<Entry>>,
    free: Vec<usize>,
    /// Names given to predefined types with MPI_Type_set_name.
    renamed: Vec<(usize, String)>,
}

static TABLE: Mutex<Table> = Mutex::new(Table {
    slots: Vec::new(),
    free: Vec::new(),
    renamed: Vec::new(),
});

fn table() -> MutexGuard<'static, Table> {
    // A panic while holding the lock leaves the table consistent (every update is one step).
    TABLE.lock().unwrap_or_else(|p| p.into_inner())
}

fn invalid(h: usize) -> crate::error::Error {
    if h == DATATYPE_NULL {
        crate::error::Error::new(
            ErrorClass::Type,
            "MPI_DATATYPE_NULL is not a valid datatype here",
        )
    } else {
        crate::error::Error::new(ErrorClass::Type, format!("{h:#x} is not a valid datatype"))
    }
}

/// A type as a constructor argument: its layout, committed or not.
pub fn layout(h: usize) -> Result<Arc<Layout>> {
    if let Some(d) = super::lookup(h) {
        return Ok(Arc::new(Layout::predefined(h, d.size)));
    }
    let t = table();
    match h.checked_sub(BASE).and_then(|i| t.slots.get(i)) {
        Some(Some(e)) => Ok(e.layout.clone()),
        _ => Err(invalid(h)),
    }
}

/// A derived type for communication: it must be committed.
pub fn committed(h: usize) -> Result<Arc<Layout>> {
    let t = table();
    match h.checked_sub(BASE).and_then(|i| t.slots.get(i)) {
        Some(Some(e)) if e.committed => Ok(e.layout.clone()),
        Some(Some(e)) => err(
            ErrorClass::Type,
            format!("datatype {h:#x} ({}) is not committed", e.name_or_default()),
        ),
        _ => Err(invalid(h)),
    }
}

impl Entry {
    fn name_or_default(&self) -> &str {
        if self.name.is_empty() {
            "unnamed"
        } else {
            &self.name
        }
    }
}

/// Register a new (uncommitted) type and return its handle.
pub fn insert(layout: Arc<Layout>) -> usize {
    let mut t = table();
    let e = Entry {
        layout,
        committed: false,
        name: String::new(),
    };
    let i = match t.free.pop() {
        Some(i) => {
            t.slots[i] = Some(e);
            i
        }
        None => {
            t.slots.push(Some(e));
            t.slots.len() - 1
        }
    };
    BASE + i
}

fn with_entry<R>(h: usize, f: impl FnOnce(&mut Entry) -> R) -> Result<R> {
    let mut t = table();
    match h.checked_sub(BASE).and_then(|i| t.slots.get_mut(i)) {
        Some(Some(e)) => Ok(f(e)),
        _ => Err(invalid(h)),
    }
}

pub fn commit(h: usize) -> Result<()> {
    if super::lookup(h).is_some() {
        return Ok(());
    }
    with_entry(h, |e| e.committed = true)
}

/// Release a derived type's handle (pending operations keep their own reference).
pub fn free(h: usize) -> Result<()> {
    if super::lookup(h).is_some() {
        return err(ErrorClass::Type, "a predefined datatype cannot be freed");
    }
    let mut t = table();
    match h.checked_sub(BASE) {
        Some(i) if matches!(t.slots.get(i), Some(Some(_))) => {
            t.slots[i] = None;
            t.free.push(i);
            Ok(())
        }
        _ => Err(invalid(h)),
    }
}

/// MPI_Type_dup: a new handle for the same layout, committed if the original was.
pub fn dup(h: usize) -> Result<usize> {
    let committed = super::lookup(h).is_some() || with_entry(h, |e| e.committed)?;
    let nh = insert(layout(h)?);
    if committed {
        commit(nh)?;
    }
    Ok(nh)
}

pub fn name(h: usize) -> Result<String> {
    if let Some(n) = super::name(h) {
        let t = table();
        let renamed = t.renamed.iter().find(|(k, _)| *k == h);
        return Ok(renamed.map_or(n.to_string(), |(_, s)| s.clone()));
    }
    with_entry(h, |e| e.name.clone())
}

pub fn set_name(h: usize, name: &str) -> Result<()> {
    if super::name(h).is_some() {
        let mut t = table();
        t.renamed.retain(|(k, _)| *k != h);
        t.renamed.push((h, name.to_string()));
        return Ok(());
    }
    with_entry(h, |e| e.name = name.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lifecycle() {
        let h = insert(Arc::new(Layout::basic(4, 4)));
        assert!(h >= BASE);
        assert_eq!(committed(h).unwrap_err().class, ErrorClass::Type);
        commit(h).unwrap();
        let held = committed(h).unwrap();
        let d = dup(h).unwrap();
        assert!(committed(d).is_ok());
        free(h).unwrap();
        assert_eq!(free(h).unwrap_err().class, ErrorClass::Type);
        assert_eq!(held.size(), 4, "a freed type stays alive while in use");
        assert!(layout(h).is_err());
        free(d).unwrap();
        assert_eq!(free(0x209).unwrap_err().class, ErrorClass::Type);
        assert_eq!(layout(DATATYPE_NULL).unwrap_err().class, ErrorClass::Type);
        set_name(0x209, "my int").unwrap();
        assert_eq!(name(0x209).unwrap(), "my int");
        assert_eq!(name(0x214).unwrap(), "MPI_DOUBLE");
    }
}
