//! A progress bar on stderr that appears only once a run has lasted a couple of seconds, so quick
//! runs stay quiet; indicatif hides it when stderr is not a terminal.

use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// How long a run goes before its bar is drawn.
const SHOW_AFTER: Duration = Duration::from_secs(2);

pub struct Progress {
    bar: ProgressBar,
    start: Instant,
    shown: bool,
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
            shown: false,
        }
    }

    /// Say what is running now (e.g. the message size), drawing the bar once the run is long.
    pub fn working_on(&mut self, what: impl Into<String>) {
        if !self.shown && self.start.elapsed() >= SHOW_AFTER {
            self.bar.set_draw_target(ProgressDrawTarget::stderr());
            self.shown = true;
        }
        self.bar.set_message(what.into());
    }

    pub fn step(&self) {
        self.bar.inc(1);
    }

    /// Print a line on stdout without tearing the bar.
    pub fn println(&self, line: &str) {
        self.bar.suspend(|| println!("{line}"));
    }

    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}
