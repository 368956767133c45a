//! bench-plot: latency and bandwidth versus message size (log-log) from the benchmarks' JSON
//! results (`--json`), several files overlaid with a legend, written as one SVG.

use std::path::PathBuf;
use std::process::ExitCode;

use benchmarks::plot::{svg, Panel, Series};
use clap::Parser;
use serde_json::Value;

#[derive(Parser)]
#[command(
    name = "bench-plot",
    about = "Plot latency and bandwidth versus size from benchmark JSON files as an SVG"
)]
struct Args {
    /// JSON result files (from osu-* --json, netpipe --json, bench-compare --json-dir)
    #[arg(required = true, value_name = "FILE")]
    files: Vec<PathBuf>,
    /// The SVG to write
    #[arg(short = 'o', long = "output", default_value = "bench.svg")]
    output: PathBuf,
}

/// (size, value) points of `key`, scaled, from a result document's rows.
fn points(doc: &Value, keys: &[(&str, f64)]) -> Vec<(f64, f64)> {
    let rows = doc["results"].as_array().map(Vec::as_slice).unwrap_or(&[]);
    rows.iter()
        .filter_map(|r| {
            let size = r["size"].as_f64()?;
            let v = keys
                .iter()
                .find_map(|(k, scale)| r[*k].as_f64().map(|v| v * scale))?;
            Some((size, v))
        })
        .collect()
}

fn run(args: &Args) -> Result<(), String> {
    let mut lat = Vec::new();
    let mut bw = Vec::new();
    let mut labels: Vec<String> = Vec::new();
    let mut impls: Vec<String> = Vec::new();
    for f in &args.files {
        let text =
            std::fs::read_to_string(f).map_err(|e| format!("cannot read {}: {e}", f.display()))?;
        let doc: Value = serde_json::from_str(&text)
            .map_err(|e| format!("{} is not benchmark JSON: {e}", f.display()))?;
        if !doc["results"].is_array() {
            return Err(format!(
                "{} has no \"results\" array (was it written with --json?)",
                f.display()
            ));
        }
        let s = |k: &str| doc[k].as_str().unwrap_or("").to_string();
        let mut label = match (doc["label"].as_str(), s("implementation"), s("benchmark")) {
            (Some(l), _, _) => l.to_string(),
            (None, i, b) if !i.is_empty() => format!("{i} {b}"),
            _ => f
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default(),
        };
        if labels.contains(&label) {
            label = format!("{label} [{}]", f.display());
        }
        labels.push(label.clone());
        // One colour per MPI; a second series of the same MPI in a panel is dashed.
        let who = match s("implementation") {
            i if i.is_empty() => label.clone(),
            i => i,
        };
        let color = match impls.iter().position(|i| *i == who) {
            Some(c) => c,
            None => {
                impls.push(who);
                impls.len() - 1
            }
        };
        let dashed = |v: &[Series]| v.iter().any(|s| s.color == color);
        let l = points(
            &doc,
            &[
                ("latency_us", 1.0),
                ("avg_latency_us", 1.0),
                ("time_us", 1.0),
            ],
        );
        let b = points(&doc, &[("bandwidth_mbs", 1.0), ("mbps", 1.0 / 8.0)]);
        if l.is_empty() && b.is_empty() {
            return Err(format!(
                "{} has no sized latency or bandwidth results to plot",
                f.display()
            ));
        }
        if !l.is_empty() {
            lat.push(Series {
                label: label.clone(),
                color,
                dashed: dashed(&lat),
                points: l,
            });
        }
        if !b.is_empty() {
            bw.push(Series {
                label,
                color,
                dashed: dashed(&bw),
                points: b,
            });
        }
    }
    let mut panels = Vec::new();
    if !lat.is_empty() {
        panels.push(Panel {
            title: "Latency".into(),
            y_label: "latency (µs)".into(),
            series: lat,
        });
    }
    if !bw.is_empty() {
        panels.push(Panel {
            title: "Bandwidth".into(),
            y_label: "bandwidth (MB/s)".into(),
            series: bw,
        });
    }
    std::fs::write(&args.output, svg(&panels))
        .map_err(|e| format!("cannot write {}: {e}", args.output.display()))
}

fn main() -> ExitCode {
    let args = Args::parse();
    match run(&args) {
        Ok(()) => {
            eprintln!("bench-plot: wrote {}", args.output.display());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("bench-plot: {e}");
            ExitCode::FAILURE
        }
    }
}
