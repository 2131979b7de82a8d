# capture: call=f inputs=x:f32[2,4]
# A torch op that raises inside try raises torch's own exception (asked of torch on meta
# tensors), so the traced code's except clause handles it as in eager.
def f(x):
    try:
        y = x.view(3, -1)  # RuntimeError: shape '[3, -1]' is invalid for input of size 8
    except RuntimeError:
        y = x.reshape(4, 2)
    try:
        z = x[5]  # IndexError: index 5 is out of bounds
    except IndexError:
        z = x[0]
    return y, z
