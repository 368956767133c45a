//! The C interface's datatype handles: predefined ones are the ABI's values, derived ones are
//! `BASE + slot`. A slot holds an `Arc<Layout>`; operations in flight hold their own clone, so
//! MPI_Type_free while a send or receive is pending frees the handle at once and the layout
//! when the last operation completes.

use std::sync::{Arc, Mutex, MutexGuard};

use super::contents::{Contents, TypeArg};
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
    /// The constructor that made it (MPI_Type_get_contents); None for types the Rust API
    /// or internal code registered.
    contents: Option<Arc<Contents>>,
    /// Cached attributes: (keyval, value), in the order they were set.
    attrs: Vec<(i32, usize)>,
}

#[derive(Default)]
struct Table {
    slots: Vec<Option<Entry>>,
    free: Vec<usize>,
    /// Names given to predefined types with MPI_Type_set_name.
    renamed: Vec<(usize, String)>,
    /// Attributes cached on predefined types.
    predefined_attrs: Vec<(usize, Vec<(i32, usize)>)>,
}

static TABLE: Mutex<Table> = Mutex::new(Table {
    slots: Vec::new(),
    free: Vec::new(),
    renamed: Vec::new(),
    predefined_attrs: Vec::new(),
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
    insert_with(layout, None)
}

/// Register a new (uncommitted) type made by the constructor `contents` describes.
pub fn insert_with(layout: Arc<Layout>, contents: Option<Contents>) -> usize {
    let mut t = table();
    let e = Entry {
        layout,
        committed: false,
        name: String::new(),
        contents: contents.map(Arc::new),
        attrs: Vec::new(),
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
            // The handle may come back as another type: no cached schedule may use it.
            crate::handle_epoch::bump();
            Ok(())
        }
        _ => Err(invalid(h)),
    }
}

/// MPI_Type_dup: a new handle for the same layout, committed if the original was; its
/// contents say DUP of the original. (Attributes are copied by the caller, which runs the
/// keyvals' copy callbacks.)
pub fn dup(h: usize) -> Result<usize> {
    let arg = type_arg(h)?;
    let nh = insert_with(
        arg.layout.clone(),
        Some(Contents::new(
            super::contents::combiner::DUP,
            vec![],
            vec![],
            vec![arg.clone()],
        )),
    );
    if arg.committed {
        commit(nh)?;
    }
    Ok(nh)
}

/// A type as a constructor argument, kept alive with its own contents.
pub fn type_arg(h: usize) -> Result<TypeArg> {
    if super::lookup(h).is_some() {
        return Ok(TypeArg {
            handle: h,
            layout: layout(h)?,
            contents: None,
            committed: true,
        });
    }
    let t = table();
    match h.checked_sub(BASE).and_then(|i| t.slots.get(i)) {
        Some(Some(e)) => Ok(TypeArg {
            handle: h,
            layout: e.layout.clone(),
            contents: e.contents.clone(),
            committed: e.committed,
        }),
        _ => Err(invalid(h)),
    }
}

/// The recorded constructor of derived type `h` (None: predefined, or registered without).
pub fn contents(h: usize) -> Result<Option<Arc<Contents>>> {
    if super::lookup(h).is_some() {
        return Ok(None);
    }
    with_entry(h, |e| e.contents.clone())
}

/// A new handle for a type argument returned by MPI_Type_get_contents: predefined types are
/// returned as they are, derived ones as a new handle the caller frees.
pub fn handle_for(arg: &TypeArg) -> usize {
    if super::lookup(arg.handle).is_some() {
        return arg.handle;
    }
    let nh = insert_with(arg.layout.clone(), arg.contents.as_deref().cloned());
    if arg.committed {
        let _ = commit(nh);
    }
    nh
}

/// Run `f` on the attribute list of derived type `h`; predefined types keep theirs in a
/// list of their own.
pub fn with_attrs<R>(h: usize, f: impl FnOnce(&mut Vec<(i32, usize)>) -> R) -> Result<R> {
    if super::lookup(h).is_some() {
        let mut t = table();
        let i = match t.predefined_attrs.iter().position(|(k, _)| *k == h) {
            Some(i) => i,
            None => {
                t.predefined_attrs.push((h, Vec::new()));
                t.predefined_attrs.len() - 1
            }
        };
        return Ok(f(&mut t.predefined_attrs[i].1));
    }
    with_entry(h, |e| f(&mut e.attrs))
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
