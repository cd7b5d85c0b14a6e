/* threadpool.c - the interpreter's worker threads for interp_parallel_for.
 *
 * One job at a time (operators run in order): the caller publishes the job,
 * every worker and the caller take chunks from a shared atomic counter. A
 * call made from inside a job (a kernel that nests parallel loops) runs
 * inline, so the pool never waits on itself.
 *
 * Waking a sleeping thread through a condition variable costs tens of
 * microseconds (measured ~55 us per job on the 2-vCPU build machine), which
 * is as long as many convolution layers take: a worker woken for a layer
 * that short arrives when the caller has done every chunk itself. So both
 * sides spin: a worker that has just finished a job polls for the next one
 * for up to SPIN_NS before it sleeps, and the caller polls for the workers
 * to finish before it sleeps. A run of the interpreter wakes the workers
 * when it starts (tpool_wake), and its operators' parallel loops follow
 * each other within microseconds, so the workers are polling whenever a
 * job arrives and join it within a fraction of a microsecond. A poll calls
 * sched_yield() only after YIELD_NS of polling: yielding hands the CPU to
 * any runnable thread for a whole time slice (often another process's on
 * a loaded machine), which made workers miss most jobs.
 *
 * Workers join a job explicitly: one atomic word holds the job's
 * generation, an "open" bit and the number of workers inside the job. A
 * worker enters by incrementing the count while the job is open; the
 * caller closes the job once every chunk has been claimed and then waits
 * only for the workers that entered. On a loaded machine a worker that is
 * not scheduled in time simply misses the job (the caller and the other
 * workers do its chunks) instead of making the caller wait for it.
 *
 * Sleeping is announced through counters (sleepers, caller_waiting) that
 * the other side reads after publishing its change, both with sequentially
 * consistent atomics, so no wake-up is lost: either the publisher sees the
 * sleeper and signals under the mutex, or the sleeper sees the change
 * before it waits. */
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <time.h>

#include "interp_runtime.h"

/* How long a thread polls before it sleeps: long enough to bridge the
 * serial stretches between two operators' parallel loops (an operator too
 * small to split, a copy), short enough that an idle interpreter stops
 * burning CPU almost at once. */
#define SPIN_NS 2000000L
/* Polling time before a poll starts yielding the CPU. */
#define YIELD_NS 100000L

/* state word: generation << 17 | OPEN | workers inside the job */
#define ST_OPEN (UINT64_C(1) << 16)
#define ST_ACTIVE(s) ((s)&0xffffu)
#define ST_GEN(s) ((s) >> 17)

struct tpool {
    pthread_mutex_t mu;
    pthread_cond_t wake, done;
    pthread_t *threads;
    int n_threads; /* workers (not counting the caller) */
    int started;
    uint64_t state;     /* atomic: see ST_* */
    int sleepers;       /* atomic: workers asleep (or about to) on wake */
    int caller_waiting; /* atomic: the caller sleeps (or is about to) on done */
    int quit;           /* atomic */
    /* current job: written by the caller before the state word publishes it,
     * read by workers only after they entered the job */
    void (*fn)(void *, size_t, size_t);
    void *arg;
    size_t n, chunk;
    size_t next; /* atomic: next unclaimed index */
};

static _Thread_local bool in_job;

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

static int64_t mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void take_chunks(tpool *p) {
    for (;;) {
        size_t b = __atomic_fetch_add(&p->next, p->chunk, __ATOMIC_RELAXED);
        if (b >= p->n) break;
        size_t e = p->n - b < p->chunk ? p->n : b + p->chunk;
        p->fn(p->arg, b, e);
    }
}

/* Polls until the job generation differs from old (or quit) for up to
 * SPIN_NS; true when it did. */
static bool spin_gen(tpool *p, uint64_t old) {
    int64_t t0 = 0;
    for (unsigned i = 0;; i++) {
        if (ST_GEN(__atomic_load_n(&p->state, __ATOMIC_ACQUIRE)) != old ||
            __atomic_load_n(&p->quit, __ATOMIC_ACQUIRE))
            return true;
        cpu_relax();
        if ((i & 63) == 63) { /* read the clock now and then, not every poll */
            int64_t t = mono_ns();
            if (!t0) t0 = t;
            else if (t - t0 > SPIN_NS) return false;
            else if (t - t0 > YIELD_NS)
                sched_yield(); /* on a loaded machine, let a runnable thread have the CPU */
        }
    }
}

static void *worker(void *arg) {
    tpool *p = arg;
    uint64_t seen = 0;
    for (;;) {
        if (!spin_gen(p, seen)) {
            pthread_mutex_lock(&p->mu);
            __atomic_add_fetch(&p->sleepers, 1, __ATOMIC_SEQ_CST);
            while (!__atomic_load_n(&p->quit, __ATOMIC_SEQ_CST) &&
                   ST_GEN(__atomic_load_n(&p->state, __ATOMIC_SEQ_CST)) == seen)
                pthread_cond_wait(&p->wake, &p->mu);
            __atomic_sub_fetch(&p->sleepers, 1, __ATOMIC_SEQ_CST);
            pthread_mutex_unlock(&p->mu);
        }
        if (__atomic_load_n(&p->quit, __ATOMIC_ACQUIRE)) break;
        uint64_t s = __atomic_load_n(&p->state, __ATOMIC_ACQUIRE);
        seen = ST_GEN(s);
        /* enter the job if it is still open */
        bool entered = false;
        while (ST_GEN(s) == seen && (s & ST_OPEN))
            if (__atomic_compare_exchange_n(&p->state, &s, s + 1, false, __ATOMIC_SEQ_CST,
                                            __ATOMIC_ACQUIRE)) {
                entered = true;
                break;
            }
        if (!entered) continue;
        in_job = true;
        take_chunks(p);
        in_job = false;
        uint64_t after = __atomic_sub_fetch(&p->state, 1, __ATOMIC_SEQ_CST);
        if (ST_ACTIVE(after) == 0 && !(after & ST_OPEN) &&
            __atomic_load_n(&p->caller_waiting, __ATOMIC_SEQ_CST)) {
            pthread_mutex_lock(&p->mu);
            pthread_cond_signal(&p->done);
            pthread_mutex_unlock(&p->mu);
        }
    }
    return NULL;
}

tpool *tpool_create(int threads) {
    if (threads < 2) return NULL;
    tpool *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->threads = calloc((size_t)threads - 1, sizeof(pthread_t));
    if (!p->threads || pthread_mutex_init(&p->mu, NULL) != 0) {
        free(p->threads);
        free(p);
        return NULL;
    }
    pthread_cond_init(&p->wake, NULL);
    pthread_cond_init(&p->done, NULL);
    p->n_threads = threads - 1;
    for (int i = 0; i < p->n_threads; i++) {
        if (pthread_create(&p->threads[i], NULL, worker, p) != 0) break;
        p->started++;
    }
    if (p->started == 0) {
        tpool_free(p);
        return NULL;
    }
    return p;
}

void tpool_free(tpool *p) {
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    __atomic_store_n(&p->quit, 1, __ATOMIC_SEQ_CST);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->started; i++) pthread_join(p->threads[i], NULL);
    pthread_cond_destroy(&p->wake);
    pthread_cond_destroy(&p->done);
    pthread_mutex_destroy(&p->mu);
    free(p->threads);
    free(p);
}

void tpool_run(tpool *p, size_t n, void (*fn)(void *, size_t, size_t), void *arg) {
    if (n == 0) return;
    if (!p || n == 1 || in_job) {
        fn(arg, 0, n);
        return;
    }
    /* At least four chunks per thread (every item its own chunk when there
     * are fewer items than that) balances uneven work, and a thread that
     * starts late, without much overhead. */
    size_t parts = (size_t)(p->started + 1) * 4;
    size_t chunk = n / parts;
    /* No worker is inside a job here (the previous call waited for the
     * workers that entered it, and nobody can enter a closed job), so the
     * job fields can be written without the mutex. */
    p->fn = fn;
    p->arg = arg;
    p->n = n;
    p->chunk = chunk ? chunk : 1;
    __atomic_store_n(&p->next, 0, __ATOMIC_RELAXED);
    uint64_t gen = ST_GEN(__atomic_load_n(&p->state, __ATOMIC_RELAXED)) + 1;
    __atomic_store_n(&p->state, (gen << 17) | ST_OPEN, __ATOMIC_SEQ_CST); /* publishes the fields */
    if (__atomic_load_n(&p->sleepers, __ATOMIC_SEQ_CST) > 0) {
        pthread_mutex_lock(&p->mu);
        pthread_cond_broadcast(&p->wake);
        pthread_mutex_unlock(&p->mu);
    }
    in_job = true;
    take_chunks(p);
    in_job = false;
    /* every chunk is claimed: close the job, then wait for the workers
     * inside it (poll first, then sleep) */
    uint64_t s = __atomic_and_fetch(&p->state, ~ST_OPEN, __ATOMIC_SEQ_CST);
    int64_t t0 = 0;
    for (unsigned i = 0; ST_ACTIVE(s) > 0; i++) {
        cpu_relax();
        s = __atomic_load_n(&p->state, __ATOMIC_ACQUIRE);
        if ((i & 63) != 63) continue;
        int64_t t = mono_ns();
        if (!t0) t0 = t;
        else if (t - t0 > SPIN_NS) break;
        else if (t - t0 > YIELD_NS) sched_yield();
    }
    if (ST_ACTIVE(s) > 0) {
        pthread_mutex_lock(&p->mu);
        __atomic_store_n(&p->caller_waiting, 1, __ATOMIC_SEQ_CST);
        while (ST_ACTIVE(__atomic_load_n(&p->state, __ATOMIC_SEQ_CST)) > 0)
            pthread_cond_wait(&p->done, &p->mu);
        __atomic_store_n(&p->caller_waiting, 0, __ATOMIC_SEQ_CST);
        pthread_mutex_unlock(&p->mu);
    }
    /* the workers' writes are visible: every load of the state word above
     * that saw them leave was an acquire */
}

void tpool_wake(tpool *p) {
    if (!p || !__atomic_load_n(&p->sleepers, __ATOMIC_SEQ_CST)) return;
    /* a new generation with the job closed: sleepers wake and poll, nobody
     * enters (the job fields are not touched) */
    uint64_t gen = ST_GEN(__atomic_load_n(&p->state, __ATOMIC_RELAXED)) + 1;
    __atomic_store_n(&p->state, gen << 17, __ATOMIC_SEQ_CST);
    pthread_mutex_lock(&p->mu);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
}

/* Work below which a loop runs inline (interp_par_worth): about 10 us of
 * multiply-adds on one core, several times a job's hand-over cost. */
#define PAR_MIN_WORK 262144.0

static bool par_force;

void interp_par_force(bool on) { par_force = on; }

bool interp_par_worth(const interp_ctx *ctx, double work) {
    return ctx && ctx->pool && (par_force || work >= PAR_MIN_WORK);
}

int interp_threads(const interp_ctx *ctx) { return ctx && ctx->pool ? ctx->pool->started + 1 : 1; }

void interp_parallel_for(interp_ctx *ctx, size_t n, void (*fn)(void *arg, size_t begin, size_t end),
                         void *arg) {
    tpool_run(ctx ? ctx->pool : NULL, n, fn, arg);
}
