/* gsm_stats.c -- printing GSM statistics (see gsm_stats.h). */
#include "gsm_stats.h"

static double pct(uint64_t part, uint64_t whole)
{
    return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

void gsm_stats_print_totals(FILE *f, const gsmrt_gsm_stats *st)
{
    if (!st->enabled) {
        fprintf(f, "GSM: off (dense attention)\n");
        return;
    }
    uint64_t read = st->bytes_read_hot + st->bytes_read_cold;
    fprintf(f,
            "GSM (%s): %llu decode steps through the gate (%llu of %llu layer-steps ran dense: the gate saved nothing)\n"
            "  pages (page x layer, summed over steps): %llu active (sink, window), %llu gated, of which %llu cold; "
            "%llu cold computed (%.1f%%)\n"
            "  gate fired in %.1f%% of %llu head gates; skipped attention share: bound max %.4f, mean %.5f\n"
            "  KV read: %.2f MiB hot + %.2f MiB cold = %.1f%% of dense (%.2f MiB); %.1f KiB per step\n"
            "  pages moved: %llu demoted, %llu promoted, %llu prefetched; prefetch %llu hits, %llu misses\n"
            "  KV held: %.2f MiB device-local, %.2f MiB host-visible\n",
            st->swap ? "swap" : "keep", (unsigned long long)st->steps, (unsigned long long)st->layer_steps_dense,
            (unsigned long long)st->layer_steps, (unsigned long long)st->pages_active,
            (unsigned long long)st->pages_gated, (unsigned long long)st->pages_cold,
            (unsigned long long)st->pages_cold_computed, pct(st->pages_cold_computed, st->pages_cold),
            pct(st->head_gates_fired, st->head_gates), (unsigned long long)st->head_gates, st->skipped_bound_max,
            st->skipped_bound_mean, st->bytes_read_hot / 1048576.0, st->bytes_read_cold / 1048576.0,
            pct(read, st->bytes_read_dense), st->bytes_read_dense / 1048576.0,
            st->steps ? read / 1024.0 / (double)st->steps : 0.0, (unsigned long long)st->pages_demoted,
            (unsigned long long)st->pages_promoted, (unsigned long long)st->pages_prefetched,
            (unsigned long long)st->prefetch_hits, (unsigned long long)st->prefetch_misses,
            st->kv_device_bytes / 1048576.0, st->kv_host_bytes / 1048576.0);
}

void gsm_stats_print_step(FILE *f, uint32_t step, const gsmrt_gsm_stats *a, const gsmrt_gsm_stats *b)
{
    if (b->steps == a->steps) {
        fprintf(f, "step %u: dense\n", step);
        return;
    }
    uint64_t hot = b->bytes_read_hot - a->bytes_read_hot, cold = b->bytes_read_cold - a->bytes_read_cold;
    uint64_t dense = b->bytes_read_dense - a->bytes_read_dense;
    fprintf(f,
            "step %u: pages active %llu, gated %llu (cold %llu, cold computed %llu), gate fired %llu/%llu, "
            "KV read %.1f KiB hot + %.1f KiB cold (%.0f%% of dense), moved %llu/%llu/%llu, prefetch %llu/%llu\n",
            step, (unsigned long long)(b->pages_active - a->pages_active),
            (unsigned long long)(b->pages_gated - a->pages_gated), (unsigned long long)(b->pages_cold - a->pages_cold),
            (unsigned long long)(b->pages_cold_computed - a->pages_cold_computed),
            (unsigned long long)(b->head_gates_fired - a->head_gates_fired),
            (unsigned long long)(b->head_gates - a->head_gates), hot / 1024.0, cold / 1024.0, pct(hot + cold, dense),
            (unsigned long long)(b->pages_demoted - a->pages_demoted),
            (unsigned long long)(b->pages_promoted - a->pages_promoted),
            (unsigned long long)(b->pages_prefetched - a->pages_prefetched),
            (unsigned long long)(b->prefetch_hits - a->prefetch_hits),
            (unsigned long long)(b->prefetch_misses - a->prefetch_misses));
}
