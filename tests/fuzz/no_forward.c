/* no_forward.c -- the fuzz target links the GGUF parser and the hyper-
 * parameter checks only, without Vulkan; the deepseek2 descriptor still names
 * its forward recorder, which these definitions stand in for. The fuzzer
 * never reaches them (it stops after gsmrt_hparams_load); if it did, they
 * refuse. */
#include "model/deepseek2.h"

gsmrt_status gsmrt_ds2_forward_init(struct gsmrt_forward *f, struct gsmrt_err *err)
{
    (void)f;
    return gsmrt_err_set(err, GSMRT_E_UNSUPPORTED, "no forward pass in the fuzz target");
}

void gsmrt_ds2_forward_fini(struct gsmrt_forward *f)
{
    (void)f;
}

gsmrt_status gsmrt_ds2_record_step(struct gsmrt_forward *f, const struct gsmrt_seq_step *seqs, uint32_t n_seq,
                                   uint32_t n_tok, uint32_t first, uint32_t n_rows, struct gsmrt_err *err)
{
    (void)f, (void)seqs, (void)n_seq, (void)n_tok, (void)first, (void)n_rows;
    return gsmrt_err_set(err, GSMRT_E_UNSUPPORTED, "no forward pass in the fuzz target");
}
