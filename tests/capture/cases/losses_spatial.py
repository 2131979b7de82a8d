# capture: call=f inputs=scores:f32[2,4,3,5],target:i64[2,3,5],logits:f32[6,4],t:i64[6]
# cross_entropy and nll_loss over (N, C, d1, d2) scores (segmentation), and ignore_index.
import torch.nn.functional as F


def f(scores, target, logits, t):
    return (
        F.cross_entropy(scores, target),
        F.cross_entropy(scores, target, reduction="none"),
        F.nll_loss(F.log_softmax(scores, 1), target, ignore_index=2, reduction="sum"),
        F.cross_entropy(logits, t, ignore_index=0),
    )
