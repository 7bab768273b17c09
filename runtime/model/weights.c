/* weights.c -- uploads a model's tensors once into device-local memory and
 * files them by the architecture's tensor table (model/arch.h). Large tensors are bound later in row chunks by the
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

struct gsmrt_tensor *gsmrt_dmodel_tensor(const struct gsmrt_dmodel *m, int64_t il, uint32_t slot)
{
    if (il >= (int64_t)m->hp.n_layer || slot >= m->arch->n_tensors) return NULL;
    return m->slots[(size_t)(il + 1) * m->arch->n_tensors + slot];
}

/* Files every tensor the architecture's table expects where it expects it
 * (hparams_load has checked that those are there and no others). */
static void file_tensors(struct gsmrt_dmodel *m, const struct gsmrt_gguf *g)
{
    const struct gsmrt_arch *a = m->arch;
    char name[GSMRT_GGUF_MAX_NAME + 32];
    for (int64_t il = -1; il < (int64_t)m->hp.n_layer; il++)
        for (uint32_t i = 0; i < a->n_tensors; i++) {
            const struct gsmrt_tensor_spec *s = &a->tensors[i];
            if (!s->name || s->per_layer != (il >= 0) || !a->applies(&m->hp, s->when, il)) continue;
            if (il >= 0) snprintf(name, sizeof name, "blk.%lld.%s", (long long)il, s->name);
            m->slots[(size_t)(il + 1) * a->n_tensors + i] = find(m, g, il >= 0 ? name : s->name);
        }
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
    out->w = (struct gsmrt_k_weights){.buf = &out->buf,
                                      .offset = 0,
                                      .type = (enum gsmrt_wtype)t->type,
                                      .n_rows = (uint32_t)rows,
                                      .n_cols = (uint32_t)t->ne[0]};
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
    gsmrt_mem_free(m->alloc, m->slots);
    gsmrt_mem_free(m->alloc, m);
}

gsmrt_status gsmrt_dmodel_load(struct gsmrt_vk_device *dev, const struct gsmrt_gguf *g,
                               const struct gsmrt_hparams *hp, gsmrt_model_progress progress,
                               void *progress_user, struct gsmrt_dmodel **out, struct gsmrt_err *err)
{
    *out = NULL;
    if (!hp->arch)
        return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT, "%s: hyper-parameters not loaded", gsmrt_gguf_name(g));
    if (hp->arch->check_runnable) {
        gsmrt_status st = hp->arch->check_runnable(g, hp, err);
        if (st != GSMRT_OK) return st;
    }
    struct gsmrt_dmodel *m = gsmrt_mem_calloc(dev->alloc, 1, sizeof *m);
    if (!m) return gsmrt_err_set(err, GSMRT_E_OUT_OF_HOST_MEMORY, "model");
    m->hp = *hp;
    m->arch = hp->arch;
    m->dev = dev;
    m->alloc = dev->alloc;
    m->n_tensors = gsmrt_gguf_n_tensors(g);
    m->tensors = gsmrt_mem_calloc(m->alloc, m->n_tensors, sizeof *m->tensors);
    m->slots = gsmrt_mem_calloc(m->alloc, ((size_t)hp->n_layer + 1) * m->arch->n_tensors, sizeof *m->slots);
    gsmrt_status st = GSMRT_OK;
    if (!m->tensors || !m->slots) {
        st = gsmrt_err_set(err, GSMRT_E_OUT_OF_HOST_MEMORY, "model tensor table");
        goto fail;
    }
    uint64_t total = 0, done = 0;
    for (uint64_t i = 0; i < m->n_tensors; i++) total += gsmrt_gguf_tensor_at(g, i)->data_bytes;
    for (uint64_t i = 0; i < m->n_tensors; i++) {
        const struct gsmrt_gguf_tensor *t = gsmrt_gguf_tensor_at(g, i);
        st = upload(dev, t, &m->tensors[i], err);
        if (st != GSMRT_OK) goto fail;
        gsmrt_gguf_release_tensor(g, t);   /* the device holds it now: the file's pages need not stay resident */
        done += t->data_bytes;
        if (progress) progress(progress_user, "uploading weights", total ? (float)done / (float)total : 1.0f);
    }
    m->weight_bytes = total;
    file_tensors(m, g);
    *out = m;
    return GSMRT_OK;
fail:
    gsmrt_dmodel_destroy(m);
    return st;
}
