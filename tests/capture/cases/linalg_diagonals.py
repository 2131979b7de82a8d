# capture: call=f inputs=x:f32[4,5],y:f32[3,5],v:f32[5],u:f32[4],m:f32[2,4,4],b:f32[2,3,4],i:i64[4],j:i64[4]
# broadcast_tensors, outer/ger, mv, dot/vdot, trace, diagonal (offsets, dims), diag, diag_embed,
# rot90 and einsum with a repeated index (a diagonal).
import torch


def f(x, y, v, u, m, b, i, j):
    bx, by = torch.broadcast_tensors(x[:, None, :], y)
    parts = torch.broadcast_tensors(v, u[:, None], torch.tensor(2.0))
    return (
        bx, by, parts,
        torch.outer(u, v), torch.ger(u, v), u.outer(v), torch.outer(i, v),
        torch.mv(x, v), x.mv(v), torch.dot(v, v * 2), torch.vdot(u, u), v.dot(v), torch.dot(i, j),
        torch.trace(x), m[0].trace(), torch.trace(i[:, None] * j),
        torch.diagonal(x), torch.diagonal(x, 1), torch.diagonal(x, -2), torch.diagonal(x, offset=3),
        m.diagonal(0, 1, 2), torch.diagonal(b, 1, -1, 0), m.diagonal(dim1=-2, dim2=-1, offset=-1),
        torch.diag(v), torch.diag(u, 1), torch.diag(u, diagonal=-2), torch.diag(x), torch.diag(x, -1),
        torch.diag(i), torch.diag_embed(b), torch.diag_embed(b, offset=1, dim1=0, dim2=2),
        torch.diag_embed(u, -1),
        torch.rot90(x), torch.rot90(x, 2), torch.rot90(b, -1, [1, 2]), b.rot90(3, [2, 0]), torch.rot90(x, 4),
        torch.einsum("ii->i", m[0]), torch.einsum("bii->b", m), torch.einsum("ii", m[1]),
        torch.einsum("bjj,bj->b", m, m[:, 0]), torch.einsum("iij->ij", m.permute(1, 2, 0)),
    )
