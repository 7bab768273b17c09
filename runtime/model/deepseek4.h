/* deepseek4.h -- inside the deepseek4 (DeepSeek-V4) architecture module
 * (deepseek4_hparams.c: keys, tensor table, KV layout and the descriptor).
 * Nothing outside the module includes this. The forward recorder is not
 * written yet: check_runnable refuses every deepseek4 file until it is. */
#ifndef GSMRT_MODEL_DEEPSEEK4_H
#define GSMRT_MODEL_DEEPSEEK4_H

#include "model/arch.h"

/* The compression ratios llama.cpp accepts besides 0 (no compression):
 * 4 (CSA, overlapping blocks, with the lightning indexer) and 128 (HCA). */
#define DS4_RATIO_CSA 4u
#define DS4_RATIO_HCA 128u

/* Hyper-connection streams the V4 kernels support (GSMRT_K_V4_MAX_HC in
 * kernels/kernels.h, which this device-free module does not include). */
#define DS4_MAX_HC 8u

/* Tokens one recorded pass of the forward handles at most; a longer step is
 * split into passes. The rings below are sized so that a pass never
 * overwrites a row it still reads: the raw window holds n_swa + this many
 * rows, a compressor's pending-position rings the positions of the blocks a
 * pass completes (the block before, for CSA's overlap) plus the pass. */
#define DS4_PASS_TOKENS 64u

/* Tensor slots: the rows of the tensor table, in its order. The compressor
 * tensors have one row per ratio (their widths differ: CSA's overlapping
 * compressor is twice as wide), so a layer's tensor lands in the slot of its
 * ratio. */
enum ds4_tensor {
    DS4_TOKEN_EMBD, DS4_OUTPUT_NORM, DS4_OUTPUT, DS4_HC_HEAD_FN, DS4_HC_HEAD_BASE, DS4_HC_HEAD_SCALE,   /* global */
    DS4_ATTN_NORM, DS4_ATTN_SINKS, DS4_ATTN_Q_A, DS4_ATTN_Q_A_NORM, DS4_ATTN_Q_B, DS4_ATTN_KV, DS4_ATTN_KV_NORM,
    DS4_ATTN_OUT_A, DS4_ATTN_OUT_B,
    DS4_HC_ATTN_FN, DS4_HC_ATTN_BASE, DS4_HC_ATTN_SCALE, DS4_HC_FFN_FN, DS4_HC_FFN_BASE, DS4_HC_FFN_SCALE,
    DS4_CSA_COMP_WKV, DS4_CSA_COMP_WGATE, DS4_CSA_COMP_APE, DS4_CSA_COMP_NORM,
    DS4_HCA_COMP_WKV, DS4_HCA_COMP_WGATE, DS4_HCA_COMP_APE, DS4_HCA_COMP_NORM,
    DS4_INDEXER_PROJ, DS4_INDEXER_Q_B, DS4_INDEXER_COMP_WKV, DS4_INDEXER_COMP_WGATE, DS4_INDEXER_COMP_APE,
    DS4_INDEXER_COMP_NORM,
    DS4_FFN_NORM, DS4_FFN_GATE_INP, DS4_FFN_TID2EID, DS4_FFN_EXP_PROBS_B, DS4_FFN_GATE_EXPS, DS4_FFN_UP_EXPS,
    DS4_FFN_DOWN_EXPS, DS4_FFN_GATE_SHEXP, DS4_FFN_UP_SHEXP, DS4_FFN_DOWN_SHEXP,
    DS4_N_TENSORS
};

#endif
