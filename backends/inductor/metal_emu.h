// Metal Shading Language on a CPU: the subset bytegraph's Metal printer (codegen_metal.py) emits,
// mapped to C++17 so a generated kernel compiles with g++ and runs on CPU tensors (tests on Linux).
//
// What is modelled
// - Types: half (_Float16), bfloat (round-to-nearest-even from float), uint/ushort/uchar, the
//   int*_t aliases MSL also has; atomic_int with atomic_store_explicit/memory_order_relaxed.
// - Address spaces: `device` and `thread` are plain C++ (no qualifier); `constant` is `const`;
//   `threadgroup` declares a `static` variable, which is exactly threadgroup memory here because the
//   threadgroups of a launch run one at a time (the printer declares threadgroup arrays only in
//   kernel scope, never as parameters). Attributes ([[buffer(n)]], [[thread_position_in_grid]], ...)
//   are ignored by g++ (-Wno-attributes); `launch` passes the thread ids in their place.
// - Execution: `launch(threads, group, sync, f)` runs the grid threadgroup by threadgroup. Kernels
//   without barriers or SIMD functions (`sync` false) run thread after thread. Otherwise every thread
//   of the threadgroup is a fiber (ucontext) that runs until it reaches threadgroup_barrier() or a
//   SIMD function; a barrier releases when every thread of the threadgroup waits at it, a SIMD
//   function when every thread of its simdgroup (32 lanes, as on Apple GPUs) does. A thread that
//   returns while others wait at a barrier, or a simdgroup whose lanes disagree, is reported as an
//   error (on a GPU it is undefined behaviour): the emulation is stricter than the hardware.
// - SIMD functions: simd_sum, simd_shuffle_down, simd_broadcast (lanes exchange values through a
//   per-simdgroup buffer; simd_sum adds in lane order, the GPU in an unspecified order).
// - Math: metal::precise::* are the C library's functions; metal::fabs/floor/ceil/trunc/rint/fmod/
//   copysign are exact in both.
//
// Where Metal and C++ differ (and what the printer does about it)
// - Integer division or remainder by zero: undefined value on the GPU, a trap (SIGFPE) in C++. The
//   printer never divides by a value that may be 0 without a check: user divisions go through
//   bg_ifloordiv/bg_imod/... which flag the error in a device buffer (the wrapper raises as eager
//   does); index arithmetic divides only by sizes and strides (never 0).
// - Signed overflow wraps on the GPU; in C++ it is undefined, so kernels are built with -fwrapv.
// - Fast math: Metal compiles with fast math unless told otherwise (may reassociate, flush
//   denormals, and assume no NaN/Inf); this emulation is strict IEEE. The printer therefore calls
//   metal::precise:: functions and tests NaN/Inf on the bits (bg_isnan/bg_isinf), never with x != x,
//   so NaN propagation does not depend on the math mode. Summation order (and so rounding) of
//   reductions can still differ from the GPU's in the last bits.
// - Grid size: thread_position_in_grid is a 32-bit uint; the wrapper refuses larger launches.
#ifndef BG_METAL_EMU_H
#define BG_METAL_EMU_H
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <ucontext.h>
#include <vector>

typedef unsigned int uint;
typedef unsigned short ushort;
typedef unsigned char uchar;
typedef _Float16 half;
typedef std::atomic<int> atomic_int;

struct bfloat {
    uint16_t bits;
    bfloat() = default;
    bfloat(float x) {
        uint32_t u;
        std::memcpy(&u, &x, 4);
        if ((u & 0x7fffffffu) > 0x7f800000u) { bits = 0x7fc0; return; }
        u += 0x7fffu + ((u >> 16) & 1u);  // round to nearest even, as Metal's float -> bfloat
        bits = (uint16_t)(u >> 16);
    }
    operator float() const { uint32_t u = (uint32_t)bits << 16; float f; std::memcpy(&f, &u, 4); return f; }
};

template <typename T, typename U> inline T as_type(U v) {
    static_assert(sizeof(T) == sizeof(U), "as_type: sizes differ");
    T t; std::memcpy(&t, &v, sizeof(T)); return t;
}

namespace metal {
using std::atomic_store_explicit;
using std::memory_order_relaxed;
using std::fabs; using std::floor; using std::ceil; using std::trunc; using std::rint; using std::fmod;
using std::copysign;
namespace precise {
using std::exp; using std::exp2; using std::log; using std::log2; using std::log10; using std::sqrt;
using std::sin; using std::cos; using std::tan; using std::tanh; using std::sinh; using std::cosh; using std::pow;
}
enum class mem_flags { mem_none, mem_device, mem_threadgroup };
}  // namespace metal

namespace bg_emu {
constexpr int SIMD_WIDTH = 32;
constexpr size_t STACK = 64 * 1024;
enum State { READY, AT_BARRIER, AT_SIMD, DONE };

struct Ids { uint pos, tg, lid, tg_size, lane, sg, nsg; };

struct Fiber {
    ucontext_t ctx;
    State state;
    long syncs;   // barriers or SIMD functions passed (all waiting peers must agree)
    Ids ids;
};

// one launch at a time (the wrapper holds the GIL): plain globals
inline std::vector<Fiber> fibers;
inline std::vector<char> stacks;
inline ucontext_t scheduler;
inline Fiber* current = nullptr;
inline const std::function<void(const Ids&)>* body = nullptr;
inline int error = 0;  // 3: barrier or SIMD function not reached by every thread that must reach it
inline std::vector<uint64_t> exchange[2];  // SIMD lanes' values, double-buffered by sync parity

inline void wait(State s) {
    if (current == nullptr) { error = 3; return; }  // a kernel launched without `sync` synchronized
    current->state = s;
    swapcontext(&current->ctx, &scheduler);
}

inline void entry() {
    (*body)(current->ids);
    current->state = DONE;  // uc_link resumes the scheduler
}

// every lane's value of `v` in the caller's simdgroup (lane order)
template <typename T> inline void simd_gather(T v, T* lanes) {
    static_assert(sizeof(T) <= 8, "simd value wider than 8 bytes");
    if (current == nullptr) { error = 3; std::fill(lanes, lanes + SIMD_WIDTH, v); return; }
    auto& buf = exchange[current->syncs & 1];
    uint64_t slot = 0;
    std::memcpy(&slot, &v, sizeof(T));
    buf[current->ids.lid] = slot;
    wait(AT_SIMD);
    uint base = current->ids.sg * SIMD_WIDTH;
    for (int l = 0; l < SIMD_WIDTH; l++) std::memcpy(&lanes[l], &exchange[(current->syncs - 1) & 1][base + l], sizeof(T));
}

// release waiting fibers whose peers have all arrived; false when nothing can run (error or done)
inline bool release(size_t n) {
    bool any = false, all_bar = true, some_done = false;
    for (size_t i = 0; i < n; i++) {
        if (fibers[i].state == READY) return true;
        if (fibers[i].state == DONE) some_done = true;
        if (fibers[i].state != AT_BARRIER && fibers[i].state != DONE) all_bar = false;
        if (fibers[i].state != DONE) any = true;
    }
    if (!any) return false;
    if (all_bar) {
        if (some_done) { error = 3; return false; }
        for (size_t i = 0; i < n; i++)
            if (fibers[i].syncs != fibers[0].syncs) { error = 3; return false; }
        for (size_t i = 0; i < n; i++) fibers[i].state = READY;
        return true;
    }
    bool released = false;
    for (size_t s = 0; s < n; s += SIMD_WIDTH) {
        size_t e = std::min(n, s + SIMD_WIDTH);
        bool all_simd = true;
        for (size_t i = s; i < e; i++) all_simd &= fibers[i].state == AT_SIMD;
        if (!all_simd) continue;
        for (size_t i = s; i < e; i++)
            if (fibers[i].syncs != fibers[s].syncs) { error = 3; return false; }
        for (size_t i = s; i < e; i++) fibers[i].state = READY;
        released = true;
    }
    if (!released) error = 3;  // deadlock: divergent barriers or SIMD functions
    return released;
}

inline void run_group(uint tg, uint group, uint threads) {
    uint n = std::min<uint>(group, threads - tg * group);
    for (uint i = 0; i < n; i++) {
        Fiber& f = fibers[i];
        f.state = READY;
        f.syncs = 0;
        f.ids = Ids{tg * group + i, tg, i, group, i % SIMD_WIDTH, i / SIMD_WIDTH, (group + SIMD_WIDTH - 1) / SIMD_WIDTH};
        getcontext(&f.ctx);
        f.ctx.uc_stack.ss_sp = stacks.data() + i * STACK;
        f.ctx.uc_stack.ss_size = STACK;
        f.ctx.uc_link = &scheduler;
        makecontext(&f.ctx, entry, 0);
    }
    while (error == 0) {
        for (uint i = 0; i < n && error == 0; i++) {
            if (fibers[i].state != READY) continue;
            current = &fibers[i];
            swapcontext(&scheduler, &current->ctx);
            if (current->state != DONE) current->syncs++;
        }
        current = nullptr;
        if (!release(n)) return;
    }
}

// Run `f` for every thread of a 1-D grid of `threads` threads in threadgroups of `group`.
// Returns 0, or 3 when a barrier or SIMD function was not reached consistently.
inline int launch(int64_t threads, int64_t group, bool sync, const std::function<void(const Ids&)>& f) {
    error = 0;
    if (threads <= 0) return 0;
    if (threads > 0xffffffffLL || group <= 0 || group > 1024) return 4;
    uint T = (uint)threads, G = (uint)group;
    uint groups = (T + G - 1) / G;
    if (!sync) {
        for (uint tg = 0; tg < groups; tg++)
            for (uint i = 0; i < G && tg * G + i < T; i++)
                f(Ids{tg * G + i, tg, i, G, i % SIMD_WIDTH, i / SIMD_WIDTH, (G + SIMD_WIDTH - 1) / SIMD_WIDTH});
        return error;
    }
    if (fibers.size() < G) fibers.resize(G);
    if (stacks.size() < G * STACK) stacks.resize(G * STACK);
    for (auto& b : exchange) b.assign(G + SIMD_WIDTH, 0);
    body = &f;
    for (uint tg = 0; tg < groups && error == 0; tg++) run_group(tg, G, T);
    body = nullptr;
    return error;
}
}  // namespace bg_emu

// the built-ins the printer uses
inline void threadgroup_barrier(metal::mem_flags) {
    if (bg_emu::current == nullptr) { bg_emu::error = 3; return; }
    bg_emu::wait(bg_emu::AT_BARRIER);
}
template <typename T> inline T simd_sum(T v) {
    T lanes[bg_emu::SIMD_WIDTH];
    bg_emu::simd_gather(v, lanes);
    T s = T(0);
    for (int l = 0; l < bg_emu::SIMD_WIDTH; l++) s += lanes[l];
    return s;
}
template <typename T> inline T simd_shuffle_down(T v, ushort delta) {
    T lanes[bg_emu::SIMD_WIDTH];
    bg_emu::simd_gather(v, lanes);
    uint src = bg_emu::current ? bg_emu::current->ids.lane + delta : 0;
    return src < (uint)bg_emu::SIMD_WIDTH ? lanes[src] : v;  // the upper `delta` lanes keep their value
}
template <typename T> inline T simd_broadcast(T v, ushort lane) {
    T lanes[bg_emu::SIMD_WIDTH];
    bg_emu::simd_gather(v, lanes);
    return lanes[lane];
}

// MSL spellings that are not C++ (defined last: the standard headers above must not see them)
#define kernel
#define device
#define thread
#define constant const
#define threadgroup static
#endif  // BG_METAL_EMU_H
