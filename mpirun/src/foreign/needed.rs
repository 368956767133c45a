//! The libraries an ELF program needs: its DT_NEEDED entries, read with the `object` crate
//! through a read cache, so only the headers, the dynamic section and its strings are read.

use std::fs::File;
use std::path::Path;

use object::elf::{FileHeader32, FileHeader64, DT_NEEDED};
use object::read::elf::{Dyn, FileHeader};
use object::{Endianness, FileKind, ReadCache, ReadRef};

/// The DT_NEEDED entries of `path`; `None` when it is not an ELF file that can be read (a
/// script, no read permission, a damaged file): such a program is run without judging it.
/// Only the dynamic section is looked at, so a stripped section table reads as needing nothing.
pub fn needed(path: &Path) -> Option<Vec<String>> {
    let file = File::open(path).ok()?;
    let data = ReadCache::new(file);
    match FileKind::parse(&data).ok()? {
        FileKind::Elf32 => needed_of::<FileHeader32<Endianness>, _>(&data).ok(),
        FileKind::Elf64 => needed_of::<FileHeader64<Endianness>, _>(&data).ok(),
        _ => None,
    }
}

fn needed_of<'data, Elf, R>(data: R) -> object::read::Result<Vec<String>>
where
    Elf: FileHeader<Endian = Endianness>,
    R: ReadRef<'data>,
{
    let header = Elf::parse(data)?;
    let endian = header.endian()?;
    let sections = header.sections(endian, data)?;
    let Some((entries, strtab)) = sections.dynamic(endian, data)? else {
        return Ok(Vec::new()); // static
    };
    let strings = sections.strings(endian, data, strtab)?;
    let mut names = Vec::new();
    for entry in entries {
        if entry.tag32(endian) == Some(DT_NEEDED) {
            let name = entry.string(endian, strings)?;
            names.push(String::from_utf8_lossy(name).into_owned());
        }
    }
    Ok(names)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dynamic_executable_needs_libc() {
        let exe = std::env::current_exe().unwrap();
        let names = needed(&exe).expect("this test binary is ELF");
        assert!(names.iter().any(|n| n.starts_with("libc.so")), "{names:?}");
        assert!(super::super::classify(names.iter().map(String::as_str), false).is_none());
    }

    #[test]
    fn not_elf() {
        let d = std::env::temp_dir().join(format!("mpirun-needed-{}", std::process::id()));
        std::fs::write(&d, "#!/bin/sh\necho hi\n").unwrap();
        assert_eq!(needed(&d), None);
        std::fs::write(&d, b"\x7fELF").unwrap(); // too short to be one
        assert_eq!(needed(&d), None);
        std::fs::remove_file(&d).unwrap();
        assert_eq!(needed(&d), None);
    }
}
