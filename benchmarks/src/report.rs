//! Results as OSU's text (printed as each size completes) or as JSON (printed at the end), with a
//! progress bar on stderr. Only rank 0 holds a `Report`.

use serde_json::{json, Map, Value};

use crate::progress::Progress;

/// One result column: its JSON key, OSU's text header and decimals.
#[derive(Clone, Copy, Debug)]
pub struct Column {
    pub key: &'static str,
    pub header: &'static str,
    pub decimals: usize,
}

pub const LATENCY_US: Column = Column {
    key: "latency_us",
    header: "Latency (us)",
    decimals: 2,
};
pub const BANDWIDTH_MBS: Column = Column {
    key: "bandwidth_mbs",
    header: "Bandwidth (MB/s)",
    decimals: 2,
};
pub const AVG_US: Column = Column {
    key: "avg_latency_us",
    header: "Avg Latency(us)",
    decimals: 2,
};
pub const MIN_US: Column = Column {
    key: "min_latency_us",
    header: "Min Latency(us)",
    decimals: 2,
};
pub const MAX_US: Column = Column {
    key: "max_latency_us",
    header: "Max Latency(us)",
    decimals: 2,
};
pub const ITERATIONS: Column = Column {
    key: "iterations",
    header: "Iterations",
    decimals: 0,
};

pub struct Report {
    name: String,
    title: String,
    columns: Vec<Column>,
    /// How many of `columns` the text shows (all unless `brief_text`); the JSON has all.
    text_columns: usize,
    sized: bool,
    json: bool,
    ranks: i32,
    parameters: Map<String, Value>,
    rows: Vec<Value>,
    progress: Progress,
}

impl Report {
    /// `title` is OSU's first line (e.g. "# OSU MPI Bandwidth Test"); `steps` sizes will follow.
    /// `sized`: rows carry a message size (all but osu-barrier).
    pub fn new(
        name: &str,
        title: &str,
        columns: &[Column],
        sized: bool,
        json: bool,
        ranks: i32,
        steps: usize,
    ) -> Report {
        Report {
            name: name.into(),
            title: title.into(),
            columns: columns.to_vec(),
            text_columns: columns.len(),
            sized,
            json,
            ranks,
            parameters: Map::new(),
            rows: Vec::new(),
            progress: Progress::new(name, steps),
        }
    }

    /// A test parameter: printed as `# [ key: value ]` under the title, kept in the JSON.
    pub fn parameter(&mut self, key: &str, value: impl Into<Value>) {
        self.parameters.insert(key.into(), value.into());
    }

    /// Show only the first `n` columns in the text (OSU's collectives without -f).
    pub fn brief_text(&mut self, n: usize) {
        self.text_columns = n.min(self.columns.len());
    }

    /// Print the title, parameters and column headers (text mode).
    pub fn start(&self) {
        if self.json {
            return;
        }
        println!("{} (rmpi)", self.title);
        if !self.parameters.is_empty() {
            let p: Vec<String> = self
                .parameters
                .iter()
                .map(|(k, v)| format!("[ {}: {} ]", k.replace('_', " "), plain(v)))
                .collect();
            println!("# {}", p.join(" "));
        }
        let mut line = if self.sized {
            format!("{:<10}", "# Size")
        } else {
            "#".to_string()
        };
        for c in &self.columns[..self.text_columns] {
            line += &format!("{:>20}", c.header);
        }
        println!("{line}");
    }

    /// The size now being measured, for the progress bar.
    pub fn working_on(&mut self, size: usize) {
        self.progress.working_on(format!("{size} B"));
    }

    /// One result row: the size (None for osu-barrier) and a value per column.
    pub fn row(&mut self, size: Option<usize>, values: &[f64]) {
        let mut obj = Map::new();
        let mut line = match size {
            Some(s) => {
                obj.insert("size".into(), json!(s));
                format!("{s:<10}")
            }
            None => " ".to_string(),
        };
        for (i, (c, v)) in self.columns.iter().zip(values).enumerate() {
            obj.insert(
                c.key.into(),
                if c.decimals == 0 {
                    json!(*v as u64)
                } else {
                    json!(v)
                },
            );
            if i < self.text_columns {
                line += &format!("{:>20.*}", c.decimals, v);
            }
        }
        self.rows.push(Value::Object(obj));
        if !self.json {
            self.progress.println(&line);
        }
        self.progress.step();
    }

    /// Print the JSON document (JSON mode) and clear the bar.
    pub fn finish(self) {
        self.progress.finish();
        if self.json {
            let doc = json!({
                "benchmark": self.name,
                "title": self.title.trim_start_matches("# "),
                "implementation": "rmpi",
                "ranks": self.ranks,
                "parameters": Value::Object(self.parameters),
                "results": self.rows,
            });
            println!(
                "{}",
                serde_json::to_string_pretty(&doc).expect("a JSON value serialises")
            );
        }
    }
}

/// A JSON value as text without quotes around strings.
fn plain(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}
