# capture: call=f inputs=x:f32[2,3,5,7,6],y:f32[2,3,7,5],w:f32[3,10]
import torch
import torch.nn.functional as F


def f(x, y, w):
    # Output sizes that do not divide the input's: windows overlap and differ in size.
    return (F.adaptive_avg_pool3d(x, (2, 3, 4)), F.adaptive_avg_pool3d(x, (None, 3, 3)),
            F.adaptive_avg_pool3d(x, (3, 7, 6)), F.adaptive_avg_pool3d(x[0], 2), F.adaptive_avg_pool3d(x, 1),
            torch.nn.AdaptiveAvgPool3d((4, 1, 5))(x), F.interpolate(x, size=(3, 4, 4), mode="area"),
            F.adaptive_avg_pool2d(y, (3, 4)), F.adaptive_avg_pool1d(w, 3), F.adaptive_avg_pool1d(w, 4))
