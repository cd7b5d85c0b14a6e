/* threadpool.c - the interpreter's worker threads for interp_parallel_for.
 *
 * One job at a time (operators run in order): the caller publishes the job,
 * every worker and the caller take chunks from a shared atomic counter, and
 * the caller waits until all workers have left the job. A call made from
 * inside a job (a kernel that nests parallel loops) runs inline, so the pool
 * never waits on itself. */
#include <pthread.h>
#include <stdlib.h>

#include "interp_runtime.h"

struct tpool {
    pthread_mutex_t mu;
    pthread_cond_t wake, done;
    pthread_t *threads;
    int n_threads;       /* workers (not counting the caller) */
    int started;
    uint64_t generation; /* bumped per job */
    int busy;            /* workers still inside the current job */
    bool quit;
    /* current job */
    void (*fn)(void *, size_t, size_t);
    void *arg;
    size_t n, chunk;
    size_t next;         /* atomic: next unclaimed index */
};

static _Thread_local bool in_job;

static void take_chunks(tpool *p) {
    for (;;) {
        size_t b = __atomic_fetch_add(&p->next, p->chunk, __ATOMIC_RELAXED);
        if (b >= p->n) break;
        size_t e = p->n - b < p->chunk ? p->n : b + p->chunk;
        p->fn(p->arg, b, e);
    }
}

static void *worker(void *arg) {
    tpool *p = arg;
    uint64_t seen = 0;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->quit && p->generation == seen) pthread_cond_wait(&p->wake, &p->mu);
        if (p->quit) break;
        seen = p->generation;
        pthread_mutex_unlock(&p->mu);
        in_job = true;
        take_chunks(p);
        in_job = false;
        pthread_mutex_lock(&p->mu);
        if (--p->busy == 0) pthread_cond_signal(&p->done);
    }
    pthread_mutex_unlock(&p->mu);
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
    p->quit = true;
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
    /* A few chunks per thread balances uneven work without much overhead. */
    size_t parts = (size_t)(p->started + 1) * 4;
    size_t chunk = (n + parts - 1) / parts;
    pthread_mutex_lock(&p->mu);
    p->fn = fn;
    p->arg = arg;
    p->n = n;
    p->chunk = chunk ? chunk : 1;
    p->next = 0;
    p->busy = p->started;
    p->generation++;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    in_job = true;
    take_chunks(p);
    in_job = false;
    pthread_mutex_lock(&p->mu);
    while (p->busy > 0) pthread_cond_wait(&p->done, &p->mu);
    pthread_mutex_unlock(&p->mu);
}

void interp_parallel_for(interp_ctx *ctx, size_t n,
                         void (*fn)(void *arg, size_t begin, size_t end), void *arg) {
    tpool_run(ctx ? ctx->pool : NULL, n, fn, arg);
}
