//! The cache-line probe (benchmarks/c/line_probe.c) and the machine states it tells apart.
//!
//! On a VM whose vCPUs the host moves between cores, moving one cache line between CPU 0 and
//! CPU 1 takes about 30, 55, 110 or 270 ns one way depending on where they sit, and that sets the
//! cost of every shared-memory message. A figure measured in one state says nothing about another,
//! so bench-compare --osu probes before and after each run and reports per state.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The probe's C source, built with the system C compiler (no MPI involved).
pub const SOURCE: &str = include_str!("../c/line_probe.c");

/// Below this one-way time (ns) the machine is in the fast state.
pub const FAST_BELOW_NS: f64 = 120.0;
/// Above this one-way time (ns) it is in the slow state; between the two, middle.
pub const SLOW_ABOVE_NS: f64 = 200.0;

/// How long one probe may take before it counts as failed.
const PROBE_TIMEOUT: Duration = Duration::from_secs(40);

/// Where the line transfer put the machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum State {
    Fast,
    Middle,
    Slow,
}

impl State {
    pub const ALL: [State; 3] = [State::Fast, State::Middle, State::Slow];

    /// The state one probe reading (one-way ns) falls in.
    pub fn of(ns: f64) -> State {
        if ns < FAST_BELOW_NS {
            State::Fast
        } else if ns > SLOW_ABOVE_NS {
            State::Slow
        } else {
            State::Middle
        }
    }

    /// The state of a run probed before and after: None ("mixed") when the two differ.
    pub fn of_run(before: f64, after: f64) -> Option<State> {
        let s = State::of(before);
        (State::of(after) == s).then_some(s)
    }

    pub fn name(self) -> &'static str {
        match self {
            State::Fast => "fast",
            State::Middle => "middle",
            State::Slow => "slow",
        }
    }

    /// The name with its bounds, for headings.
    pub fn describe(self) -> String {
        match self {
            State::Fast => format!("fast (probe < {FAST_BELOW_NS} ns)"),
            State::Middle => format!("middle (probe {FAST_BELOW_NS}-{SLOW_ABOVE_NS} ns)"),
            State::Slow => format!("slow (probe > {SLOW_ABOVE_NS} ns)"),
        }
    }
}

/// The name of a run's state: its state's, or "mixed".
pub fn run_state_name(before: f64, after: f64) -> &'static str {
    State::of_run(before, after).map_or("mixed", State::name)
}

/// What the probe printed: one-way ns of its fastest trial (the line transfer, which names the
/// state) and of its median trial (which grows when other processes take the CPUs).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Reading {
    pub ns: f64,
    pub median_ns: f64,
}

impl Reading {
    /// "MIN MEDIAN" (both positive).
    pub fn parse(text: &str) -> Option<Reading> {
        let mut it = text.split_whitespace().map(|w| w.parse::<f64>().ok());
        let (ns, median_ns) = (it.next()??, it.next()??);
        let ok = |v: f64| v.is_finite() && v > 0.0;
        (ok(ns) && ok(median_ns) && it.next().is_none()).then_some(Reading { ns, median_ns })
    }
}

/// The built probe.
pub struct Probe {
    pub exe: PathBuf,
}

impl Probe {
    /// Build the probe in `dir` with `$CC` (default `cc`), unless the same source is built there.
    pub fn build(dir: &Path) -> Result<Probe, String> {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let src = dir.join("line_probe.c");
        let exe = dir.join("line_probe");
        let same = std::fs::read_to_string(&src).is_ok_and(|s| s == SOURCE);
        if same && exe.is_file() {
            return Ok(Probe { exe });
        }
        let _ = std::fs::remove_file(&exe);
        std::fs::write(&src, SOURCE).map_err(|e| format!("cannot write {}: {e}", src.display()))?;
        let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
        let out = Command::new(&cc)
            .args(["-O2", "-o"])
            .arg(&exe)
            .arg(&src)
            .output()
            .map_err(|e| format!("cannot run {cc} to build the line probe: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "{cc} failed on {}:\n{}",
                src.display(),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        Ok(Probe { exe })
    }

    /// One reading between CPU 0 and CPU 1.
    pub fn measure(&self) -> Result<Reading, String> {
        let mut child = Command::new(&self.exe)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", self.exe.display()))?;
        let deadline = Instant::now() + PROBE_TIMEOUT;
        while child.try_wait().map_err(|e| e.to_string())?.is_none() {
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "the line probe ran past {} s",
                    PROBE_TIMEOUT.as_secs()
                ));
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let out = child.wait_with_output().map_err(|e| e.to_string())?;
        let text = String::from_utf8_lossy(&out.stdout);
        match Reading::parse(&text) {
            Some(r) if out.status.success() => Ok(r),
            _ => Err(format!(
                "the line probe failed ({}): {}{}",
                out.status,
                text.trim(),
                String::from_utf8_lossy(&out.stderr).trim()
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states() {
        assert_eq!(State::of(30.0), State::Fast);
        assert_eq!(State::of(110.0), State::Fast);
        assert_eq!(State::of(119.9), State::Fast);
        assert_eq!(State::of(120.0), State::Middle);
        assert_eq!(State::of(200.0), State::Middle);
        assert_eq!(State::of(200.1), State::Slow);
        assert_eq!(State::of(270.0), State::Slow);
    }

    #[test]
    fn a_run_keeps_its_state_only_when_both_probes_agree() {
        assert_eq!(State::of_run(30.0, 55.0), Some(State::Fast));
        assert_eq!(State::of_run(150.0, 180.0), Some(State::Middle));
        assert_eq!(State::of_run(270.0, 260.0), Some(State::Slow));
        assert_eq!(State::of_run(55.0, 270.0), None);
        assert_eq!(State::of_run(130.0, 110.0), None);
        assert_eq!(run_state_name(55.0, 270.0), "mixed");
        assert_eq!(run_state_name(55.0, 56.0), "fast");
    }

    #[test]
    fn readings() {
        assert_eq!(
            Reading::parse("157.7 165.2\n"),
            Some(Reading {
                ns: 157.7,
                median_ns: 165.2
            })
        );
        assert_eq!(Reading::parse("157.7\n"), None);
        assert_eq!(Reading::parse("0 1\n"), None);
        assert_eq!(Reading::parse("1 2 3\n"), None);
        assert_eq!(Reading::parse("x 2\n"), None);
    }

    #[test]
    fn headings_name_the_bounds() {
        assert_eq!(State::Fast.describe(), "fast (probe < 120 ns)");
        assert_eq!(State::Middle.describe(), "middle (probe 120-200 ns)");
        assert_eq!(State::Slow.describe(), "slow (probe > 200 ns)");
    }
}
