/* calibrate.c -- running the model for calibration (see calibrate.h): a
 * private cache and forward state with the statistics hook set, windows
 * evaluated from an empty cache in prompt steps, every attention row's
 * statistics summed per (layer, head) in double, then the heads grouped per
 * layer. Never touches a session: the model is only read. */
#include "model/calibrate.h"

#include <math.h>
#include <string.h>

#include "base/mem.h"
#include "calib_plan.h"

uint32_t gsmrt_calib_band_edges(uint32_t n_ctx, uint32_t *edges)
{
    uint32_t n = 0;
    edges[n++] = 0;
    for (uint64_t e = 8; e < n_ctx && n < GSMRT_GSM_MAX_BANDS; e *= 2) edges[n++] = (uint32_t)e;
    return n;
}

void gsmrt_attn_stats_sink_destroy(struct gsmrt_vk_device *dev, struct gsmrt_attn_stats_sink *s)
{
    if (!s) return;
    gsmrt_vk_buf_free(dev, &s->edges);
    gsmrt_vk_buf_free(dev, &s->rows);
}

gsmrt_status gsmrt_attn_stats_sink_create(struct gsmrt_vk_device *dev, const struct gsmrt_hparams *hp,
                                          uint32_t max_tok, const uint32_t *edges, uint32_t n_bands,
                                          uint32_t sink_tokens, struct gsmrt_attn_stats_sink *out,
                                          struct gsmrt_err *err)
{
    memset(out, 0, sizeof *out);
    if (n_bands < 1 || n_bands > GSMRT_K_ATTN_STATS_MAX_BANDS || max_tok == 0)
        return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT, "attention statistics: %u bands (1..%d), %u tokens",
                             n_bands, GSMRT_K_ATTN_STATS_MAX_BANDS, max_tok);
    out->n_layer = hp->n_layer;
    out->n_head = hp->n_head;
    out->max_tok = max_tok;
    out->n_bands = n_bands;
    out->sink_tokens = sink_tokens;
    out->row_floats = n_bands + 2;
    VkDeviceSize layer_bytes = (VkDeviceSize)max_tok * hp->n_head * out->row_floats * 4;
    VkDeviceSize align = dev->caps.min_storage_buffer_offset_alignment ? dev->caps.min_storage_buffer_offset_alignment : 1;
    out->layer_stride = (layer_bytes + align - 1) / align * align;
    if (layer_bytes > dev->binding_range)
        return gsmrt_err_set(err, GSMRT_E_UNSUPPORTED,
                             "attention statistics of %u tokens need %.1f MiB per layer, more than one binding",
                             max_tok, layer_bytes / 1048576.0);
    gsmrt_status st = gsmrt_vk_buf_alloc(dev, GSMRT_VK_ROLE_SCRATCH, out->layer_stride * hp->n_layer, &out->rows, err);
    if (st == GSMRT_OK) st = gsmrt_vk_buf_alloc(dev, GSMRT_VK_ROLE_SCRATCH, 4 * n_bands, &out->edges, err);
    if (st == GSMRT_OK) st = gsmrt_vk_upload(dev, &out->edges, 0, edges, 4 * n_bands, err);
    if (st != GSMRT_OK) gsmrt_attn_stats_sink_destroy(dev, out);
    return st;
}

gsmrt_status gsmrt_attn_stats_record(struct gsmrt_forward *f, const struct gsmrt_seq_step *seqs, uint32_t n_seq,
                                     uint32_t il, const struct gsmrt_vk_range *qa, const struct gsmrt_vk_range *qr,
                                     const struct gsmrt_vk_range *pos, struct gsmrt_err *err)
{
    struct gsmrt_attn_stats_sink *s = f->stats;
    const struct gsmrt_hparams *hp = &f->m->hp;
    struct gsmrt_vk_device *dev = f->m->dev;
    uint32_t n_tok = n_seq ? seqs[n_seq - 1].tok0 + seqs[n_seq - 1].n_tok : 0;
    if (il >= s->n_layer || n_tok > s->max_tok)
        return gsmrt_err_set(err, GSMRT_E_INTERNAL, "attention statistics: layer %u of %u, %u tokens of %u", il,
                             s->n_layer, n_tok, s->max_tok);
    struct gsmrt_vk_range out, edges, hot, cold, table;
    gsmrt_status st = gsmrt_vk_buf_range(dev, &s->rows, il * s->layer_stride,
                                         (VkDeviceSize)n_tok * s->n_head * s->row_floats * 4, &out, err);
    if (st == GSMRT_OK) st = gsmrt_vk_buf_whole(dev, &s->edges, &edges, err);
    uint32_t DK = hp->n_embd_head_k_mla, R = hp->n_rot;
    for (uint32_t i = 0; i < n_seq && st == GSMRT_OK; i++) {
        const struct gsmrt_seq_step *q = &seqs[i];
        const struct gsmrt_kv_line *line = gsmrt_kv_cache_line(q->kv, il, 0);
        if (line->managed || line->n_cold_slots)   /* the kernel reads hot slots only */
            return gsmrt_err_set(err, GSMRT_E_UNSUPPORTED, "attention statistics need a dense cache (GSM off)");
        st = gsmrt_kv_cache_bind(dev, q->kv, il, 0, &hot, &cold, &table, err);
        struct gsmrt_k_attn_stats p = {.n_tok = q->n_tok,
                                       .n_heads = hp->n_head,
                                       .kv_lora = hp->kv_lora_rank,
                                       .rope_dim = R,
                                       .q_stride = hp->n_head * DK,
                                       .q_head = DK,
                                       .q_off = DK - R,
                                       .page_size = q->kv->page_size,
                                       .n_bands = s->n_bands,
                                       .sink_tokens = s->sink_tokens,
                                       .scale = hp->kq_scale,
                                       .tok0 = q->tok0,
                                       .kv_type = q->kv->type};
        if (st == GSMRT_OK) st = gsmrt_k_attn_stats(f->rec, &p, qa, qr, &hot, &table, pos, &edges, &out, err);
    }
    return st;
}

/* Adds the rows of one step, float [n_layer][stride][n_tok][n_head][row], to acc [n_layer][n_head]. */
static void accumulate(const struct gsmrt_attn_stats_sink *s, const float *rows, uint32_t n_tok,
                       struct gsmrt_gsm_head_acc *acc)
{
    const uint32_t W = s->row_floats, nb = s->n_bands;
    for (uint32_t l = 0; l < s->n_layer; l++)
        for (uint32_t t = 0; t < n_tok; t++)
            for (uint32_t h = 0; h < s->n_head; h++) {
                const float *r = rows + ((size_t)l * s->max_tok * s->n_head + (size_t)t * s->n_head + h) * W;
                bool ok = true;
                for (uint32_t k = 0; k < W; k++) ok = ok && isfinite(r[k]);
                if (!ok) continue;   /* as gsmrt_gsm_head_acc_add ignores a row it cannot normalise */
                struct gsmrt_gsm_head_acc *a = &acc[(size_t)l * s->n_head + h];
                for (uint32_t b = 0; b < nb; b++) a->band_mass[b] += r[b];
                a->sink_share += r[nb];
                a->entropy += r[nb + 1];
                a->n_rows++;
            }
}

gsmrt_status gsmrt_calib_run(struct gsmrt_dmodel *dm, const int32_t *tokens, size_t n_tokens, int32_t bos,
                             const struct gsmrt_gsm_model_id *id, const struct gsmrt_calib_run_params *p,
                             struct gsmrt_gsm_calib **out, struct gsmrt_err *err)
{
    *out = NULL;
    const struct gsmrt_hparams *hp = &dm->hp;
    struct gsmrt_vk_device *dev = dm->dev;
    const gsmrt_allocator *a = dm->alloc;
    if (p->n_ctx < 2 || p->n_batch == 0 || n_tokens == 0)
        return gsmrt_err_set(err, GSMRT_E_INVALID_ARGUMENT, "calibration: windows of %u tokens, steps of %u, %zu tokens",
                             p->n_ctx, p->n_batch, n_tokens);
    uint32_t edges[GSMRT_GSM_MAX_BANDS];
    uint32_t n_bands = gsmrt_calib_band_edges(p->n_ctx, edges);
    uint32_t n_batch = p->n_batch < p->n_ctx ? p->n_batch : p->n_ctx;
    uint32_t per_win = bos >= 0 ? p->n_ctx - 1 : p->n_ctx;   /* text tokens per window */
    size_t n_windows = (n_tokens + per_win - 1) / per_win;

    struct gsmrt_kv_cache *kv = NULL;
    struct gsmrt_forward *f = NULL;
    struct gsmrt_attn_stats_sink sink;
    memset(&sink, 0, sizeof sink);
    struct gsmrt_gsm_calib *c = NULL;
    int32_t *win = gsmrt_mem_alloc(a, (size_t)p->n_ctx * sizeof *win);
    struct gsmrt_gsm_head_acc *acc = gsmrt_mem_calloc(a, (size_t)hp->n_layer * hp->n_head, sizeof *acc);
    size_t rows_bytes = (size_t)hp->n_layer * n_batch * hp->n_head * (n_bands + 2) * sizeof(float);
    float *rows = gsmrt_mem_alloc(a, rows_bytes);
    gsmrt_status st = GSMRT_OK;
    if (!win || !acc || !rows) {
        st = gsmrt_err_set(err, GSMRT_E_OUT_OF_HOST_MEMORY, "calibration buffers");
        goto done;
    }
    st = gsmrt_gsm_calib_create(a, id, p->n_groups, n_bands, &c, err);
    if (st != GSMRT_OK) goto done;
    c->page_size = p->page_size;
    memcpy(c->band_edges, edges, sizeof edges[0] * n_bands);
    /* dense, in the type sessions cache in by default: the statistics are of
     * the attention decoding will run */
    st = gsmrt_kv_cache_create(dev, hp, p->n_ctx, p->page_size, 0, 0, GSMRT_KV_F16, &kv, err);
    if (st == GSMRT_OK) st = gsmrt_forward_create(dm, n_batch, p->n_ctx, &f, err);
    if (st == GSMRT_OK) st = gsmrt_attn_stats_sink_create(dev, hp, n_batch, edges, n_bands, p->sink_tokens, &sink, err);
    if (st != GSMRT_OK) goto done;
    f->stats = &sink;

    for (size_t w = 0; w < n_windows && st == GSMRT_OK; w++) {
        size_t first = w * per_win, n_text = n_tokens - first < per_win ? n_tokens - first : per_win;
        uint32_t n = 0;
        if (bos >= 0) win[n++] = bos;
        memcpy(win + n, tokens + first, n_text * sizeof *win);
        n += (uint32_t)n_text;
        /* the window from an empty cache: positions 0..n-1, in steps of n_batch */
        for (uint32_t done = 0; done < n && st == GSMRT_OK;) {
            uint32_t step = n - done < n_batch ? n - done : n_batch;
            st = gsmrt_forward_run(f, kv, win + done, step, done, 0, NULL, err);
            for (uint32_t l = 0; l < hp->n_layer && st == GSMRT_OK; l++)
                st = gsmrt_vk_download(dev, &sink.rows, l * sink.layer_stride,
                                       rows + (size_t)l * n_batch * hp->n_head * sink.row_floats,
                                       (VkDeviceSize)step * hp->n_head * sink.row_floats * 4, err);
            if (st == GSMRT_OK) accumulate(&sink, rows, step, acc);
            done += step;
        }
        if (st == GSMRT_OK && p->progress) p->progress(p->progress_user, "calibration", (float)(w + 1) / n_windows);
    }
    if (st != GSMRT_OK) {
        gsmrt_err_prefix(err, "calibration: ");
        goto done;
    }
    struct gsmrt_gsm_plan_params pp = {.n_groups = p->n_groups,
                                       .coverage = p->coverage,
                                       .max_hot_pages = p->max_hot_pages,
                                       .sink_tokens = p->sink_tokens,
                                       .sink_min = 0.05,
                                       .threshold = p->threshold,
                                       .seed = 0x65a1u};
    for (uint32_t l = 0; l < hp->n_layer && st == GSMRT_OK; l++) {
        for (uint32_t h = 0; h < hp->n_head; h++)
            gsmrt_gsm_head_acc_finish(&acc[(size_t)l * hp->n_head + h], n_bands, &c->layers[l].stats[h]);
        st = gsmrt_gsm_calib_plan_layer(c, l, &pp, a, err);
    }
    if (st == GSMRT_OK) st = gsmrt_gsm_calib_validate(c, err);
    if (st == GSMRT_OK) {
        *out = c;
        c = NULL;
    }
done:
    gsmrt_forward_destroy(f);
    gsmrt_attn_stats_sink_destroy(dev, &sink);
    gsmrt_kv_cache_destroy(dev, kv);
    gsmrt_gsm_calib_destroy(c);
    gsmrt_mem_free(a, win);
    gsmrt_mem_free(a, acc);
    gsmrt_mem_free(a, rows);
    return st;
}
