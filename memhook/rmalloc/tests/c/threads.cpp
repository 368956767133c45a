// A threaded C++ program for librmalloc.so under LD_PRELOAD: containers and strings on several
// threads, objects handed between threads (remote frees), and fork while the others allocate
// (the child allocates, checks, and exits).
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

static std::mutex mu;
static std::vector<std::unique_ptr<std::string>> handoff;
static std::atomic<bool> stop{false};

static void worker(int id) {
    std::map<int, std::string> m;
    unsigned x = 12345u + id;
    for (int i = 0; i < 200000; i++) {
        x = x * 1103515245u + 12345u;
        int k = x % 4096;
        m[k] = std::string(16 + x % 300, char('a' + id));
        if (i % 7 == 0) m.erase((k * 31) % 4096);
        if (i % 5 == 0) {
            std::vector<char> big(x % 300000 + 1, char(id));
            if (big[big.size() / 2] != char(id)) abort();
        }
        if (i % 3 == 0) {
            std::lock_guard<std::mutex> g(mu);
            handoff.push_back(std::make_unique<std::string>(40 + x % 200, 'x'));
            if (handoff.size() > 64) handoff.erase(handoff.begin(), handoff.begin() + 32);
        }
    }
    for (auto &kv : m)
        if (kv.second.empty() || kv.second[0] != char('a' + id)) abort();
}

int main() {
    std::vector<std::thread> ts;
    for (int i = 0; i < 4; i++) ts.emplace_back(worker, i);
    // Forks while the workers allocate: the child must find the allocator consistent.
    for (int f = 0; f < 20; f++) {
        pid_t pid = fork();
        if (pid == 0) {
            std::vector<std::string> v;
            for (int i = 0; i < 10000; i++) v.emplace_back(std::to_string(i) + std::string(i % 500, 'c'));
            void *big = malloc(8 << 20);
            memset(big, 1, 8 << 20);
            free(big);
            _exit(v[9999].size() == 4 + 9999 % 500 ? 0 : 3);
        }
        int st = 0;
        if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            fprintf(stderr, "child %d failed: status %d\n", f, st);
            return 1;
        }
        usleep(2000);
    }
    for (auto &t : ts) t.join();
    printf("threads ok\n");
    return 0;
}
