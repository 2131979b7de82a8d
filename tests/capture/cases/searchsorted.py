# capture: call=f inputs=x:f32[3,40],v:f32[3,7],w:f32[5,4],i:i64[6]
# torch.searchsorted over sorted rows (ties: left and right differ there; NaN goes past every
# element; a value below and above every one), over one 1-D sequence for values of any shape,
# side= and out_int32=, a Python number, integer values against float boundaries (promoted),
# and torch.bucketize (right=False is searchsorted's left).
import torch


def f(x, v, w, i):
    rows = torch.sort((x * 2).round(), dim=1).values  # ties in every row
    values = torch.cat([(v * 2).round(), torch.full((3, 1), float("nan")), rows[:, :1] - 1, rows[:, -1:] + 1], dim=1)
    edges = torch.tensor([-1.0, -0.5, 0.0, 0.25, 0.25, 1.0])
    return (
        torch.searchsorted(rows, values),
        torch.searchsorted(rows, values, right=True),
        torch.searchsorted(rows, values, side="right", out_int32=True),
        torch.searchsorted(edges, w),
        torch.searchsorted(edges, 0.25),
        torch.searchsorted(edges, 0.25, right=True),
        torch.searchsorted(edges, i),
        torch.bucketize(w, edges),
        torch.bucketize(w, edges, right=True),
    )
