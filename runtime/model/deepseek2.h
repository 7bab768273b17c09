/* deepseek2.h -- inside the deepseek2 architecture module (deepseek2_hparams.c:
 * keys, tensor table, KV layout and the descriptor; deepseek2.c: the forward
 * recorder). Nothing outside the module includes this. */
#ifndef GSMRT_MODEL_DEEPSEEK2_H
#define GSMRT_MODEL_DEEPSEEK2_H

#include "model/arch.h"

/* Tensor slots: the rows of the tensor table, in its order. */
enum ds2_tensor {
    DS2_TOKEN_EMBD, DS2_OUTPUT_NORM, DS2_OUTPUT,   /* global */
    DS2_ATTN_NORM, DS2_ATTN_Q_A, DS2_ATTN_Q_A_NORM, DS2_ATTN_Q_B, DS2_ATTN_Q, DS2_ATTN_KV_A_MQA,
    DS2_ATTN_KV_A_NORM, DS2_ATTN_K_B, DS2_ATTN_V_B, DS2_ATTN_OUTPUT, DS2_FFN_NORM, DS2_FFN_GATE, DS2_FFN_UP,
    DS2_FFN_DOWN, DS2_FFN_GATE_INP, DS2_EXP_PROBS_B, DS2_FFN_GATE_EXPS, DS2_FFN_UP_EXPS, DS2_FFN_GATE_UP_EXPS,
    DS2_FFN_DOWN_EXPS, DS2_FFN_GATE_SHEXP, DS2_FFN_UP_SHEXP, DS2_FFN_DOWN_SHEXP,
    DS2_N_TENSORS
};

/* The forward recorder (deepseek2.c). */
gsmrt_status gsmrt_ds2_forward_init(struct gsmrt_forward *f, struct gsmrt_err *err);
void gsmrt_ds2_forward_fini(struct gsmrt_forward *f);
gsmrt_status gsmrt_ds2_record_step(struct gsmrt_forward *f, const struct gsmrt_seq_step *seqs, uint32_t n_seq,
                                   uint32_t n_tok, uint32_t first, uint32_t n_rows, struct gsmrt_err *err);

#endif
