//! In a real process with the compiled-in provider: every way memory goes back to the OS must
//! produce an event covering the range, from the main thread and from a second thread; with the
//! `none` provider nothing is seen, and a registration cache relying on events would be wrong.
//! `harness = false`: one process, cases in order, no test threads racing libc patching.

use std::ffi::c_void;
use std::process::Command;

use memhook::{Event, Recorder, Status};

// With the ptmalloc provider, this process's malloc is ours (nothing otherwise).
memhook::export_malloc!();

static LOG: Recorder<4096> = Recorder::new();

fn record(ev: &Event) {
    LOG.record(ev.addr, ev.len);
}

/// Drains the log; `Some(covered)` says whether one event covered [addr, addr+len).
fn covered(addr: usize, len: usize) -> bool {
    let mut hit = false;
    let complete = LOG.drain(|a, l| {
        if a <= addr && addr + len <= a + l {
            hit = true;
        }
    });
    hit || !complete // an overflow is reported as "assume everything released"
}

fn discard() {
    LOG.drain(|_, _| {});
}

const PAGE: usize = 4096;

fn map(len: usize, shared: bool) -> *mut c_void {
    let vis = if shared {
        libc::MAP_SHARED
    } else {
        libc::MAP_PRIVATE
    };
    // SAFETY: a fresh anonymous mapping at a kernel-chosen address.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            vis | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    assert_ne!(p, libc::MAP_FAILED, "mmap");
    // SAFETY: the mapping is `len` writable bytes.
    unsafe { std::ptr::write_bytes(p.cast::<u8>(), 0x5a, len) };
    p
}

/// Each case does one release and returns the range that must be covered (None: nothing was
/// released, e.g. a realloc that did not move under an allocator that then keeps the block).
type Case = (&'static str, fn() -> Option<(usize, usize)>);

fn malloc_free_1m() -> Option<(usize, usize)> {
    let n = 1 << 20;
    // SAFETY: malloc/free of one block, written in between.
    unsafe {
        let p = libc::malloc(n);
        assert!(!p.is_null());
        std::ptr::write_bytes(p.cast::<u8>(), 1, n);
        discard();
        libc::free(p);
        Some((p as usize, n))
    }
}

fn realloc_moves() -> Option<(usize, usize)> {
    let n = 4 << 20;
    // SAFETY: malloc, realloc, free of one block.
    unsafe {
        let p = libc::malloc(n);
        assert!(!p.is_null());
        std::ptr::write_bytes(p.cast::<u8>(), 2, n);
        // A neighbour makes growing in place less likely.
        let blocker = libc::malloc(n);
        discard();
        let q = libc::realloc(p, 64 << 20);
        assert!(!q.is_null());
        assert_eq!(*q.cast::<u8>().add(n - 1), 2, "realloc lost the contents");
        let moved = q != p;
        let r = if moved { Some((p as usize, n)) } else { None };
        if !moved {
            println!("    (realloc grew in place: nothing to report)");
        }
        // Check before these frees add their own events.
        let ok = match r {
            Some((a, l)) => covered(a, l),
            None => true,
        };
        libc::free(q);
        libc::free(blocker);
        if ok {
            Some((0, 0))
        } else {
            Some((usize::MAX, 0)) // forces a failure report
        }
    }
}

fn munmap_part() -> Option<(usize, usize)> {
    let p = map(4 * PAGE, false) as usize;
    discard();
    // SAFETY: unmapping the middle two pages of our own mapping, then the rest.
    unsafe { libc::munmap((p + PAGE) as *mut c_void, 2 * PAGE) };
    let ok = covered(p + PAGE, 2 * PAGE);
    // SAFETY: the remaining pages of the mapping.
    unsafe {
        libc::munmap(p as *mut c_void, PAGE);
        libc::munmap((p + 3 * PAGE) as *mut c_void, PAGE);
    }
    ok.then_some((0, 0)).or(Some((usize::MAX, 0)))
}

fn mremap_grow() -> Option<(usize, usize)> {
    let p = map(2 * PAGE, false);
    discard();
    // SAFETY: remapping our own mapping; the result is unmapped below.
    let q = unsafe { libc::mremap(p, 2 * PAGE, 64 * PAGE, libc::MREMAP_MAYMOVE) };
    assert_ne!(q, libc::MAP_FAILED);
    let ok = covered(p as usize, 2 * PAGE);
    // SAFETY: the mapping mremap returned.
    unsafe { libc::munmap(q, 64 * PAGE) };
    ok.then_some((0, 0)).or(Some((usize::MAX, 0)))
}

fn madvise_dontneed() -> Option<(usize, usize)> {
    let p = map(4 * PAGE, false);
    discard();
    // SAFETY: advice on our own mapping.
    unsafe { libc::madvise(p, 4 * PAGE, libc::MADV_DONTNEED) };
    let ok = covered(p as usize, 4 * PAGE);
    // SAFETY: our own mapping.
    unsafe { libc::munmap(p, 4 * PAGE) };
    ok.then_some((0, 0)).or(Some((usize::MAX, 0)))
}

fn brk_shrink() -> Option<(usize, usize)> {
    let n = 64 * 1024;
    // SAFETY: grow the break by n, touch it, and give the same n back; nothing allocates in
    // between (the recorder does not allocate).
    unsafe {
        let old = libc::sbrk(n as libc::intptr_t);
        assert_ne!(old as isize, -1, "sbrk");
        std::ptr::write_bytes(old.cast::<u8>(), 3, n);
        discard();
        libc::sbrk(-(n as libc::intptr_t));
        Some((old as usize, n))
    }
}

fn shmdt_segment() -> Option<(usize, usize)> {
    let n = 16 * PAGE;
    // SAFETY: a private SysV segment, attached, detached and removed here.
    unsafe {
        let id = libc::shmget(libc::IPC_PRIVATE, n, libc::IPC_CREAT | 0o600);
        assert!(id >= 0, "shmget");
        let p = libc::shmat(id, std::ptr::null(), 0);
        libc::shmctl(id, libc::IPC_RMID, std::ptr::null_mut());
        assert_ne!(p as isize, -1, "shmat");
        std::ptr::write_bytes(p.cast::<u8>(), 4, n);
        discard();
        libc::shmdt(p);
        Some((p as usize, n))
    }
}

fn mmap_fixed_over() -> Option<(usize, usize)> {
    let p = map(4 * PAGE, false);
    discard();
    // SAFETY: replacing our own mapping's middle pages with fresh ones.
    let q = unsafe {
        libc::mmap(
            (p as usize + PAGE) as *mut c_void,
            2 * PAGE,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED,
            -1,
            0,
        )
    };
    assert_eq!(q as usize, p as usize + PAGE, "mmap MAP_FIXED");
    let ok = covered(p as usize + PAGE, 2 * PAGE);
    // SAFETY: our own mapping.
    unsafe { libc::munmap(p, 4 * PAGE) };
    ok.then_some((0, 0)).or(Some((usize::MAX, 0)))
}

const CASES: &[Case] = &[
    ("1 MiB malloc then free", malloc_free_1m),
    ("large realloc that moves", realloc_moves),
    ("munmap of part of a mapping", munmap_part),
    ("mremap", mremap_grow),
    ("madvise(MADV_DONTNEED)", madvise_dontneed),
    ("heap shrink through sbrk", brk_shrink),
    ("shmdt of a SysV segment", shmdt_segment),
    ("mmap(MAP_FIXED) over a mapping", mmap_fixed_over),
];

/// Runs every case; returns the names of those whose release was (active) or was not (none)
/// seen, i.e. the failures.
fn run_cases(thread: &str, expect_events: bool) -> Vec<String> {
    let mut failures = Vec::new();
    for (name, case) in CASES {
        let seen = match case() {
            None => expect_events,
            Some((0, 0)) => true,
            Some((usize::MAX, 0)) => false,
            Some((a, l)) => covered(a, l),
        };
        let ok = seen == expect_events;
        println!(
            "  [{thread}] {name}: {} {}",
            if seen { "event" } else { "no event" },
            if ok { "ok" } else { "FAILED" }
        );
        if !ok {
            failures.push(format!("{thread}: {name}"));
        }
    }
    failures
}

/// A registration cache in miniature: it "registers" a buffer by keeping a second view of its
/// pages (as a NIC keeps the pinned physical pages), and trusts the entry until an event
/// invalidates it. The application unmaps its buffer, maps a fresh one at the same address and
/// receives into it through the cache: with no event, the data lands in the old pages.
/// Returns whether the application saw the received data.
fn cache_delivers_correctly(use_cache: bool) -> bool {
    let len = 4 * PAGE;
    let buf = map(len, true) as usize;
    // SAFETY: mremap with old size 0 of a shared mapping creates a second view of the same pages.
    let view = |addr: usize| unsafe {
        let v = libc::mremap(addr as *mut c_void, 0, len, libc::MREMAP_MAYMOVE);
        assert_ne!(v, libc::MAP_FAILED, "alias view");
        v as usize
    };
    // The cache: one entry (addr -> pinned view), dropped by any covering event.
    let mut entry: Option<(usize, usize)> = None;
    let lookup = |addr: usize, entry: &mut Option<(usize, usize)>| -> usize {
        if !use_cache {
            return view(addr); // per-operation registration (leaked view: a test)
        }
        LOG.drain(|a, l| {
            if let Some((e, _)) = *entry {
                if a < e + len && e < a + l {
                    *entry = None;
                }
            }
        });
        match *entry {
            Some((e, v)) if e == addr => v,
            _ => {
                let v = view(addr);
                *entry = Some((addr, v));
                v
            }
        }
    };
    discard();
    let v1 = lookup(buf, &mut entry);
    // SAFETY: the "NIC" writes into the registered view of the buffer.
    unsafe { *(v1 as *mut u8) = 1 };
    // The application frees its buffer and gets a new one at the same address.
    // SAFETY: our own mapping; MAP_FIXED_NOREPLACE only takes the now free range.
    let again = unsafe {
        libc::munmap(buf as *mut c_void, len);
        libc::mmap(
            buf as *mut c_void,
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED | libc::MAP_ANONYMOUS | libc::MAP_FIXED_NOREPLACE,
            -1,
            0,
        )
    };
    assert_eq!(again as usize, buf, "could not map the same address again");
    let v2 = lookup(buf, &mut entry);
    // SAFETY: the "NIC" delivers a message into whatever pages the cache says hold `buf`.
    unsafe { *(v2 as *mut u8) = 42 };
    // SAFETY: the application reads its (new) buffer.
    unsafe { *(buf as *const u8) == 42 }
}

/// The ldpreload provider needs its library preloaded: re-run this test with it.
fn preload_self() -> Option<i32> {
    if memhook::PROVIDER != "ldpreload" || std::env::var_os("MEMHOOK_TEST_CHILD").is_some() {
        return None;
    }
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().unwrap().parent().unwrap(); // target/<profile>
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut build = Command::new(cargo);
    build.args(["build", "-q", "-p", "memhook-preload"]);
    if dir.file_name().is_some_and(|n| n == "release") {
        build.arg("--release");
    }
    assert!(
        build.status().unwrap().success(),
        "building memhook-preload"
    );
    let lib = dir.join("libmemhook_preload.so");
    assert!(lib.exists(), "{} missing", lib.display());
    let st = Command::new(&exe)
        .env("LD_PRELOAD", &lib)
        .env("MEMHOOK_TEST_CHILD", "1")
        .status()
        .unwrap();
    Some(st.code().unwrap_or(1))
}

fn main() {
    if let Some(code) = preload_self() {
        std::process::exit(code);
    }
    // glibc raises its mmap threshold after the first free of a mapped block, after which a
    // 1 MiB block would stay in the heap; a fixed threshold keeps "free() unmaps 1 MiB" true.
    // SAFETY: mallopt only sets a tunable (a no-op for the ptmalloc provider's allocator).
    unsafe { libc::mallopt(libc::M_MMAP_THRESHOLD, 128 * 1024) };
    // ptmalloc: events fire when its memory source returns memory to the OS; keeping nothing
    // for reuse makes every free of a block a return, which the cases below check.
    #[cfg(memhook_provider = "ptmalloc")]
    memhook::ptmalloc::set_policy(memhook::ptmalloc::Policy::Release { keep_blocks: 0 });
    let status = memhook::init();
    println!("memhook provider {}: {status}", memhook::PROVIDER);
    let sub = memhook::subscribe(record).expect("subscribe");
    let active = status == Status::Active;
    if memhook::PROVIDER == "none" {
        assert!(!active, "the none provider must say it sees nothing");
    } else {
        assert!(
            active,
            "provider {} is not active: {status}",
            memhook::PROVIDER
        );
    }
    let mut failures = run_cases("main thread", active);
    failures.extend(
        std::thread::spawn(move || run_cases("second thread", active))
            .join()
            .unwrap(),
    );

    // The registration cache: right with events, wrong without them, right again when it
    // turns itself off because the provider says it is unavailable.
    let cached = cache_delivers_correctly(true);
    println!("  cache relying on events delivers correctly: {cached}");
    if active {
        if !cached {
            failures.push("cache with an active provider was stale".into());
        }
    } else {
        if cached {
            failures.push(
                "the cache saw no event yet was not stale: the demonstration is broken".into(),
            );
        }
        let off = cache_delivers_correctly(status.is_active());
        println!("  cache that turns off when the provider is unavailable: {off}");
        if !off {
            failures.push("cache turned off still wrong".into());
        }
    }
    memhook::unsubscribe(sub);
    println!("  counters: {}", memhook::counters_line());
    if failures.is_empty() {
        println!("memhook events ({}): all cases passed", memhook::PROVIDER);
    } else {
        println!("FAILED: {failures:?}");
        std::process::exit(1);
    }
}
