//! A log-log line chart as a standalone SVG (hand-written: a few dozen elements need no crate).
//! Panels side by side, one line per series, a shared legend per panel.

use std::fmt::Write;

pub struct Series {
    pub label: String,
    /// Index into the palette, so one source keeps its colour across panels.
    pub color: usize,
    /// Drawn dashed (a second series from the same source in one panel).
    pub dashed: bool,
    /// (x, y), both > 0 (log axes); others are dropped.
    pub points: Vec<(f64, f64)>,
}

pub struct Panel {
    pub title: String,
    pub y_label: String,
    pub series: Vec<Series>,
}

const W: f64 = 560.0;
const H: f64 = 420.0;
const LEFT: f64 = 78.0;
const RIGHT: f64 = 20.0;
const TOP: f64 = 40.0;
const BOTTOM: f64 = 56.0;
const COLORS: [&str; 8] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf",
];

/// Escape text for SVG.
fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A byte count as 1 B, 4 KiB, 16 MiB.
pub fn bytes_label(b: f64) -> String {
    let b = b.round() as u64;
    match b {
        _ if b >= 1 << 30 && b % (1 << 30) == 0 => format!("{} GiB", b >> 30),
        _ if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{} MiB", b >> 20),
        _ if b >= 1 << 10 && b % (1 << 10) == 0 => format!("{} KiB", b >> 10),
        _ => format!("{b} B"),
    }
}

/// A power of ten as 0.01, 1, 1000000, 1e7.
fn decade_label(v: f64) -> String {
    if (1e-3..1e7).contains(&v) {
        format!("{v}")
    } else {
        format!("{v:e}")
    }
}

/// log2 range of x and log10 range of y covering every point, widened to whole ticks.
fn bounds(p: &Panel) -> Option<((f64, f64), (f64, f64))> {
    let pts = p.series.iter().flat_map(|s| s.points.iter());
    let (mut x0, mut x1, mut y0, mut y1) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
    for &(x, y) in pts.filter(|&&(x, y)| x > 0.0 && y > 0.0) {
        x0 = x0.min(x.log2());
        x1 = x1.max(x.log2());
        y0 = y0.min(y.log10());
        y1 = y1.max(y.log10());
    }
    if x0 > x1 {
        return None;
    }
    let (x0, mut x1) = ((x0 / 2.0).floor() * 2.0, (x1 / 2.0).ceil() * 2.0);
    let (y0, mut y1) = (y0.floor(), y1.ceil());
    if x1 <= x0 {
        x1 = x0 + 2.0;
    }
    if y1 <= y0 {
        y1 = y0 + 1.0;
    }
    Some(((x0, x1), (y0, y1)))
}

fn panel_svg(out: &mut String, p: &Panel, ox: f64) {
    let _ = writeln!(
        out,
        r#"<text x="{}" y="24" text-anchor="middle" font-size="16" font-weight="bold">{}</text>"#,
        ox + LEFT + (W - LEFT - RIGHT) / 2.0,
        esc(&p.title)
    );
    let Some(((x0, x1), (y0, y1))) = bounds(p) else {
        let _ = writeln!(
            out,
            r#"<text x="{}" y="{}" text-anchor="middle">no data</text>"#,
            ox + W / 2.0,
            H / 2.0
        );
        return;
    };
    let (pw, ph) = (W - LEFT - RIGHT, H - TOP - BOTTOM);
    let sx = |x: f64| ox + LEFT + (x.log2() - x0) / (x1 - x0) * pw;
    let sy = |y: f64| TOP + ph - (y.log10() - y0) / (y1 - y0) * ph;
    let _ = writeln!(
        out,
        r##"<rect x="{}" y="{TOP}" width="{pw}" height="{ph}" fill="none" stroke="#444"/>"##,
        ox + LEFT
    );
    // x ticks every 4x (every 16x when crowded), y ticks every decade.
    let step = if x1 - x0 > 12.0 { 4.0 } else { 2.0 };
    let mut e = x0;
    while e <= x1 + 1e-9 {
        let x = sx(e.exp2());
        let _ = writeln!(
            out,
            r##"<line x1="{x:.1}" y1="{TOP}" x2="{x:.1}" y2="{:.1}" stroke="#ddd"/><text x="{x:.1}" y="{:.1}" text-anchor="middle" font-size="11">{}</text>"##,
            TOP + ph,
            TOP + ph + 16.0,
            bytes_label(e.exp2())
        );
        e += step;
    }
    for d in (y0 as i32)..=(y1 as i32) {
        let v = 10f64.powi(d);
        let y = sy(v);
        let _ = writeln!(
            out,
            r##"<line x1="{:.1}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#ddd"/><text x="{:.1}" y="{:.1}" text-anchor="end" font-size="11">{}</text>"##,
            ox + LEFT,
            ox + LEFT + pw,
            ox + LEFT - 6.0,
            y + 4.0,
            decade_label(v)
        );
    }
    let _ = writeln!(
        out,
        r#"<text x="{}" y="{}" text-anchor="middle" font-size="13">message size</text>"#,
        ox + LEFT + pw / 2.0,
        H - 12.0
    );
    let _ = writeln!(
        out,
        r#"<text transform="translate({},{}) rotate(-90)" text-anchor="middle" font-size="13">{}</text>"#,
        ox + 18.0,
        TOP + ph / 2.0,
        esc(&p.y_label)
    );
    for (i, s) in p.series.iter().enumerate() {
        let color = COLORS[s.color % COLORS.len()];
        let dash = if s.dashed {
            r#" stroke-dasharray="6 4""#
        } else {
            ""
        };
        let pts: Vec<String> = s
            .points
            .iter()
            .filter(|&&(x, y)| x > 0.0 && y > 0.0)
            .map(|&(x, y)| format!("{:.1},{:.1}", sx(x), sy(y)))
            .collect();
        let _ = writeln!(
            out,
            r#"<polyline points="{}" fill="none" stroke="{color}" stroke-width="1.8"{dash}/>"#,
            pts.join(" ")
        );
        for p in &pts {
            let (x, y) = p.split_once(',').unwrap_or(("0", "0"));
            let _ = writeln!(out, r#"<circle cx="{x}" cy="{y}" r="2.2" fill="{color}"/>"#);
        }
        // Legend, top left where both curves are low.
        let (lx, ly) = (ox + LEFT + 10.0, TOP + 16.0 + 16.0 * i as f64);
        let _ = writeln!(
            out,
            r#"<line x1="{lx}" y1="{ly}" x2="{}" y2="{ly}" stroke="{color}" stroke-width="2.5"{dash}/><text x="{}" y="{}" font-size="12">{}</text>"#,
            lx + 22.0,
            lx + 28.0,
            ly + 4.0,
            esc(&s.label)
        );
    }
}

/// The whole chart: `panels` side by side.
pub fn svg(panels: &[Panel]) -> String {
    let width = W * panels.len().max(1) as f64;
    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{H}" viewBox="0 0 {width} {H}" font-family="sans-serif">"#
    );
    let _ = writeln!(out, r#"<rect width="100%" height="100%" fill="white"/>"#);
    for (i, p) in panels.iter().enumerate() {
        panel_svg(&mut out, p, W * i as f64);
    }
    out.push_str("</svg>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels() {
        assert_eq!(bytes_label(1.0), "1 B");
        assert_eq!(bytes_label(4096.0), "4 KiB");
        assert_eq!(bytes_label(4194304.0), "4 MiB");
        assert_eq!(decade_label(100.0), "100");
    }

    #[test]
    fn chart_has_every_series() {
        let p = Panel {
            title: "Latency".into(),
            y_label: "us".into(),
            series: vec![
                Series {
                    label: "a<b".into(),
                    color: 0,
                    dashed: false,
                    points: vec![(1.0, 0.5), (1024.0, 3.0), (0.0, 1.0)],
                },
                Series {
                    label: "c".into(),
                    color: 1,
                    dashed: true,
                    points: vec![(2.0, 0.7)],
                },
            ],
        };
        let s = svg(&[p]);
        assert!(s.starts_with("<svg") && s.ends_with("</svg>\n"));
        assert_eq!(s.matches("<polyline").count(), 2);
        assert!(s.contains("a&lt;b"));
    }
}
