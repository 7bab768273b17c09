/* api_sched.h -- internals of the scheduler (gsmrt.h "scheduler"). */
#ifndef GSMRT_API_SCHED_H
#define GSMRT_API_SCHED_H

#include "api_internal.h"
#include "text/tokenizer.h"

/* Appends the tokens of a request's prompt to *out: a raw prompt (BOS in
 * front when the model wants one, special-token text not parsed), or the
 * messages in the model's chat format with the assistant's turn opened,
 * the markup's control tokens parsed and the contents' not. Reads the
 * model only (any thread). GSMRT_E_INVALID_ARGUMENT names the field. */
gsmrt_status gsmrt_sched_tokenize(const gsmrt_model *m, const gsmrt_request_params *p, struct gsmrt_tokens *out,
                                  struct gsmrt_err *err);

/* Dispatches a batched step records per sequence and layer beyond what the
 * forward pass sizes its recording for (cache writes, GSM summaries,
 * attention with its split-K combine, GSM gate). */
#define GSMRT_SCHED_DISPATCHES_PER_SEQ_LAYER 16u

/* Re-creates f's recording for passes of up to n_seq sequences. */
gsmrt_status gsmrt_sched_size_recording(struct gsmrt_forward *f, uint32_t n_seq, struct gsmrt_err *err);

/* A scheduler over the caller's sessions (not owned; distinct, one model):
 * slot i is ss[i], no cached slots, and every pass runs on fwd (not owned;
 * its max_tok is the step's token budget, at least n). For
 * gsmrt_complete_batch. */
gsmrt_status gsmrt_sched_create_on(gsmrt_session *const *ss, size_t n, struct gsmrt_forward *fwd,
                                   gsmrt_scheduler **out, struct gsmrt_err *err);
/* Submits a request that runs in slot `slot`; when it leaves, the
 * generation's own result goes to *gen_out (its struct_size honoured; may
 * be NULL) and its status to *status_out (GSMRT_E_CANCELLED for a cancel
 * before the first token; may be NULL). */
gsmrt_status gsmrt_sched_submit_pinned(gsmrt_scheduler *sc, uint32_t slot, const gsmrt_request_params *p,
                                       gsmrt_generate_result *gen_out, gsmrt_status *status_out,
                                       struct gsmrt_err *err);

#endif
