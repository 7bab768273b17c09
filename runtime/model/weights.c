/* weights.c -- uploads a model's tensors once into device-local memory and
 * names them per layer. Large tensors are bound later in row chunks by the
 * kernels; here each tensor is simply one sub-allocation. */
#include <stdio.h>
#include <string.h>

#include "base/mem.h"
#include "model/model.h"

static struct gsmrt_tensor *find(struct gsmrt_dmodel *m, const struct gsmrt_gguf *g, const char *name)
{
    for (uint64_t i = 0; i < m->n_tensors; i++)
        if (strcmp(gsmrt_gguf_tensor_at(g, i)->name, name) == 0) return &m->tensors[i];
    return NULL;
}

static struct gsmrt_tensor *layer_tensor(struct gsmrt_dmodel *m, const struct gsmrt_gguf *g, uint32_t il,
                                         const char *suffix)
{
    char name[GSMRT_GGUF_MAX_NAME];
    snprintf(name, sizeof name, "blk.%u.%s", il, suffix);
    return find(m, g, name);
}

static gsmrt_status upload(struct gsmrt_vk_device *dev, const struct gsmrt_gguf_tensor *t,
                           struct gsmrt_tensor *out, struct gsmrt_err *err)
{
    gsmrt_status st = gsmrt_vk_buf_alloc(dev, GSMRT_VK_ROLE_WEIGHTS, t->data_bytes, &out->buf, err);
    if (st == GSMRT_OK) st = gsmrt_vk_upload(dev, &out->buf, 0, t->data, t->data_bytes, err);
    if (st != GSMRT_OK) {
        gsmrt_err_prefix(err, "tensor '%s': ", t->name);
        return st;
    }
    uint64_t rows = (uint64_t)t->ne[1] * t->ne[2] * t->ne[3];
    out->w = (struct gsmrt_k_weights){&out->buf, 0, (enum gsmrt_wtype)t->type, (uint32_t)rows, (uint32_t)t->ne[0]};
    /* Small tensors (norms, biases) are also kept as one ready binding. */
    if (t->data_bytes <= dev->binding_range)
        st = gsmrt_vk_buf_range(dev, &out->buf, 0, gsmrt_align_up(t->data_bytes, 4), &out->range, err);
    return st;
}

void gsmrt_dmodel_destroy(struct gsmrt_dmodel *m)
{
    if (!m) return;
    for (uint64_t i = 0; m->tensors && i < m->n_tensors; i++) gsmrt_vk_buf_free(m->dev, &m->tensors[i].buf);
    gsmrt_mem_free(m->alloc, m->tensors);
    gsmrt_mem_free(m->alloc, m->layers);
    gsmrt_mem_free(m->alloc, m);
}

gsmrt_status gsmrt_dmodel_load(struct gsmrt_vk_device *dev, const struct gsmrt_gguf *g,
                               const struct gsmrt_hparams *hp, gsmrt_model_progress progress,
                               void *progress_user, struct gsmrt_dmodel **out, struct gsmrt_err *err)
{
    *out = NULL;
    if (hp->arch != GSMRT_ARCH_DEEPSEEK2 || !hp->is_mla || hp->has_ffn_gate_up_exps)
        return gsmrt_err_set(err, GSMRT_E_UNSUPPORTED,
                             "%s: only deepseek2 models in the MLA form with split expert tensors are "
                             "supported so far",
                             gsmrt_gguf_name(g));
    struct gsmrt_dmodel *m = gsmrt_mem_calloc(dev->alloc, 1, sizeof *m);
    if (!m) return gsmrt_err_set(err, GSMRT_E_OUT_OF_HOST_MEMORY, "model");
    m->hp = *hp;
    m->dev = dev;
    m->alloc = dev->alloc;
    m->n_tensors = gsmrt_gguf_n_tensors(g);
    m->tensors = gsmrt_mem_calloc(m->alloc, m->n_tensors, sizeof *m->tensors);
    m->layers = gsmrt_mem_calloc(m->alloc, hp->n_layer, sizeof *m->layers);
    gsmrt_status st = GSMRT_OK;
    if (!m->tensors || !m->layers) {
        st = gsmrt_err_set(err, GSMRT_E_OUT_OF_HOST_MEMORY, "model tensor table");
        goto fail;
    }
    uint64_t total = 0, done = 0;
    for (uint64_t i = 0; i < m->n_tensors; i++) total += gsmrt_gguf_tensor_at(g, i)->data_bytes;
    for (uint64_t i = 0; i < m->n_tensors; i++) {
        const struct gsmrt_gguf_tensor *t = gsmrt_gguf_tensor_at(g, i);
        st = upload(dev, t, &m->tensors[i], err);
        if (st != GSMRT_OK) goto fail;
        done += t->data_bytes;
        if (progress) progress(progress_user, "uploading weights", total ? (float)done / (float)total : 1.0f);
    }
    m->weight_bytes = total;
    m->token_embd = find(m, g, "token_embd.weight");
    m->output_norm = find(m, g, "output_norm.weight");
    m->output = hp->has_output ? find(m, g, "output.weight") : m->token_embd;
    for (uint32_t il = 0; il < hp->n_layer; il++) {
        struct gsmrt_layer *l = &m->layers[il];
        l->attn_norm = layer_tensor(m, g, il, "attn_norm.weight");
        l->attn_q = layer_tensor(m, g, il, "attn_q.weight");
        l->attn_q_a = layer_tensor(m, g, il, "attn_q_a.weight");
        l->attn_q_a_norm = layer_tensor(m, g, il, "attn_q_a_norm.weight");
        l->attn_q_b = layer_tensor(m, g, il, "attn_q_b.weight");
        l->attn_kv_a_mqa = layer_tensor(m, g, il, "attn_kv_a_mqa.weight");
        l->attn_kv_a_norm = layer_tensor(m, g, il, "attn_kv_a_norm.weight");
        l->attn_k_b = layer_tensor(m, g, il, "attn_k_b.weight");
        l->attn_v_b = layer_tensor(m, g, il, "attn_v_b.weight");
        l->attn_output = layer_tensor(m, g, il, "attn_output.weight");
        l->ffn_norm = layer_tensor(m, g, il, "ffn_norm.weight");
        l->ffn_gate = layer_tensor(m, g, il, "ffn_gate.weight");
        l->ffn_up = layer_tensor(m, g, il, "ffn_up.weight");
        l->ffn_down = layer_tensor(m, g, il, "ffn_down.weight");
        l->ffn_gate_inp = layer_tensor(m, g, il, "ffn_gate_inp.weight");
        l->exp_probs_b = layer_tensor(m, g, il, "exp_probs_b.bias");
        l->ffn_gate_exps = layer_tensor(m, g, il, "ffn_gate_exps.weight");
        l->ffn_up_exps = layer_tensor(m, g, il, "ffn_up_exps.weight");
        l->ffn_down_exps = layer_tensor(m, g, il, "ffn_down_exps.weight");
        l->ffn_gate_shexp = layer_tensor(m, g, il, "ffn_gate_shexp.weight");
        l->ffn_up_shexp = layer_tensor(m, g, il, "ffn_up_shexp.weight");
        l->ffn_down_shexp = layer_tensor(m, g, il, "ffn_down_shexp.weight");
    }
    *out = m;
    return GSMRT_OK;
fail:
    gsmrt_dmodel_destroy(m);
    return st;
}
