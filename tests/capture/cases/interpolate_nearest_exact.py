# capture: call=f inputs=x:f32[1,2,5,4],y:f32[2,3,6],z:f32[1,2,3,4,5]
import torch.nn.functional as F


def f(x, y, z):
    return (F.interpolate(x, size=(7, 3), mode="nearest-exact"),
            F.interpolate(x, scale_factor=1.7, mode="nearest-exact"),
            F.interpolate(x, scale_factor=(0.5, 2), mode="nearest-exact", recompute_scale_factor=True),
            F.interpolate(y, size=4, mode="nearest-exact"), F.interpolate(y, scale_factor=2.5, mode="nearest-exact"),
            F.interpolate(z, size=(5, 2, 7), mode="nearest-exact"), F.interpolate(z, scale_factor=2, mode="nearest-exact"))
