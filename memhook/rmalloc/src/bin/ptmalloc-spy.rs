//! ptmalloc-spy: reads a trace written with `MEMHOOK_PTMALLOC_TRACE=FILE` (memhook's ptmalloc
//! allocator: librmalloc.so, or libmpi_abi.so built with the ptmalloc provider) and prints, per
//! chain (a thread's heap), requested / real / virtual memory, header overhead and remote frees;
//! large blocks; where memory sits by size class; and what the memory source did.
//!
//! Usage: ptmalloc-spy FILE

use std::collections::HashMap;

use memhook::ptmalloc::trace::{kind, Rec, HUGE, REC_SIZE, SPAN};

const BLOCK: i64 = 2 << 20;
const HEADER: i64 = 128;

#[derive(Default)]
struct Chain {
    tid: u32,
    adopted: u64,
    dead: bool,
    mallocs: u64,
    frees: u64,
    remote_frees: u64,
    live: i64,
    requested: i64,
    real: i64,
    blocks: i64,
    peak_real: i64,
    peak_blocks: i64,
}

#[derive(Default)]
struct Class {
    size: i64,
    live: i64,
    requested: i64,
    real: i64,
    blocks: i64,
}

#[derive(Default)]
struct Source {
    block_fresh: u64,
    block_cached: u64,
    block_kept: u64,
    block_unmapped: u64,
    huge_fresh: u64,
    huge_reused: u64,
    huge_kept: u64,
    huge_released: u64,
    huge_grown: u64,
    huge_virtual: i64,
    peak_huge_virtual: i64,
}

fn mib(b: i64) -> String {
    format!("{:.2}", b as f64 / (1 << 20) as f64)
}

fn read(path: &str) -> Vec<Rec> {
    let bytes = std::fs::read(path).unwrap_or_else(|e| {
        eprintln!("ptmalloc-spy: {path}: {e}");
        std::process::exit(1)
    });
    let mut recs: Vec<Rec> = bytes
        .chunks_exact(REC_SIZE)
        .map(|c| {
            let u16_at = |o: usize| u16::from_ne_bytes([c[o], c[o + 1]]);
            let u32_at = |o: usize| u32::from_ne_bytes(c[o..o + 4].try_into().unwrap());
            let u64_at = |o: usize| u64::from_ne_bytes(c[o..o + 8].try_into().unwrap());
            Rec {
                kind: u16_at(0),
                class: u16_at(2),
                tid: u32_at(4),
                ts: u64_at(8),
                heap: u64_at(16),
                a: u64_at(24),
                b: u64_at(32),
                c: u64_at(40),
            }
        })
        .collect();
    if !bytes.len().is_multiple_of(REC_SIZE) {
        eprintln!("ptmalloc-spy: {path}: a partial record at the end, ignored");
    }
    // Each thread writes its records in order, but whole buffers at a time: sort by time.
    recs.sort_by_key(|r| r.ts);
    recs
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 2 || args[1].starts_with('-') {
        eprintln!("usage: ptmalloc-spy FILE   (a trace from MEMHOOK_PTMALLOC_TRACE=FILE)");
        std::process::exit(2);
    }
    let recs = read(&args[1]);
    let mut chains: HashMap<u64, Chain> = HashMap::new();
    let mut order: Vec<u64> = Vec::new();
    let mut classes: HashMap<u16, Class> = HashMap::new();
    let mut src = Source::default();
    // Live objects: pointer -> (chain, class, requested, real).
    let mut live: HashMap<u64, (u64, u16, i64, i64)> = HashMap::new();
    let (mut unknown_frees, mut peak_real_total, mut real_total) = (0u64, 0i64, 0i64);
    for r in &recs {
        let key = if r.class == HUGE { 0 } else { r.heap };
        if (r.kind == kind::MALLOC || r.kind == kind::HEAP_START) && !chains.contains_key(&key) {
            order.push(key);
        }
        match r.kind {
            kind::HEAP_START => {
                let c = chains.entry(r.heap).or_default();
                c.tid = r.tid;
                c.dead = false;
                c.adopted += r.a;
            }
            kind::HEAP_DEAD => chains.entry(r.heap).or_default().dead = true,
            kind::MALLOC => {
                let (req, real) = (r.b as i64, r.c as i64);
                let c = chains.entry(key).or_default();
                c.mallocs += 1;
                c.live += 1;
                c.requested += req;
                c.real += real;
                c.peak_real = c.peak_real.max(c.real);
                let k = classes.entry(r.class).or_default();
                k.size = if r.class == HUGE { 0 } else { real };
                k.live += 1;
                k.requested += req;
                k.real += real;
                real_total += real;
                peak_real_total = peak_real_total.max(real_total);
                live.insert(r.a, (key, r.class, req, real));
            }
            kind::FREE => {
                let Some((owner, class, req, real)) = live.remove(&r.a) else {
                    unknown_frees += 1;
                    continue;
                };
                let c = chains.entry(owner).or_default();
                c.frees += 1;
                c.remote_frees += r.b;
                c.live -= 1;
                c.requested -= req;
                c.real -= real;
                let k = classes.entry(class).or_default();
                k.live -= 1;
                k.requested -= req;
                k.real -= real;
                real_total -= real;
            }
            kind::BLOCK_GET => {
                let c = chains.entry(r.heap).or_default();
                c.blocks += 1;
                c.peak_blocks = c.peak_blocks.max(c.blocks);
                classes.entry(r.class).or_default().blocks += 1;
                if r.b != 0 {
                    src.block_fresh += 1
                } else {
                    src.block_cached += 1
                }
            }
            kind::BLOCK_PUT => {
                chains.entry(r.heap).or_default().blocks -= 1;
                classes.entry(r.class).or_default().blocks -= 1;
                if r.b != 0 {
                    src.block_unmapped += 1
                } else {
                    src.block_kept += 1
                }
            }
            kind::HUGE_GET => {
                src.huge_virtual += r.b as i64;
                src.peak_huge_virtual = src.peak_huge_virtual.max(src.huge_virtual);
                match r.c {
                    0 => src.huge_reused += 1,
                    1 => src.huge_fresh += 1,
                    _ => src.huge_grown += 1,
                }
            }
            kind::HUGE_PUT => {
                src.huge_virtual -= r.b as i64;
                match r.c {
                    0 => src.huge_kept += 1,
                    1 => src.huge_released += 1,
                    _ => {}
                }
            }
            _ => {}
        }
    }
    let threads = recs
        .iter()
        .map(|r| r.tid)
        .collect::<std::collections::HashSet<_>>()
        .len();
    println!(
        "{}: {} records from {} threads; {} chains; at the end (peak) in MiB",
        args[1],
        recs.len(),
        threads,
        order.iter().filter(|&&k| k != 0).count()
    );
    println!();
    println!("chain            tid     state    mallocs      frees  remote   live objs  requested       real  (peak)     virtual  (peak)  headers");
    for k in &order {
        let c = &chains[k];
        let name = if *k == 0 {
            "large blocks".to_string()
        } else {
            format!("{k:#x}")
        };
        let state = if *k == 0 {
            "-"
        } else if c.dead {
            "exited"
        } else if c.adopted > 0 {
            "adopted"
        } else {
            "live"
        };
        let (virt, peak_virt) = if *k == 0 {
            (src.huge_virtual, src.peak_huge_virtual)
        } else {
            (c.blocks * BLOCK, c.peak_blocks * BLOCK)
        };
        println!(
            "{name:<16} {:<7} {state:<8} {:>8} {:>10} {:>7} {:>11} {:>10} {:>10} {:>7} {:>11} {:>7} {:>8}",
            c.tid,
            c.mallocs,
            c.frees,
            c.remote_frees,
            c.live,
            mib(c.requested),
            mib(c.real),
            mib(c.peak_real),
            mib(virt),
            mib(peak_virt),
            if *k == 0 { "-".into() } else { format!("{}", c.blocks * HEADER) },
        );
    }
    println!();
    println!(
        "by size class   class size   live objs  requested       real    blocks  virtual   fill"
    );
    let mut ks: Vec<_> = classes
        .iter()
        .filter(|(_, k)| k.live != 0 || k.blocks != 0)
        .collect();
    ks.sort_by_key(|(c, _)| **c);
    for (c, k) in ks {
        let (name, virt) = if *c == HUGE {
            ("large".to_string(), src.huge_virtual)
        } else if *c == SPAN {
            // Blocks shared by the classes of 4 KiB and more (their objects count in theirs).
            ("spans".to_string(), k.blocks * BLOCK)
        } else {
            (format!("{c}"), k.blocks * BLOCK)
        };
        let fill = if virt > 0 {
            100.0 * k.real as f64 / virt as f64
        } else {
            0.0
        };
        println!(
            "{name:<15} {:>10} {:>11} {:>10} {:>10} {:>9} {:>8} {:>5.1}%",
            if *c == HUGE || *c == SPAN {
                "-".into()
            } else {
                k.size.to_string()
            },
            k.live,
            mib(k.requested),
            mib(k.real),
            if *c == HUGE {
                "-".into()
            } else {
                k.blocks.to_string()
            },
            mib(virt),
            fill
        );
    }
    println!();
    println!(
        "memory source: macro-blocks {} fresh, {} from the cache, {} kept, {} unmapped; large blocks {} fresh, {} reused, {} kept, {} released, {} grown by realloc",
        src.block_fresh,
        src.block_cached,
        src.block_kept,
        src.block_unmapped,
        src.huge_fresh,
        src.huge_reused,
        src.huge_kept,
        src.huge_released,
        src.huge_grown
    );
    println!(
        "real memory in live objects: {} MiB at the end, peak {} MiB",
        mib(real_total),
        mib(peak_real_total)
    );
    if unknown_frees > 0 {
        println!("{unknown_frees} frees of pointers allocated before tracing began (or whose malloc record was lost)");
    }
}
