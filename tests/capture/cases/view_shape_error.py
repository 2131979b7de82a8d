# capture: call=f inputs=x:f32[2,4]
# A shape error names the call the user wrote (view, not the reshape it shares a builder with).
def f(x):
    return x.view(3, -1)
