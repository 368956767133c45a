//! Overhead of the compiled-in provider on free()-heavy code: malloc/free pairs through the C
//! allocator (libc's, or ours with ptmalloc), with one subscriber recording events, on 1 and 2
//! threads. Run once per provider:
//!     cargo run --release -p memhook --example free_bench --features <provider>
//! (ldpreload: the example re-runs itself with libmemhook_preload.so preloaded.)

use std::process::Command;
use std::time::Instant;

memhook::export_malloc!();

static LOG: memhook::Recorder<1024> = memhook::Recorder::new();

fn record(e: &memhook::Event) {
    LOG.record(e.addr, e.len);
}

fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: writes the calling thread's CPU time into `ts`.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// CPU ns per malloc+free pair (thread CPU time, so that a loaded machine's waiting does not
/// count), each thread doing `pairs` pairs over a small working set; and the wall time.
fn run(threads: usize, pairs: usize, size: usize) -> (f64, f64) {
    let start = Instant::now();
    let hs: Vec<_> = (0..threads)
        .map(|t| {
            std::thread::spawn(move || {
                let cpu0 = thread_cpu_ns();
                let mut keep = [std::ptr::null_mut::<libc::c_void>(); 16];
                for i in 0..pairs {
                    let k = (i * 7 + t) % keep.len();
                    // SAFETY: malloc/free of blocks this thread owns; the write keeps the
                    // compiler from removing the pair.
                    unsafe {
                        let p = libc::malloc(size + (i & 63));
                        *(p as *mut u8) = i as u8;
                        libc::free(std::mem::replace(&mut keep[k], p));
                    }
                }
                for p in keep {
                    // SAFETY: blocks from the loop.
                    unsafe { libc::free(p) };
                }
                thread_cpu_ns() - cpu0
            })
        })
        .collect();
    let cpu: u64 = hs.into_iter().map(|h| h.join().unwrap()).sum();
    let wall = start.elapsed().as_nanos() as f64 / pairs as f64;
    (cpu as f64 / (pairs * threads) as f64, wall)
}

fn main() {
    if memhook::PROVIDER == "ldpreload" && std::env::var_os("LD_PRELOAD").is_none() {
        let exe = std::env::current_exe().unwrap();
        let lib = exe
            .parent()
            .unwrap()
            .parent()
            .unwrap()
            .join("libmemhook_preload.so");
        assert!(
            lib.exists(),
            "build memhook-preload first: {}",
            lib.display()
        );
        let st = Command::new(&exe).env("LD_PRELOAD", lib).status().unwrap();
        std::process::exit(st.code().unwrap_or(1));
    }
    let status = memhook::init();
    let _sub = memhook::subscribe(record).unwrap();
    let pairs = 5_000_000;
    // Warm up, then the best of three for each configuration.
    let _ = run(1, pairs / 10, 64);
    for size in [64usize, 4096] {
        for threads in [1, 2] {
            let (cpu, wall) = (0..3)
                .map(|_| run(threads, pairs, size))
                .fold((f64::INFINITY, f64::INFINITY), |a, b| {
                    (a.0.min(b.0), a.1.min(b.1))
                });
            println!(
                "provider {:9} ({}) size {size:5} threads {threads}: {cpu:6.1} CPU ns per malloc+free pair ({wall:6.1} wall ns per pair per thread)",
                memhook::PROVIDER,
                if status.is_active() { "active" } else { "inactive" },
            );
        }
    }
    LOG.drain(|_, _| {});
    println!("  events: {}", memhook::counters_line());
}
