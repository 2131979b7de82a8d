# capture: call=f inputs=x:f32[2,3,5,6],y:f32[2,4,7]
# F.pad's reflect, replicate and circular modes (fast-neural-style pads with ReflectionPad2d).
import torch
import torch.nn as nn
import torch.nn.functional as F

reflect = nn.ReflectionPad2d(2)


def f(x, y):
    return (
        reflect(x),
        F.pad(x, (1, 3, 0, 2), mode="reflect"),
        F.pad(x, (2, 1, 3, 0), mode="replicate"),
        F.pad(y, (3, 2), mode="circular"),
        nn.ReplicationPad1d((0, 4))(y),
    )
