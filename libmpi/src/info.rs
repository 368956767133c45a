//! Info objects: ordered (key, value) string pairs, and the process-wide table the C handles
//! index into.
//!
//! The table is not part of the runtime: the standard lets MPI_Info_* be called before MPI_Init
//! and after MPI_Finalize, so it lives in a static of its own (lock order: the runtime, then
//! this table; nothing here calls back into the runtime).

use std::sync::Mutex;

use crate::error::{err, Error, ErrorClass, Result};

/// Longest key, in bytes (MPI_MAX_INFO_KEY, 256 in the ABI, counts the NUL).
pub const MAX_KEY: usize = 255;
/// Longest value, in bytes (MPI_MAX_INFO_VAL, 1024 in the ABI, counts the NUL).
pub const MAX_VAL: usize = 1023;

/// An info object: keys in the order they were first set (MPI_Info_get_nthkey's order).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Info {
    entries: Vec<(String, String)>,
}

fn check_key(key: &str) -> Result<()> {
    if key.is_empty() {
        return err(ErrorClass::InfoKey, "the info key is empty");
    }
    if key.len() > MAX_KEY {
        return err(
            ErrorClass::InfoKey,
            format!("info key of {} bytes is longer than {MAX_KEY}", key.len()),
        );
    }
    Ok(())
}

impl Info {
    pub fn new() -> Info {
        Info::default()
    }

    /// Set `key` to `value`: a new key goes last, an existing one keeps its place.
    pub fn set(&mut self, key: &str, value: &str) -> Result<()> {
        check_key(key)?;
        if value.len() > MAX_VAL {
            return err(
                ErrorClass::InfoValue,
                format!(
                    "info value of {} bytes is longer than {MAX_VAL}",
                    value.len()
                ),
            );
        }
        match self.entries.iter_mut().find(|(k, _)| k == key) {
            Some(e) => e.1 = value.to_string(),
            None => self.entries.push((key.to_string(), value.to_string())),
        }
        Ok(())
    }

    /// The value of `key`, None when it is not set (an invalid key is an error).
    pub fn get(&self, key: &str) -> Result<Option<&str>> {
        check_key(key)?;
        Ok(self
            .entries
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str()))
    }

    pub fn delete(&mut self, key: &str) -> Result<()> {
        check_key(key)?;
        match self.entries.iter().position(|(k, _)| k == key) {
            Some(i) => {
                self.entries.remove(i);
                Ok(())
            }
            None => err(ErrorClass::InfoNokey, format!("no key {key:?} in the info")),
        }
    }

    pub fn nkeys(&self) -> usize {
        self.entries.len()
    }

    /// The `n`th key (0-based, in insertion order).
    pub fn nthkey(&self, n: i32) -> Result<&str> {
        match usize::try_from(n).ok().and_then(|i| self.entries.get(i)) {
            Some((k, _)) => Ok(k),
            None => err(
                ErrorClass::Arg,
                format!(
                    "key number {n} is out of range (the info has {} keys)",
                    self.nkeys()
                ),
            ),
        }
    }

    /// Every (key, value), in order.
    pub fn entries(&self) -> impl Iterator<Item = (&str, &str)> {
        self.entries.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// Set every entry of `other` here (MPI_Comm_set_info: hints not named keep their values).
    pub fn merge(&mut self, other: &Info) {
        for (k, v) in other.entries() {
            // Both already checked when they were set.
            let _ = self.set(k, v);
        }
    }

    /// The environment info (MPI_INFO_ENV, MPI_Info_create_env): what this process was started
    /// with. `args` is argv (command first) when the caller knows it, else /proc/self/cmdline.
    pub fn env(args: Option<Vec<String>>) -> Info {
        let args = args.unwrap_or_else(|| {
            std::fs::read("/proc/self/cmdline")
                .map(|b| {
                    b.split(|&c| c == 0)
                        .filter(|s| !s.is_empty())
                        .map(|s| String::from_utf8_lossy(s).into_owned())
                        .collect()
                })
                .unwrap_or_default()
        });
        let mut info = Info::new();
        let mut put = |k: &str, mut v: String| {
            while v.len() > MAX_VAL {
                v.pop();
            }
            let _ = info.set(k, &v);
        };
        if let Some(cmd) = args.first() {
            put("command", cmd.clone());
        }
        if args.len() > 1 {
            put("argv", args[1..].join(" "));
        }
        // The launcher's job size: what mpirun -np asked for (1 for a singleton).
        let size = std::env::var("PMI_SIZE").unwrap_or_else(|_| "1".into());
        put("maxprocs", size.clone());
        put("soft", size);
        if let Some(h) = hostname() {
            put("host", h);
        }
        put("arch", std::env::consts::ARCH.to_string());
        if let Ok(d) = std::env::current_dir() {
            put("wdir", d.to_string_lossy().into_owned());
        }
        // The level the runtime provides, once it runs (before: what MPI_Init gives).
        let level = match crate::runtime::is_initialized().then(crate::runtime::level) {
            Some(crate::runtime::Level::Multiple) => "MPI_THREAD_MULTIPLE",
            Some(crate::runtime::Level::Serialized) => "MPI_THREAD_SERIALIZED",
            _ => "MPI_THREAD_FUNNELED",
        };
        put("thread_level", level.into());
        info
    }
}

fn hostname() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

/// The table of user info objects: a slot per live object, reused once freed.
static TABLE: Mutex<Vec<Option<Info>>> = Mutex::new(Vec::new());
/// MPI_INFO_ENV, made at its first use.
static ENV: Mutex<Option<Info>> = Mutex::new(None);

fn table() -> std::sync::MutexGuard<'static, Vec<Option<Info>>> {
    // A panic while holding it leaves plain data behind: still usable.
    TABLE.lock().unwrap_or_else(|p| p.into_inner())
}

/// Store `info`, returning its slot.
pub fn add(info: Info) -> usize {
    let mut t = table();
    match t.iter().position(Option::is_none) {
        Some(i) => {
            t[i] = Some(info);
            i
        }
        None => {
            t.push(Some(info));
            t.len() - 1
        }
    }
}

fn invalid(slot: usize) -> Error {
    Error::new(
        ErrorClass::Info,
        format!("info object {slot} is not valid (freed or never created)"),
    )
}

/// Run `f` on the object in `slot`.
pub fn with<R>(slot: usize, f: impl FnOnce(&mut Info) -> Result<R>) -> Result<R> {
    match table().get_mut(slot) {
        Some(Some(info)) => f(info),
        _ => Err(invalid(slot)),
    }
}

/// A copy of the object in `slot`.
pub fn get(slot: usize) -> Result<Info> {
    with(slot, |i| Ok(i.clone()))
}

pub fn free(slot: usize) -> Result<()> {
    match table().get_mut(slot) {
        Some(s @ Some(_)) => {
            *s = None;
            Ok(())
        }
        _ => Err(invalid(slot)),
    }
}

/// MPI_INFO_ENV's contents.
pub fn env() -> Info {
    ENV.lock()
        .unwrap_or_else(|p| p.into_inner())
        .get_or_insert_with(|| Info::env(None))
        .clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordered_keys_and_limits() {
        let mut i = Info::new();
        i.set("b", "1").unwrap();
        i.set("a", "2").unwrap();
        i.set("b", "3").unwrap();
        assert_eq!(i.nkeys(), 2);
        assert_eq!(i.nthkey(0).unwrap(), "b");
        assert_eq!(i.nthkey(1).unwrap(), "a");
        assert_eq!(i.get("b").unwrap(), Some("3"));
        assert_eq!(i.nthkey(2).unwrap_err().class, ErrorClass::Arg);
        assert_eq!(i.nthkey(-1).unwrap_err().class, ErrorClass::Arg);
        assert_eq!(i.set("", "x").unwrap_err().class, ErrorClass::InfoKey);
        let long_key = "k".repeat(MAX_KEY + 1);
        assert_eq!(
            i.set(&long_key, "x").unwrap_err().class,
            ErrorClass::InfoKey
        );
        assert_eq!(i.get(&long_key).unwrap_err().class, ErrorClass::InfoKey);
        i.set(&"k".repeat(MAX_KEY), &"v".repeat(MAX_VAL)).unwrap();
        let long_val = "v".repeat(MAX_VAL + 1);
        assert_eq!(
            i.set("c", &long_val).unwrap_err().class,
            ErrorClass::InfoValue
        );
        assert_eq!(i.delete("zz").unwrap_err().class, ErrorClass::InfoNokey);
        i.delete("b").unwrap();
        assert_eq!(i.nthkey(0).unwrap(), "a");
        assert_eq!(i.get("b").unwrap(), None);
    }

    #[test]
    fn table_slots() {
        let a = add(Info::new());
        with(a, |i| i.set("x", "y")).unwrap();
        assert_eq!(get(a).unwrap().get("x").unwrap(), Some("y"));
        free(a).unwrap();
        assert_eq!(free(a).unwrap_err().class, ErrorClass::Info);
        assert_eq!(get(a).unwrap_err().class, ErrorClass::Info);
    }

    #[test]
    fn env_info() {
        let e = Info::env(Some(vec!["prog".into(), "-x".into(), "y".into()]));
        assert_eq!(e.get("command").unwrap(), Some("prog"));
        assert_eq!(e.get("argv").unwrap(), Some("-x y"));
        assert!(e.get("maxprocs").unwrap().is_some());
        assert!(e.get("wdir").unwrap().is_some());
    }
}
