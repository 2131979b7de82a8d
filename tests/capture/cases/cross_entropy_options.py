# capture: call=f inputs=logits:f32[6,4],t:i64[6],w:f32[4],scores:f32[2,4,3,5],target:i64[2,3,5],q:f32[6,4],one:f32[4]
# cross_entropy with class weights, label smoothing, ignore_index, class-probability targets
# and unbatched scores; nll_loss with class weights.
import torch
import torch.nn.functional as F


def f(logits, t, w, scores, target, q, one):
    w = w.abs() + 0.1
    probs = torch.softmax(q, -1)
    return (
        F.cross_entropy(logits, t, weight=w),
        F.cross_entropy(logits, t, weight=w, ignore_index=1, reduction="none"),
        F.cross_entropy(logits, t, label_smoothing=0.1),
        F.cross_entropy(logits, t, label_smoothing=0.2, ignore_index=1),
        F.cross_entropy(logits, t, weight=w, label_smoothing=0.2, ignore_index=2),
        F.cross_entropy(logits, t, weight=w, label_smoothing=0.3, reduction="sum"),
        F.cross_entropy(logits, t, label_smoothing=0.3, ignore_index=0, reduction="none"),
        F.cross_entropy(scores, target, weight=w, label_smoothing=0.1),
        F.cross_entropy(scores, target, label_smoothing=0.1, reduction="none"),
        F.cross_entropy(logits, probs), F.cross_entropy(logits, probs, weight=w, reduction="none"),
        F.cross_entropy(logits, probs, label_smoothing=0.25, reduction="sum"),
        F.cross_entropy(one, t[0]), F.cross_entropy(one, t[1], label_smoothing=0.1),
        F.nll_loss(F.log_softmax(logits, 1), t, weight=w),
        F.nll_loss(F.log_softmax(scores, 1), target, weight=w, ignore_index=3, reduction="sum"),
        torch.nn.CrossEntropyLoss(label_smoothing=0.1)(logits, t),
    )
