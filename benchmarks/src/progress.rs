//! A progress bar that appears only once a run has lasted a couple of seconds, so quick runs stay
//! quiet, and only on a terminal (see `terminal`: under mpirun, mpirun's).

use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::terminal;

/// How long a run goes before its bar is drawn.
const SHOW_AFTER: Duration = Duration::from_secs(2);

pub struct Progress {
    bar: ProgressBar,
    start: Instant,
    /// Not yet looked for a terminal.
    pending: bool,
    /// Result lines are printed above the bar on its terminal rather than on stdout.
    lines_via_bar: bool,
}

impl Progress {
    /// A bar over `steps` steps (message sizes), hidden for now.
    pub fn new(name: &str, steps: usize) -> Progress {
        let bar = ProgressBar::with_draw_target(Some(steps as u64), ProgressDrawTarget::hidden());
        if let Ok(style) = ProgressStyle::with_template(
            "{prefix} [{elapsed_precise}] {wide_bar} {pos}/{len} {msg}",
        ) {
            bar.set_style(style);
        }
        bar.set_prefix(name.to_string());
        Progress {
            bar,
            start: Instant::now(),
            pending: true,
            lines_via_bar: false,
        }
    }

    /// Say what is running now (e.g. the message size), drawing the bar once the run is long.
    pub fn working_on(&mut self, what: impl Into<String>) {
        if self.pending && self.start.elapsed() >= SHOW_AFTER {
            self.pending = false;
            if let Some(t) = terminal::find() {
                self.bar.set_draw_target(t.draw);
                self.lines_via_bar = t.lines_via_bar;
            }
        }
        self.bar.set_message(what.into());
    }

    pub fn step(&self) {
        self.bar.inc(1);
    }

    /// Print a result line without tearing the bar.
    pub fn println(&self, line: &str) {
        if self.lines_via_bar {
            self.bar.println(line);
        } else {
            self.bar.suspend(|| println!("{line}"));
        }
    }

    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}
