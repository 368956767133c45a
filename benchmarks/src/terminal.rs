//! Where a progress bar can be drawn. A rank's stderr is a pipe to mpirun, which forwards whole
//! lines only, so a bar (redrawn in place, no newline) never gets through. When the rank's parent
//! is mpirun and mpirun's stderr is a terminal, the bar is drawn on that terminal directly.

use std::fs::File;
use std::io::{self, IsTerminal, Write};
use std::path::PathBuf;
use std::sync::Mutex;

use indicatif::{ProgressDrawTarget, TermLike};

/// Where to draw, and whether result lines should go through the bar's terminal too (they do
/// when mpirun's stdout is that same terminal: printing them above the bar keeps both intact).
pub struct Target {
    pub draw: ProgressDrawTarget,
    pub lines_via_bar: bool,
}

/// The terminal the bar belongs on, if any: our own stderr, or mpirun's.
pub fn find() -> Option<Target> {
    if io::stderr().is_terminal() {
        return Some(Target {
            draw: ProgressDrawTarget::stderr(),
            lines_via_bar: io::stdout().is_terminal(),
        });
    }
    let parent = std::os::unix::process::parent_id();
    let comm = std::fs::read_to_string(format!("/proc/{parent}/comm")).ok()?;
    if comm.trim() != "mpirun" {
        return None;
    }
    let fd = |n: u32| std::fs::read_link(format!("/proc/{parent}/fd/{n}")).ok();
    let err: PathBuf = fd(2)?;
    let tty = err.to_str()?;
    if !(tty.starts_with("/dev/pts/") || tty.starts_with("/dev/tty")) {
        return None;
    }
    let file = std::fs::OpenOptions::new().write(true).open(&err).ok()?;
    if !file.is_terminal() {
        return None;
    }
    // indicatif pads lines to the exact width and lets the terminal wrap, so it must be right.
    let (rows, cols) = size(&err)?;
    Some(Target {
        draw: ProgressDrawTarget::term_like(Box::new(Tty {
            file: Mutex::new(file),
            rows,
            cols,
        })),
        lines_via_bar: fd(1).as_ref() == Some(&err),
    })
}

/// (rows, columns) of a terminal, asked of stty (no ioctl, so no unsafe code here).
fn size(tty: &std::path::Path) -> Option<(u16, u16)> {
    let out = std::process::Command::new("stty")
        .arg("-F")
        .arg(tty)
        .arg("size")
        .output()
        .ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    let mut it = text.split_whitespace().map(|v| v.parse::<u16>().ok());
    match (it.next()??, it.next()??) {
        (r, c) if r > 0 && c > 0 => Some((r, c)),
        _ => None,
    }
}

/// A terminal opened by path, driven with ANSI escapes.
#[derive(Debug)]
struct Tty {
    file: Mutex<File>,
    rows: u16,
    cols: u16,
}

impl Tty {
    fn put(&self, s: &str) -> io::Result<()> {
        let mut f = self
            .file
            .lock()
            .map_err(|_| io::Error::other("terminal lock poisoned"))?;
        f.write_all(s.as_bytes())
    }
}

impl TermLike for Tty {
    fn width(&self) -> u16 {
        self.cols
    }

    fn height(&self) -> u16 {
        self.rows
    }

    fn move_cursor_up(&self, n: usize) -> io::Result<()> {
        if n > 0 {
            self.put(&format!("\x1b[{n}A"))?;
        }
        Ok(())
    }

    fn move_cursor_down(&self, n: usize) -> io::Result<()> {
        if n > 0 {
            self.put(&format!("\x1b[{n}B"))?;
        }
        Ok(())
    }

    fn move_cursor_right(&self, n: usize) -> io::Result<()> {
        if n > 0 {
            self.put(&format!("\x1b[{n}C"))?;
        }
        Ok(())
    }

    fn move_cursor_left(&self, n: usize) -> io::Result<()> {
        if n > 0 {
            self.put(&format!("\x1b[{n}D"))?;
        }
        Ok(())
    }

    fn write_line(&self, s: &str) -> io::Result<()> {
        self.put(&format!("{s}\n"))
    }

    fn write_str(&self, s: &str) -> io::Result<()> {
        self.put(s)
    }

    fn clear_line(&self) -> io::Result<()> {
        self.put("\r\x1b[2K")
    }

    fn flush(&self) -> io::Result<()> {
        self.file
            .lock()
            .map_err(|_| io::Error::other("terminal lock poisoned"))?
            .flush()
    }
}
