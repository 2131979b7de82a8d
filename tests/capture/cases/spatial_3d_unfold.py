# capture: call=f inputs=x:f32[2,4,5,6,6],w:f32[6,4,3,3,3],wg:f32[6,2,2,3,1],bias:f32[6],y:f32[2,3,7,6],cols:f32[2,12,20]
# conv3d (stride, padding, dilation, groups, 'same'), max_pool3d / avg_pool3d (ceil_mode,
# count_include_pad), F.unfold and F.fold (the inverse placement: overlaps summed).
import torch
import torch.nn.functional as F


def f(x, w, wg, bias, y, cols):
    return (
        F.conv3d(x, w), F.conv3d(x, w, bias, stride=2, padding=1), torch.conv3d(x, w, None, 1, (0, 1, 2), (2, 1, 1)),
        F.conv3d(x, wg, bias, groups=2, padding="same"), F.conv3d(x[0], w, bias, padding="valid"),
        F.max_pool3d(x, 2), F.max_pool3d(x, (2, 3, 2), stride=(1, 2, 2), padding=1, ceil_mode=True),
        F.max_pool3d(x, 3, stride=2, dilation=(1, 2, 1)), F.max_pool3d(x[0], 2, 1),
        F.avg_pool3d(x, 2), F.avg_pool3d(x, 3, stride=2, padding=1), F.avg_pool3d(x, 3, 2, 1, True, False),
        F.avg_pool3d(x, (2, 2, 3), ceil_mode=True),
        F.unfold(y, 2), F.unfold(y, (3, 2), dilation=(1, 2), padding=1, stride=(2, 1)), F.unfold(y[0], 3, padding=1),
        F.fold(cols, (5, 6), 2), F.fold(cols, (8, 10), 2, stride=2),
        F.fold(cols[:, :, :15], (5, 8), (2, 2), dilation=(2, 1), padding=1, stride=(2, 2)),
        F.fold(F.unfold(y, 3, padding=1), (7, 6), 3, padding=1), F.fold(cols[0], (5, 6), 2),
    )
