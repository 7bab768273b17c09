// weight_dot.glsl: the partial dot product of one weight row with x, shared by
// the matrix-vector kernels (matvec, head_matvec, moe_matvec). Include after
// weights.glsl and the declaration of x (binding 1).
//
// Over the columns lid, lid + stride, ... (element types), or over the pieces
// lid, lid + stride, ... of WT_SUB values (block types): a piece is decoded
// once and its integers dotted with x before the scale is applied, as ggml's
// CPU dot products do; there is no per-element decode.
float row_dot(uint row, uint xb, uint n_cols, uint lid, uint stride)
{
    float acc = 0.0;
#ifdef WT_ELEMENTWISE
    uint base = row * n_cols;
    for (uint c = lid; c < n_cols; c += stride) acc += wt_value(base + c) * x[xb + c];
#else
    uint n_pieces = n_cols / WT_SUB;
    uint first = row * (n_cols / WT_BLOCK);
    for (uint p = lid; p < n_pieces; p += stride) {
        float q[WT_SUB];
        vec2 so = wt_decode(first + p / WT_PIECES, p % WT_PIECES, q);
        uint c0 = xb + p * WT_SUB;
        float s = 0.0;
        for (uint i = 0; i < WT_SUB; i += 2) s += q[i] * x[c0 + i] + q[i + 1] * x[c0 + i + 1];
        acc += so.x * s;
        if (WT_OFFSET) {
            float sx = 0.0;
            for (uint i = 0; i < WT_SUB; i++) sx += x[c0 + i];
            acc += so.y * sx;
        }
    }
#endif
    return acc;
}
