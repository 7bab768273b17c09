/* api_sched_state.h -- the scheduler's state, shared by its two files:
 * api_sched.c (create, submit, cancel, requests leaving, destroy, stats) and
 * api_sched_step.c (admitting queued requests, planning and running a step).
 * Private to them; the locking rules are in api_sched.c. */
#ifndef GSMRT_API_SCHED_STATE_H
#define GSMRT_API_SCHED_STATE_H

#include <pthread.h>

#include "api_gen.h"
#include "api_sched.h"

enum req_phase { REQ_QUEUED, REQ_PROMPT, REQ_DECODE };

struct sched_req {
    uint64_t id;
    struct sched_req *next;            /* in the queue */
    gsmrt_request_params p;            /* copied; prompt/messages cleared (tokenized at submit) */
    char *profile;                     /* copy of p.gen.profile */
    struct gsmrt_tokens prompt;
    atomic_bool cancel;
    enum req_phase phase;
    uint32_t slot;
    struct gsmrt_gen gen;
    gsmrt_generate_params gen_params;  /* what gen points at */
    bool started;                      /* gen_start ran (sampler, UTF-8 stream) */
    uint32_t n_cached;                 /* prompt tokens served from the slot's cached sequence (prepare ran) */
    int32_t tok;                       /* the decode token of this step */
    uint32_t chunk;                    /* prompt tokens in this step */
    double t_submit, t_admit, t_first;
    uint32_t pin;                      /* the slot it must run in (gsmrt_sched_submit_pinned), or NO_PIN */
    gsmrt_generate_result *gen_out;    /* pinned requests: the generation's own result, and ... */
    gsmrt_status *status_out;          /* ... its status (may be NULL) */
};

#define NO_PIN UINT32_MAX

struct sched_slot {
    gsmrt_session *s;
    struct sched_req *req;             /* running here, or NULL (idle; s->past is a cached sequence) */
    uint64_t last_used;                /* for LRU */
};

struct gsmrt_scheduler {
    bool external;                     /* slots and forward pass belong to the caller (gsmrt_sched_create_on) */
    gsmrt_model *model;
    const gsmrt_allocator *a;
    struct gsmrt_forward *fwd;         /* one forward pass for all slots */
    struct sched_slot *slots;
    uint32_t n_slots, n_parallel, n_ctx, n_batch, max_queued;
    uint64_t clock;
    struct sched_req **running;        /* [n_parallel] */
    uint32_t n_running;
    struct gsmrt_seq_step *steps;      /* [n_parallel] this step's entries ... */
    struct sched_req **who;            /* ... and their requests */
    struct sched_req **dec, **pro, **pfinal;   /* [n_parallel] plan_step's lists */
    pthread_mutex_t mu;
    struct sched_req *q_head, *q_tail;
    uint32_t n_queued;
    uint64_t next_id;
    gsmrt_scheduler_stats stats;
};

/* CLOCK_MONOTONIC in milliseconds. */
double gsmrt_sched_now_ms(void);
/* Reports a request that leaves (with on_done) and frees it. `r` is no
 * longer in the queue or the running list; gr may be NULL (it never ran). */
void gsmrt_sched_report(gsmrt_scheduler *sc, struct sched_req *r, gsmrt_status st, const char *msg,
                        const gsmrt_generate_result *gr);
/* Ends a running request: the generation's end and rollback, the slot
 * freed (it keeps the sequence for prefix reuse), on_done. */
void gsmrt_sched_finish_running(gsmrt_scheduler *sc, struct sched_req *r, gsmrt_status st, struct gsmrt_err *err);

#endif
