# capture: call=f inputs=x:f32[4,5],y:f32[4,5],z:f32[5],w:f32[4,5],p:f32[5],a:f32[6],b:f32[6],s:f32[6],u:f32[4,8],v:f32[4,8],l:i64[4]
# The F.* losses (torch's Python, inlined) down to torch's loss functions, every reduction.
import torch
import torch.nn.functional as F


def f(x, y, z, w, p, a, b, s, u, v, l):
    prob = torch.sigmoid(x)
    target = torch.sigmoid(y)
    sign = torch.where(s > 0, 1.0, -1.0)
    label = l.float() * 2 - 3  # -3, -1, 1, 3: only +-1 count
    return (
        F.mse_loss(x, y), F.mse_loss(x, z, reduction="none"), F.mse_loss(x, y, reduction="sum"),
        F.l1_loss(x, y), F.l1_loss(x, y, reduction="none"),
        F.smooth_l1_loss(x, y), F.smooth_l1_loss(x, y, beta=0.5, reduction="sum"),
        F.smooth_l1_loss(x, y, beta=0.0),
        F.huber_loss(x, y), F.huber_loss(x, y, delta=0.3, reduction="none"),
        F.binary_cross_entropy(prob, target), F.binary_cross_entropy(prob, target, weight=w, reduction="none"),
        F.binary_cross_entropy(prob, (y > 0).float(), reduction="sum"),
        F.binary_cross_entropy_with_logits(x, target),
        F.binary_cross_entropy_with_logits(x, target, weight=w, pos_weight=p.abs(), reduction="none"),
        F.binary_cross_entropy_with_logits(x * 30, target, pos_weight=p.abs(), reduction="sum"),
        F.kl_div(F.log_softmax(x, -1), F.softmax(y, -1), reduction="batchmean"),
        F.kl_div(F.log_softmax(x, -1), F.log_softmax(y, -1), reduction="sum", log_target=True),
        F.kl_div(F.log_softmax(x, -1), torch.relu(y), reduction="none"),
        F.margin_ranking_loss(a, b, sign), F.margin_ranking_loss(a, b, sign, margin=0.5, reduction="none"),
        F.cosine_embedding_loss(u, v, label), F.cosine_embedding_loss(u, v, label, margin=0.2, reduction="none"),
        F.cosine_embedding_loss(u[0], v[0], torch.tensor(-1.0), reduction="sum"),
        torch.nn.MSELoss()(x, y), torch.nn.BCEWithLogitsLoss()(x, target),
        torch.nn.SmoothL1Loss(reduction="sum")(x, y), torch.nn.KLDivLoss(reduction="mean")(F.log_softmax(x, 1), target),
    )
