// C++'s operator new and delete under librmalloc.so: they are the library's own, and keep C++'s
// failure semantics (the new-handler, std::bad_alloc, null from the nothrow forms); aligned new;
// malloc's alignments around the 8-byte class.
#include <dlfcn.h>
#include <malloc.h>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

static int fails = 0;
#define CHECK(c) do { if (!(c)) { std::printf("FAIL line %d: %s\n", __LINE__, #c); ++fails; } } while (0)

static int handler_calls = 0;
static void handler() {
    ++handler_calls;
    std::set_new_handler(nullptr); // next failure throws
}

struct alignas(64) Line { char c[64]; };
struct alignas(4096) Page { char c[100]; };

static const char *lib_of(void *f) {
    Dl_info i;
    return dladdr(f, &i) && i.dli_fname ? i.dli_fname : "?";
}

int main() {
    // The operators resolve to the preloaded library.
    void *(*plain)(std::size_t) = &::operator new;
    void *(*array)(std::size_t) = &::operator new[];
    void (*del)(void *) noexcept = &::operator delete;
    CHECK(std::strstr(lib_of((void *)plain), "librmalloc.so"));
    CHECK(std::strstr(lib_of((void *)array), "librmalloc.so"));
    CHECK(std::strstr(lib_of((void *)del), "librmalloc.so"));

    // Ordinary use, with contents.
    for (int round = 0; round < 1000; round++) {
        std::size_t n = 1 + (round * 37) % 5000;
        char *p = new char[n];
        std::memset(p, round & 0xff, n);
        CHECK(p[n - 1] == (char)(round & 0xff));
        delete[] p;
        long *q = new long(round);
        CHECK(*q == round);
        delete q;
    }

    // Failure: bad_alloc, after the new-handler ran once.
    std::size_t huge = (std::size_t)1 << 62;
    bool threw = false;
    try {
        volatile char *p = new char[huge];
        (void)p;
    } catch (const std::bad_alloc &) {
        threw = true;
    }
    CHECK(threw);
    std::set_new_handler(handler);
    threw = false;
    try {
        void *p = ::operator new(huge);
        (void)p;
    } catch (const std::bad_alloc &) {
        threw = true;
    }
    CHECK(threw);
    CHECK(handler_calls == 1);
    CHECK(new (std::nothrow) char[huge] == nullptr);
    CHECK(::operator new(huge, std::align_val_t(64), std::nothrow) == nullptr);
    threw = false;
    try {
        void *p = ::operator new(huge, std::align_val_t(4096));
        (void)p;
    } catch (const std::bad_alloc &) {
        threw = true;
    }
    CHECK(threw);

    // Aligned new and sized/aligned delete.
    for (int i = 0; i < 100; i++) {
        Line *l = new Line[1 + i % 7];
        CHECK(((std::uintptr_t)l & 63) == 0);
        delete[] l;
        Page *g = new Page;
        CHECK(((std::uintptr_t)g & 4095) == 0);
        g->c[99] = 1;
        delete g;
    }

    // malloc: sizes up to 8 at least 8-aligned, larger ones 16; memalign(16) always 16.
    for (std::size_t n = 0; n <= 64; n++) {
        void *p = std::malloc(n);
        CHECK(((std::uintptr_t)p & (n > 8 ? 15 : 7)) == 0);
        CHECK(malloc_usable_size(p) >= n);
        void *q = memalign(16, n);
        CHECK(((std::uintptr_t)q & 15) == 0);
        void *r = std::aligned_alloc(16, 16);
        CHECK(((std::uintptr_t)r & 15) == 0);
        std::free(p);
        std::free(q);
        std::free(r);
    }

    if (fails == 0)
        std::printf("new/delete ok\n");
    return fails != 0;
}
